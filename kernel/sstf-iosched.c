// SPDX-License-Identifier: GPL-2.0
/*
 * The "sstf" I/O scheduler: shortest seek time first. Of the requests
 * waiting it serves the one whose start is nearest to where the last one
 * handed to the device ended, in either direction (a seek's cost grows
 * with its distance, and the sector distance stands in for it). Pure SSTF
 * can leave a request far from a busy region waiting for ever; with
 * fifo_expire_ms > 0, a request that has waited that long is served first,
 * oldest first (the aging of Linux's deadline elevator).
 *
 * Made with `iolab elevator new sstf` from iolab's template; the walk
 * through, with what it measures in the simulator and in Linux 6.1, is
 * iolab's docs/elevator-howto.md. It runs unchanged in two places:
 *
 *   - a Linux 6.1 kernel, as a blk-mq elevator of the module
 *     sstf-iosched.ko (make -C kernel; insmod kernel/sstf-iosched.ko;
 *     echo sstf >/sys/block/DEV/queue/scheduler);
 *   - iolab's simulator, as kernel:sstf (iolab compare --schedulers
 *     kernel:sstf), compiled against iolab's stand-ins for the kernel
 *     functions used here.
 *
 * The contract is struct elevator_mq_ops (block/elevator.h of 6.1). An
 * elevator fills the hooks it needs; this one fills:
 *
 *   init_sched, exit_sched  Required. An elevator instance on a queue.
 *   prepare_request         Optional. Every request, when it is allocated:
 *                           clear the elevator's part of it.
 *   insert_requests         Required. blk-mq hands requests over (at_head:
 *                           put them first).
 *   dispatch_request        Required. The device can take a request: the
 *                           one to send, or NULL to send none now.
 *   has_work                Required. Is there a request to dispatch? Read
 *                           without the lock.
 *   completed_request       Optional. The device finished a request.
 *   requeue_request         Optional. The driver gave a request back.
 *
 * Deciding late. blk-mq asks for requests while the driver takes them and
 * one more (it stops when a request finds no driver tag, and keeps that
 * one in its own list); iolab's simulator asks only when the device can
 * take one. An elevator that hands out no more requests than the device
 * takes at once (its tag depth, or the "depth" tunable below) decides at
 * the same moments in both places, as 2.6.20's elevators did when the
 * driver pulled requests.
 *
 * Locking. One spinlock per queue, taken with interrupts off: completions
 * come in interrupt context.
 *
 * Copyright (C) 2026 the authors of this elevator
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/ktime.h>
#include <linux/rbtree.h>
#include <linux/sysfs.h>

#include <trace/events/block.h>

#include "elevator.h"
#include "blk.h"
#include "blk-mq.h"
#include "blk-mq-sched.h"

/* rq->elv.priv[0]: the request was handed to the device by this elevator */
#define SSTF_RQ_DISPATCHED	((void *)1)

struct sstf_data {
	/* everything below; completions (interrupt context) take it too */
	spinlock_t lock;
	/* requests waiting, oldest first, and by sector */
	struct list_head fifo;
	struct rb_root sort;
	/* put at the head by blk-mq (flushes, requeues): served first */
	struct list_head dispatch;
	u32 queued;
	/* where the last request handed to the device ended */
	sector_t head;
	/* tunable: a request this old is served first (0: never) */
	u64 fifo_expire_ns;
	/* handed to the device and not completed */
	u32 in_flight;
	/* requests the device takes at once: its tags */
	u32 device_depth;
	/* tunable: requests handed out at once (0: device_depth) */
	u64 depth;
	/* counter */
	u64 dispatched;
};

static u32 sstf_limit(struct sstf_data *nd)
{
	u64 depth = READ_ONCE(nd->depth);

	return depth ? min_t(u64, depth, nd->device_depth) : nd->device_depth;
}

static int sstf_init_sched(struct request_queue *q, struct elevator_type *e)
{
	struct blk_mq_tag_set *set = q->tag_set;
	struct elevator_queue *eq;
	struct sstf_data *nd;

	eq = elevator_alloc(q, e);
	if (!eq)
		return -ENOMEM;
	nd = kzalloc_node(sizeof(*nd), GFP_KERNEL, q->node);
	if (!nd) {
		kobject_put(&eq->kobj);
		return -ENOMEM;
	}
	spin_lock_init(&nd->lock);
	INIT_LIST_HEAD(&nd->fifo);
	INIT_LIST_HEAD(&nd->dispatch);
	nd->sort = RB_ROOT;
	nd->device_depth = max_t(u32, set->queue_depth - set->reserved_tags, 1);
	eq->elevator_data = nd;
	q->elevator = eq;
	return 0;
}

static void sstf_exit_sched(struct elevator_queue *e)
{
	struct sstf_data *nd = e->elevator_data;

	WARN_ON_ONCE(!list_empty(&nd->fifo));
	WARN_ON_ONCE(!list_empty(&nd->dispatch));
	kfree(nd);
}

static void sstf_prepare_request(struct request *rq)
{
	rq->elv.priv[0] = NULL;
	RB_CLEAR_NODE(&rq->rb_node);
}

static void sstf_insert_requests(struct blk_mq_hw_ctx *hctx,
				 struct list_head *list, bool at_head)
{
	struct sstf_data *nd = hctx->queue->elevator->elevator_data;
	u64 now = ktime_get_ns();
	struct request *rq;

	spin_lock_irq(&nd->lock);
	while (!list_empty(list)) {
		rq = list_first_entry(list, struct request, queuelist);
		list_del_init(&rq->queuelist);
		trace_block_rq_insert(rq);
		if (at_head) {
			list_add(&rq->queuelist, &nd->dispatch);
		} else {
			rq->fifo_time = now + nd->fifo_expire_ns;
			list_add_tail(&rq->queuelist, &nd->fifo);
			elv_rb_add(&nd->sort, rq);
		}
		WRITE_ONCE(nd->queued, nd->queued + 1);
	}
	spin_unlock_irq(&nd->lock);
}

/*
 * The waiting request nearest to @head: the first at or after it and the
 * last before it, found in one descent of the sort tree, and the nearer of
 * the two (the one ahead on a tie).
 */
static struct request *sstf_nearest(struct sstf_data *nd)
{
	struct rb_node *n = nd->sort.rb_node;
	struct request *ahead = NULL, *behind = NULL, *rq;

	while (n) {
		rq = rb_entry_rq(n);
		if (blk_rq_pos(rq) >= nd->head) {
			ahead = rq;
			n = n->rb_left;
		} else {
			behind = rq;
			n = n->rb_right;
		}
	}
	if (!ahead || !behind)
		return ahead ? ahead : behind;
	return blk_rq_pos(ahead) - nd->head <= nd->head - blk_rq_pos(behind) ?
	       ahead : behind;
}

/* The request to serve next: at-head ones, then an expired one, else SSTF. */
static struct request *sstf_choose(struct sstf_data *nd)
{
	struct request *rq;

	rq = list_first_entry_or_null(&nd->dispatch, struct request, queuelist);
	if (rq)
		return rq;
	rq = list_first_entry_or_null(&nd->fifo, struct request, queuelist);
	if (rq && nd->fifo_expire_ns && ktime_get_ns() >= rq->fifo_time)
		return rq;
	return sstf_nearest(nd);
}

static struct request *sstf_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct sstf_data *nd = hctx->queue->elevator->elevator_data;
	struct request *rq = NULL;

	spin_lock_irq(&nd->lock);
	if (nd->in_flight < sstf_limit(nd))
		rq = sstf_choose(nd);
	if (rq) {
		if (!RB_EMPTY_NODE(&rq->rb_node))
			elv_rb_del(&nd->sort, rq);
		list_del_init(&rq->queuelist);
		nd->head = blk_rq_pos(rq) + blk_rq_sectors(rq);
		WRITE_ONCE(nd->queued, nd->queued - 1);
		nd->in_flight++;
		nd->dispatched++;
		rq->elv.priv[0] = SSTF_RQ_DISPATCHED;
		rq->rq_flags |= RQF_STARTED;
	}
	spin_unlock_irq(&nd->lock);
	return rq;
}

static bool sstf_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct sstf_data *nd = hctx->queue->elevator->elevator_data;

	return READ_ONCE(nd->queued) &&
	       READ_ONCE(nd->in_flight) < sstf_limit(nd);
}

/*
 * A request handed out has left the device: it completed, or the driver
 * gave it back (with RQF_DONTPREP, as SCSI and NVMe retries do, it then
 * goes to blk-mq's own list and completes without coming back here). If
 * the elevator was full and has requests, run the queue: blk-mq does not
 * know that a completion made dispatch possible again.
 */
static void sstf_done(struct request *rq)
{
	struct sstf_data *nd = rq->q->elevator->elevator_data;
	unsigned long flags;
	bool kick;

	if (rq->elv.priv[0] != SSTF_RQ_DISPATCHED)
		return;
	rq->elv.priv[0] = NULL;
	spin_lock_irqsave(&nd->lock, flags);
	kick = nd->in_flight >= sstf_limit(nd) && nd->queued;
	nd->in_flight--;
	spin_unlock_irqrestore(&nd->lock, flags);
	if (kick)
		blk_mq_run_hw_queues(rq->q, true);
}

static void sstf_completed_request(struct request *rq, u64 now)
{
	sstf_done(rq);
}

static void sstf_requeue_request(struct request *rq)
{
	sstf_done(rq);
}

/* ---- sysfs: /sys/block/DEV/queue/iosched/ ---- */

static ssize_t sstf_depth_show(struct elevator_queue *e, char *page)
{
	struct sstf_data *nd = e->elevator_data;

	return sysfs_emit(page, "%llu\n", READ_ONCE(nd->depth));
}

/* A value that is not a whole number is refused; a large one is clamped. */
static ssize_t sstf_depth_store(struct elevator_queue *e,
				const char *page, size_t count)
{
	struct sstf_data *nd = e->elevator_data;
	u64 v;
	int ret = kstrtou64(page, 10, &v);

	if (ret)
		return ret;
	WRITE_ONCE(nd->depth, min_t(u64, v, 1024));
	return count;
}

static ssize_t sstf_fifo_expire_ms_show(struct elevator_queue *e, char *page)
{
	struct sstf_data *nd = e->elevator_data;

	return sysfs_emit(page, "%llu\n",
			  div_u64(READ_ONCE(nd->fifo_expire_ns), NSEC_PER_MSEC));
}

/* 0 to 60 s, as ms: a longer wait is no protection from starvation. */
static ssize_t sstf_fifo_expire_ms_store(struct elevator_queue *e,
					 const char *page, size_t count)
{
	struct sstf_data *nd = e->elevator_data;
	u64 v;
	int ret = kstrtou64(page, 10, &v);

	if (ret)
		return ret;
	v = min_t(u64, v, 60000) * NSEC_PER_MSEC;
	spin_lock_irq(&nd->lock);
	nd->fifo_expire_ns = v;
	spin_unlock_irq(&nd->lock);
	return count;
}

static ssize_t sstf_dispatched_show(struct elevator_queue *e, char *page)
{
	struct sstf_data *nd = e->elevator_data;
	u64 v;

	spin_lock_irq(&nd->lock);
	v = nd->dispatched;
	spin_unlock_irq(&nd->lock);
	return sysfs_emit(page, "%llu\n", v);
}

static struct elv_fs_entry sstf_attrs[] = {
	__ATTR(depth, 0644, sstf_depth_show, sstf_depth_store),
	__ATTR(fifo_expire_ms, 0644, sstf_fifo_expire_ms_show,
	       sstf_fifo_expire_ms_store),
	__ATTR(dispatched, 0444, sstf_dispatched_show, NULL),
	__ATTR_NULL
};

static struct elevator_type sstf_elevator = {
	.ops = {
		.init_sched		= sstf_init_sched,
		.exit_sched		= sstf_exit_sched,
		.prepare_request	= sstf_prepare_request,
		.insert_requests	= sstf_insert_requests,
		.dispatch_request	= sstf_dispatch_request,
		.has_work		= sstf_has_work,
		.completed_request	= sstf_completed_request,
		.requeue_request	= sstf_requeue_request,
	},
	.elevator_attrs	= sstf_attrs,
	.elevator_name	= "sstf",
	.elevator_owner	= THIS_MODULE,
};

static int __init sstf_init(void)
{
	return elv_register(&sstf_elevator);
}

static void __exit sstf_exit(void)
{
	elv_unregister(&sstf_elevator);
}

module_init(sstf_init);
module_exit(sstf_exit);

MODULE_ALIAS("sstf-iosched");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Shortest seek time first I/O scheduler");
