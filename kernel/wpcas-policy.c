// SPDX-License-Identifier: GPL-2.0
/*
 * WPCAS (Chen, Yao, Cai, Sun: "Improved anticipatory scheduling algorithm
 * based on workload characteristic and service time evaluation", section
 * 3): AS plus two modules, with a choice of ours wherever the paper is
 * open (each a tunable, named below), and WPCAS's sysfs files.
 *
 * Process classification (PC, section 3.1, equations 3-6): over the last
 * hist_len think times, a histogram of [0, 20) ms in 1 ms bins; the
 * densest window of window_ms bins is [a, b]; p_ab is its share of all
 * samples (those of 20 ms or more count in the denominator). If
 * p_ab >= gamma the anticipation period P is b, else T_as (the process's
 * mean successful wait, antic_expire until it has one); P <= max_wait_ms.
 *
 * Service-time evaluation (STE, section 3.2, equation 12): wait for the
 * process whose request just completed iff
 *   delta = p_s * (T_seek(S_s) - T_seek(S_a) - T_as) - p_f * P > 0,
 * S_s the request the elevator would serve instead, S_a the head plus the
 * process's mean seek distance, p_s and p_f its own anticipation success
 * and failure rates. Nothing queued: wait. Fewer than min_samples finished
 * anticipations: AS's rule (as_can_break_anticipation of 2.6.20); with
 * none at all, p_s is prior_ps (the paper is silent on start-up). T_seek
 * comes from a seek curve given as tunables, the two-piece curve of
 * Ruemmler and Wilkes that the paper's equation (2) gives for the HP 97560
 * (the defaults).
 *
 * The paper's authors hooked as_update_iohist for the think times and
 * as_antic_update_rq / as_antic_timeout for the counters (section 4.3);
 * the core's on_sample and Table 1 accounting are those places.
 *
 * Copyright (C) 2026 the iolab authors
 */
#include <linux/blktrace_api.h>
#include <linux/math64.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "as-iosched.h"

/* The paper assumes think times within [0, 20] ms (section 3.1). */
#define WPCAS_RANGE_MS	20

/* Think times kept per process: a ring of 1 ms bins (one byte each). */
#define WPCAS_HIST_MAX		256
#define WPCAS_HIST_LEN		32
/* Width of the densest-window search, whole ms. */
#define WPCAS_WINDOW_MS		2
/* p_ab at or above which P = b, in thousandths (0.5). */
#define WPCAS_GAMMA_MILLI	500
/* Below this many finished anticipations a process is judged by AS. */
#define WPCAS_MIN_SAMPLES	4
/* Cap on P: the paper's [0, 20] ms think-time range. */
#define WPCAS_MAX_WAIT_MS	20
/*
 * p_s of a process with no finished anticipation, in thousandths: the
 * paper does not say; 0 (with min_samples 4) starts WPCAS as AS starts.
 */
#define WPCAS_PRIOR_PS_MILLI	0

/*
 * The seek curve STE uses (Ruemmler and Wilkes's two-piece form):
 * seek(d) = sqrt_a + sqrt_b * sqrt(d) for 0 < d < linear_cyl cylinders,
 * lin_a + lin_b * d beyond, with a cylinder of cyl_sectors sectors.
 * Defaults: the HP 97560 (19 surfaces x 72 sectors per track; the paper's
 * equation (2): 3.24 + 0.400 sqrt(d) ms for d <= 383, 8.00 + 0.008 d ms
 * beyond). Another disk needs its own curve written here.
 */
#define WPCAS_SEEK_CYL_SECTORS	(19 * 72)
#define WPCAS_SEEK_LINEAR_CYL	384
#define WPCAS_SEEK_SQRT_A_NS	3240000ULL
#define WPCAS_SEEK_SQRT_B_NS	400000ULL
#define WPCAS_SEEK_LIN_A_NS	8000000ULL
#define WPCAS_SEEK_LIN_B_PS	8000000ULL

/* Per queue: the tunables. */
struct wpcas_data {
	u64 hist_len;
	u64 window_ms;
	u32 gamma_milli;
	u32 prior_ps_milli;
	u64 min_samples;
	u64 max_wait_ns;
	u64 seek_cyl_sectors;
	u64 seek_linear_cyl;
	u64 seek_sqrt_a_ns;
	u64 seek_sqrt_b_ns;
	u64 seek_lin_a_ns;
	u64 seek_lin_b_ps;
};

/* Per process: the last hist_len think times, as 1 ms bins. */
struct wpcas_ioc {
	u16 cap;		/* hist_len the ring was started with */
	u16 len;		/* samples held */
	u16 next;		/* where the next sample goes */
	u16 best;		/* samples in the densest window */
	u8 a_ms;		/* the densest window is [a_ms, b_ms) */
	u8 b_ms;
	u16 bins[WPCAS_RANGE_MS + 1];	/* the last: 20 ms or more */
	u8 ring[WPCAS_HIST_MAX];
};

static inline struct wpcas_data *wpcas_of(struct as_data *ad)
{
	return ad->policy_data;
}

static inline struct wpcas_ioc *wpcas_ioc_of(struct as_proc *proc)
{
	return (struct wpcas_ioc *)proc->policy_data;
}

/* The disk's seek time between the cylinders of two sectors, ns. */
static u64 wpcas_seek_ns(const struct wpcas_data *w, sector_t from,
			 sector_t to)
{
	u64 c1 = div64_u64(from, w->seek_cyl_sectors);
	u64 c2 = div64_u64(to, w->seek_cyl_sectors);
	u64 d = c1 > c2 ? c1 - c2 : c2 - c1;

	if (d == 0)
		return 0;
	if (d < w->seek_linear_cyl)
		/* int_sqrt64(d << 32) is sqrt(d) in 16.16 fixed point */
		return w->seek_sqrt_a_ns +
		       ((w->seek_sqrt_b_ns * int_sqrt64(d << 32)) >> 16);
	/* past 2^32 cylinders the curve is flat (and the product fits) */
	d = min_t(u64, d, 1ULL << 32);
	return w->seek_lin_a_ns + div_u64(w->seek_lin_b_ps * d, 1000);
}

/* PC's densest window over the held samples. */
static void wpcas_classify(struct wpcas_ioc *h, u32 window_ms)
{
	u32 w = clamp_t(u32, window_ms, 1, WPCAS_RANGE_MS);
	u32 a, i, n, best = 0, best_a = 0;

	for (a = 0; a + w <= WPCAS_RANGE_MS; a++) {
		for (n = 0, i = a; i < a + w; i++)
			n += h->bins[i];
		/* ties go to the earliest window: the shorter wait */
		if (n > best) {
			best = n;
			best_a = a;
		}
	}
	h->best = best;
	h->a_ms = best_a;
	h->b_ms = best_a + w;
}

/* ThinkHistory::push and the reclassification that follows it. */
static void wpcas_on_sample(struct as_data *ad, struct as_proc *proc,
			    const struct as_sample *s)
{
	struct wpcas_data *w = wpcas_of(ad);
	struct wpcas_ioc *h = wpcas_ioc_of(proc);
	u8 bin = min_t(u64, div_u64(s->think_ns, NSEC_PER_MSEC),
		       WPCAS_RANGE_MS);

	/* A new hist_len starts the process's history again. */
	if (h->cap != w->hist_len) {
		memset(h->bins, 0, sizeof(h->bins));
		h->cap = w->hist_len;
		h->len = 0;
		h->next = 0;
	}
	if (h->len < h->cap)
		h->len++;
	else
		h->bins[h->ring[h->next]]--;
	h->ring[h->next] = bin;
	h->bins[bin]++;
	h->next = (h->next + 1) % h->cap;
	wpcas_classify(h, w->window_ms);
}

/* T_as: the process's own mean successful wait, 0 if it has none. */
static u64 wpcas_t_as(const struct as_io_context *aic)
{
	return aic->antic.succeeded ?
	       div64_u64(aic->antic.success_wait_ns, aic->antic.succeeded) : 0;
}

/* PC: the anticipation period P of the target, ns. */
static u64 wpcas_period_ns(struct as_data *ad)
{
	struct wpcas_data *w = wpcas_of(ad);
	struct as_io_context *aic = &ad->target->aic;
	struct wpcas_ioc *h = wpcas_ioc_of(ad->target);
	u64 p;

	/* p_ab >= gamma, with gamma in thousandths */
	if (h->len && (u64)h->best * 1000 >= (u64)w->gamma_milli * h->len)
		p = (u64)h->b_ms * NSEC_PER_MSEC;
	else if (aic->antic.succeeded)
		p = wpcas_t_as(aic);
	else
		p = ad->antic_expire;
	return min(p, w->max_wait_ns);
}

/*
 * One line per decision into blktrace (nothing unless a trace runs), for
 * `iolab kernel decisions`: the simulator's copy of this file (kshim)
 * writes the same lines, so both homes' decisions are read alike. The
 * target is named by where its last request ended (its region of the
 * disk); times are us. "st" is the wait's state when asked (enum
 * as_antic_status: 0 a fresh decision, 2 a wait under way).
 */
static void wpcas_trace_ste(struct as_data *ad, s64 t_s, s64 t_a, bool wait)
{
	struct as_io_context *aic = &ad->target->aic;

	blk_add_trace_msg(ad->q,
			  "wpcas ste st %d pos %llu ok %llu f %llu tas %llu p %llu ts %lld ta %lld w %d",
			  ad->antic_status,
			  (unsigned long long)aic->last_request_pos,
			  aic->antic.succeeded, aic->antic.failed,
			  div_u64(wpcas_t_as(aic), NSEC_PER_USEC),
			  div_u64(wpcas_period_ns(ad), NSEC_PER_USEC),
			  div_s64(t_s, NSEC_PER_USEC), div_s64(t_a, NSEC_PER_USEC),
			  wait);
}

/*
 * STE: is delta > 0, i.e. worth waiting rather than serving @cand? With n
 * finished anticipations, n * delta = ok * (T_s - T_a - T_as) - failed * P
 * has delta's sign; with none, p_s is prior_ps (in thousandths, so
 * 1000 * delta = prior * gain - (1000 - prior) * P).
 */
static bool wpcas_worth_waiting(struct as_data *ad, struct request *cand)
{
	struct wpcas_data *w = wpcas_of(ad);
	struct as_io_context *aic = &ad->target->aic;
	u64 ok = aic->antic.succeeded, failed = aic->antic.failed;
	sector_t head = ad->last_sector[ad->batch.dir];
	s64 t_s, t_a, gain;
	bool wait;

	if (ok + failed == 0) {
		ok = w->prior_ps_milli;
		failed = 1000 - w->prior_ps_milli;
	}
	/* keep the products in range; the ratio is what counts */
	while (ok + failed > (1ULL << 30)) {
		ok >>= 1;
		failed >>= 1;
	}
	t_s = wpcas_seek_ns(w, head, blk_rq_pos(cand));
	t_a = wpcas_seek_ns(w, head, head + aic->seek.mean);
	gain = t_s - t_a - (s64)wpcas_t_as(aic);
	/*
	 * Is ok * gain > failed * P? failed * P fits in 64 bits (failed is
	 * below 2^30, P at most max_wait_ms = 1 s < 2^30 ns); ok * gain need
	 * not: with the seek tunables in their ranges gain reaches 2^52 ns,
	 * and (s64)ok * gain overflowed once ok passed about 2^11 (the
	 * decision flipped). Bounding gain instead decided wrongly where
	 * failed * P passes the bound. For ok > 0 and gain > 0 the test is
	 * gain > floor(failed * P / ok), exactly, in 64 bits.
	 */
	if (ok == 0 || gain <= 0)
		wait = false;
	else
		wait = (u64)gain > div64_u64(failed * wpcas_period_ns(ad), ok);
	wpcas_trace_ste(ad, t_s, t_a, wait);
	return wait;
}

static bool wpcas_experienced(struct as_data *ad)
{
	const struct as_io_context *aic = &ad->target->aic;

	return aic->antic.succeeded + aic->antic.failed >=
	       wpcas_of(ad)->min_samples;
}

/*
 * The decision shape WPCAS shares with the 95% heuristic
 * (break_unless_worth_waiting): on an arrival, AS's cooperation steps; at
 * dispatch, break for a queued or exited target, AS's rule while the
 * process is not experienced, otherwise wait iff STE says so.
 */
static bool wpcas_can_break(struct as_data *ad, struct request *rq,
			    enum as_moment at)
{
	if (at == AS_AT_ARRIVAL)
		return as_cooperation_breaks(ad, rq);
	if (as_target_has_queued(ad) || as_exited_unrescued(ad))
		return true;
	if (!wpcas_experienced(ad)) {
		bool brk = as_cooperation_breaks(ad, rq) ||
			   as_thinks_too_long(ad);

		blk_add_trace_msg(ad->q, "wpcas as st %d pos %llu w %d",
				  ad->antic_status,
				  (unsigned long long)ad->target->aic.last_request_pos,
				  !brk);
		return brk;
	}
	/* nothing queued: nothing to lose by waiting */
	if (!rq)
		return false;
	return !wpcas_worth_waiting(ad, rq);
}

static u64 wpcas_wait_ns(struct as_data *ad)
{
	if (!wpcas_experienced(ad) && wpcas_ioc_of(ad->target)->len == 0)
		return ad->antic_expire;
	return wpcas_period_ns(ad);
}

static int wpcas_init(struct as_data *ad)
{
	struct wpcas_data *w;

	w = kzalloc_node(sizeof(*w), GFP_KERNEL, ad->q->node);
	if (!w)
		return -ENOMEM;
	w->hist_len = WPCAS_HIST_LEN;
	w->window_ms = WPCAS_WINDOW_MS;
	w->gamma_milli = WPCAS_GAMMA_MILLI;
	w->prior_ps_milli = WPCAS_PRIOR_PS_MILLI;
	w->min_samples = WPCAS_MIN_SAMPLES;
	w->max_wait_ns = WPCAS_MAX_WAIT_MS * NSEC_PER_MSEC;
	w->seek_cyl_sectors = WPCAS_SEEK_CYL_SECTORS;
	w->seek_linear_cyl = WPCAS_SEEK_LINEAR_CYL;
	w->seek_sqrt_a_ns = WPCAS_SEEK_SQRT_A_NS;
	w->seek_sqrt_b_ns = WPCAS_SEEK_SQRT_B_NS;
	w->seek_lin_a_ns = WPCAS_SEEK_LIN_A_NS;
	w->seek_lin_b_ps = WPCAS_SEEK_LIN_B_PS;
	ad->policy_data = w;
	return 0;
}

static void wpcas_exit(struct as_data *ad)
{
	kfree(ad->policy_data);
	ad->policy_data = NULL;
}

/* ---- sysfs: WPCAS's files, after the core's ---- */

static struct as_data *wpcas_ad(struct elevator_queue *e)
{
	return e->elevator_data;
}

static struct wpcas_data *wpcas_elv_data(struct elevator_queue *e)
{
	return wpcas_of(wpcas_ad(e));
}

/*
 * A whole-number tunable, clamped to [min, max], stored times the scale
 * its field function gives (ms in sysfs, ns inside for max_wait_ms).
 */
#define WPCAS_U64_ATTR(name, ptr, scale, min, max)			\
static u64 *wpcas_##name##_field(struct wpcas_data *w, u64 *sc)		\
{									\
	u64 *field = ptr;						\
									\
	*sc = scale;							\
	return field;							\
}									\
static ssize_t wpcas_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	u64 sc, *field = wpcas_##name##_field(wpcas_elv_data(e), &sc);	\
									\
	return as_show_u64(field, sc, page);				\
}									\
static ssize_t wpcas_##name##_store(struct elevator_queue *e,		\
				    const char *page, size_t count)	\
{									\
	u64 sc, *field = wpcas_##name##_field(wpcas_elv_data(e), &sc);	\
									\
	return as_store_u64(wpcas_ad(e), field, min, max, sc, page,	\
			    count);					\
}

WPCAS_U64_ATTR(hist_len, &w->hist_len, 1, 1, WPCAS_HIST_MAX)
WPCAS_U64_ATTR(window_ms, &w->window_ms, 1, 1, WPCAS_RANGE_MS)
WPCAS_U64_ATTR(min_samples, &w->min_samples, 1, 0, 1000000)
/* the cap on P: ms in sysfs, ns inside; 1 s at most */
WPCAS_U64_ATTR(max_wait_ms, &w->max_wait_ns, NSEC_PER_MSEC, 0, 1000)
/* limits that keep the seek model's products within 64 bits */
WPCAS_U64_ATTR(seek_cyl_sectors, &w->seek_cyl_sectors, 1, 1, 1ULL << 32)
WPCAS_U64_ATTR(seek_linear_cyl, &w->seek_linear_cyl, 1, 0, 1ULL << 31)
WPCAS_U64_ATTR(seek_sqrt_a_ns, &w->seek_sqrt_a_ns, 1, 0, 10000000000ULL)
WPCAS_U64_ATTR(seek_sqrt_b_ns, &w->seek_sqrt_b_ns, 1, 0, 1000000000ULL)
WPCAS_U64_ATTR(seek_lin_a_ns, &w->seek_lin_a_ns, 1, 0, 10000000000ULL)
WPCAS_U64_ATTR(seek_lin_b_ps, &w->seek_lin_b_ps, 1, 0, 1000000000ULL)
#undef WPCAS_U64_ATTR

/* Fractions in [0, 1] with up to three decimals ("0.5"): gamma, prior_ps. */
static int wpcas_parse_milli(const char *s, u32 *out)
{
	u32 whole = 0, frac = 0, scale = 100;
	bool digits = false;

	for (; *s >= '0' && *s <= '9'; s++, digits = true)
		whole = min(whole * 10 + (*s - '0'), 10U);
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, digits = true) {
			frac += (*s - '0') * scale;
			scale /= 10;
		}
	}
	if (*s == '\n')
		s++;
	if (!digits || *s)
		return -EINVAL;
	*out = min(whole * 1000 + frac, 1000U);
	return 0;
}

#define WPCAS_MILLI_ATTR(name)						\
static ssize_t wpcas_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	u32 v = READ_ONCE(wpcas_elv_data(e)->name##_milli);		\
									\
	return sysfs_emit(page, "%u.%03u\n", v / 1000, v % 1000);	\
}									\
static ssize_t wpcas_##name##_store(struct elevator_queue *e,		\
				    const char *page, size_t count)	\
{									\
	struct as_data *ad = wpcas_ad(e);				\
	u32 v;								\
	int ret = wpcas_parse_milli(page, &v);				\
									\
	if (ret)							\
		return ret;						\
	spin_lock_irq(&ad->lock);					\
	wpcas_of(ad)->name##_milli = v;					\
	spin_unlock_irq(&ad->lock);					\
	return count;							\
}

WPCAS_MILLI_ATTR(gamma)
WPCAS_MILLI_ATTR(prior_ps)
#undef WPCAS_MILLI_ATTR

#define WPCAS_ATTR(name) \
	__ATTR(name, 0644, wpcas_##name##_show, wpcas_##name##_store)

static const struct elv_fs_entry wpcas_attrs[] = {
	WPCAS_ATTR(hist_len),
	WPCAS_ATTR(window_ms),
	WPCAS_ATTR(gamma),
	WPCAS_ATTR(min_samples),
	WPCAS_ATTR(max_wait_ms),
	WPCAS_ATTR(prior_ps),
	WPCAS_ATTR(seek_cyl_sectors),
	WPCAS_ATTR(seek_linear_cyl),
	WPCAS_ATTR(seek_sqrt_a_ns),
	WPCAS_ATTR(seek_sqrt_b_ns),
	WPCAS_ATTR(seek_lin_a_ns),
	WPCAS_ATTR(seek_lin_b_ps),
	__ATTR_NULL
};

#undef WPCAS_ATTR

const struct as_policy as_policy_wpcas = {
	.name		= "wpcas",
	.icq_data_size	= sizeof(struct wpcas_ioc),
	.init		= wpcas_init,
	.exit		= wpcas_exit,
	.can_break	= wpcas_can_break,
	.wait_ns	= wpcas_wait_ns,
	.on_sample	= wpcas_on_sample,
	.attrs		= wpcas_attrs,
};
