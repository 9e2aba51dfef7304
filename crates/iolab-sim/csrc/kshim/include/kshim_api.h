/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The simulator's side of kshim: how iolab's engine drives an elevator
 * compiled from kernel/ (crates/iolab-sim/src/sched/kernel/ declares the
 * same functions). Every call names the instance; the calls of one
 * instance come from one thread at a time.
 *
 * The calls follow what blk-mq does around an elevator in Linux 6.1
 * (block/blk-mq.c, blk-mq-sched.c, elevator.c):
 *  - kshim_insert: blk_mq_rq_ctx_init (prepare_request, RQF_ELVPRIV) and
 *    blk_mq_sched_insert_request (insert_requests, one request);
 *  - kshim_dispatch: __blk_mq_do_dispatch_sched (has_work, then
 *    dispatch_request; work without a request reruns the queue after
 *    BLK_MQ_BUDGET_DELAY, 3 ms);
 *  - kshim_completed: blk_mq_sched_completed_request, then
 *    blk_mq_free_request (finish_request);
 *  - kshim_requeue: blk_mq_requeue_request (requeue_request) and the
 *    requeue work: a request with RQF_DONTPREP goes to the hardware
 *    queue's dispatch list, past the elevator; another is inserted again
 *    at the head (test harness only: the simulator's devices never
 *    requeue);
 *  - the merge calls: the simulator's block layer (2.6.20's, as its Rust
 *    elevators have it) decides merges and asks the elevator's hooks:
 *    request_merge (front merge candidate), allow_merge, former_request /
 *    next_request, request_merged, requests_merged (then finish_request
 *    of the request that went away);
 *  - kshim_exit_process: the process's io context goes (exit_icq).
 *
 * Copyright (C) 2026 the iolab authors
 */
#ifndef _KSHIM_API_H
#define _KSHIM_API_H

#include <stdint.h>
#include <stddef.h>

/*
 * Built as a shared object (a module compiled at run time) everything is
 * hidden but these functions: the module's own functions and the
 * stand-ins cannot collide with another copy of them in the process.
 */
#pragma GCC visibility push(default)

struct kshim_instance;

/* The module whose init runs (set by the generated kshim_init_modules). */
extern const char *kshim_current_module;

/* A request as the simulator knows it (crate::request::Request). */
struct kshim_rq {
	uint64_t sector;
	uint64_t arrival;
	uint32_t id;
	uint32_t pid;
	uint32_t nr_sectors;
	uint8_t write;
	uint8_t sync;
	uint8_t pad[2];
};

/* Run every module's init once (elv_register fills the list). */
int kshim_init_modules(void);
/* Registered elevators: 0 .. count-1; NULL past the end. */
const char *kshim_elevator_name(unsigned int i);
const char *kshim_elevator_alias(unsigned int i);
/* The module (kernel/Makefile's obj-m name) that registered it. */
const char *kshim_elevator_module(unsigned int i);

/* An elevator instance on a queue of @queue_depth driver tags, or NULL. */
struct kshim_instance *kshim_create(const char *name, uint32_t queue_depth,
				    uint64_t now);
void kshim_destroy(struct kshim_instance *k);

/* sysfs: the elevator's attributes, with the module's show/store. */
const char *kshim_attr_name(struct kshim_instance *k, unsigned int i);
int kshim_attr_writable(struct kshim_instance *k, unsigned int i);
/* Bytes written, or -errno (-ENOENT: no such file; -EACCES: read-only). */
long kshim_store(struct kshim_instance *k, const char *attr, const char *val);
long kshim_show(struct kshim_instance *k, const char *attr, char *buf,
		size_t len);

void kshim_insert(struct kshim_instance *k, const struct kshim_rq *rq,
		  uint64_t now);
/* 1 and *out if the elevator handed out a request. */
int kshim_dispatch(struct kshim_instance *k, uint64_t now,
		   struct kshim_rq *out);
/* The earliest armed timer (an hrtimer or the delayed queue run). */
uint64_t kshim_next_timer(struct kshim_instance *k);
/* Fire every timer due at @now. */
void kshim_fire(struct kshim_instance *k, uint64_t now);
void kshim_completed(struct kshim_instance *k, uint32_t id, uint64_t now);
void kshim_requeue(struct kshim_instance *k, uint32_t id, int dontprep,
		   uint64_t now);
void kshim_exit_process(struct kshim_instance *k, uint32_t pid, uint64_t now);
/*
 * Does the elevator take bio merges (a bio_merge hook)? Without one blk-mq
 * merges no bio into its requests (blk_mq_sched_bio_merge), and the
 * simulator's block layer does not either.
 */
int kshim_merges(struct kshim_instance *k);
/* Requests in the elevator (inserted, not yet dispatched or merged away). */
uint64_t kshim_queued(struct kshim_instance *k);
int kshim_has_work(struct kshim_instance *k);

int kshim_front_merge(struct kshim_instance *k, const struct kshim_rq *bio,
		      struct kshim_rq *out);
int kshim_allow_merge(struct kshim_instance *k, uint32_t id,
		      const struct kshim_rq *bio);
int kshim_former(struct kshim_instance *k, uint32_t id, struct kshim_rq *out);
int kshim_latter(struct kshim_instance *k, uint32_t id, struct kshim_rq *out);
void kshim_merged(struct kshim_instance *k, const struct kshim_rq *grown,
		  int front);
void kshim_merged_requests(struct kshim_instance *k,
			   const struct kshim_rq *merged, uint32_t next_id,
			   uint64_t now);

/*
 * Scheduler tags: set nr_requests (blk_mq_update_nr_requests: the bitmap
 * is sized again and depth_updated runs), and ask how many tags a request
 * of this kind could hold at once after the elevator's limit_depth (the
 * sum over the bitmap's words of min(word, shallow_depth)).
 */
void kshim_set_nr_requests(struct kshim_instance *k, uint32_t nr);
uint32_t kshim_tags_for(struct kshim_instance *k, int write, int sync);

/* Test harness: blk-mq's insert merge (elv_attempt_insert_merge) on. */
void kshim_set_insert_merges(struct kshim_instance *k, int on);
/* Requests inserted and then merged away on insert. */
uint64_t kshim_insert_merged(struct kshim_instance *k);

/*
 * The elevator's blktrace messages (blk_add_trace_msg): kept from now on,
 * up to @max_lines lines (0: none kept, as with no trace running); lines
 * past the limit are counted, not kept.
 */
void kshim_set_log(struct kshim_instance *k, uint32_t max_lines);
/* Lines kept; lines dropped past the limit. */
uint32_t kshim_log_count(struct kshim_instance *k);
uint64_t kshim_log_dropped(struct kshim_instance *k);
/* Line @i into @buf (NUL-terminated); returns its simulated time, ns. */
uint64_t kshim_log_line(struct kshim_instance *k, uint32_t i, char *buf,
			size_t len);
/* Forget the lines kept (the limit and the dropped count stay). */
void kshim_log_clear(struct kshim_instance *k);

/* WARN_ON_ONCE hits so far, and the first one's place. */
uint64_t kshim_warnings(struct kshim_instance *k, char *first, size_t len);

#pragma GCC visibility pop

#endif /* _KSHIM_API_H */
