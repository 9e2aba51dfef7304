// SPDX-License-Identifier: GPL-2.0
/*
 * The anticipation state machine (2.6.20's enum anticipation_status: OFF /
 * WAIT_REQ / WAIT_NEXT / FINISHED; as_antic_waitreq, as_antic_waitnext,
 * as_antic_stop, as_antic_timeout), its hrtimer, and the Table 1
 * accounting of the WPCAS paper.
 *
 * An anticipation starts when dispatch decides to wait, succeeds when an
 * arriving request ends it (as_update_rq -> as_antic_stop) and fails when
 * the timer ends it (as_antic_timeout) or anything else does; every start
 * ends once, so A-T = A-S + A-F. A wait still running is reported once it
 * ends.
 *
 * The timer callback runs in hardirq context: it takes ad->lock with
 * interrupts saved, flips the state, and runs the queue asynchronously.
 *
 * Copyright (C) 2026 the iolab authors
 */
#include <linux/blk-mq.h>
#include <linux/blktrace_api.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>

#include "as-iosched.h"

static void as_tally(struct as_antic_stats *s, bool success, u64 waited)
{
	if (success) {
		s->succeeded++;
		s->success_wait_ns += waited;
		s->success_wait_bins[min_t(u64, div64_u64(waited, AS_WAIT_BIN_NS),
					   AS_WAIT_BINS - 1)]++;
	} else {
		s->failed++;
		s->failure_wait_ns += waited;
	}
}

/*
 * Count the end of a wait. Time counts from entering WAIT_NEXT: the time
 * the disk sits idle for the target. A wait that ends in WAIT_REQ waited
 * 0 ns (the target's own request was still being served).
 */
static void as_antic_record(struct as_data *ad, bool success)
{
	u64 waited = 0;

	if (ad->antic_status == ANTIC_WAIT_NEXT && ad->now > ad->idle_from)
		waited = ad->now - ad->idle_from;
	as_tally(&ad->stats, success, waited);
	if (ad->target) {
		/* for `iolab kernel decisions`, as wpcas_trace_ste */
		blk_add_trace_msg(ad->q, "as end pos %llu ok %d waited %llu",
				  (unsigned long long)ad->target->aic.last_request_pos,
				  success, div_u64(waited, NSEC_PER_USEC));
		as_tally(&ad->target->aic.antic, success, waited);
		if (!ad->target->aic.running)
			ad->antic_exited++;
	}
}

/* as_antic_waitnext: arm the timer for antic_start + wait. */
void as_antic_waitnext(struct as_data *ad, u64 wait_ns)
{
	ad->antic_deadline = ad->antic_start + wait_ns;
	ad->antic_status = ANTIC_WAIT_NEXT;
	ad->idle_from = ad->now;
	hrtimer_start(&ad->antic_timer, ns_to_ktime(ad->antic_deadline),
		      HRTIMER_MODE_ABS);
}

/*
 * as_antic_waitreq: start anticipating. With the target's request already
 * complete, go straight to WAIT_NEXT; else wait for it to complete.
 */
void as_antic_waitreq(struct as_data *ad)
{
	if (ad->antic_status != ANTIC_OFF)
		return;
	ad->stats.started++;
	if (ad->target) {
		ad->target->aic.antic.started++;
		/* req 1: the target's own request is still in flight */
		blk_add_trace_msg(ad->q, "as start pos %llu req %d",
				  (unsigned long long)ad->target->aic.last_request_pos,
				  !ad->ioc_finished);
	}
	if (!ad->target || ad->ioc_finished)
		as_antic_waitnext(ad, ad->policy->wait_ns(ad));
	else
		ad->antic_status = ANTIC_WAIT_REQ;
}

/*
 * as_antic_stop: end a wait (FINISHED; the caller's queue run serves the
 * best request). A no-op unless waiting. The timer is only tried: its
 * callback takes ad->lock, so it cannot be waited for here; if it is
 * running it will find the wait over and do nothing.
 */
void as_antic_stop(struct as_data *ad, bool success)
{
	if (!as_waiting(ad))
		return;
	as_antic_record(ad, success);
	ad->antic_status = ANTIC_FINISHED;
	hrtimer_try_to_cancel(&ad->antic_timer);
}

/*
 * as_antic_timeout: the wait ran out. A target with no history that was
 * waited on in vain counts as an exit event; an exited target that no
 * cooperating request rescued counts for exit_no_coop.
 */
void as_antic_timeout(struct as_data *ad)
{
	struct as_priors *p = &ad->priors;

	if (!as_waiting(ad))
		return;
	as_antic_record(ad, false);
	ad->antic_status = ANTIC_FINISHED;
	if (ad->target) {
		struct as_io_context *aic = &ad->target->aic;

		if (aic->ttime.samples == 0)
			p->exit_prob = as_event(p->exit_prob);
		if (!aic->running)
			p->exit_no_coop = as_event(p->exit_no_coop);
	}
}

/* Could dispatch make progress now? has_work reads this without the lock. */
void as_update_ready(struct as_data *ad)
{
	bool blocked = as_waiting(ad) ||
		       ad->nr_dispatched >= ad->device_depth ||
		       (ad->batch.changed && ad->nr_dispatched > 0);

	WRITE_ONCE(ad->ready, !blocked);
}

enum hrtimer_restart as_antic_timer_fn(struct hrtimer *timer)
{
	struct as_data *ad = container_of(timer, struct as_data, antic_timer);
	unsigned long flags;
	bool kick = false;

	spin_lock_irqsave(&ad->lock, flags);
	as_set_now(ad, ktime_get_ns());
	/* A stale expiry (the wait ended, or a later one runs) is ignored. */
	if (ad->antic_status == ANTIC_WAIT_NEXT &&
	    ad->now >= ad->antic_deadline) {
		as_antic_timeout(ad);
		kick = ad->nr_queued > 0;
	}
	as_update_ready(ad);
	spin_unlock_irqrestore(&ad->lock, flags);
	if (kick)
		blk_mq_run_hw_queues(ad->q, true);
	return HRTIMER_NORESTART;
}

