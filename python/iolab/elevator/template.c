// SPDX-License-Identifier: GPL-2.0
/*
 * The "@NAME@" I/O scheduler: first come, first served. Written by
 * `iolab elevator new @NAME@` as a starting point to edit; it builds and runs
 * unchanged in two places:
 *
 *   - a Linux 6.1 kernel, as a blk-mq elevator of the module
 *     @NAME@-iosched.ko (make -C kernel; insmod kernel/@NAME@-iosched.ko;
 *     echo @NAME@ >/sys/block/DEV/queue/scheduler);
 *   - iolab's simulator, as kernel:@NAME@ (iolab compare --schedulers
 *     kernel:@NAME@), compiled against iolab's stand-ins for the kernel
 *     functions used here (docs/kernel.md lists them; one they lack fails
 *     the build with its name).
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
#include <linux/sysfs.h>

#include <trace/events/block.h>

#include "elevator.h"
#include "blk.h"
#include "blk-mq.h"
#include "blk-mq-sched.h"

/* rq->elv.priv[0]: the request was handed to the device by this elevator */
#define @UNAME@_RQ_DISPATCHED	((void *)1)

struct @NAME@_data {
	/* everything below; completions (interrupt context) take it too */
	spinlock_t lock;
	/* requests waiting, oldest first */
	struct list_head fifo;
	u32 queued;
	/* handed to the device and not completed */
	u32 in_flight;
	/* requests the device takes at once: its tags */
	u32 device_depth;
	/* tunable: requests handed out at once (0: device_depth) */
	u64 depth;
	/* counter */
	u64 dispatched;
};

static u32 @NAME@_limit(struct @NAME@_data *nd)
{
	u64 depth = READ_ONCE(nd->depth);

	return depth ? min_t(u64, depth, nd->device_depth) : nd->device_depth;
}

static int @NAME@_init_sched(struct request_queue *q, struct elevator_type *e)
{
	struct blk_mq_tag_set *set = q->tag_set;
	struct elevator_queue *eq;
	struct @NAME@_data *nd;

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
	nd->device_depth = max_t(u32, set->queue_depth - set->reserved_tags, 1);
	eq->elevator_data = nd;
	q->elevator = eq;
	return 0;
}

static void @NAME@_exit_sched(struct elevator_queue *e)
{
	struct @NAME@_data *nd = e->elevator_data;

	WARN_ON_ONCE(!list_empty(&nd->fifo));
	kfree(nd);
}

static void @NAME@_prepare_request(struct request *rq)
{
	rq->elv.priv[0] = NULL;
}

static void @NAME@_insert_requests(struct blk_mq_hw_ctx *hctx,
@(@struct list_head *list, bool at_head)
{
	struct @NAME@_data *nd = hctx->queue->elevator->elevator_data;
	struct request *rq;

	spin_lock_irq(&nd->lock);
	while (!list_empty(list)) {
		rq = list_first_entry(list, struct request, queuelist);
		list_del_init(&rq->queuelist);
		trace_block_rq_insert(rq);
		if (at_head)
			list_add(&rq->queuelist, &nd->fifo);
		else
			list_add_tail(&rq->queuelist, &nd->fifo);
		WRITE_ONCE(nd->queued, nd->queued + 1);
	}
	spin_unlock_irq(&nd->lock);
}

/* The request to serve next. Edit this to make your own policy. */
static struct request *@NAME@_choose(struct @NAME@_data *nd)
{
	return list_first_entry_or_null(&nd->fifo, struct request, queuelist);
}

static struct request *@NAME@_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct @NAME@_data *nd = hctx->queue->elevator->elevator_data;
	struct request *rq = NULL;

	spin_lock_irq(&nd->lock);
	if (nd->in_flight < @NAME@_limit(nd))
		rq = @NAME@_choose(nd);
	if (rq) {
		list_del_init(&rq->queuelist);
		WRITE_ONCE(nd->queued, nd->queued - 1);
		nd->in_flight++;
		nd->dispatched++;
		rq->elv.priv[0] = @UNAME@_RQ_DISPATCHED;
		rq->rq_flags |= RQF_STARTED;
	}
	spin_unlock_irq(&nd->lock);
	return rq;
}

static bool @NAME@_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct @NAME@_data *nd = hctx->queue->elevator->elevator_data;

	return READ_ONCE(nd->queued) &&
	       READ_ONCE(nd->in_flight) < @NAME@_limit(nd);
}

/*
 * A request handed out has left the device: it completed, or the driver
 * gave it back (with RQF_DONTPREP, as SCSI and NVMe retries do, it then
 * goes to blk-mq's own list and completes without coming back here). If
 * the elevator was full and has requests, run the queue: blk-mq does not
 * know that a completion made dispatch possible again.
 */
static void @NAME@_done(struct request *rq)
{
	struct @NAME@_data *nd = rq->q->elevator->elevator_data;
	unsigned long flags;
	bool kick;

	if (rq->elv.priv[0] != @UNAME@_RQ_DISPATCHED)
		return;
	rq->elv.priv[0] = NULL;
	spin_lock_irqsave(&nd->lock, flags);
	kick = nd->in_flight >= @NAME@_limit(nd) && nd->queued;
	nd->in_flight--;
	spin_unlock_irqrestore(&nd->lock, flags);
	if (kick)
		blk_mq_run_hw_queues(rq->q, true);
}

static void @NAME@_completed_request(struct request *rq, u64 now)
{
	@NAME@_done(rq);
}

static void @NAME@_requeue_request(struct request *rq)
{
	@NAME@_done(rq);
}

/* ---- sysfs: /sys/block/DEV/queue/iosched/ ---- */

static ssize_t @NAME@_depth_show(struct elevator_queue *e, char *page)
{
	struct @NAME@_data *nd = e->elevator_data;

	return sysfs_emit(page, "%llu\n", READ_ONCE(nd->depth));
}

/* A value that is not a whole number is refused; a large one is clamped. */
static ssize_t @NAME@_depth_store(struct elevator_queue *e,
@(@const char *page, size_t count)
{
	struct @NAME@_data *nd = e->elevator_data;
	u64 v;
	int ret = kstrtou64(page, 10, &v);

	if (ret)
		return ret;
	WRITE_ONCE(nd->depth, min_t(u64, v, 1024));
	return count;
}

static ssize_t @NAME@_dispatched_show(struct elevator_queue *e, char *page)
{
	struct @NAME@_data *nd = e->elevator_data;
	u64 v;

	spin_lock_irq(&nd->lock);
	v = nd->dispatched;
	spin_unlock_irq(&nd->lock);
	return sysfs_emit(page, "%llu\n", v);
}

static struct elv_fs_entry @NAME@_attrs[] = {
	__ATTR(depth, 0644, @NAME@_depth_show, @NAME@_depth_store),
	__ATTR(dispatched, 0444, @NAME@_dispatched_show, NULL),
	__ATTR_NULL
};

static struct elevator_type @NAME@_elevator = {
	.ops = {
		.init_sched		= @NAME@_init_sched,
		.exit_sched		= @NAME@_exit_sched,
		.prepare_request	= @NAME@_prepare_request,
		.insert_requests	= @NAME@_insert_requests,
		.dispatch_request	= @NAME@_dispatch_request,
		.has_work		= @NAME@_has_work,
		.completed_request	= @NAME@_completed_request,
		.requeue_request	= @NAME@_requeue_request,
	},
	.elevator_attrs	= @NAME@_attrs,
	.elevator_name	= "@NAME@",
	.elevator_owner	= THIS_MODULE,
};

static int __init @NAME@_init(void)
{
	return elv_register(&@NAME@_elevator);
}

static void __exit @NAME@_exit(void)
{
	elv_unregister(&@NAME@_elevator);
}

module_init(@NAME@_init);
module_exit(@NAME@_exit);

MODULE_ALIAS("@NAME@-iosched");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("@NAME@ I/O scheduler");
