// SPDX-License-Identifier: GPL-2.0
/*
 * The anticipation core: Linux 2.6.20 AS (block/as-iosched.c) adapted to
 * blk-mq, with its two policy decisions factored out (as-iosched.h).
 * Requests are sorted per direction (sync/async) and served in batches;
 * during a sync batch the core may hold the device idle, waiting for the
 * process whose request just completed, as the policy decides.
 *
 * Each function names the 2.6.20 function it follows; iolab's
 * docs/kernel.md lists where the module differs from 2.6.20 and why.
 *
 * blk-mq adaptation:
 *  - The anticipation timer is an hrtimer; its callback runs in hardirq
 *    context and only flips the state and kicks the queue asynchronously.
 *  - has_work is false while anticipating, while a direction change drains
 *    and while the device holds as many requests as it takes, so blk-mq
 *    does not re-poll every 3 ms (BLK_MQ_BUDGET_DELAY); whatever ends such
 *    a state (an arrival, the timer, a completion) runs the queue.
 *  - AS decides when the device can take a request, as 2.6.20 did when
 *    the driver pulled one: it never hands blk-mq more requests than the
 *    device's tag depth, so the choice is made as late as possible.
 *  - Completions arrive in interrupt context: every path takes ad->lock
 *    with interrupts off.
 *  - Per-process state (struct as_proc) is refcounted, held by its icq, by
 *    each of its requests and by the core while it is the target: an icq
 *    is freed at a switch before exit_sched stops the timer.
 *
 * Copyright (C) 2026 the iolab authors
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/bio.h>
#include <linux/ktime.h>

#include <trace/events/block.h>

#include "as-iosched.h"
#include "blk.h"
#include "blk-mq.h"
#include "blk-mq-sched.h"

/*
 * as_choose_req (2.6.20): requests more than MAXBACK sectors behind the
 * head wrap to the next sweep (1 Mi sectors = 512 MiB, not tunable in AS);
 * a backward seek costs BACK_PENALTY times a forward one.
 */
#define AS_MAXBACK		(1024ULL * 1024)
#define AS_BACK_PENALTY		2

/* Defaults in ms: 2.6.20's (default_read_expire ...) at HZ=1000. */
#define AS_READ_EXPIRE_MS	125	/* HZ / 8 */
#define AS_WRITE_EXPIRE_MS	250	/* HZ / 4 */
#define AS_READ_BATCH_MS	500	/* HZ / 2 */
#define AS_WRITE_BATCH_MS	125	/* HZ / 8 */
#define AS_ANTIC_EXPIRE_MS	6	/* HZ / 150 */

/* Per-request state in rq->elv.priv[0]. */
#define AS_RQ_SYNC		BIT(0)	/* AS's direction: sync */
#define AS_RQ_QUEUED		BIT(1)	/* in sort_list and fifo_list */
#define AS_RQ_ATHEAD		BIT(2)	/* on ad->dispatch */
#define AS_RQ_DISPATCHED	BIT(3)	/* counted in nr_dispatched */

static inline unsigned long as_rq_flags(struct request *rq)
{
	return (unsigned long)rq->elv.priv[0];
}

static inline void as_rq_set_flags(struct request *rq, unsigned long f)
{
	rq->elv.priv[0] = (void *)f;
}

static inline int as_rq_dir(struct request *rq)
{
	return as_rq_flags(rq) & AS_RQ_SYNC ? AS_SYNC : AS_ASYNC;
}

static inline struct as_data *as_queue_data(struct request_queue *q)
{
	return q->elevator->elevator_data;
}

/* ---- request choice (as_choose_req, as_find_next_rq) ---- */

/* Cost of going from @last to @s; false if @s wraps. */
static bool as_cost(sector_t last, sector_t s, u64 *cost)
{
	if (s >= last) {
		*cost = s - last;
		return true;
	}
	if (last - s <= AS_MAXBACK) {
		*cost = (last - s) * AS_BACK_PENALTY;
		return true;
	}
	return false;
}

/*
 * as_choose_req on sectors: is @s1 better than @s2 with the head at @last?
 * Non-wrapped beats wrapped; of two wrapped, the lower sector; else the
 * lower cost; on a tie, the higher sector.
 */
static bool as_prefer_first(sector_t last, sector_t s1, sector_t s2)
{
	u64 d1, d2;
	bool ok1 = as_cost(last, s1, &d1), ok2 = as_cost(last, s2, &d2);

	if (ok1 != ok2)
		return ok1;
	if (!ok1)
		return s1 <= s2;
	return d1 < d2 || (d1 == d2 && s1 >= s2);
}

static struct request *as_choose_req(struct as_data *ad, int dir,
				     struct request *a, struct request *b)
{
	if (!a)
		return b;
	if (!b || a == b)
		return a;
	return as_prefer_first(ad->last_sector[dir], blk_rq_pos(a),
			       blk_rq_pos(b)) ? a : b;
}

/*
 * as_find_next_rq: the better of the sort successor of @rq (the lowest
 * request if none: the sweep wraps) and its predecessor.
 */
static struct request *as_find_next_rq(struct as_data *ad, struct request *rq)
{
	int dir = as_rq_dir(rq);
	struct rb_node *n = rb_next(&rq->rb_node);
	struct request *next = NULL, *prev = NULL;

	if (n) {
		next = rb_entry_rq(n);
	} else {
		n = rb_first(&ad->sort_list[dir]);
		if (n && n != &rq->rb_node)
			next = rb_entry_rq(n);
	}
	n = rb_prev(&rq->rb_node);
	if (n)
		prev = rb_entry_rq(n);
	return as_choose_req(ad, dir, next, prev);
}

/* ---- the queue ---- */

/* Take @rq out of the sort tree, FIFO and merge hash. */
static void as_remove_queued(struct as_data *ad, struct request *rq)
{
	struct request_queue *q = ad->q;
	int dir = as_rq_dir(rq);
	struct as_proc *proc = as_rq_proc(rq);

	if (ad->next_rq[dir] == rq)
		ad->next_rq[dir] = as_find_next_rq(ad, rq);
	elv_rb_del(&ad->sort_list[dir], rq);
	list_del_init(&rq->queuelist);
	elv_rqhash_del(q, rq);
	if (q->last_merge == rq)
		q->last_merge = NULL;
	as_rq_set_flags(rq, as_rq_flags(rq) & ~AS_RQ_QUEUED);
	WRITE_ONCE(ad->nr_queued, ad->nr_queued - 1);
	if (proc && proc->aic.nr_queued)
		proc->aic.nr_queued--;
}

static struct request *as_fifo_head(struct as_data *ad, int dir)
{
	return list_first_entry_or_null(&ad->fifo_list[dir], struct request,
					queuelist);
}

/*
 * as_fifo_expired: has the oldest request of @dir expired? Checked at most
 * once per fifo_expire[dir], so that a pile of expired requests does not
 * turn into a seek storm.
 */
static bool as_fifo_expired(struct as_data *ad, int dir)
{
	struct request *rq;

	if (ad->now - ad->last_check_fifo[dir] < ad->fifo_expire[dir])
		return false;
	ad->last_check_fifo[dir] = ad->now;
	rq = as_fifo_head(ad, dir);
	return rq && ad->now > rq->fifo_time;
}

/* ---- break decisions (as_can_break_anticipation) ---- */

/*
 * as_can_break_anticipation: steps 1 and 2 here, the rest in the policy.
 * Only asked while there is a target.
 */
static bool as_can_break(struct as_data *ad, struct request *rq,
			 enum as_moment at)
{
	/* 1. The awaited process's own request. */
	if (rq && as_rq_proc(rq) == ad->target)
		return true;
	/* 2. The wait has run out; the timer just has not fired yet. */
	if (ad->ioc_finished && ad->now - ad->antic_start >=
	    ad->policy->wait_ns(ad))
		return true;
	return ad->policy->can_break(ad, rq, at);
}

/* as_can_anticipate: worth waiting instead of serving @rq? */
static bool as_can_anticipate(struct as_data *ad, struct request *rq)
{
	if (!ad->target || ad->antic_status == ANTIC_FINISHED)
		return false;
	return !as_can_break(ad, rq, AS_AT_DISPATCH);
}

/* Make @proc the target: the owner of the last dispatched sync request. */
static void as_set_target(struct as_data *ad, struct as_proc *proc)
{
	if (proc == ad->target)
		return;
	if (proc)
		refcount_inc(&proc->ref);
	as_proc_put(ad, ad->target);
	ad->target = proc;
}

/* ---- dispatch (as_dispatch_request, as_move_to_dispatch) ---- */

/*
 * as_move_to_dispatch: the request leaves the scheduler. A sync request's
 * owner becomes the process to anticipate; an async one clears it and
 * counts against the write batch.
 */
static void as_move_to_dispatch(struct as_data *ad, struct request *rq)
{
	int dir = as_rq_dir(rq);

	/* Only a forced dispatch could find a wait running: "anything else". */
	as_antic_stop(ad, false);
	ad->antic_status = ANTIC_OFF;
	ad->last_sector[dir] = blk_rq_pos(rq) + blk_rq_sectors(rq);
	if (dir == AS_SYNC) {
		as_set_target(ad, as_rq_proc(rq));
	} else {
		as_set_target(ad, NULL);
		if (ad->batch.current_write_count)
			ad->batch.current_write_count--;
	}
	ad->ioc_finished = false;
	ad->next_rq[dir] = as_find_next_rq(ad, rq);
	as_remove_queued(ad, rq);
}

/*
 * The part of as_dispatch_request before the FIFO override: continue the
 * batch, anticipate, or pick a direction. Returns the request to serve
 * (*from_fifo: taken from the FIFO already) or NULL to stay idle.
 */
static struct request *as_select(struct as_data *ad, bool reads, bool writes,
				 bool *from_fifo)
{
	struct as_batch *b = &ad->batch;
	struct request *rq;

	if (!(reads && writes && as_batch_expired(ad))) {
		/* The batch goes on (or one direction is empty). */
		rq = ad->next_rq[b->dir];
		if (b->dir == AS_SYNC && ad->antic_expire) {
			if (as_fifo_expired(ad, AS_SYNC)) {
				*from_fifo = true;
				return as_fifo_head(ad, AS_SYNC);
			}
			if (as_can_anticipate(ad, rq)) {
				as_antic_waitreq(ad);
				return NULL;
			}
		}
		if (rq) {
			if (reads && !writes)
				b->expires = ad->now + ad->batch_expire[AS_SYNC];
			return rq;
		}
	}
	/*
	 * No batch running: choose a direction. After a read batch, writes
	 * get their turn; otherwise reads start from their oldest request.
	 */
	if (reads && !(writes && b->dir == AS_SYNC)) {
		as_batch_to_sync(ad);
		ad->last_check_fifo[AS_SYNC] = ad->now;
		return as_fifo_head(ad, AS_SYNC);
	}
	as_batch_to_async(ad);
	rq = ad->next_rq[AS_ASYNC];
	if (WARN_ON_ONCE(!rq))
		rq = as_fifo_head(ad, AS_ASYNC);
	return rq;
}

/* as_dispatch_request. */
static struct request *as_dispatch(struct as_data *ad)
{
	bool reads, writes, from_fifo = false;
	struct request *rq;
	int dir;

	/*
	 * The device takes no more: 2.6.20's driver would not ask now, and
	 * AS decides when it does (see the top of this file).
	 */
	if (ad->nr_dispatched >= ad->device_depth)
		return NULL;
	/* The wait ran out and the timer has not run yet: run it first. */
	if (ad->antic_status == ANTIC_WAIT_NEXT &&
	    ad->now >= ad->antic_deadline)
		as_antic_timeout(ad);
	reads = !list_empty(&ad->fifo_list[AS_SYNC]);
	writes = !list_empty(&ad->fifo_list[AS_ASYNC]);
	as_batch_note_idle(ad, reads, writes);
	if (!reads && !writes)
		return NULL;
	if (as_waiting(ad) || ad->batch.changed)
		return NULL;
	rq = as_select(ad, reads, writes, &from_fifo);
	if (!rq)
		return NULL;
	/* An expired request of the batch's direction goes first. */
	dir = ad->batch.dir;
	if (!from_fifo && as_fifo_expired(ad, dir))
		rq = as_fifo_head(ad, dir);
	if (!as_batch_may_start(ad))
		return NULL;
	as_move_to_dispatch(ad, rq);
	return rq;
}

struct request *as_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct as_data *ad = as_queue_data(hctx->queue);
	struct request *rq;

	spin_lock_irq(&ad->lock);
	as_set_now(ad, ktime_get_ns());
	rq = list_first_entry_or_null(&ad->dispatch, struct request,
				      queuelist);
	if (rq) {
		list_del_init(&rq->queuelist);
		as_rq_set_flags(rq, as_rq_flags(rq) & ~AS_RQ_ATHEAD);
	} else {
		rq = as_dispatch(ad);
	}
	if (rq) {
		as_rq_set_flags(rq, as_rq_flags(rq) | AS_RQ_DISPATCHED);
		ad->nr_dispatched++;
		ad->dispatched++;
		rq->rq_flags |= RQF_STARTED;
	}
	as_update_ready(ad);
	spin_unlock_irq(&ad->lock);
	return rq;
}

bool as_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct as_data *ad = as_queue_data(hctx->queue);

	if (!list_empty_careful(&ad->dispatch))
		return true;
	return READ_ONCE(ad->nr_queued) && READ_ONCE(ad->ready);
}

/* ---- insertion (as_add_request + as_update_rq) ---- */

/*
 * No insert merge (blk_mq_sched_try_insert_merge): attempt_merge checks no
 * sync class, so a sync request would join an async one (or the other way
 * round) and the survivor would sit in one class's tree and the other's
 * FIFO. 2.6.20 had no insert merge either; bio merges, which allow_merge
 * keeps within a class, still happen.
 */
static void as_insert_request(struct as_data *ad, struct request *rq,
			      bool at_head)
{
	struct request_queue *q = ad->q;
	struct as_proc *proc = as_rq_proc(rq);
	struct as_sample sample;
	int dir;

	ad->inserted++;
	trace_block_rq_insert(rq);
	dir = op_is_sync(rq->cmd_flags) ? AS_SYNC : AS_ASYNC;
	if (at_head) {
		as_rq_set_flags(rq, (dir == AS_SYNC ? AS_RQ_SYNC : 0) | AS_RQ_ATHEAD);
		/* as dd_insert_request: the last one put at the head goes first */
		list_add(&rq->queuelist, &ad->dispatch);
		return;
	}
	as_rq_set_flags(rq, (dir == AS_SYNC ? AS_RQ_SYNC : 0) | AS_RQ_QUEUED);
	/* History first, so the think-time rule does not see rq as queued. */
	if (proc) {
		if (as_update_iohist(ad, proc, rq, &sample) &&
		    ad->policy->on_sample)
			ad->policy->on_sample(ad, proc, &sample);
		proc->aic.nr_queued++;
	}
	elv_rb_add(&ad->sort_list[dir], rq);
	rq->fifo_time = ad->now + ad->fifo_expire[dir];
	list_add_tail(&rq->queuelist, &ad->fifo_list[dir]);
	if (rq_mergeable(rq)) {
		elv_rqhash_add(q, rq);
		if (!q->last_merge)
			q->last_merge = rq;
	}
	WRITE_ONCE(ad->nr_queued, ad->nr_queued + 1);
	ad->next_rq[dir] = as_choose_req(ad, dir, rq, ad->next_rq[dir]);
	if (as_waiting(ad) && as_can_break(ad, rq, AS_AT_ARRIVAL))
		as_antic_stop(ad, true);
}

void as_insert_requests(struct blk_mq_hw_ctx *hctx, struct list_head *list,
			bool at_head)
{
	struct as_data *ad = as_queue_data(hctx->queue);
	struct request *rq;

	spin_lock_irq(&ad->lock);
	as_set_now(ad, ktime_get_ns());
	while (!list_empty(list)) {
		rq = list_first_entry(list, struct request, queuelist);
		list_del_init(&rq->queuelist);
		as_insert_request(ad, rq, at_head);
	}
	as_update_ready(ad);
	spin_unlock_irq(&ad->lock);
}

/* ---- completion ---- */

/*
 * A dispatched request no longer counts as in the device: it completed, or
 * the driver gave it back. A direction change that waited for it goes on
 * (as_completed_request's batch part), and the wait for its process, if it
 * is the one waited for, starts its clock now.
 */
static void as_dispatched_done(struct as_data *ad, struct request *rq,
			       struct as_proc *proc, int dir)
{
	as_rq_set_flags(rq, as_rq_flags(rq) & ~AS_RQ_DISPATCHED);
	as_batch_completed(ad, dir);
	if (!WARN_ON_ONCE(!ad->nr_dispatched))
		ad->nr_dispatched--;
	if (proc && proc == ad->target) {
		ad->antic_start = ad->now;
		ad->ioc_finished = true;
		if (ad->antic_status == ANTIC_WAIT_REQ)
			as_antic_waitnext(ad, ad->policy->wait_ns(ad));
	}
}

/*
 * as_completed_request (+ as_put_io_context), in interrupt context. The
 * awaited process's request is done: its think time, and any wait for its
 * next request, start now.
 */
void as_completed_request(struct request *rq, u64 now)
{
	struct as_data *ad = as_queue_data(rq->q);
	struct as_proc *proc;
	unsigned long flags;
	bool was_ready, kick;
	int dir;

	if (!(rq->rq_flags & RQF_ELVPRIV) ||
	    !(as_rq_flags(rq) & AS_RQ_DISPATCHED))
		return;
	proc = as_rq_proc(rq);
	dir = as_rq_dir(rq);
	spin_lock_irqsave(&ad->lock, flags);
	as_set_now(ad, now ? now : ktime_get_ns());
	was_ready = ad->ready;
	as_dispatched_done(ad, rq, proc, dir);
	ad->completed++;
	if (proc && dir == AS_SYNC)
		as_completed_sync(ad, proc);
	as_update_ready(ad);
	kick = !was_ready && ad->ready && ad->nr_queued;
	spin_unlock_irqrestore(&ad->lock, flags);
	if (kick)
		blk_mq_run_hw_queues(rq->q, true);
}

/*
 * The driver gave a dispatched request back (blk_mq_requeue_request). It
 * may come back through insert_requests (at the head), or, with
 * RQF_DONTPREP (SCSI and NVMe retries), go straight to the hardware
 * queue's dispatch list and complete without the elevator seeing it again.
 * So, as BFQ (bfq_finish_requeue_request) and Kyber (kyber_finish_request)
 * do, the request leaves the elevator's accounting here: a direction change
 * waiting for it goes on and a wait for its process gets its timer.
 * Otherwise the change, or WAIT_REQ, would wait for ever for a completion
 * that never reaches the elevator. Its process's think time does not
 * start: it has not got its data.
 */
void as_requeue_request(struct request *rq)
{
	struct as_data *ad = as_queue_data(rq->q);
	unsigned long flags;

	if (!(as_rq_flags(rq) & AS_RQ_DISPATCHED))
		return;
	spin_lock_irqsave(&ad->lock, flags);
	as_set_now(ad, ktime_get_ns());
	as_dispatched_done(ad, rq, as_rq_proc(rq), as_rq_dir(rq));
	ad->requeued++;
	as_update_ready(ad);
	spin_unlock_irqrestore(&ad->lock, flags);
}

/* ---- requests and merging ---- */

/*
 * The process's state, with a reference for the caller; made on its first
 * request. NULL if it cannot be had (no memory: the request is then served
 * as one of a process AS knows nothing about).
 */
static struct as_proc *as_get_proc(struct as_data *ad, struct as_icq *asic)
{
	size_t size = sizeof(struct as_proc) + ad->policy->icq_data_size;
	struct as_proc *proc, *new;
	unsigned long flags;

	spin_lock_irqsave(&ad->lock, flags);
	proc = asic->proc;
	if (proc)
		refcount_inc(&proc->ref);
	spin_unlock_irqrestore(&ad->lock, flags);
	if (proc)
		return proc;
	/* prepare_request may run where sleeping is not allowed */
	new = kzalloc_node(size, GFP_NOWAIT | __GFP_NOWARN, ad->q->node);
	if (!new)
		return NULL;
	/* one reference for the icq, one for the caller */
	refcount_set(&new->ref, 2);
	new->aic.running = true;
	atomic_inc(&ad->nr_procs);
	spin_lock_irqsave(&ad->lock, flags);
	proc = asic->proc;
	if (proc) {
		refcount_inc(&proc->ref);
	} else if (!asic->exited) {
		asic->proc = new;
		proc = new;
		new = NULL;
	}
	spin_unlock_irqrestore(&ad->lock, flags);
	if (new) {
		atomic_dec(&ad->nr_procs);
		kfree(new);
	}
	return proc;
}

/*
 * Called for every request the elevator may see: find the issuing
 * process's state (io context -> icq -> as_proc) and keep a reference on
 * it in rq->elv.priv[1]; the request does not keep the icq (the ioc
 * reference ioc_find_get_icq took is dropped at once).
 */
void as_prepare_request(struct request *rq)
{
	struct as_data *ad = as_queue_data(rq->q);
	struct io_cq *icq = ioc_find_get_icq(rq->q);

	rq->elv.icq = NULL;
	rq->elv.priv[0] = NULL;
	rq->elv.priv[1] = NULL;
	if (!icq)
		return;
	rq->elv.priv[1] = as_get_proc(ad, as_icq_of(icq));
	put_io_context(icq->ioc);
}

/* Called when an RQF_ELVPRIV request is freed, inserted or not. */
void as_finish_request(struct request *rq)
{
	struct as_data *ad = as_queue_data(rq->q);

	if (WARN_ON_ONCE(as_rq_flags(rq) & (AS_RQ_QUEUED | AS_RQ_ATHEAD))) {
		unsigned long flags;

		spin_lock_irqsave(&ad->lock, flags);
		if (as_rq_flags(rq) & AS_RQ_QUEUED)
			as_remove_queued(ad, rq);
		else
			list_del_init(&rq->queuelist);
		as_update_ready(ad);
		spin_unlock_irqrestore(&ad->lock, flags);
	}
	as_proc_put(ad, as_rq_proc(rq));
	rq->elv.priv[0] = NULL;
	rq->elv.priv[1] = NULL;
}

/*
 * 2.6.20's AS had no elevator_allow_merge_fn: elv_rq_merge_ok checked the
 * data direction only, so a sync (O_DIRECT) write bio could join an async
 * (write-back) request and the other way round; the request keeps its
 * class. That is the default. merge_by_class = 1 keeps AS's two directions
 * apart, as CFQ's cfq_allow_merge kept a sync bio out of an async request.
 * Request-to-request merges (attempt_merge after a bio merge) stay within
 * a class either way: the neighbours are elv_rb_former_request and
 * elv_rb_latter_request in the request's own tree.
 */
bool as_allow_merge(struct request_queue *q, struct request *rq,
		    struct bio *bio)
{
	struct as_data *ad = as_queue_data(q);

	return !READ_ONCE(ad->merge_by_class) ||
	       op_is_sync(rq->cmd_flags) == op_is_sync(bio->bi_opf);
}

bool as_bio_merge(struct request_queue *q, struct bio *bio,
		  unsigned int nr_segs)
{
	struct as_data *ad = as_queue_data(q);
	struct request *free = NULL;
	bool merged;

	spin_lock_irq(&ad->lock);
	as_set_now(ad, ktime_get_ns());
	merged = blk_mq_sched_try_merge(q, bio, nr_segs, &free);
	if (merged)
		ad->merged++;
	spin_unlock_irq(&ad->lock);
	if (free)
		blk_mq_free_request(free);
	return merged;
}

/*
 * The tree a front-merge candidate for @bio is looked up in. 2.6.20's
 * as_merge searched sort_list[bio_data_dir(bio)] of trees indexed by
 * REQ_SYNC (1) and REQ_ASYNC (0): a read bio searched the async tree and a
 * write bio the sync one, so only a write bio took a front merge there.
 * That is the default, so that the module decides as 2.6.20 does;
 * merge_by_class = 1 searches the bio's own class, as an elevator written
 * for 6.1 would (mq-deadline's dd_request_merge searches the tree of the
 * bio's own data direction).
 */
static int as_front_merge_dir(struct as_data *ad, struct bio *bio)
{
	if (READ_ONCE(ad->merge_by_class))
		return op_is_sync(bio->bi_opf) ? AS_SYNC : AS_ASYNC;
	return bio_data_dir(bio) == READ ? AS_ASYNC : AS_SYNC;
}

/* A front merge candidate: a queued request starting where @bio ends. */
int as_request_merge(struct request_queue *q, struct request **rq,
		     struct bio *bio)
{
	struct as_data *ad = as_queue_data(q);
	int dir = as_front_merge_dir(ad, bio);
	struct request *cand;

	cand = elv_rb_find(&ad->sort_list[dir], bio_end_sector(bio));
	if (cand && elv_bio_merge_ok(cand, bio)) {
		*rq = cand;
		if (blk_discard_mergable(cand))
			return ELEVATOR_DISCARD_MERGE;
		return ELEVATOR_FRONT_MERGE;
	}
	return ELEVATOR_NO_MERGE;
}

/* After a front merge @rq starts elsewhere: sort it again. */
void as_request_merged(struct request_queue *q, struct request *rq,
		       enum elv_merge type)
{
	struct as_data *ad = as_queue_data(q);

	lockdep_assert_held(&ad->lock);
	if (type == ELEVATOR_FRONT_MERGE &&
	    (as_rq_flags(rq) & AS_RQ_QUEUED)) {
		int dir = as_rq_dir(rq);

		elv_rb_del(&ad->sort_list[dir], rq);
		elv_rb_add(&ad->sort_list[dir], rq);
	}
}

/*
 * @next was merged into @rq (as_merged_requests): @rq takes the earlier
 * FIFO time and position, and @next leaves; then, as 2.6.20's
 * as_put_io_context does for it, @next's process counts as having had sync
 * I/O complete now (IORUNNING, and its think time starts).
 */
void as_requests_merged(struct request_queue *q, struct request *rq,
			struct request *next)
{
	struct as_data *ad = as_queue_data(q);
	struct as_proc *proc = as_rq_proc(next);

	lockdep_assert_held(&ad->lock);
	as_set_now(ad, ktime_get_ns());
	ad->merged++;
	if (!(as_rq_flags(next) & AS_RQ_QUEUED))
		return;
	if ((as_rq_flags(rq) & AS_RQ_QUEUED) &&
	    next->fifo_time < rq->fifo_time) {
		list_move(&rq->queuelist, &next->queuelist);
		rq->fifo_time = next->fifo_time;
	}
	as_remove_queued(ad, next);
	if (proc && as_rq_dir(next) == AS_SYNC)
		as_completed_sync(ad, proc);
}

/* ---- per-process contexts ---- */

/*
 * exit_as_io_context: the process no longer runs (or the icq is being
 * torn down). A wait for it is not ended here; the break rules and
 * exit_prob decide. Called with the ioc lock held and interrupts off;
 * ad->lock nests inside it (as bfqd->lock does in bfq_exit_icq).
 */
void as_exit_icq(struct io_cq *icq)
{
	struct as_icq *asic = as_icq_of(icq);
	struct as_data *ad = icq->q->elevator->elevator_data;
	struct as_proc *proc;
	unsigned long flags;

	spin_lock_irqsave(&ad->lock, flags);
	proc = asic->proc;
	asic->proc = NULL;
	asic->exited = true;
	if (proc)
		proc->aic.running = false;
	spin_unlock_irqrestore(&ad->lock, flags);
	as_proc_put(ad, proc);
}

/* ---- scheduler tags ---- */

/*
 * Async requests may take at most three quarters of the scheduler tags,
 * and never the last one. 2.6.20's as_may_queue let the process AS waits
 * for allocate a request whatever the limit (ELV_MQUEUE_MUST); blk-mq's
 * limit_depth can only restrict. Without a limit, write-back takes every
 * tag (2 on a device of depth 1: nr_requests is 2 * min(depth, 128)), and
 * the reader AS waits for blocks in tag allocation until the wait times
 * out and a write is dispatched: every anticipation fails. As Kyber
 * (kyber_limit_depth, KYBER_ASYNC_PERCENT) and BFQ (bfq_limit_depth) do,
 * sync requests are not limited.
 */
void as_limit_depth(blk_opf_t opf, struct blk_mq_alloc_data *data)
{
	struct as_data *ad = data->q->elevator->elevator_data;

	if (!op_is_sync(opf))
		data->shallow_depth = READ_ONCE(ad->async_word_depth);
}

/*
 * The limit as sbitmap applies it: shallow_depth is a number of bits per
 * word of the tag bitmap (1 << sb.shift bits, fewer in a shorter bitmap).
 * A bitmap of one-bit words (4 to 7 tags) cannot be limited this way.
 * Called with the queue frozen when nr_requests changes, after the bitmap
 * is resized but before q->nr_requests is (blk_mq_update_nr_requests): the
 * bitmap's depth is the new number of tags, as Kyber's and BFQ's
 * depth_updated read it.
 */
void as_depth_updated(struct blk_mq_hw_ctx *hctx)
{
	struct request_queue *q = hctx->queue;
	struct as_data *ad = q->elevator->elevator_data;
	struct sbitmap_queue *bt = &hctx->sched_tags->bitmap_tags;
	u32 nr = max_t(u32, bt->sb.depth, 1);
	u32 word = min_t(u32, 1U << bt->sb.shift, nr);
	u32 async = clamp_t(u32, nr * 3 / 4, 1, max_t(u32, nr - 1, 1));

	WRITE_ONCE(ad->async_depth, async);
	WRITE_ONCE(ad->async_word_depth, max_t(u32, async * word / nr, 1));
	sbitmap_queue_min_shallow_depth(bt, ad->async_word_depth);
}

int as_init_hctx(struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	as_depth_updated(hctx);
	return 0;
}

/* ---- setup ---- */

/* Requests the device holds at once: its driver tags. */
static u32 as_device_depth(struct request_queue *q)
{
	struct blk_mq_tag_set *set = q->tag_set;
	u32 depth = set->queue_depth - set->reserved_tags;

	if (!(set->flags & BLK_MQ_F_TAG_HCTX_SHARED))
		depth *= q->nr_hw_queues;
	return max_t(u32, depth, 1);
}

int as_init_sched(struct request_queue *q, struct elevator_type *e)
{
	struct as_elevator *ase = container_of(e, struct as_elevator, type);
	struct elevator_queue *eq;
	struct as_data *ad;
	int dir, ret = -ENOMEM;

	eq = elevator_alloc(q, e);
	if (!eq)
		return ret;
	ad = kzalloc_node(sizeof(*ad), GFP_KERNEL, q->node);
	if (!ad)
		goto put_eq;
	eq->elevator_data = ad;
	ad->q = q;
	ad->policy = ase->policy;
	spin_lock_init(&ad->lock);
	ad->now = ktime_get_ns();
	for (dir = AS_SYNC; dir <= AS_ASYNC; dir++) {
		ad->sort_list[dir] = RB_ROOT;
		INIT_LIST_HEAD(&ad->fifo_list[dir]);
		ad->last_check_fifo[dir] = ad->now;
	}
	INIT_LIST_HEAD(&ad->dispatch);
	ad->fifo_expire[AS_SYNC] = AS_READ_EXPIRE_MS * NSEC_PER_MSEC;
	ad->fifo_expire[AS_ASYNC] = AS_WRITE_EXPIRE_MS * NSEC_PER_MSEC;
	ad->batch_expire[AS_SYNC] = AS_READ_BATCH_MS * NSEC_PER_MSEC;
	ad->batch_expire[AS_ASYNC] = AS_WRITE_BATCH_MS * NSEC_PER_MSEC;
	ad->antic_expire = AS_ANTIC_EXPIRE_MS * NSEC_PER_MSEC;
	as_batch_init(ad);
	ad->antic_status = ANTIC_OFF;
	ad->device_depth = as_device_depth(q);
	hrtimer_init(&ad->antic_timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	ad->antic_timer.function = as_antic_timer_fn;
	as_update_ready(ad);
	if (ad->policy->init) {
		ret = ad->policy->init(ad);
		if (ret)
			goto free_ad;
	}
	/* One queue-wide state: dispatch from the queue, not per hctx. */
	blk_queue_flag_set(QUEUE_FLAG_SQ_SCHED, q);
	q->elevator = eq;
	return 0;

free_ad:
	kfree(ad);
put_eq:
	kobject_put(&eq->kobj);
	return ret;
}

void as_exit_sched(struct elevator_queue *e)
{
	struct as_data *ad = e->elevator_data;

	hrtimer_cancel(&ad->antic_timer);
	WARN_ON_ONCE(!list_empty(&ad->fifo_list[AS_SYNC]));
	WARN_ON_ONCE(!list_empty(&ad->fifo_list[AS_ASYNC]));
	WARN_ON_ONCE(!list_empty(&ad->dispatch));
	spin_lock_irq(&ad->lock);
	as_set_target(ad, NULL);
	spin_unlock_irq(&ad->lock);
	/* icqs were cleared and requests freed before: no state is left */
	WARN_ON_ONCE(atomic_read(&ad->nr_procs));
	if (ad->policy->exit)
		ad->policy->exit(ad);
	kfree(ad);
}
