// SPDX-License-Identifier: GPL-2.0
/*
 * The core's tunables and counters under /sys/block/<dev>/queue/iosched/,
 * and the helpers a policy's own files use (wpcas-policy.c has WPCAS's).
 *
 * Tunables take Linux's names and units: times in ms (stored in ns), out
 * of range values clamped as 2.6.20's STORE_FUNCTION does. Counters are
 * read-only: the Table 1 accounting of the WPCAS paper (A-T, A-S, A-F,
 * A-ST, A-FT) and the request counts; "stats" prints them all from one
 * snapshot taken under the queue's lock, so that A-T = A-S + A-F can be
 * checked while I/O runs.
 *
 * Copyright (C) 2026 the iolab authors
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "as-iosched.h"

static struct as_data *as_elv_data(struct elevator_queue *e)
{
	return e->elevator_data;
}

/**
 * as_store_u64 - parse, clamp and store a tunable, as STORE_FUNCTION does
 * @ad: the queue
 * @field: where the value goes
 * @min: smallest value taken (smaller ones are clamped)
 * @max: largest value taken
 * @scale: the stored value is the written one times this (ms to ns)
 * @page: what was written
 * @count: its length
 *
 * Return: @count, or the error of kstrtou64 (a value that is not a whole
 * number is refused, not clamped).
 */
ssize_t as_store_u64(struct as_data *ad, u64 *field, u64 min, u64 max,
		     u64 scale, const char *page, size_t count)
{
	u64 v;
	int ret = kstrtou64(page, 10, &v);

	if (ret)
		return ret;
	v = clamp(v, min, max);
	spin_lock_irq(&ad->lock);
	*field = v * scale;
	spin_unlock_irq(&ad->lock);
	return count;
}

/* A tunable as sysfs shows it: the stored value divided by @scale. */
ssize_t as_show_u64(const u64 *field, u64 scale, char *page)
{
	return sysfs_emit(page, "%llu\n", div64_u64(READ_ONCE(*field), scale));
}

/* A time tunable: ms in sysfs, ns inside. */
#define AS_MS_ATTR(name, ptr, max_ms)					\
static u64 *as_##name##_field(struct as_data *ad)			\
{									\
	u64 *field = ptr;						\
									\
	return field;							\
}									\
static ssize_t as_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	return as_show_u64(as_##name##_field(as_elv_data(e)),		\
			   NSEC_PER_MSEC, page);			\
}									\
static ssize_t as_##name##_store(struct elevator_queue *e,		\
				 const char *page, size_t count)	\
{									\
	struct as_data *ad = as_elv_data(e);				\
									\
	return as_store_u64(ad, as_##name##_field(ad), 0, max_ms,	\
			    NSEC_PER_MSEC, page, count);		\
}

/* 2.6.20 accepts 0 to INT_MAX ms for each of these. */
AS_MS_ATTR(read_expire, &ad->fifo_expire[AS_SYNC], INT_MAX)
AS_MS_ATTR(write_expire, &ad->fifo_expire[AS_ASYNC], INT_MAX)
AS_MS_ATTR(read_batch_expire, &ad->batch_expire[AS_SYNC], INT_MAX)
AS_MS_ATTR(write_batch_expire, &ad->batch_expire[AS_ASYNC], INT_MAX)
/* 2.6.20 took any int; a wait of more than 0.6 s is no longer anticipation. */
AS_MS_ATTR(antic_expire, &ad->antic_expire, 600)
#undef AS_MS_ATTR

/* A switch or count: shown and stored as it is, clamped to [min, max]. */
#define AS_U64_ATTR(name, ptr, min, max)				\
static u64 *as_##name##_field(struct as_data *ad)			\
{									\
	u64 *field = ptr;						\
									\
	return field;							\
}									\
static ssize_t as_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	return as_show_u64(as_##name##_field(as_elv_data(e)), 1, page);	\
}									\
static ssize_t as_##name##_store(struct elevator_queue *e,		\
				 const char *page, size_t count)	\
{									\
	struct as_data *ad = as_elv_data(e);				\
									\
	return as_store_u64(ad, as_##name##_field(ad), min, max, 1,	\
			    page, count);				\
}

/* as_request_merge and as_allow_merge: 0 as 2.6.20, 1 within a class. */
AS_U64_ATTR(merge_by_class, &ad->merge_by_class, 0, 1)
#undef AS_U64_ATTR

/*
 * An anticipation still running is reported once it ends, so that every
 * snapshot has A-T = A-S + A-F (as-wait.c counts a start at once).
 */
static void as_snapshot(struct as_data *ad, struct as_antic_stats *s)
{
	*s = ad->stats;
	if (as_waiting(ad))
		s->started--;
}

#define AS_COUNTER_ATTR(name, expr)					\
static ssize_t as_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	struct as_data *ad = as_elv_data(e);				\
	struct as_antic_stats s;					\
	u64 v;								\
									\
	spin_lock_irq(&ad->lock);					\
	as_snapshot(ad, &s);						\
	v = (expr);							\
	spin_unlock_irq(&ad->lock);					\
	return sysfs_emit(page, "%llu\n", v);				\
}

AS_COUNTER_ATTR(antic_started, s.started)
AS_COUNTER_ATTR(antic_succeeded, s.succeeded)
AS_COUNTER_ATTR(antic_failed, s.failed)
AS_COUNTER_ATTR(antic_success_wait_ns, s.success_wait_ns)
AS_COUNTER_ATTR(antic_failure_wait_ns, s.failure_wait_ns)
AS_COUNTER_ATTR(dispatched, ad->dispatched)
AS_COUNTER_ATTR(completed, ad->completed)
AS_COUNTER_ATTR(merged, ad->merged)

static ssize_t as_stats_show(struct elevator_queue *e, char *page)
{
	struct as_data *ad = as_elv_data(e);
	struct as_antic_stats s;
	u64 ins, dis, com, req, mer, exi;
	u32 queued, in_flight, async_depth;
	ssize_t n;
	int i;

	spin_lock_irq(&ad->lock);
	as_snapshot(ad, &s);
	ins = ad->inserted;
	dis = ad->dispatched;
	com = ad->completed;
	req = ad->requeued;
	mer = ad->merged;
	exi = ad->antic_exited;
	queued = ad->nr_queued;
	in_flight = ad->nr_dispatched;
	async_depth = READ_ONCE(ad->async_depth);
	spin_unlock_irq(&ad->lock);
	n = sysfs_emit(page,
		       "antic_started %llu\nantic_succeeded %llu\n"
		       "antic_failed %llu\nantic_success_wait_ns %llu\n"
		       "antic_failure_wait_ns %llu\nantic_target_exited %llu\n"
		       "inserted %llu\n"
		       "dispatched %llu\ncompleted %llu\nrequeued %llu\n"
		       "merged %llu\nqueued %u\nin_flight %u\n"
		       "async_depth %u\n",
		       s.started, s.succeeded, s.failed, s.success_wait_ns,
		       s.failure_wait_ns, exi, ins, dis, com, req, mer, queued,
		       in_flight, async_depth);
	/* the successful waits by length: a name and AS_WAIT_BINS counts */
	n += sysfs_emit_at(page, n, "antic_success_wait_bins");
	for (i = 0; i < AS_WAIT_BINS; i++)
		n += sysfs_emit_at(page, n, " %llu", s.success_wait_bins[i]);
	n += sysfs_emit_at(page, n, "\n");
	return n;
}

/*
 * antic_success_wait_bins: the successful waits by length, AS_WAIT_BINS
 * counts of AS_WAIT_BIN_NS each (as-iosched.h), on one line.
 */
static ssize_t as_antic_success_wait_bins_show(struct elevator_queue *e, char *page)
{
	struct as_data *ad = as_elv_data(e);
	struct as_antic_stats s;
	ssize_t n = 0;
	int i;

	spin_lock_irq(&ad->lock);
	as_snapshot(ad, &s);
	spin_unlock_irq(&ad->lock);
	for (i = 0; i < AS_WAIT_BINS; i++)
		n += sysfs_emit_at(page, n, "%llu%c", s.success_wait_bins[i],
				   i == AS_WAIT_BINS - 1 ? '\n' : ' ');
	return n;
}

#define AS_ATTR(name) \
	__ATTR(name, 0644, as_##name##_show, as_##name##_store)
#define AS_ATTR_RO(name) \
	__ATTR(name, 0444, as_##name##_show, NULL)

/* The core's files: every elevator of the family has them. */
static struct elv_fs_entry as_core_attrs[] = {
	AS_ATTR(read_expire),
	AS_ATTR(write_expire),
	AS_ATTR(read_batch_expire),
	AS_ATTR(write_batch_expire),
	AS_ATTR(antic_expire),
	AS_ATTR(merge_by_class),
	AS_ATTR_RO(antic_started),
	AS_ATTR_RO(antic_succeeded),
	AS_ATTR_RO(antic_failed),
	AS_ATTR_RO(antic_success_wait_ns),
	AS_ATTR_RO(antic_failure_wait_ns),
	AS_ATTR_RO(antic_success_wait_bins),
	AS_ATTR_RO(dispatched),
	AS_ATTR_RO(completed),
	AS_ATTR_RO(merged),
	AS_ATTR_RO(stats),
	__ATTR_NULL
};

#undef AS_ATTR
#undef AS_ATTR_RO

/**
 * as_sysfs_attrs - the files of an elevator built on the core
 * @policy: the policy, whose own files (if any) follow the core's
 *
 * Called at module init; the table lives until module exit (kfree).
 *
 * Return: a NULL-terminated table, or NULL without memory.
 */
struct elv_fs_entry *as_sysfs_attrs(const struct as_policy *policy)
{
	size_t core = ARRAY_SIZE(as_core_attrs) - 1, own = 0;
	struct elv_fs_entry *attrs;

	while (policy->attrs && policy->attrs[own].attr.name)
		own++;
	attrs = kcalloc(core + own + 1, sizeof(*attrs), GFP_KERNEL);
	if (!attrs)
		return NULL;
	memcpy(attrs, as_core_attrs, core * sizeof(*attrs));
	if (own)
		memcpy(attrs + core, policy->attrs, own * sizeof(*attrs));
	return attrs;
}
