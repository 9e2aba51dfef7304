/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim: the part of Linux 6.1's kernel API that an I/O elevator module
 * calls, written for userspace so that kernel/'s elevators compile
 * unmodified into iolab's simulator (the technique of Linux's own
 * tools/testing/radix-tree/ and tools/testing/vma/: the kernel file is the
 * one under test, the stand-ins are small and plain).
 *
 * What is here, and how it behaves:
 *  - types, list_head, a sorted tree behind the rbtree API (rb_first,
 *    rb_next, rb_prev; elv_rb_add/del/find), refcount_t and atomic_t;
 *  - struct request, request_queue, bio, io_context/io_cq, elevator_type
 *    and elevator_mq_ops with the fields elevators use (block/elevator.h,
 *    include/linux/blk-mq.h of 6.1);
 *  - spinlocks that only record that they are held (the simulator runs
 *    every hook on one thread, so there is nothing to exclude);
 *  - hrtimers that the simulator fires: an armed timer is what the
 *    elevator reports as its armed timer (sched::Elevator::armed_timer);
 *  - ktime_get_ns(): the simulated clock of the hook being run;
 *  - one io context and icq per simulated process (ioc_find_get_icq finds
 *    the one of the process whose request is being prepared);
 *  - WARN_ON_ONCE counts a warning on the elevator instance, which the
 *    simulator's tests read (a module's WARN is a failed test).
 *
 * Everything is per elevator instance or thread-local: the simulator runs
 * several jobs on several threads, each job's elevator on one.
 *
 * Copyright (C) 2026 the iolab authors
 */
#ifndef _KSHIM_H
#define _KSHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdarg.h>
#include <ctype.h>
#include <sys/types.h>

/* ---- compiler and basic types ---- */

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
/* as the kernel's int-ll64.h: printk formats use %llu for u64 */
typedef unsigned long long u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef long long s64;
typedef u64 sector_t;
typedef unsigned int gfp_t;
typedef u32 blk_opf_t;
typedef u32 req_flags_t;
typedef s64 ktime_t;

#define __init
#define __exit
#define __force
#define __rcu
#undef __always_inline
#define __always_inline inline __attribute__((always_inline))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define __maybe_unused	__attribute__((unused))

#define BIT(n)		(1UL << (n))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define U32_MAX		((u32)~0U)
#define U64_MAX		((u64)~0ULL)
#define S64_MAX		((s64)(U64_MAX >> 1))
#define S64_MIN		(-S64_MAX - 1)

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define READ_ONCE(x)		(*(volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))

#define min(a, b)	({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a < _b ? _a : _b; })
#define max(a, b)	({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a > _b ? _a : _b; })
#define min_t(t, a, b)	({ t _a = (a); t _b = (b); _a < _b ? _a : _b; })
#define max_t(t, a, b)	({ t _a = (a); t _b = (b); _a > _b ? _a : _b; })
#define clamp(v, lo, hi)	min(max(v, lo), hi)
#define clamp_t(t, v, lo, hi)	min_t(t, max_t(t, v, lo), hi)

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

/* ---- warnings ---- */

/* Counted on the running elevator instance; the simulator's tests read it. */
void kshim_warn(const char *file, int line, const char *cond);

#define WARN_ON_ONCE(cond) ({						\
	bool __w = !!(cond);						\
	if (unlikely(__w))						\
		kshim_warn(__FILE__, __LINE__, #cond);			\
	__w;								\
})
#define WARN_ON(cond)	WARN_ON_ONCE(cond)
#define BUG_ON(cond)	((void)WARN_ON_ONCE(cond))
#define pr_warn(...)	((void)0)
#define pr_info(...)	((void)0)

/* ---- locking: one thread, so only "held" is recorded ---- */

typedef struct {
	int held;
} spinlock_t;

#define spin_lock_init(l)	((l)->held = 0)
void kshim_lock(spinlock_t *l);
void kshim_unlock(spinlock_t *l);
#define spin_lock(l)		kshim_lock(l)
#define spin_unlock(l)		kshim_unlock(l)
#define spin_lock_irq(l)	kshim_lock(l)
#define spin_unlock_irq(l)	kshim_unlock(l)
#define spin_lock_irqsave(l, f)		((void)(f), kshim_lock(l))
#define spin_unlock_irqrestore(l, f)	((void)(f), kshim_unlock(l))
/*
 * The simulator calls request_merged/requests_merged directly, where the
 * kernel calls them from within bio_merge under the elevator's lock: the
 * assertion has nothing to check here.
 */
#define lockdep_assert_held(l)	((void)(l))

/* ---- refcounts and atomics (one thread) ---- */

typedef struct {
	int refs;
} refcount_t;

static inline void refcount_set(refcount_t *r, int n) { r->refs = n; }
static inline void refcount_inc(refcount_t *r) { WARN_ON_ONCE(r->refs <= 0); r->refs++; }
static inline bool refcount_dec_and_test(refcount_t *r)
{
	WARN_ON_ONCE(r->refs <= 0);
	return --r->refs == 0;
}

typedef struct {
	int counter;
} atomic_t;

#define atomic_read(a)		READ_ONCE((a)->counter)
#define atomic_set(a, v)	((a)->counter = (v))
#define atomic_inc(a)		((a)->counter++)
#define atomic_dec(a)		((a)->counter--)

/* ---- memory ---- */

#define GFP_KERNEL	0x1u
#define GFP_NOWAIT	0x2u
#define GFP_ATOMIC	0x4u
#define __GFP_NOWARN	0x8u
#define __GFP_ZERO	0x10u
#define NUMA_NO_NODE	(-1)

void *kzalloc(size_t size, gfp_t gfp);
void *kmalloc(size_t size, gfp_t gfp);
void *kcalloc(size_t n, size_t size, gfp_t gfp);
void kfree(const void *p);
#define kzalloc_node(s, g, n)	((void)(n), kzalloc(s, g))
#define kmalloc_node(s, g, n)	((void)(n), kmalloc(s, g))

/* ---- arithmetic (include/linux/math64.h, lib/math/int_sqrt.c) ---- */

static inline u64 div_u64(u64 a, u32 b) { return a / b; }
static inline u64 div64_u64(u64 a, u64 b) { return a / b; }
static inline s64 div64_s64(s64 a, s64 b) { return a / b; }
static inline s64 div_s64(s64 a, s32 b) { return a / b; }
u64 int_sqrt64(u64 x);
unsigned long int_sqrt(unsigned long x);
/* Linux's check_mul_overflow: true if a * b overflowed into *d. */
#define check_mul_overflow(a, b, d)	__builtin_mul_overflow(a, b, d)
#define check_add_overflow(a, b, d)	__builtin_add_overflow(a, b, d)

/* ---- text (lib/kstrtox.c, fs/sysfs) ---- */

#define PAGE_SIZE	4096
int kstrtou64(const char *s, unsigned int base, u64 *res);
int kstrtoull(const char *s, unsigned int base, unsigned long long *res);
int kstrtouint(const char *s, unsigned int base, unsigned int *res);
int kstrtoint(const char *s, unsigned int base, int *res);
int sysfs_emit(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sysfs_emit_at(char *buf, int at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

struct attribute {
	const char *name;
	unsigned short mode;
};

#define __ATTR(_name, _mode, _show, _store) {				\
	.attr = { .name = #_name, .mode = (_mode) },			\
	.show = _show,							\
	.store = _store,						\
}
#define __ATTR_NULL	{ .attr = { .name = NULL } }

/* ---- lists (include/linux/list.h) ---- */

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name)	{ &(name), &(name) }
#define LIST_HEAD(name)		struct list_head name = LIST_HEAD_INIT(name)

static inline void INIT_LIST_HEAD(struct list_head *l)
{
	l->next = l;
	l->prev = l;
}

static inline void __list_add(struct list_head *n, struct list_head *prev,
			      struct list_head *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void list_add(struct list_head *n, struct list_head *head)
{
	__list_add(n, head, head->next);
}

static inline void list_add_tail(struct list_head *n, struct list_head *head)
{
	__list_add(n, head->prev, head);
}

static inline void __list_del_entry(struct list_head *e)
{
	e->next->prev = e->prev;
	e->prev->next = e->next;
}

static inline void list_del_init(struct list_head *e)
{
	__list_del_entry(e);
	INIT_LIST_HEAD(e);
}

static inline void list_del(struct list_head *e)
{
	__list_del_entry(e);
	e->next = NULL;
	e->prev = NULL;
}

static inline void list_move(struct list_head *e, struct list_head *head)
{
	__list_del_entry(e);
	list_add(e, head);
}

static inline void list_move_tail(struct list_head *e, struct list_head *head)
{
	__list_del_entry(e);
	list_add_tail(e, head);
}

static inline int list_empty(const struct list_head *head)
{
	return READ_ONCE(head->next) == head;
}

#define list_empty_careful(h)	list_empty(h)

static inline void list_splice_init(struct list_head *list,
				    struct list_head *head)
{
	if (!list_empty(list)) {
		struct list_head *first = list->next, *last = list->prev;

		first->prev = head;
		last->next = head->next;
		head->next->prev = last;
		head->next = first;
		INIT_LIST_HEAD(list);
	}
}

#define list_entry(p, type, member)	container_of(p, type, member)
#define list_first_entry(h, type, member) list_entry((h)->next, type, member)
#define list_last_entry(h, type, member) list_entry((h)->prev, type, member)
#define list_first_entry_or_null(h, type, member) ({			\
	struct list_head *__h = (h);					\
	struct list_head *__n = READ_ONCE(__h->next);			\
	__n != __h ? list_entry(__n, type, member) : NULL;		\
})
#define list_next_entry(p, member) \
	list_entry((p)->member.next, __typeof__(*(p)), member)
#define list_for_each_entry(p, h, member)				\
	for (p = list_first_entry(h, __typeof__(*p), member);		\
	     &p->member != (h); p = list_next_entry(p, member))
#define list_for_each_entry_safe(p, n, h, member)			\
	for (p = list_first_entry(h, __typeof__(*p), member),		\
	     n = list_next_entry(p, member);				\
	     &p->member != (h);						\
	     p = n, n = list_next_entry(n, member))

/*
 * ---- a sorted tree behind the rbtree API (include/linux/rbtree.h) ----
 *
 * A treap with parent links, not a red-black tree: the elevators only walk
 * it in order (rb_first, rb_next, rb_prev) and add, remove and look up
 * through elv_rb_add/del/find, none of which depends on the tree's shape.
 * Priorities come from a per-tree counter, so a run is deterministic.
 */
struct rb_node {
	struct rb_node *rb_left, *rb_right, *rb_parent;
	u64 rb_prio;
};

struct rb_root {
	struct rb_node *rb_node;
	u64 rb_seq;
};

#define RB_ROOT			((struct rb_root) { NULL, 0 })
#define RB_EMPTY_ROOT(r)	(READ_ONCE((r)->rb_node) == NULL)
#define RB_CLEAR_NODE(n)	((n)->rb_parent = (n))
#define RB_EMPTY_NODE(n)	((n)->rb_parent == (n))
#define rb_entry(p, type, member)	container_of(p, type, member)

struct rb_node *rb_first(const struct rb_root *root);
struct rb_node *rb_last(const struct rb_root *root);
struct rb_node *rb_next(const struct rb_node *node);
struct rb_node *rb_prev(const struct rb_node *node);
/* Insert @node after every node for which @less(node, x) is false. */
void kshim_rb_insert(struct rb_root *root, struct rb_node *node,
		     bool (*less)(const struct rb_node *, const struct rb_node *));
void rb_erase(struct rb_node *node, struct rb_root *root);

/* ---- blktrace messages (include/linux/blktrace_api.h) ---- */

/*
 * blk_add_trace_msg: the line goes into the instance's message log while
 * the simulator keeps one (kshim_set_log), as the kernel's goes into a
 * running trace; at most BLK_TN_MAX_MSG characters, as there. As the
 * kernel's macro, it evaluates its arguments only then: an elevator's
 * trace arguments cost nothing on the hot path of an untraced run.
 */
#define BLK_TN_MAX_MSG		128
struct request_queue;
bool kshim_tracing(struct request_queue *q);
void kshim_trace_msg(struct request_queue *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define blk_add_trace_msg(q, fmt, ...)					\
	do {								\
		if (kshim_tracing(q))					\
			kshim_trace_msg(q, fmt, ##__VA_ARGS__);		\
	} while (0)

/* ---- time and hrtimers (include/linux/hrtimer.h) ---- */

/* The simulated time of the hook being run. */
u64 ktime_get_ns(void);
static inline ktime_t ns_to_ktime(u64 ns) { return (ktime_t)ns; }
static inline s64 ktime_to_ns(ktime_t t) { return t; }
static inline ktime_t ktime_get(void) { return (ktime_t)ktime_get_ns(); }
#define jiffies			(ktime_get_ns() / (NSEC_PER_SEC / HZ))
#define HZ			1000

enum hrtimer_restart { HRTIMER_NORESTART, HRTIMER_RESTART };
enum hrtimer_mode { HRTIMER_MODE_ABS = 0, HRTIMER_MODE_REL = 1 };
#define CLOCK_MONOTONIC		1

struct kshim_instance;

struct hrtimer {
	enum hrtimer_restart (*function)(struct hrtimer *);
	u64 expires;
	bool armed;
	struct kshim_instance *owner;
	struct hrtimer *next_armed;
};

void hrtimer_init(struct hrtimer *t, int clock, enum hrtimer_mode mode);
void hrtimer_start(struct hrtimer *t, ktime_t when, enum hrtimer_mode mode);
int hrtimer_try_to_cancel(struct hrtimer *t);
int hrtimer_cancel(struct hrtimer *t);
static inline bool hrtimer_active(const struct hrtimer *t) { return t->armed; }

/* ---- block requests (include/linux/blk-mq.h, blk_types.h) ---- */

#define REQ_OP_READ	0u
#define REQ_OP_WRITE	1u
#define REQ_OP_MASK	0xffu
#define REQ_SYNC	(1u << 11)
#define REQ_META	(1u << 12)
#define REQ_PRIO	(1u << 13)
#define REQ_NOMERGE	(1u << 14)
#define REQ_IDLE	(1u << 15)
#define REQ_FUA		(1u << 17)
#define REQ_PREFLUSH	(1u << 18)

static inline bool op_is_sync(blk_opf_t op)
{
	return (op & REQ_OP_MASK) == REQ_OP_READ ||
	       (op & (REQ_SYNC | REQ_FUA | REQ_PREFLUSH));
}

static inline bool op_is_write(blk_opf_t op)
{
	return op & 1;
}

#define RQF_STARTED	((req_flags_t)(1 << 1))
#define RQF_SOFTBARRIER	((req_flags_t)(1 << 3))
#define RQF_DONTPREP	((req_flags_t)(1 << 7))
#define RQF_ELVPRIV	((req_flags_t)(1 << 12))
#define RQF_ELV		((req_flags_t)(1 << 22))

struct request_queue;
struct io_cq;
struct blk_mq_hw_ctx;

struct request {
	struct request_queue *q;
	struct blk_mq_hw_ctx *mq_hctx;
	blk_opf_t cmd_flags;
	req_flags_t rq_flags;
	unsigned short ioprio;
	sector_t __sector;
	unsigned int __data_len;
	u64 start_time_ns;
	u64 io_start_time_ns;
	struct list_head queuelist;
	struct rb_node rb_node;
	/* in the merge hash (elv_rqhash_add) */
	bool kshim_hashed;
	/* handed to the device, not completed */
	bool kshim_in_flight;
	u64 fifo_time;
	struct {
		struct io_cq *icq;
		void *priv[2];
	} elv;
	/* the simulator's view: its request id, process and arrival */
	u32 kshim_id;
	u32 kshim_pid;
	u64 kshim_arrival;
	struct request *kshim_next_free;
};

static inline sector_t blk_rq_pos(const struct request *rq) { return rq->__sector; }
static inline unsigned int blk_rq_bytes(const struct request *rq) { return rq->__data_len; }
static inline unsigned int blk_rq_sectors(const struct request *rq) { return rq->__data_len >> 9; }
static inline int rq_data_dir(const struct request *rq) { return op_is_write(rq->cmd_flags); }
static inline bool rq_mergeable(const struct request *rq) { return !(rq->cmd_flags & REQ_NOMERGE); }
static inline bool blk_discard_mergable(const struct request *rq) { (void)rq; return false; }
#define req_op(rq)	((rq)->cmd_flags & REQ_OP_MASK)

struct bvec_iter {
	sector_t bi_sector;
	unsigned int bi_size;
};

struct bio {
	blk_opf_t bi_opf;
	struct bvec_iter bi_iter;
	unsigned short bi_ioprio;
};

static inline sector_t bio_end_sector(const struct bio *b)
{
	return b->bi_iter.bi_sector + (b->bi_iter.bi_size >> 9);
}

#define READ	0
#define WRITE	1

static inline int bio_data_dir(const struct bio *b) { return op_is_write(b->bi_opf); }

/* ---- io contexts (include/linux/iocontext.h) ---- */

struct io_context {
	atomic_t active_ref;
	u32 kshim_pid;
};

struct io_cq {
	struct request_queue *q;
	struct io_context *ioc;
};

struct io_cq *ioc_find_get_icq(struct request_queue *q);
struct io_cq *ioc_lookup_icq(struct request_queue *q);
void put_io_context(struct io_context *ioc);

/* ---- the queue and the elevator (block/elevator.h) ---- */

enum elv_merge {
	ELEVATOR_NO_MERGE	= 0,
	ELEVATOR_FRONT_MERGE	= 1,
	ELEVATOR_BACK_MERGE	= 2,
	ELEVATOR_DISCARD_MERGE	= 3,
};

struct elevator_type;
struct elevator_queue;
struct blk_mq_alloc_data;

struct elevator_mq_ops {
	int (*init_sched)(struct request_queue *, struct elevator_type *);
	void (*exit_sched)(struct elevator_queue *);
	int (*init_hctx)(struct blk_mq_hw_ctx *, unsigned int);
	void (*exit_hctx)(struct blk_mq_hw_ctx *, unsigned int);
	void (*depth_updated)(struct blk_mq_hw_ctx *);
	bool (*allow_merge)(struct request_queue *, struct request *, struct bio *);
	bool (*bio_merge)(struct request_queue *, struct bio *, unsigned int);
	int (*request_merge)(struct request_queue *q, struct request **, struct bio *);
	void (*request_merged)(struct request_queue *, struct request *, enum elv_merge);
	void (*requests_merged)(struct request_queue *, struct request *, struct request *);
	void (*limit_depth)(blk_opf_t, struct blk_mq_alloc_data *);
	void (*prepare_request)(struct request *);
	void (*finish_request)(struct request *);
	void (*insert_requests)(struct blk_mq_hw_ctx *, struct list_head *, bool);
	struct request *(*dispatch_request)(struct blk_mq_hw_ctx *);
	bool (*has_work)(struct blk_mq_hw_ctx *);
	void (*completed_request)(struct request *, u64);
	void (*requeue_request)(struct request *);
	struct request *(*former_request)(struct request_queue *, struct request *);
	struct request *(*next_request)(struct request_queue *, struct request *);
	void (*init_icq)(struct io_cq *);
	void (*exit_icq)(struct io_cq *);
};

struct elv_fs_entry {
	struct attribute attr;
	ssize_t (*show)(struct elevator_queue *, char *);
	ssize_t (*store)(struct elevator_queue *, const char *, size_t);
};

struct module;
#define THIS_MODULE	((struct module *)0)

struct elevator_type {
	struct elevator_mq_ops ops;
	size_t icq_size;
	size_t icq_align;
	struct elv_fs_entry *elevator_attrs;
	const char *elevator_name;
	const char *elevator_alias;
	unsigned int elevator_features;
	struct module *elevator_owner;
	/* the next registered type (elv_register) */
	struct elevator_type *kshim_next;
	/* the module that registered it */
	const char *kshim_module;
};

struct kobject {
	int unused;
};

struct elevator_queue {
	struct elevator_type *type;
	void *elevator_data;
	struct kobject kobj;
};

#define ELV_NAME_MAX	16
#define rb_entry_rq(node)	rb_entry((node), struct request, rb_node)

struct blk_mq_tag_set {
	unsigned int queue_depth;
	unsigned int reserved_tags;
	unsigned int flags;
};

#define BLK_MQ_F_TAG_HCTX_SHARED	(1u << 3)
#define QUEUE_FLAG_SQ_SCHED		30

struct request_queue {
	struct elevator_queue *elevator;
	struct request *last_merge;
	struct blk_mq_tag_set *tag_set;
	unsigned int nr_hw_queues;
	unsigned int nr_requests;
	int node;
	unsigned long queue_flags;
	struct kshim_instance *kshim;
};

/* lib/sbitmap.c: words of 1 << shift bits; shallow_depth is per word */
struct sbitmap {
	unsigned int depth;
	unsigned int shift;
};

struct sbitmap_queue {
	struct sbitmap sb;
	unsigned int min_shallow_depth;
};

struct blk_mq_tags {
	unsigned int nr_tags;
	struct sbitmap_queue bitmap_tags;
};

static inline void sbitmap_queue_min_shallow_depth(struct sbitmap_queue *sbq,
						   unsigned int d)
{
	sbq->min_shallow_depth = d;
}

struct blk_mq_hw_ctx {
	struct request_queue *queue;
	void *sched_data;
	struct blk_mq_tags *sched_tags;
};

struct blk_mq_alloc_data {
	struct request_queue *q;
	blk_opf_t cmd_flags;
	unsigned int shallow_depth;
	struct blk_mq_hw_ctx *hctx;
};

struct elevator_queue *elevator_alloc(struct request_queue *q,
				      struct elevator_type *e);
void kobject_put(struct kobject *kobj);
void blk_queue_flag_set(unsigned int flag, struct request_queue *q);
void blk_queue_flag_clear(unsigned int flag, struct request_queue *q);

int elv_register(struct elevator_type *e);
void elv_unregister(struct elevator_type *e);

void elv_rb_add(struct rb_root *root, struct request *rq);
void elv_rb_del(struct rb_root *root, struct request *rq);
struct request *elv_rb_find(struct rb_root *root, sector_t sector);
struct request *elv_rb_former_request(struct request_queue *q, struct request *rq);
struct request *elv_rb_latter_request(struct request_queue *q, struct request *rq);
void elv_rqhash_add(struct request_queue *q, struct request *rq);
void elv_rqhash_del(struct request_queue *q, struct request *rq);
bool elv_bio_merge_ok(struct request *rq, struct bio *bio);

bool blk_mq_sched_try_merge(struct request_queue *q, struct bio *bio,
			    unsigned int nr_segs, struct request **merged_request);
bool blk_mq_sched_try_insert_merge(struct request_queue *q, struct request *rq,
				   struct list_head *free);
void blk_mq_free_request(struct request *rq);
void blk_mq_run_hw_queues(struct request_queue *q, bool async);
void blk_mq_run_hw_queue(struct blk_mq_hw_ctx *hctx, bool async);
void blk_mq_delay_run_hw_queues(struct request_queue *q, unsigned long msecs);
void blk_mq_sched_mark_restart_hctx(struct blk_mq_hw_ctx *hctx);

/* tracepoints are not recorded in the simulator */
#define trace_block_rq_insert(rq)	((void)(rq))

/* ---- modules ---- */

/*
 * module_init names the module's init function for the simulator: the
 * build gives each module a KSHIM_MODULE_INIT name to call it by.
 */
#ifdef KSHIM_MODULE_INIT
#define module_init(fn)	int KSHIM_MODULE_INIT(void); int KSHIM_MODULE_INIT(void) { return fn(); }
#else
#define module_init(fn)
#endif
/* the simulator never unloads a module: the exit function is only named */
#define module_exit(fn) \
	static void (*const kshim_module_exit_##fn)(void) __maybe_unused = fn;
#define MODULE_ALIAS(s)
#define MODULE_AUTHOR(s)
#define MODULE_LICENSE(s)
#define MODULE_DESCRIPTION(s)

#endif /* _KSHIM_H */
