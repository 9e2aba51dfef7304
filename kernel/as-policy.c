// SPDX-License-Identifier: GPL-2.0
/*
 * Linux 2.6.20 AS's policy: steps 3 to 8 of as_can_break_anticipation,
 * with as_close_req, and a fixed wait of antic_expire (as_antic_waitnext).
 * Steps 1 and 2 are the core's. The helpers below are shared with WPCAS,
 * which keeps these steps and replaces step 7.
 *
 * Copyright (C) 2026 the iolab authors
 */
#include "as-iosched.h"

/* as_close_req (2.6.20): base window of 8192 sectors (4 MiB)... */
#define AS_CLOSE_WINDOW		8192ULL
/* ...widening with the wait only up to this many ms. */
#define AS_CLOSE_MAX_DELAY_MS	20
/* Half, in 1/256: the exit probabilities' thresholds. */
#define AS_HALF			(AS_FP_ONE / 2)

/* antic_expire as 2.6.20 stores it: msecs_to_jiffies of the sysfs ms. */
static u64 as_antic_expire_ticks(struct as_data *ad)
{
	return as_ns_to_ticks_ceil(ad->antic_expire);
}

/*
 * as_close_req: is @rq near where the target's next request is expected?
 * The window is 8192 sectors ahead (half that behind) of the last
 * dispatched position of the batch's direction, doubling for every ms the
 * wait has lasted (2.6.20 compares that delay in ms with antic_expire in
 * jiffies; with 1 ms ticks they agree). A longer wait counts as close. A
 * request within the target's mean seek distance is close too.
 */
static bool as_close_req(struct as_data *ad, struct as_io_context *aic,
			 struct request *rq)
{
	sector_t last = ad->last_sector[ad->batch.dir];
	sector_t next = blk_rq_pos(rq);
	u64 delay_ms = 0, delta, mean, dist;

	if (ad->antic_status != ANTIC_OFF && ad->ioc_finished)
		delay_ms = as_ticks_elapsed(ad->antic_start, ad->now);
	if (delay_ms == 0)
		delta = AS_CLOSE_WINDOW;
	else if (delay_ms <= AS_CLOSE_MAX_DELAY_MS &&
		 delay_ms <= as_antic_expire_ticks(ad))
		delta = AS_CLOSE_WINDOW << delay_ms;
	else
		return true;
	if (last <= next + delta / 2 && next <= last + delta)
		return true;
	mean = aic->seek.samples ? aic->seek.mean : ad->priors.new_seek_mean;
	dist = next > last ? next - last : last - next;
	return mean > dist;
}

/* Step 4: the target has more requests queued. */
bool as_target_has_queued(struct as_data *ad)
{
	return ad->target->aic.nr_queued > 0;
}

/*
 * Step 5: a close sync request from another, cooperating, process. It
 * becomes part of the target's history; if the target has exited, this is
 * the "rescued by a cooperating request" case.
 */
static bool as_close_cooperator(struct as_data *ad, struct request *rq)
{
	struct as_io_context *aic = &ad->target->aic;
	struct as_priors *p = &ad->priors;

	if (!rq || !op_is_sync(rq->cmd_flags) || !as_close_req(ad, aic, rq))
		return false;
	if (!aic->running) {
		if (aic->ttime.samples == 0)
			p->exit_prob = as_event(p->exit_prob);
		p->exit_no_coop = as_non_event(p->exit_no_coop);
	}
	as_update_iohist(ad, ad->target, rq, NULL);
	return true;
}

/*
 * Step 6: the target has exited; break if exited processes are usually
 * not rescued by cooperating requests.
 */
bool as_exited_unrescued(struct as_data *ad)
{
	struct as_io_context *aic = &ad->target->aic;
	struct as_priors *p = &ad->priors;

	if (aic->running)
		return false;
	if (aic->ttime.samples == 0)
		p->exit_prob = as_event(p->exit_prob);
	return p->exit_no_coop > AS_HALF;
}

/*
 * Steps 3 to 6. Step 3 (the target has no io context: wait) cannot apply:
 * the target is always an icq.
 */
bool as_cooperation_breaks(struct as_data *ad, struct request *rq)
{
	return as_target_has_queued(ad) || as_close_cooperator(ad, rq) ||
	       as_exited_unrescued(ad);
}

/*
 * Step 7: the target thinks longer than antic_expire between requests
 * (judged by the priors for a process with no history, which may also
 * just have exited). Step 8: otherwise wait.
 */
bool as_thinks_too_long(struct as_data *ad)
{
	struct as_io_context *aic = &ad->target->aic;
	struct as_priors *p = &ad->priors;
	u64 expire = as_antic_expire_ticks(ad);

	if (aic->ttime.samples == 0)
		return p->new_ttime_mean > expire ||
		       p->exit_prob * p->exit_no_coop > AS_HALF * AS_FP_ONE;
	return aic->ttime.mean > expire;
}

static bool as_can_break_as(struct as_data *ad, struct request *rq,
			    enum as_moment at)
{
	return as_cooperation_breaks(ad, rq) || as_thinks_too_long(ad);
}

/* AS waits antic_expire for everyone. */
static u64 as_wait_ns_as(struct as_data *ad)
{
	return ad->antic_expire;
}

const struct as_policy as_policy_as = {
	.name		= "anticipatory",
	.can_break	= as_can_break_as,
	.wait_ns	= as_wait_ns_as,
};
