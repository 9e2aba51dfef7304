// SPDX-License-Identifier: GPL-2.0
/*
 * kshim: the kernel functions an elevator module calls, and the simulator's
 * entry points (kshim_api.h). See kshim.h for what each stand-in does.
 *
 * Copyright (C) 2026 the iolab authors
 */
#include <stdlib.h>

#include "kshim.h"
#include "kshim_api.h"

/* BLK_MQ_BUDGET_DELAY (block/blk-mq-sched.c): 3 ms. */
#define KSHIM_BUDGET_DELAY_NS	(3 * NSEC_PER_MSEC)

struct kshim_proc {
	struct io_context ioc;
	struct io_cq *icq;
};

struct kshim_msg {
	u64 t;
	char text[BLK_TN_MAX_MSG];
};

struct kshim_instance {
	struct elevator_type *type;
	struct request_queue q;
	struct blk_mq_tag_set set;
	struct blk_mq_hw_ctx hctx;
	struct blk_mq_tags sched_tags;
	/* the simulated time of the hook being run */
	u64 now;
	/* the process whose request is being prepared */
	u32 current_pid;
	/* requests by simulator id: an open table indexed by id & mask */
	struct request **slots;
	u32 mask;
	struct request *free_rqs;
	/* one io context per process, by pid (each allocated apart: an icq
	 * points at its io context, which must not move) */
	struct kshim_proc **procs;
	u32 nr_procs;
	/* armed hrtimers, in arming order */
	struct hrtimer *armed;
	/* blk_mq_delay_run_hw_queues pending at this time (0: none) */
	u64 rerun_at;
	u64 queued;
	/* the hardware queue's own dispatch list (requeues with DONTPREP) */
	struct list_head hctx_dispatch;
	bool insert_merges;
	u64 insert_merged;
	u64 warnings;
	char first_warning[160];
	/* blktrace messages: lines[0 .. log_len), room for log_room */
	struct kshim_msg *log;
	u32 log_len, log_room, log_max;
	u64 log_dropped;
};

/* The instance whose hook runs on this thread. */
static _Thread_local struct kshim_instance *cur;

static void enter(struct kshim_instance *k, u64 now)
{
	cur = k;
	if (now > k->now)
		k->now = now;
}

void kshim_warn(const char *file, int line, const char *cond)
{
	const char *base = strrchr(file, '/');

	if (!cur)
		return;
	if (!cur->warnings++)
		snprintf(cur->first_warning, sizeof(cur->first_warning),
			 "%s:%d: WARN_ON_ONCE(%s)", base ? base + 1 : file,
			 line, cond);
}

bool kshim_tracing(struct request_queue *q)
{
	return container_of(q, struct kshim_instance, q)->log_max != 0;
}

void kshim_trace_msg(struct request_queue *q, const char *fmt, ...)
{
	struct kshim_instance *k = container_of(q, struct kshim_instance, q);
	struct kshim_msg *m;
	va_list ap;

	if (!k->log_max)
		return;
	if (k->log_len == k->log_max) {
		k->log_dropped++;
		return;
	}
	if (k->log_len == k->log_room) {
		u32 room = k->log_room ? k->log_room * 2 : 1024;
		struct kshim_msg *grown;

		if (room > k->log_max)
			room = k->log_max;
		grown = realloc(k->log, (size_t)room * sizeof(*grown));
		if (!grown) {
			k->log_dropped++;
			return;
		}
		k->log = grown;
		k->log_room = room;
	}
	m = &k->log[k->log_len++];
	m->t = k->now;
	va_start(ap, fmt);
	vsnprintf(m->text, sizeof(m->text), fmt, ap);
	va_end(ap);
}

void kshim_set_log(struct kshim_instance *k, uint32_t max_lines)
{
	k->log_max = max_lines;
	if (k->log_len > max_lines)
		k->log_len = max_lines;
}

uint32_t kshim_log_count(struct kshim_instance *k)
{
	return k->log_len;
}

uint64_t kshim_log_dropped(struct kshim_instance *k)
{
	return k->log_dropped;
}

uint64_t kshim_log_line(struct kshim_instance *k, uint32_t i, char *buf,
			size_t len)
{
	if (i >= k->log_len) {
		if (len)
			buf[0] = 0;
		return 0;
	}
	snprintf(buf, len, "%s", k->log[i].text);
	return k->log[i].t;
}

void kshim_log_clear(struct kshim_instance *k)
{
	k->log_len = 0;
}

uint64_t kshim_warnings(struct kshim_instance *k, char *first, size_t len)
{
	if (first && len)
		snprintf(first, len, "%s", k->first_warning);
	return k->warnings;
}

void kshim_lock(spinlock_t *l)
{
	/* one thread: a lock taken twice is a deadlock in the kernel */
	WARN_ON_ONCE(l->held);
	l->held = 1;
}

void kshim_unlock(spinlock_t *l)
{
	WARN_ON_ONCE(!l->held);
	l->held = 0;
}

u64 ktime_get_ns(void)
{
	return cur ? cur->now : 0;
}

void *kzalloc(size_t size, gfp_t gfp)
{
	(void)gfp;
	return calloc(1, size ? size : 1);
}

void *kmalloc(size_t size, gfp_t gfp)
{
	(void)gfp;
	return malloc(size ? size : 1);
}

void *kcalloc(size_t n, size_t size, gfp_t gfp)
{
	(void)gfp;
	return calloc(n ? n : 1, size ? size : 1);
}

void kfree(const void *p)
{
	free((void *)p);
}

/* The integer square root, bit by bit (as lib/math/int_sqrt.c computes). */
u64 int_sqrt64(u64 x)
{
	u64 r = 0, bit = 1ULL << 62;

	while (bit > x)
		bit >>= 2;
	while (bit) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

unsigned long int_sqrt(unsigned long x)
{
	return (unsigned long)int_sqrt64(x);
}

/*
 * kstrtoull (lib/kstrtox.c): an optional '+', digits of @base (0: a "0x"
 * prefix means 16, a leading 0 means 8), an optional newline, nothing
 * else; -EINVAL for anything else, -ERANGE past 64 bits.
 */
int kstrtoull(const char *s, unsigned int base, unsigned long long *res)
{
	unsigned long long v = 0;
	bool any = false;

	if (*s == '+')
		s++;
	if ((base == 0 || base == 16) && s[0] == '0' &&
	    (s[1] == 'x' || s[1] == 'X') && isxdigit((unsigned char)s[2])) {
		base = 16;
		s += 2;
	} else if (base == 0) {
		base = s[0] == '0' ? 8 : 10;
	}
	for (;; s++) {
		unsigned int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (d >= base)
			break;
		if (v > (ULLONG_MAX - d) / base)
			return -ERANGE;
		v = v * base + d;
		any = true;
	}
	if (!any)
		return -EINVAL;
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	*res = v;
	return 0;
}

int kstrtou64(const char *s, unsigned int base, u64 *res)
{
	unsigned long long v;
	int ret = kstrtoull(s, base, &v);

	if (!ret)
		*res = v;
	return ret;
}

int kstrtouint(const char *s, unsigned int base, unsigned int *res)
{
	unsigned long long v;
	int ret = kstrtoull(s, base, &v);

	if (ret)
		return ret;
	if (v > UINT_MAX)
		return -ERANGE;
	*res = (unsigned int)v;
	return 0;
}

int kstrtoint(const char *s, unsigned int base, int *res)
{
	unsigned long long v;
	bool neg = *s == '-';
	int ret = kstrtoull(neg ? s + 1 : s, base, &v);

	if (ret)
		return ret;
	if (v > (unsigned long long)INT_MAX + neg)
		return -ERANGE;
	*res = neg ? (int)-(long long)v : (int)v;
	return 0;
}

int sysfs_emit(char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, PAGE_SIZE, fmt, ap);
	va_end(ap);
	return n < PAGE_SIZE ? n : PAGE_SIZE - 1;
}

/* as fs/sysfs/file.c: append at byte `at` of the page, never past its end */
int sysfs_emit_at(char *buf, int at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (at < 0 || at >= PAGE_SIZE)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(buf + at, PAGE_SIZE - at, fmt, ap);
	va_end(ap);
	return n < PAGE_SIZE - at ? n : PAGE_SIZE - at - 1;
}

/* ---- the sorted tree (a treap) ---- */

struct rb_node *rb_first(const struct rb_root *root)
{
	struct rb_node *n = root->rb_node;

	while (n && n->rb_left)
		n = n->rb_left;
	return n;
}

struct rb_node *rb_last(const struct rb_root *root)
{
	struct rb_node *n = root->rb_node;

	while (n && n->rb_right)
		n = n->rb_right;
	return n;
}

struct rb_node *rb_next(const struct rb_node *node)
{
	struct rb_node *p;

	if (node->rb_right) {
		node = node->rb_right;
		while (node->rb_left)
			node = node->rb_left;
		return (struct rb_node *)node;
	}
	while ((p = node->rb_parent) && node == p->rb_right)
		node = p;
	return p;
}

struct rb_node *rb_prev(const struct rb_node *node)
{
	struct rb_node *p;

	if (node->rb_left) {
		node = node->rb_left;
		while (node->rb_right)
			node = node->rb_right;
		return (struct rb_node *)node;
	}
	while ((p = node->rb_parent) && node == p->rb_left)
		node = p;
	return p;
}

/* Point whatever pointed at @old (its parent or the root) at @new. */
static void replace_child(struct rb_root *root, struct rb_node *parent,
			  struct rb_node *old, struct rb_node *new)
{
	if (!parent)
		root->rb_node = new;
	else if (parent->rb_left == old)
		parent->rb_left = new;
	else
		parent->rb_right = new;
	if (new)
		new->rb_parent = parent;
}

/* Lift @x above its parent, keeping the in-order sequence. */
static void rotate_up(struct rb_root *root, struct rb_node *x)
{
	struct rb_node *p = x->rb_parent, *g = p->rb_parent;

	if (p->rb_left == x) {
		p->rb_left = x->rb_right;
		if (x->rb_right)
			x->rb_right->rb_parent = p;
		x->rb_right = p;
	} else {
		p->rb_right = x->rb_left;
		if (x->rb_left)
			x->rb_left->rb_parent = p;
		x->rb_left = p;
	}
	p->rb_parent = x;
	replace_child(root, g, p, x);
}

/* A deterministic priority: the tree's insertion count, mixed. */
static u64 next_prio(struct rb_root *root)
{
	u64 z = ++root->rb_seq * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void kshim_rb_insert(struct rb_root *root, struct rb_node *node,
		     bool (*less)(const struct rb_node *, const struct rb_node *))
{
	struct rb_node **link = &root->rb_node, *parent = NULL;

	while (*link) {
		parent = *link;
		link = less(node, parent) ? &parent->rb_left : &parent->rb_right;
	}
	node->rb_left = NULL;
	node->rb_right = NULL;
	node->rb_parent = parent;
	node->rb_prio = next_prio(root);
	*link = node;
	while (node->rb_parent && node->rb_parent->rb_prio > node->rb_prio)
		rotate_up(root, node);
}

void rb_erase(struct rb_node *node, struct rb_root *root)
{
	/* sink the node below the child of higher priority until it is a leaf */
	while (node->rb_left && node->rb_right)
		rotate_up(root, node->rb_left->rb_prio < node->rb_right->rb_prio ?
				node->rb_left : node->rb_right);
	replace_child(root, node->rb_parent, node,
		      node->rb_left ? node->rb_left : node->rb_right);
}

/* ---- the elevator's sort tree and merge hash (block/elevator.c) ---- */

static bool rq_less(const struct rb_node *a, const struct rb_node *b)
{
	return blk_rq_pos(rb_entry_rq(a)) < blk_rq_pos(rb_entry_rq(b));
}

/* elv_rb_add: requests at one sector stay in the order they came. */
void elv_rb_add(struct rb_root *root, struct request *rq)
{
	kshim_rb_insert(root, &rq->rb_node, rq_less);
}

void elv_rb_del(struct rb_root *root, struct request *rq)
{
	WARN_ON_ONCE(RB_EMPTY_NODE(&rq->rb_node));
	rb_erase(&rq->rb_node, root);
	RB_CLEAR_NODE(&rq->rb_node);
}

/*
 * elv_rb_find: a request starting at @sector. Of several, the first in the
 * tree's order (the kernel's returns whichever its descent meets first,
 * which depends on the red-black tree's shape).
 */
struct request *elv_rb_find(struct rb_root *root, sector_t sector)
{
	struct rb_node *n = root->rb_node;
	struct request *found = NULL;

	while (n) {
		struct request *rq = rb_entry_rq(n);

		if (sector < blk_rq_pos(rq)) {
			n = n->rb_left;
		} else if (sector > blk_rq_pos(rq)) {
			n = n->rb_right;
		} else {
			found = rq;
			n = n->rb_left;
		}
	}
	return found;
}

struct request *elv_rb_former_request(struct request_queue *q,
				      struct request *rq)
{
	struct rb_node *n = rb_prev(&rq->rb_node);

	(void)q;
	return n ? rb_entry_rq(n) : NULL;
}

struct request *elv_rb_latter_request(struct request_queue *q,
				      struct request *rq)
{
	struct rb_node *n = rb_next(&rq->rb_node);

	(void)q;
	return n ? rb_entry_rq(n) : NULL;
}

/*
 * The merge hash: back-merge candidates by end sector. The simulator's
 * block layer keeps its own; this one serves the insert merge of the test
 * harness (elv_attempt_insert_merge), so a linear search is enough.
 */
void elv_rqhash_add(struct request_queue *q, struct request *rq)
{
	(void)q;
	rq->kshim_hashed = true;
}

void elv_rqhash_del(struct request_queue *q, struct request *rq)
{
	(void)q;
	rq->kshim_hashed = false;
}

bool elv_bio_merge_ok(struct request *rq, struct bio *bio)
{
	struct elevator_type *e = rq->q->elevator->type;

	if (!rq_mergeable(rq) || rq_data_dir(rq) != bio_data_dir(bio))
		return false;
	return !e->ops.allow_merge || e->ops.allow_merge(rq->q, rq, bio);
}

/* ---- requests by id ---- */

static struct request *rq_lookup(struct kshim_instance *k, u32 id)
{
	struct request *rq = k->slots[id & k->mask];

	return rq && rq->kshim_id == id ? rq : NULL;
}

static void rq_map(struct kshim_instance *k, struct request *rq)
{
	while (k->slots[rq->kshim_id & k->mask]) {
		u32 i, old = k->mask;
		struct request **slots = k->slots;

		k->mask = old * 2 + 1;
		k->slots = calloc(k->mask + 1, sizeof(*k->slots));
		for (i = 0; i <= old; i++)
			if (slots[i])
				k->slots[slots[i]->kshim_id & k->mask] = slots[i];
		free(slots);
	}
	k->slots[rq->kshim_id & k->mask] = rq;
}

static void rq_release(struct kshim_instance *k, struct request *rq)
{
	if (rq_lookup(k, rq->kshim_id) == rq)
		k->slots[rq->kshim_id & k->mask] = NULL;
	rq->kshim_next_free = k->free_rqs;
	k->free_rqs = rq;
}

static struct request *rq_alloc(struct kshim_instance *k)
{
	struct request *rq = k->free_rqs;

	if (rq)
		k->free_rqs = rq->kshim_next_free;
	else
		rq = malloc(sizeof(*rq));
	memset(rq, 0, sizeof(*rq));
	return rq;
}

static void rq_from_sim(struct request *rq, const struct kshim_rq *s)
{
	rq->kshim_id = s->id;
	rq->kshim_pid = s->pid;
	rq->kshim_arrival = s->arrival;
	rq->__sector = s->sector;
	rq->__data_len = s->nr_sectors << 9;
	rq->cmd_flags = (s->write ? REQ_OP_WRITE : REQ_OP_READ) |
			(s->sync ? REQ_SYNC : 0);
}

static void rq_to_sim(const struct request *rq, struct kshim_rq *s)
{
	memset(s, 0, sizeof(*s));
	s->id = rq->kshim_id;
	s->pid = rq->kshim_pid;
	s->arrival = rq->kshim_arrival;
	s->sector = blk_rq_pos(rq);
	s->nr_sectors = blk_rq_sectors(rq);
	s->write = op_is_write(rq->cmd_flags);
	s->sync = !!(rq->cmd_flags & REQ_SYNC);
}

static void bio_from_sim(struct bio *bio, const struct kshim_rq *s)
{
	memset(bio, 0, sizeof(*bio));
	bio->bi_opf = (s->write ? REQ_OP_WRITE : REQ_OP_READ) |
		      (s->sync ? REQ_SYNC : 0);
	bio->bi_iter.bi_sector = s->sector;
	bio->bi_iter.bi_size = s->nr_sectors << 9;
}

static void fire_hrtimers(struct kshim_instance *k);

/* blk_mq_free_request: finish_request for a request with elevator data. */
void blk_mq_free_request(struct request *rq)
{
	struct kshim_instance *k = rq->q->kshim;
	struct elevator_type *e = rq->q->elevator->type;

	if ((rq->rq_flags & RQF_ELVPRIV) && e->ops.finish_request)
		e->ops.finish_request(rq);
	rq_release(k, rq);
}

/*
 * attempt_merge (block/blk-merge.c) for two requests: mergeable, of one
 * operation and priority, @next starting where @rq ends; what it does not
 * check (an elevator's sync classes) it does not check here either.
 */
static bool kshim_attempt_req_merge(struct request_queue *q,
				    struct request *rq, struct request *next)
{
	struct elevator_type *e = q->elevator->type;

	if (!rq_mergeable(rq) || !rq_mergeable(next))
		return false;
	if (req_op(rq) != req_op(next) || rq->ioprio != next->ioprio)
		return false;
	if (blk_rq_pos(rq) + blk_rq_sectors(rq) != blk_rq_pos(next))
		return false;
	if (next->start_time_ns < rq->start_time_ns)
		rq->start_time_ns = next->start_time_ns;
	rq->__data_len += next->__data_len;
	if (e->ops.requests_merged)
		e->ops.requests_merged(q, rq, next);
	elv_rqhash_del(q, next);
	return true;
}

/* The hashed request ending at @sector, or NULL (elv_rqhash_find). */
static struct request *kshim_rqhash_find(struct kshim_instance *k,
					 sector_t sector)
{
	u32 i;

	for (i = 0; i <= k->mask; i++) {
		struct request *rq = k->slots[i];

		if (rq && rq->kshim_hashed &&
		    blk_rq_pos(rq) + blk_rq_sectors(rq) == sector)
			return rq;
	}
	return NULL;
}

/*
 * elv_attempt_insert_merge (block/elevator.c): the one-hit cache, then
 * back merges by the hash, again and again while they succeed. Off in the
 * simulator, whose block layer has merged bios before the request was
 * made (2.6.20 had no insert merge); the test harness turns it on.
 */
bool blk_mq_sched_try_insert_merge(struct request_queue *q, struct request *rq,
				   struct list_head *free)
{
	struct kshim_instance *k = q->kshim;
	bool ret = false;

	if (!k->insert_merges)
		return false;
	if (q->last_merge && kshim_attempt_req_merge(q, q->last_merge, rq)) {
		list_add(&rq->queuelist, free);
		k->insert_merged++;
		return true;
	}
	for (;;) {
		struct request *prev = kshim_rqhash_find(k, blk_rq_pos(rq));

		if (!prev || prev == rq || !kshim_attempt_req_merge(q, prev, rq))
			break;
		list_add(&rq->queuelist, free);
		k->insert_merged++;
		ret = true;
		rq = prev;
	}
	return ret;
}

/*
 * blk_mq_sched_try_merge: the simulator merges bios in its own block layer
 * and never calls an elevator's bio_merge.
 */
bool blk_mq_sched_try_merge(struct request_queue *q, struct bio *bio,
			    unsigned int nr_segs, struct request **merged_request)
{
	(void)q;
	(void)bio;
	(void)nr_segs;
	*merged_request = NULL;
	return false;
}

void blk_mq_run_hw_queues(struct request_queue *q, bool async)
{
	(void)async;
	/*
	 * The simulator runs the queue after every event an elevator hears
	 * of; a run replaces a pending delayed one (kblockd_mod_delayed_work_on).
	 */
	q->kshim->rerun_at = 0;
}

void blk_mq_run_hw_queue(struct blk_mq_hw_ctx *hctx, bool async)
{
	blk_mq_run_hw_queues(hctx->queue, async);
}

void blk_mq_delay_run_hw_queues(struct request_queue *q, unsigned long msecs)
{
	q->kshim->rerun_at = q->kshim->now + msecs * NSEC_PER_MSEC;
}

void blk_mq_sched_mark_restart_hctx(struct blk_mq_hw_ctx *hctx)
{
	(void)hctx;
}

/* ---- hrtimers ---- */

void hrtimer_init(struct hrtimer *t, int clock, enum hrtimer_mode mode)
{
	(void)clock;
	(void)mode;
	memset(t, 0, sizeof(*t));
	t->owner = cur;
}

static void timer_unlink(struct hrtimer *t)
{
	struct hrtimer **p;

	for (p = &t->owner->armed; *p; p = &(*p)->next_armed) {
		if (*p == t) {
			*p = t->next_armed;
			break;
		}
	}
	t->armed = false;
	t->next_armed = NULL;
}

void hrtimer_start(struct hrtimer *t, ktime_t when, enum hrtimer_mode mode)
{
	struct hrtimer **p;

	if (t->armed)
		timer_unlink(t);
	t->expires = mode == HRTIMER_MODE_REL ? t->owner->now + (u64)when :
						(u64)when;
	t->armed = true;
	for (p = &t->owner->armed; *p; p = &(*p)->next_armed)
		;
	*p = t;
}

int hrtimer_try_to_cancel(struct hrtimer *t)
{
	if (!t->armed)
		return 0;
	timer_unlink(t);
	return 1;
}

int hrtimer_cancel(struct hrtimer *t)
{
	return hrtimer_try_to_cancel(t);
}

/* ---- io contexts ---- */

static struct kshim_proc *proc_of(struct kshim_instance *k, u32 pid)
{
	if (pid >= k->nr_procs) {
		u32 n = max(pid + 1, k->nr_procs * 2);

		k->procs = realloc(k->procs, n * sizeof(*k->procs));
		memset(k->procs + k->nr_procs, 0,
		       (n - k->nr_procs) * sizeof(*k->procs));
		k->nr_procs = n;
	}
	if (!k->procs[pid])
		k->procs[pid] = calloc(1, sizeof(struct kshim_proc));
	return k->procs[pid];
}

/* ioc_find_get_icq: the current process's icq, made on first use. */
struct io_cq *ioc_find_get_icq(struct request_queue *q)
{
	struct kshim_instance *k = q->kshim;
	struct kshim_proc *p = proc_of(k, k->current_pid);
	struct elevator_type *e = q->elevator->type;

	if (!p->icq) {
		size_t size = max(e->icq_size, sizeof(struct io_cq));

		p->icq = calloc(1, size);
		p->icq->q = q;
		p->icq->ioc = &p->ioc;
		p->ioc.kshim_pid = k->current_pid;
		if (e->ops.init_icq)
			e->ops.init_icq(p->icq);
	}
	atomic_inc(&p->ioc.active_ref);
	return p->icq;
}

struct io_cq *ioc_lookup_icq(struct request_queue *q)
{
	struct kshim_instance *k = q->kshim;

	return k->current_pid < k->nr_procs && k->procs[k->current_pid] ?
	       k->procs[k->current_pid]->icq : NULL;
}

void put_io_context(struct io_context *ioc)
{
	WARN_ON_ONCE(atomic_read(&ioc->active_ref) <= 0);
	atomic_dec(&ioc->active_ref);
}

/* The process exits: its icq goes (ioc_exit_icqs -> exit_icq). */
static void exit_icq(struct kshim_instance *k, struct kshim_proc *p)
{
	struct elevator_type *e = k->type;

	if (!p->icq)
		return;
	if (e->ops.exit_icq)
		e->ops.exit_icq(p->icq);
	free(p->icq);
	p->icq = NULL;
}

/* ---- elevators ---- */

static struct elevator_type *registered;
const char *kshim_current_module;

int elv_register(struct elevator_type *e)
{
	struct elevator_type *t;

	for (t = registered; t; t = t->kshim_next)
		if (!strcmp(t->elevator_name, e->elevator_name))
			return -EBUSY;
	if (!e->ops.insert_requests || !e->ops.dispatch_request)
		return -EINVAL;
	e->kshim_module = kshim_current_module;
	e->kshim_next = registered;
	registered = e;
	return 0;
}

void elv_unregister(struct elevator_type *e)
{
	struct elevator_type **p;

	for (p = &registered; *p; p = &(*p)->kshim_next) {
		if (*p == e) {
			*p = e->kshim_next;
			return;
		}
	}
}

static struct elevator_type *elevator_at(unsigned int i)
{
	struct elevator_type *t;

	for (t = registered; t && i; t = t->kshim_next)
		i--;
	return t;
}

const char *kshim_elevator_name(unsigned int i)
{
	struct elevator_type *t = elevator_at(i);

	return t ? t->elevator_name : NULL;
}

const char *kshim_elevator_alias(unsigned int i)
{
	struct elevator_type *t = elevator_at(i);

	return t ? t->elevator_alias : NULL;
}

const char *kshim_elevator_module(unsigned int i)
{
	struct elevator_type *t = elevator_at(i);

	return t ? t->kshim_module : NULL;
}

struct elevator_queue *elevator_alloc(struct request_queue *q,
				      struct elevator_type *e)
{
	struct elevator_queue *eq = calloc(1, sizeof(*eq));

	(void)q;
	if (eq)
		eq->type = e;
	return eq;
}

void kobject_put(struct kobject *kobj)
{
	free(container_of(kobj, struct elevator_queue, kobj));
}

void blk_queue_flag_set(unsigned int flag, struct request_queue *q)
{
	q->queue_flags |= 1UL << flag;
}

void blk_queue_flag_clear(unsigned int flag, struct request_queue *q)
{
	q->queue_flags &= ~(1UL << flag);
}

/* sbitmap_calculate_shift (include/linux/sbitmap.h) for nr_requests. */
static void size_sched_tags(struct kshim_instance *k)
{
	unsigned int depth = k->q.nr_requests, shift = 6;

	if (depth >= 4)
		while ((4U << shift) > depth)
			shift--;
	k->sched_tags.nr_tags = depth;
	k->sched_tags.bitmap_tags.sb.depth = depth;
	k->sched_tags.bitmap_tags.sb.shift = shift;
}

/*
 * blk_mq_update_nr_requests: the tag bitmap is resized, depth_updated runs,
 * and only then does q->nr_requests take the new value.
 */
void kshim_set_nr_requests(struct kshim_instance *k, uint32_t nr)
{
	struct elevator_type *e = k->type;
	unsigned int old = k->q.nr_requests;

	enter(k, k->now);
	k->q.nr_requests = max_t(u32, nr, 1);
	size_sched_tags(k);
	k->q.nr_requests = old;
	if (e->ops.depth_updated)
		e->ops.depth_updated(&k->hctx);
	k->q.nr_requests = max_t(u32, nr, 1);
}

uint32_t kshim_tags_for(struct kshim_instance *k, int write, int sync)
{
	struct elevator_type *e = k->type;
	struct sbitmap *sb = &k->sched_tags.bitmap_tags.sb;
	struct blk_mq_alloc_data data = { .q = &k->q, .hctx = &k->hctx };
	blk_opf_t opf = (write ? REQ_OP_WRITE : REQ_OP_READ) |
			(sync ? REQ_SYNC : 0);
	unsigned int left = sb->depth, n = 0;

	enter(k, k->now);
	data.cmd_flags = opf;
	if (e->ops.limit_depth)
		e->ops.limit_depth(opf, &data);
	while (left) {
		unsigned int word = min(left, 1U << sb->shift);

		n += data.shallow_depth ? min(word, data.shallow_depth) : word;
		left -= word;
	}
	return n;
}

struct kshim_instance *kshim_create(const char *name, uint32_t queue_depth,
				    uint64_t now)
{
	struct elevator_type *e;
	struct kshim_instance *k;

	for (e = registered; e; e = e->kshim_next)
		if (!strcmp(e->elevator_name, name))
			break;
	if (!e)
		return NULL;
	k = calloc(1, sizeof(*k));
	k->type = e;
	k->now = now;
	k->mask = 255;
	k->slots = calloc(k->mask + 1, sizeof(*k->slots));
	INIT_LIST_HEAD(&k->hctx_dispatch);
	k->set.queue_depth = max_t(u32, queue_depth, 1);
	k->q.tag_set = &k->set;
	k->q.nr_hw_queues = 1;
	/* blk_mq_init_sched: 2 * min(queue_depth, BLKDEV_DEFAULT_RQ) */
	k->q.nr_requests = 2 * min_t(u32, k->set.queue_depth, 128);
	size_sched_tags(k);
	k->hctx.sched_tags = &k->sched_tags;
	k->q.node = NUMA_NO_NODE;
	k->q.kshim = k;
	k->hctx.queue = &k->q;
	enter(k, now);
	if (e->ops.init_sched(&k->q, e) || !k->q.elevator) {
		free(k->slots);
		free(k);
		cur = NULL;
		return NULL;
	}
	if (e->ops.init_hctx && e->ops.init_hctx(&k->hctx, 0)) {
		e->ops.exit_sched(k->q.elevator);
		free(k->slots);
		free(k);
		cur = NULL;
		return NULL;
	}
	return k;
}

static struct elv_fs_entry *attr_at(struct kshim_instance *k, unsigned int i)
{
	struct elv_fs_entry *a = k->type->elevator_attrs;
	unsigned int j;

	for (j = 0; a && a[j].attr.name; j++)
		if (j == i)
			return &a[j];
	return NULL;
}

static struct elv_fs_entry *attr_named(struct kshim_instance *k,
				       const char *name)
{
	struct elv_fs_entry *a = k->type->elevator_attrs;

	for (; a && a->attr.name; a++)
		if (!strcmp(a->attr.name, name))
			return a;
	return NULL;
}

const char *kshim_attr_name(struct kshim_instance *k, unsigned int i)
{
	struct elv_fs_entry *a = attr_at(k, i);

	return a ? a->attr.name : NULL;
}

int kshim_attr_writable(struct kshim_instance *k, unsigned int i)
{
	struct elv_fs_entry *a = attr_at(k, i);

	return a && a->store && (a->attr.mode & 0200);
}

long kshim_store(struct kshim_instance *k, const char *attr, const char *val)
{
	struct elv_fs_entry *a = attr_named(k, attr);

	enter(k, k->now);
	if (!a)
		return -ENOENT;
	if (!a->store || !(a->attr.mode & 0200))
		return -EACCES;
	return a->store(k->q.elevator, val, strlen(val));
}

long kshim_show(struct kshim_instance *k, const char *attr, char *buf,
		size_t len)
{
	struct elv_fs_entry *a = attr_named(k, attr);
	char page[PAGE_SIZE];
	long n;

	enter(k, k->now);
	if (!a)
		return -ENOENT;
	if (!a->show)
		return -EACCES;
	memset(page, 0, sizeof(page));
	n = a->show(k->q.elevator, page);
	if (n >= 0 && len)
		snprintf(buf, len, "%s", page);
	return n;
}

void kshim_set_insert_merges(struct kshim_instance *k, int on)
{
	k->insert_merges = on;
}

uint64_t kshim_insert_merged(struct kshim_instance *k)
{
	return k->insert_merged;
}

/* blk_mq_rq_ctx_init with an elevator, then blk_mq_sched_insert_request. */
static void insert_rq(struct kshim_instance *k, struct request *rq,
		      bool at_head)
{
	struct elevator_type *e = k->type;
	LIST_HEAD(list);

	list_add_tail(&rq->queuelist, &list);
	e->ops.insert_requests(&k->hctx, &list, at_head);
	k->queued++;
}

void kshim_insert(struct kshim_instance *k, const struct kshim_rq *s,
		  uint64_t now)
{
	struct elevator_type *e = k->type;
	struct request *rq = rq_alloc(k);
	u64 merged;

	enter(k, now);
	k->current_pid = s->pid;
	rq_from_sim(rq, s);
	rq->q = &k->q;
	rq->mq_hctx = &k->hctx;
	rq->start_time_ns = now;
	INIT_LIST_HEAD(&rq->queuelist);
	RB_CLEAR_NODE(&rq->rb_node);
	rq->rq_flags = RQF_ELV;
	rq_map(k, rq);
	if (e->ops.prepare_request) {
		e->ops.prepare_request(rq);
		rq->rq_flags |= RQF_ELVPRIV;
	}
	merged = k->insert_merged;
	insert_rq(k, rq, false);
	/* an insert merge freed the new request: it never was queued */
	k->queued -= k->insert_merged - merged;
}

int kshim_has_work(struct kshim_instance *k)
{
	struct elevator_type *e = k->type;

	enter(k, k->now);
	if (!list_empty(&k->hctx_dispatch))
		return 1;
	return !e->ops.has_work || e->ops.has_work(&k->hctx);
}

int kshim_dispatch(struct kshim_instance *k, uint64_t now,
		   struct kshim_rq *out)
{
	struct elevator_type *e = k->type;
	struct request *rq;

	enter(k, now);
	/*
	 * The simulator delivers timers after the other events of their
	 * instant; in a kernel an hrtimer has fired by the time a queue run
	 * starts at or after its expiry.
	 */
	fire_hrtimers(k);
	/* blk_mq_dispatch_rq_list: the hardware queue's own list first */
	rq = list_first_entry_or_null(&k->hctx_dispatch, struct request,
				      queuelist);
	if (rq) {
		list_del_init(&rq->queuelist);
		rq->kshim_in_flight = true;
		rq_to_sim(rq, out);
		return 1;
	}
	if (e->ops.has_work && !e->ops.has_work(&k->hctx))
		return 0;
	rq = e->ops.dispatch_request(&k->hctx);
	if (!rq) {
		/* __blk_mq_do_dispatch_sched: work but no request */
		k->rerun_at = k->now + KSHIM_BUDGET_DELAY_NS;
		return 0;
	}
	WARN_ON_ONCE(!k->queued);
	k->queued--;
	rq->kshim_in_flight = true;
	rq_to_sim(rq, out);
	return 1;
}

uint64_t kshim_next_timer(struct kshim_instance *k)
{
	u64 t = k->rerun_at ? k->rerun_at : U64_MAX;
	struct hrtimer *h;

	for (h = k->armed; h; h = h->next_armed)
		t = min(t, h->expires);
	return t;
}

/* Run every armed hrtimer whose expiry has come, earliest first. */
static void fire_hrtimers(struct kshim_instance *k)
{
	for (;;) {
		struct hrtimer *h, *due = NULL;

		for (h = k->armed; h; h = h->next_armed)
			if (h->expires <= k->now &&
			    (!due || h->expires < due->expires))
				due = h;
		if (!due)
			break;
		timer_unlink(due);
		if (due->function(due) == HRTIMER_RESTART && !due->armed)
			hrtimer_start(due, due->expires, HRTIMER_MODE_ABS);
	}
}

void kshim_fire(struct kshim_instance *k, uint64_t now)
{
	enter(k, now);
	if (k->rerun_at && k->rerun_at <= k->now)
		k->rerun_at = 0;
	fire_hrtimers(k);
}

void kshim_completed(struct kshim_instance *k, uint32_t id, uint64_t now)
{
	struct elevator_type *e = k->type;
	struct request *rq = rq_lookup(k, id);

	enter(k, now);
	if (WARN_ON_ONCE(!rq))
		return;
	/* blk_mq_sched_completed_request, then blk_mq_free_request */
	if ((rq->rq_flags & RQF_ELV) && e->ops.completed_request)
		e->ops.completed_request(rq, k->now);
	blk_mq_free_request(rq);
}

void kshim_requeue(struct kshim_instance *k, uint32_t id, int dontprep,
		   uint64_t now)
{
	struct elevator_type *e = k->type;
	struct request *rq = rq_lookup(k, id);

	enter(k, now);
	if (WARN_ON_ONCE(!rq))
		return;
	rq->kshim_in_flight = false;
	/* blk_mq_requeue_request -> blk_mq_sched_requeue_request */
	rq->rq_flags &= ~RQF_STARTED;
	if (dontprep)
		rq->rq_flags |= RQF_DONTPREP;
	if ((rq->rq_flags & RQF_ELVPRIV) && e->ops.requeue_request)
		e->ops.requeue_request(rq);
	/* blk_mq_requeue_work */
	if (rq->rq_flags & RQF_DONTPREP) {
		list_add_tail(&rq->queuelist, &k->hctx_dispatch);
	} else {
		rq->rq_flags &= ~RQF_SOFTBARRIER;
		insert_rq(k, rq, true);
	}
	blk_mq_run_hw_queues(&k->q, false);
}

void kshim_exit_process(struct kshim_instance *k, uint32_t pid, uint64_t now)
{
	enter(k, now);
	if (pid < k->nr_procs && k->procs[pid])
		exit_icq(k, k->procs[pid]);
}

int kshim_merges(struct kshim_instance *k)
{
	return k->type->ops.bio_merge != NULL;
}

uint64_t kshim_queued(struct kshim_instance *k)
{
	return k->queued;
}

int kshim_front_merge(struct kshim_instance *k, const struct kshim_rq *s,
		      struct kshim_rq *out)
{
	struct elevator_type *e = k->type;
	struct request *rq = NULL;
	struct bio bio;

	enter(k, k->now);
	if (!e->ops.request_merge)
		return 0;
	bio_from_sim(&bio, s);
	if (e->ops.request_merge(&k->q, &rq, &bio) != ELEVATOR_FRONT_MERGE ||
	    !rq)
		return 0;
	rq_to_sim(rq, out);
	return 1;
}

int kshim_allow_merge(struct kshim_instance *k, uint32_t id,
		      const struct kshim_rq *s)
{
	struct elevator_type *e = k->type;
	struct request *rq = rq_lookup(k, id);
	struct bio bio;

	enter(k, k->now);
	if (!rq || !e->ops.allow_merge)
		return rq != NULL;
	bio_from_sim(&bio, s);
	return e->ops.allow_merge(&k->q, rq, &bio);
}

static int neighbour(struct kshim_instance *k, uint32_t id,
		     struct request *(*fn)(struct request_queue *,
					   struct request *),
		     struct kshim_rq *out)
{
	struct request *rq = rq_lookup(k, id), *n;

	enter(k, k->now);
	if (!rq || !fn)
		return 0;
	n = fn(&k->q, rq);
	if (!n)
		return 0;
	rq_to_sim(n, out);
	return 1;
}

int kshim_former(struct kshim_instance *k, uint32_t id, struct kshim_rq *out)
{
	return neighbour(k, id, k->type->ops.former_request, out);
}

int kshim_latter(struct kshim_instance *k, uint32_t id, struct kshim_rq *out)
{
	return neighbour(k, id, k->type->ops.next_request, out);
}

/* elv_merged_request: a bio joined @grown's request at its front or back. */
void kshim_merged(struct kshim_instance *k, const struct kshim_rq *grown,
		  int front)
{
	struct elevator_type *e = k->type;
	struct request *rq = rq_lookup(k, grown->id);

	enter(k, k->now);
	if (WARN_ON_ONCE(!rq))
		return;
	rq->__sector = grown->sector;
	rq->__data_len = grown->nr_sectors << 9;
	if (e->ops.request_merged)
		e->ops.request_merged(&k->q, rq, front ? ELEVATOR_FRONT_MERGE :
							 ELEVATOR_BACK_MERGE);
	k->q.last_merge = rq;
}

/*
 * attempt_merge: @merged's request took @next_id's sectors at its end
 * (elv_merge_requests -> requests_merged), and @next_id is freed.
 */
void kshim_merged_requests(struct kshim_instance *k,
			   const struct kshim_rq *merged, uint32_t next_id,
			   uint64_t now)
{
	struct elevator_type *e = k->type;
	struct request *rq = rq_lookup(k, merged->id);
	struct request *next = rq_lookup(k, next_id);

	enter(k, now);
	if (WARN_ON_ONCE(!rq || !next))
		return;
	rq->__sector = merged->sector;
	rq->__data_len = merged->nr_sectors << 9;
	rq->kshim_arrival = merged->arrival;
	if (e->ops.requests_merged)
		e->ops.requests_merged(&k->q, rq, next);
	k->q.last_merge = rq;
	k->queued--;
	blk_mq_free_request(next);
}

/*
 * What a kernel does before it frees an elevator (elevator_switch freezes
 * and drains the queue): a run may stop with requests queued or in
 * flight. Complete those in flight, dispatch the rest, firing timers as
 * time goes on; then the icqs go (ioc_clear_queue) and exit_sched runs.
 */
static bool drain(struct kshim_instance *k)
{
	struct kshim_rq out;
	int rounds;

	for (rounds = 0; rounds < 1000000; rounds++) {
		bool any = false;
		u32 i;

		for (i = 0; i <= k->mask; i++) {
			struct request *rq = k->slots[i];

			if (rq && rq->kshim_in_flight) {
				kshim_completed(k, rq->kshim_id, k->now);
				any = true;
			}
		}
		while (kshim_dispatch(k, k->now, &out))
			any = true;
		if (!any) {
			u64 t = kshim_next_timer(k);

			if (!k->queued)
				return true;
			kshim_fire(k, t != U64_MAX ? t : k->now + NSEC_PER_SEC);
		}
	}
	return false;
}

void kshim_destroy(struct kshim_instance *k)
{
	struct elevator_type *e = k->type;
	bool clean;
	u32 i;

	enter(k, k->now);
	clean = drain(k);
	for (i = 0; i <= k->mask; i++)
		if (k->slots[i])
			blk_mq_free_request(k->slots[i]);
	for (i = 0; i < k->nr_procs; i++) {
		if (k->procs[i]) {
			exit_icq(k, k->procs[i]);
			free(k->procs[i]);
		}
	}
	if (clean) {
		if (e->ops.exit_hctx)
			e->ops.exit_hctx(&k->hctx, 0);
		e->ops.exit_sched(k->q.elevator);
		kobject_put(&k->q.elevator->kobj);
	}
	while (k->free_rqs) {
		struct request *rq = k->free_rqs;

		k->free_rqs = rq->kshim_next_free;
		free(rq);
	}
	free(k->slots);
	free(k->procs);
	free(k->log);
	free(k);
	cur = NULL;
}
