/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The anticipation core shared by the "anticipatory" (Linux 2.6.20 AS) and
 * "wpcas" blk-mq elevators, and the policy interface through which the two
 * differ.
 *
 * The core owns batches, FIFO expiry, the per-process statistics, the
 * OFF / WAIT_REQ / WAIT_NEXT / FINISHED state machine with its hrtimer and
 * the Table 1 accounting of the WPCAS paper. A policy makes two decisions:
 * whether to stop (or not start) waiting for the process whose request just
 * completed, and for how long to wait. Each function names the 2.6.20
 * function it follows (block/as-iosched.c of Linux 2.6.20).
 *
 * Copyright (C) 2026 the iolab authors
 */
#ifndef _AS_IOSCHED_H
#define _AS_IOSCHED_H

#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/hrtimer.h>
#include <linux/iocontext.h>
#include <linux/rbtree.h>
#include <linux/spinlock.h>

#include "elevator.h"

/* AS's "read" and "write" directions: sync (op_is_sync) and async. */
enum { AS_SYNC = 0, AS_ASYNC = 1 };

/*
 * 2.6.20 keeps AS's times in jiffies and three of its rules depend on that
 * unit: think-time samples (whole ticks, capped at MAX_THINKTIME - 1), the
 * close window of as_close_req (ms compared with antic_expire in ticks),
 * and the first write batch (write_batch_expire in ticks / 10). The module
 * counts them in 1 ms ticks, as 2.6.20 at HZ=1000 (the WPCAS paper's 6 ms
 * antic_expire is HZ/150 there), whatever the kernel's own HZ. Every other time is kept in ns.
 */
#define AS_TICK_NS		NSEC_PER_MSEC
/* MAX_THINKTIME = HZ/50 (as-iosched.c, 2.6.20): 20 ticks of 1 ms. */
#define AS_MAX_THINKTIME	20

/* Fixed point of AS's decaying averages and probabilities: 256 is 1.0. */
#define AS_FP_ONE		256

/* enum anticipation_status of 2.6.20. */
enum as_antic_status {
	ANTIC_OFF,		/* not anticipating (normal operation) */
	ANTIC_WAIT_REQ,		/* the target's last request is in flight */
	ANTIC_WAIT_NEXT,	/* it completed; the timer runs */
	ANTIC_FINISHED,		/* a candidate came or the timer fired */
};

/*
 * Where a break decision is asked from: 2.6.20 asks as_can_break_anticipation
 * both in as_dispatch_request (as_can_anticipate) and on arrival
 * (as_update_rq).
 */
enum as_moment {
	AS_AT_DISPATCH,		/* breaking means: do not start waiting */
	AS_AT_ARRIVAL,		/* breaking ends the wait: a success */
};

/*
 * The paper's Table 1: A-T started, A-S succeeded, A-F failed, A-ST and
 * A-FT the time waited in each. A-T = A-S + A-F by construction.
 */
/*
 * The successful waits by length, so that the two homes' distributions of
 * a process's own time can be compared, not only their means (docs/kernel.md,
 * "The anticipating rows by the elevator's own counters"): bin i counts the
 * waits in [i, i + 1) x AS_WAIT_BIN_NS, the last bin every longer one. 32
 * bins of 250 us span 8 ms, past the default antic_expire of 6 ms.
 */
#define AS_WAIT_BINS 32
#define AS_WAIT_BIN_NS (250 * NSEC_PER_USEC)

struct as_antic_stats {
	u64 started;
	u64 succeeded;
	u64 failed;
	u64 success_wait_ns;
	u64 failure_wait_ns;
	u64 success_wait_bins[AS_WAIT_BINS];
};

/* A bias-corrected EWMA with alpha 1/8 (as_update_thinktime). */
struct as_ewma {
	u64 samples;	/* weight: 0, 32, 60, 84, ... towards 256 */
	u64 total;
	u64 mean;
};

/* Per process: struct as_io_context of 2.6.20 (in struct as_proc). */
struct as_io_context {
	bool running;		/* AS_TASK_RUNNING: cleared by exit_icq */
	bool io_started;	/* AS_TASK_IOSTARTED: has queued sync I/O */
	bool io_running;	/* AS_TASK_IORUNNING: sync I/O completed */
	u32 nr_queued;		/* requests in the elevator */
	u64 last_end_request;	/* ns of its last sync completion */
	struct as_ewma ttime;	/* think time, in ticks */
	sector_t last_request_pos;
	struct as_ewma seek;	/* seek distance, in sectors */
	struct as_antic_stats antic;	/* waits on this process */
};

/*
 * A process's state, refcounted as BFQ's bfq_queue is: its icq, each of its
 * requests and the core (while it is the target) hold a reference. An icq
 * is freed at an elevator switch before exit_sched runs (and thus before
 * the timer is cancelled), so nothing but the icq itself may point to it.
 */
struct as_proc {
	refcount_t ref;
	struct as_io_context aic;
	/* the policy's per-process data (as_policy.icq_data_size bytes) */
	unsigned long policy_data[];
};

/* The icq: io_cq first, as block/blk-ioc.c requires. */
struct as_icq {
	struct io_cq icq;
	struct as_proc *proc;	/* made by the first request; ad->lock */
	bool exited;		/* exit_icq ran; ad->lock */
};

/* Queue-wide priors of 2.6.20's struct as_data. */
struct as_priors {
	u64 new_ttime_total;
	u64 new_ttime_mean;	/* ticks */
	u64 new_seek_total;
	u64 new_seek_mean;	/* sectors */
	u64 exit_prob;		/* 1/256: a waited-on process exited */
	u64 exit_no_coop;	/* 1/256: an exited one was not rescued */
};

/* What as_update_iohist measured for one sync request. */
struct as_sample {
	u64 think_ns;		/* 0 where AS samples 0 */
	u64 think_ticks;	/* the capped sample AS used */
	u64 seek_sectors;	/* before AS's clamping */
};

struct as_data;

/*
 * A policy: the two decisions, plus an optional observer of samples.
 * All hooks run with ad->lock held; ad->now is the current time.
 */
struct as_policy {
	const char *name;
	/* bytes of per-process data after struct as_proc */
	size_t icq_data_size;
	/* per-queue data and defaults; may be NULL */
	int (*init)(struct as_data *ad);
	void (*exit)(struct as_data *ad);
	/*
	 * Decision (a): serve rq (NULL: nothing queued) rather than wait for
	 * ad->target? Steps 1 and 2 of as_can_break_anticipation (the
	 * target's own request; the wait ran out) were applied already.
	 */
	bool (*can_break)(struct as_data *ad, struct request *rq,
			  enum as_moment at);
	/* Decision (b): how long to wait for ad->target, in ns. */
	u64 (*wait_ns)(struct as_data *ad);
	/* The core folded a sync request into the process's history. */
	void (*on_sample)(struct as_data *ad, struct as_proc *proc,
			  const struct as_sample *s);
	/* the policy's own sysfs files after the core's (NULL-terminated) */
	const struct elv_fs_entry *attrs;
};

/* An elevator type built from the core and a policy. */
struct as_elevator {
	struct elevator_type type;
	const struct as_policy *policy;
};

/* Read/write batches of AS (2.6.20's batch_data_dir and friends). */
struct as_batch {
	int dir;			/* batch_data_dir */
	bool changed;			/* changed_batch */
	bool new;			/* new_batch */
	u64 expires;			/* current_batch_expires, ns */
	u32 write_batch_count;
	u32 current_write_count;
	bool write_idled;		/* write_batch_idled */
};

/* Per queue: struct as_data of 2.6.20. */
struct as_data {
	struct request_queue *q;
	const struct as_policy *policy;
	void *policy_data;
	/* everything below; also taken by completions and the hrtimer */
	spinlock_t lock;
	/* time of the hook being run, ns (set under lock) */
	u64 now;

	struct rb_root sort_list[2];
	struct list_head fifo_list[2];
	/* requeued and at-head requests, served first (as mq-deadline) */
	struct list_head dispatch;
	struct request *next_rq[2];
	sector_t last_sector[2];
	u64 last_check_fifo[2];
	struct as_batch batch;
	/* requests dispatched and not completed (or requeued) */
	u32 nr_dispatched;
	/* requests in sort_list/fifo_list */
	u32 nr_queued;
	/* the device takes this many requests at once (tag depth) */
	u32 device_depth;
	/* scheduler tags an async request may take, in all and per word */
	u32 async_depth;
	u32 async_word_depth;
	/* dispatch could make progress: read locklessly by has_work */
	bool ready;

	/* the wait */
	enum as_antic_status antic_status;
	u64 antic_start;		/* completion of the target's request */
	u64 antic_deadline;		/* timer expiry in WAIT_NEXT */
	u64 idle_from;			/* WAIT_NEXT entered */
	struct as_proc *target;		/* owner of the last sync dispatch */
	bool ioc_finished;
	struct hrtimer antic_timer;
	struct as_priors priors;

	/* counters (read-only sysfs files) */
	struct as_antic_stats stats;
	u64 inserted;
	u64 dispatched;
	u64 completed;
	u64 requeued;
	u64 merged;
	/* anticipations that ended with their target exited */
	u64 antic_exited;
	/* as_proc objects alive (none may outlive the elevator) */
	atomic_t nr_procs;

	/* tunables, ns */
	u64 fifo_expire[2];
	u64 batch_expire[2];
	u64 antic_expire;
	/* 0: merges as 2.6.20's; 1: a bio meets its own sync class only */
	u64 merge_by_class;
};

static inline struct as_icq *as_icq_of(struct io_cq *icq)
{
	return icq ? container_of(icq, struct as_icq, icq) : NULL;
}

/* The process that issued @rq (NULL if it has no state: see prepare). */
static inline struct as_proc *as_rq_proc(struct request *rq)
{
	return rq->elv.priv[1];
}

/* The elevator hooks (as-core.c), shared by both elevator types. */
int as_init_sched(struct request_queue *q, struct elevator_type *e);
void as_exit_sched(struct elevator_queue *e);
void as_exit_icq(struct io_cq *icq);
bool as_allow_merge(struct request_queue *q, struct request *rq,
		    struct bio *bio);
bool as_bio_merge(struct request_queue *q, struct bio *bio,
		  unsigned int nr_segs);
int as_request_merge(struct request_queue *q, struct request **rq,
		     struct bio *bio);
void as_request_merged(struct request_queue *q, struct request *rq,
		       enum elv_merge type);
void as_requests_merged(struct request_queue *q, struct request *rq,
			struct request *next);
void as_prepare_request(struct request *rq);
void as_finish_request(struct request *rq);
void as_insert_requests(struct blk_mq_hw_ctx *hctx, struct list_head *list,
			bool at_head);
struct request *as_dispatch_request(struct blk_mq_hw_ctx *hctx);
bool as_has_work(struct blk_mq_hw_ctx *hctx);
void as_completed_request(struct request *rq, u64 now);
void as_requeue_request(struct request *rq);
void as_limit_depth(blk_opf_t opf, struct blk_mq_alloc_data *data);
void as_depth_updated(struct blk_mq_hw_ctx *hctx);
int as_init_hctx(struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx);

#define AS_MQ_OPS {						\
	.init_sched		= as_init_sched,		\
	.exit_sched		= as_exit_sched,		\
	.exit_icq		= as_exit_icq,			\
	.allow_merge		= as_allow_merge,		\
	.bio_merge		= as_bio_merge,			\
	.request_merge		= as_request_merge,		\
	.request_merged		= as_request_merged,		\
	.requests_merged	= as_requests_merged,		\
	.prepare_request	= as_prepare_request,		\
	.finish_request		= as_finish_request,		\
	.insert_requests	= as_insert_requests,		\
	.dispatch_request	= as_dispatch_request,		\
	.has_work		= as_has_work,			\
	.completed_request	= as_completed_request,		\
	.requeue_request	= as_requeue_request,		\
	.limit_depth		= as_limit_depth,		\
	.depth_updated		= as_depth_updated,		\
	.init_hctx		= as_init_hctx,			\
	.next_request		= elv_rb_latter_request,	\
	.former_request		= elv_rb_former_request,	\
}

/* Per-process statistics (as-ioc.c). */
bool as_update_iohist(struct as_data *ad, struct as_proc *proc,
		      struct request *rq, struct as_sample *out);
void as_completed_sync(struct as_data *ad, struct as_proc *proc);
void as_proc_put(struct as_data *ad, struct as_proc *proc);
u64 as_event(u64 p);
u64 as_non_event(u64 p);

/* Time helpers: ticks of 1 ms (see AS_TICK_NS). */
static inline u64 as_ticks(u64 ns)
{
	return div_u64(ns, AS_TICK_NS);
}

static inline u64 as_ticks_elapsed(u64 then, u64 now)
{
	u64 a = as_ticks(then), b = as_ticks(now);

	return b > a ? b - a : 0;
}

static inline u64 as_ns_to_ticks_ceil(u64 ns)
{
	return div_u64(ns + AS_TICK_NS - 1, AS_TICK_NS);
}

/*
 * The time of the hook being run. A completion brings a time taken before
 * it got the lock, possibly older than one another CPU has set: keep the
 * clock from going back.
 */
static inline void as_set_now(struct as_data *ad, u64 t)
{
	if (t > ad->now)
		ad->now = t;
}

static inline bool as_waiting(struct as_data *ad)
{
	return ad->antic_status == ANTIC_WAIT_REQ ||
	       ad->antic_status == ANTIC_WAIT_NEXT;
}

/* Batches (as-batch.c). */
void as_batch_init(struct as_data *ad);
bool as_batch_expired(struct as_data *ad);
void as_batch_note_idle(struct as_data *ad, bool reads, bool writes);
void as_batch_to_sync(struct as_data *ad);
void as_batch_to_async(struct as_data *ad);
bool as_batch_may_start(struct as_data *ad);
void as_batch_completed(struct as_data *ad, int dir);

/* The wait (as-wait.c); all with ad->lock held but the timer callback. */
void as_antic_waitreq(struct as_data *ad);
void as_antic_waitnext(struct as_data *ad, u64 wait_ns);
void as_antic_stop(struct as_data *ad, bool success);
void as_antic_timeout(struct as_data *ad);
void as_update_ready(struct as_data *ad);
enum hrtimer_restart as_antic_timer_fn(struct hrtimer *timer);

/* The AS policy and the steps the 95%-style policies share (as-policy.c). */
extern const struct as_policy as_policy_as;
bool as_cooperation_breaks(struct as_data *ad, struct request *rq);
bool as_target_has_queued(struct as_data *ad);
bool as_exited_unrescued(struct as_data *ad);
bool as_thinks_too_long(struct as_data *ad);

/* WPCAS (wpcas-policy.c). */
extern const struct as_policy as_policy_wpcas;

/* sysfs (as-sysfs.c): the core's files and a policy's helpers. */
struct elv_fs_entry *as_sysfs_attrs(const struct as_policy *policy);
ssize_t as_store_u64(struct as_data *ad, u64 *field, u64 min, u64 max,
		     u64 scale, const char *page, size_t count);
ssize_t as_show_u64(const u64 *field, u64 scale, char *page);

#endif /* _AS_IOSCHED_H */
