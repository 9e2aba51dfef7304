// SPDX-License-Identifier: GPL-2.0
/*
 * Per-process I/O history of AS (2.6.20 struct as_io_context) and the
 * queue-wide priors (struct as_data's new_ttime_*, new_seek_*,
 * exit_prob, exit_no_coop), with their fixed-point decay.
 *
 * Copyright (C) 2026 the iolab authors
 */
#include <linux/slab.h>

#include "as-iosched.h"

/*
 * as_update_seekdist (2.6.20): seek samples are clamped to
 * 4 * mean + 2 Mi sectors while the sample weight is at most 60 (the first
 * three samples), then to 4 * mean + 128 Ki sectors (64 MiB).
 */
#define AS_SEEK_SLACK_NEW	(2ULL * 1024 * 1024)
#define AS_SEEK_SLACK		(2ULL * 1024 * 64)
#define AS_SEEK_NEW_WEIGHT	60

/* One step of the decaying average: (7 * old + new) / 8. */
static u64 as_decay(u64 old, u64 new)
{
	return (7 * old + new) / 8;
}

/* A probability (in 1/256) after an event: (7p + 256) / 8. */
u64 as_event(u64 p)
{
	return as_decay(p, AS_FP_ONE);
}

/* A probability after a non-event: 7p / 8. */
u64 as_non_event(u64 p)
{
	return as_decay(p, 0);
}

static void as_ewma_push(struct as_ewma *e, u64 x)
{
	e->samples = as_decay(e->samples, AS_FP_ONE);
	e->total = as_decay(e->total, AS_FP_ONE * x);
}

/* A prior's total decays without weight: its mean is total / 256. */
static u64 as_feed_prior(u64 *total, u64 x)
{
	*total = as_decay(*total, AS_FP_ONE * x);
	return *total / AS_FP_ONE;
}

/*
 * as_update_thinktime: a process's first sample also feeds the prior and
 * counts as a non-event for exit_prob (it did not exit).
 */
static void as_update_thinktime(struct as_data *ad, struct as_io_context *aic,
				u64 ttime)
{
	struct as_priors *p = &ad->priors;
	struct as_ewma *t = &aic->ttime;

	if (t->samples == 0) {
		p->new_ttime_mean = as_feed_prior(&p->new_ttime_total, ttime);
		p->exit_prob = as_non_event(p->exit_prob);
	}
	as_ewma_push(t, ttime);
	t->mean = div64_u64(t->total + AS_FP_ONE / 2, t->samples);
}

/*
 * as_update_seekdist: the prior sees the raw distance, the process's own
 * history sees it clamped, so one far seek cannot swamp it.
 */
static void as_update_seekdist(struct as_data *ad, struct as_io_context *aic,
			       u64 sdist)
{
	struct as_priors *p = &ad->priors;
	struct as_ewma *s = &aic->seek;
	u64 slack;

	if (s->samples == 0)
		p->new_seek_mean = as_feed_prior(&p->new_seek_total, sdist);
	slack = s->samples <= AS_SEEK_NEW_WEIGHT ? AS_SEEK_SLACK_NEW :
						    AS_SEEK_SLACK;
	as_ewma_push(s, min(sdist, s->mean * 4 + slack));
	s->mean = div64_u64(s->total + s->samples / 2, s->samples);
}

/**
 * as_update_iohist - fold a sync request into a process's history
 * @ad: the queue
 * @proc: the process whose history is updated
 * @rq: the request
 * @out: the sample taken, if any
 *
 * as_update_iohist of 2.6.20. Called on insert (before nr_queued counts
 * @rq) and, by AS, for a cooperating process's close request. The think
 * time is the time since the process's last sync completion, in whole
 * ticks capped at MAX_THINKTIME - 1, and 0 unless it has completed sync
 * I/O and has nothing queued. Returns whether a sample was taken.
 */
bool as_update_iohist(struct as_data *ad, struct as_proc *proc,
		      struct request *rq, struct as_sample *out)
{
	struct as_io_context *aic = &proc->aic;
	sector_t pos = blk_rq_pos(rq);
	bool sampled = false;

	if (!op_is_sync(rq->cmd_flags))
		return false;
	if (aic->io_running || aic->io_started) {
		u64 think_ns = 0, think_ticks = 0, seek;

		if (aic->io_running && aic->nr_queued == 0) {
			think_ns = ad->now > aic->last_end_request ?
				   ad->now - aic->last_end_request : 0;
			think_ticks = min_t(u64, AS_MAX_THINKTIME - 1,
					    as_ticks_elapsed(aic->last_end_request,
							     ad->now));
		}
		seek = pos > aic->last_request_pos ?
		       pos - aic->last_request_pos :
		       aic->last_request_pos - pos;
		as_update_thinktime(ad, aic, think_ticks);
		as_update_seekdist(ad, aic, seek);
		if (out) {
			out->think_ns = think_ns;
			out->think_ticks = think_ticks;
			out->seek_sectors = seek;
		}
		sampled = true;
	}
	aic->last_request_pos = pos + blk_rq_sectors(rq);
	aic->io_started = true;
	return sampled;
}

/*
 * as_put_io_context for a completed sync request: the process has I/O
 * running, and its think time starts now.
 */
void as_completed_sync(struct as_data *ad, struct as_proc *proc)
{
	proc->aic.io_running = true;
	proc->aic.last_end_request = ad->now;
}

/* Drop a reference on a process's state (any context). */
void as_proc_put(struct as_data *ad, struct as_proc *proc)
{
	if (proc && refcount_dec_and_test(&proc->ref)) {
		atomic_dec(&ad->nr_procs);
		kfree(proc);
	}
}
