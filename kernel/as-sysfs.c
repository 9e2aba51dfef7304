// SPDX-License-Identifier: GPL-2.0
/*
 * Tunables and counters under /sys/block/<dev>/queue/iosched/.
 *
 * Tunables take Linux's names and units: times in ms (stored in ns), out
 * of range values clamped as 2.6.20's STORE_FUNCTION does. Counters are
 * read-only: the Table 1 accounting of the WPCAS paper (A-T, A-S, A-F,
 * A-ST, A-FT) and the request counts; "stats" prints them all from one
 * snapshot taken under the queue's lock, so that A-T = A-S + A-F can be
 * checked while I/O runs.
 *
 * Copyright (C) 2026 the iolab authors
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "as-iosched.h"
#include "wpcas.h"

static struct as_data *as_elv_data(struct elevator_queue *e)
{
	return e->elevator_data;
}

static ssize_t as_store_u64(struct as_data *ad, u64 *field, u64 min,
			    u64 max, u64 scale, const char *page,
			    size_t count)
{
	u64 v;
	int ret = kstrtou64(page, 10, &v);

	if (ret)
		return ret;
	v = clamp(v, min, max);
	spin_lock_irq(&ad->lock);
	*field = v * scale;
	spin_unlock_irq(&ad->lock);
	return count;
}

static ssize_t as_show_ms(const u64 *field, char *page)
{
	return sysfs_emit(page, "%llu\n",
			  div_u64(READ_ONCE(*field), NSEC_PER_MSEC));
}

/* A time tunable: ms in sysfs, ns inside. */
#define AS_MS_ATTR(name, ptr, max_ms)					\
static u64 *as_##name##_field(struct as_data *ad)			\
{									\
	u64 *field = ptr;						\
									\
	return field;							\
}									\
static ssize_t as_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	return as_show_ms(as_##name##_field(as_elv_data(e)), page);	\
}									\
static ssize_t as_##name##_store(struct elevator_queue *e,		\
				 const char *page, size_t count)	\
{									\
	struct as_data *ad = as_elv_data(e);				\
									\
	return as_store_u64(ad, as_##name##_field(ad), 0, max_ms,	\
			    NSEC_PER_MSEC, page, count);		\
}

/* 2.6.20 accepts 0 to INT_MAX ms for each of these. */
AS_MS_ATTR(read_expire, &ad->fifo_expire[AS_SYNC], INT_MAX)
AS_MS_ATTR(write_expire, &ad->fifo_expire[AS_ASYNC], INT_MAX)
AS_MS_ATTR(read_batch_expire, &ad->batch_expire[AS_SYNC], INT_MAX)
AS_MS_ATTR(write_batch_expire, &ad->batch_expire[AS_ASYNC], INT_MAX)
/* A wait of more than 0.6 s is no longer anticipation (as the simulator). */
AS_MS_ATTR(antic_expire, &ad->antic_expire, 600)

/* A switch or count: shown and stored as it is, clamped to [min, max]. */
#define AS_U64_ATTR(name, ptr, min, max)				\
static u64 *as_##name##_field(struct as_data *ad)			\
{									\
	u64 *field = ptr;						\
									\
	return field;							\
}									\
static ssize_t as_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	return sysfs_emit(page, "%llu\n",				\
			  READ_ONCE(*as_##name##_field(as_elv_data(e))));	\
}									\
static ssize_t as_##name##_store(struct elevator_queue *e,		\
				 const char *page, size_t count)	\
{									\
	struct as_data *ad = as_elv_data(e);				\
									\
	return as_store_u64(ad, as_##name##_field(ad), min, max, 1,	\
			    page, count);				\
}

/* as_request_merge and as_allow_merge: 0 as 2.6.20, 1 within a class. */
AS_U64_ATTR(merge_by_class, &ad->merge_by_class, 0, 1)

/* Anticipations still running are reported once they end (wait.rs). */
static void as_snapshot(struct as_data *ad, struct as_antic_stats *s)
{
	*s = ad->stats;
	if (as_waiting(ad))
		s->started--;
}

#define AS_COUNTER_ATTR(name, expr)					\
static ssize_t as_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	struct as_data *ad = as_elv_data(e);				\
	struct as_antic_stats s;					\
	u64 v;								\
									\
	spin_lock_irq(&ad->lock);					\
	as_snapshot(ad, &s);						\
	v = (expr);							\
	spin_unlock_irq(&ad->lock);					\
	return sysfs_emit(page, "%llu\n", v);				\
}

AS_COUNTER_ATTR(antic_started, s.started)
AS_COUNTER_ATTR(antic_succeeded, s.succeeded)
AS_COUNTER_ATTR(antic_failed, s.failed)
AS_COUNTER_ATTR(antic_success_wait_ns, s.success_wait_ns)
AS_COUNTER_ATTR(antic_failure_wait_ns, s.failure_wait_ns)
AS_COUNTER_ATTR(dispatched, ad->dispatched)
AS_COUNTER_ATTR(completed, ad->completed)
AS_COUNTER_ATTR(merged, ad->merged)

static ssize_t as_stats_show(struct elevator_queue *e, char *page)
{
	struct as_data *ad = as_elv_data(e);
	struct as_antic_stats s;
	u64 ins, dis, com, req, mer, exi;
	u32 queued, in_flight;

	spin_lock_irq(&ad->lock);
	as_snapshot(ad, &s);
	ins = ad->inserted;
	dis = ad->dispatched;
	com = ad->completed;
	req = ad->requeued;
	mer = ad->merged;
	exi = ad->antic_exited;
	queued = ad->nr_queued;
	in_flight = ad->nr_dispatched;
	spin_unlock_irq(&ad->lock);
	return sysfs_emit(page,
			  "antic_started %llu\nantic_succeeded %llu\n"
			  "antic_failed %llu\nantic_success_wait_ns %llu\n"
			  "antic_failure_wait_ns %llu\nantic_target_exited %llu\n"
			  "inserted %llu\n"
			  "dispatched %llu\ncompleted %llu\nrequeued %llu\n"
			  "merged %llu\nqueued %u\nin_flight %u\n",
			  s.started, s.succeeded, s.failed, s.success_wait_ns,
			  s.failure_wait_ns, exi, ins, dis, com, req, mer, queued,
			  in_flight);
}

#define AS_ATTR(name) \
	__ATTR(name, 0644, as_##name##_show, as_##name##_store)
#define AS_ATTR_RO(name) \
	__ATTR(name, 0444, as_##name##_show, NULL)

/* The core's files: every elevator of the family has them. */
struct elv_fs_entry as_core_attrs_as[] = {
	AS_ATTR(read_expire),
	AS_ATTR(write_expire),
	AS_ATTR(read_batch_expire),
	AS_ATTR(write_batch_expire),
	AS_ATTR(antic_expire),
	AS_ATTR(merge_by_class),
	AS_ATTR_RO(antic_started),
	AS_ATTR_RO(antic_succeeded),
	AS_ATTR_RO(antic_failed),
	AS_ATTR_RO(antic_success_wait_ns),
	AS_ATTR_RO(antic_failure_wait_ns),
	AS_ATTR_RO(dispatched),
	AS_ATTR_RO(completed),
	AS_ATTR_RO(merged),
	AS_ATTR_RO(stats),
	__ATTR_NULL
};

/* ---- WPCAS ---- */

static struct wpcas_data *wpcas_elv_data(struct elevator_queue *e)
{
	return as_elv_data(e)->policy_data;
}

/* Store a u64 tunable of WPCAS: sysfs value * scale, clamped. */
static ssize_t wpcas_store(struct elevator_queue *e, u64 *field, u64 min,
			   u64 max, u64 scale, const char *page, size_t count)
{
	u64 v;
	int ret = kstrtou64(page, 10, &v);

	if (ret)
		return ret;
	v = clamp(v, min, max) * scale;
	spin_lock_irq(&as_elv_data(e)->lock);
	*field = v;
	spin_unlock_irq(&as_elv_data(e)->lock);
	return count;
}

static ssize_t wpcas_show(const u64 *field, u64 scale, char *page)
{
	return sysfs_emit(page, "%llu\n", div64_u64(READ_ONCE(*field), scale));
}

#define WPCAS_U64_ATTR(name, ptr, min, max)				\
static u64 *as_##name##_field(struct wpcas_data *w)			\
{									\
	u64 *field = ptr;						\
									\
	return field;							\
}									\
static ssize_t as_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	return wpcas_show(as_##name##_field(wpcas_elv_data(e)), 1, page); \
}									\
static ssize_t as_##name##_store(struct elevator_queue *e,		\
				 const char *page, size_t count)	\
{									\
	return wpcas_store(e, as_##name##_field(wpcas_elv_data(e)),	\
			   min, max, 1, page, count);			\
}

WPCAS_U64_ATTR(hist_len, &w->hist_len, 1, WPCAS_HIST_MAX)
WPCAS_U64_ATTR(window_ms, &w->window_ms, 1, 20)
WPCAS_U64_ATTR(min_samples, &w->min_samples, 0, 1000000)

/* The cap on P: ms in sysfs, ns inside. */
static ssize_t as_max_wait_ms_show(struct elevator_queue *e, char *page)
{
	return wpcas_show(&wpcas_elv_data(e)->max_wait_ns, NSEC_PER_MSEC,
			  page);
}

static ssize_t as_max_wait_ms_store(struct elevator_queue *e,
				    const char *page, size_t count)
{
	return wpcas_store(e, &wpcas_elv_data(e)->max_wait_ns, 0, 1000,
			   NSEC_PER_MSEC, page, count);
}

/* Limits keep the seek model's products within 64 bits. */
WPCAS_U64_ATTR(seek_cyl_sectors, &w->seek_cyl_sectors, 1, 1ULL << 32)
WPCAS_U64_ATTR(seek_linear_cyl, &w->seek_linear_cyl, 0, 1ULL << 31)
WPCAS_U64_ATTR(seek_sqrt_a_ns, &w->seek_sqrt_a_ns, 0, 10000000000ULL)
WPCAS_U64_ATTR(seek_sqrt_b_ns, &w->seek_sqrt_b_ns, 0, 1000000000ULL)
WPCAS_U64_ATTR(seek_lin_a_ns, &w->seek_lin_a_ns, 0, 10000000000ULL)
WPCAS_U64_ATTR(seek_lin_b_ps, &w->seek_lin_b_ps, 0, 1000000000ULL)

/* Fractions in [0, 1] with up to three decimals ("0.5"): gamma, prior_ps. */
static ssize_t wpcas_show_milli(u32 *field, char *page)
{
	u32 v = READ_ONCE(*field);

	return sysfs_emit(page, "%u.%03u\n", v / 1000, v % 1000);
}

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

static ssize_t wpcas_store_milli(struct elevator_queue *e, u32 *field,
				 const char *page, size_t count)
{
	struct as_data *ad = as_elv_data(e);
	u32 v;
	int ret = wpcas_parse_milli(page, &v);

	if (ret)
		return ret;
	spin_lock_irq(&ad->lock);
	*field = v;
	spin_unlock_irq(&ad->lock);
	return count;
}

static ssize_t as_gamma_show(struct elevator_queue *e, char *page)
{
	return wpcas_show_milli(&wpcas_elv_data(e)->gamma_milli, page);
}

static ssize_t as_gamma_store(struct elevator_queue *e, const char *page,
			      size_t count)
{
	return wpcas_store_milli(e, &wpcas_elv_data(e)->gamma_milli, page,
				 count);
}

static ssize_t as_prior_ps_show(struct elevator_queue *e, char *page)
{
	return wpcas_show_milli(&wpcas_elv_data(e)->prior_ps_milli, page);
}

static ssize_t as_prior_ps_store(struct elevator_queue *e, const char *page,
				 size_t count)
{
	return wpcas_store_milli(e, &wpcas_elv_data(e)->prior_ps_milli, page,
				 count);
}

static struct elv_fs_entry wpcas_own_attrs[] = {
	AS_ATTR(hist_len),
	AS_ATTR(window_ms),
	AS_ATTR(gamma),
	AS_ATTR(min_samples),
	AS_ATTR(max_wait_ms),
	AS_ATTR(prior_ps),
	AS_ATTR(seek_cyl_sectors),
	AS_ATTR(seek_linear_cyl),
	AS_ATTR(seek_sqrt_a_ns),
	AS_ATTR(seek_sqrt_b_ns),
	AS_ATTR(seek_lin_a_ns),
	AS_ATTR(seek_lin_b_ps),
};

/* The core's files, then WPCAS's own: filled by as_sysfs_init(). */
struct elv_fs_entry as_attrs_wpcas[ARRAY_SIZE(as_core_attrs_as) +
				   ARRAY_SIZE(wpcas_own_attrs)];

void as_sysfs_init(void)
{
	size_t core = ARRAY_SIZE(as_core_attrs_as) - 1;

	memcpy(as_attrs_wpcas, as_core_attrs_as,
	       core * sizeof(as_core_attrs_as[0]));
	memcpy(as_attrs_wpcas + core, wpcas_own_attrs,
	       sizeof(wpcas_own_attrs));
	memset(&as_attrs_wpcas[ARRAY_SIZE(as_attrs_wpcas) - 1], 0,
	       sizeof(as_attrs_wpcas[0]));
}
