// SPDX-License-Identifier: GPL-2.0
/*
 * Read (sync) and write (async) batches of AS (2.6.20's as_batch_expired,
 * as_dispatch_request's choice of direction, update_write_batch): which
 * direction is served, when its batch expires, and the write-batch size
 * that update_write_batch tunes. Times are ns (2.6.20: jiffies).
 *
 * Copyright (C) 2026 the iolab authors
 */
#include "as-iosched.h"

void as_batch_init(struct as_data *ad)
{
	struct as_batch *b = &ad->batch;
	/* div_u64: a 64-bit division is a library call on 32-bit builds */
	u64 wb = div_u64(as_ns_to_ticks_ceil(ad->batch_expire[AS_ASYNC]), 10);

	/*
	 * as_init_queue: the batch fields start zeroed, so the first batch
	 * "was" an async one (REQ_ASYNC is 0) and the first read switches.
	 */
	b->dir = AS_ASYNC;
	b->changed = false;
	b->new = false;
	b->expires = ad->now + ad->batch_expire[AS_SYNC];
	b->write_batch_count = max_t(u64, wb, 2);
	b->current_write_count = 0;
	b->write_idled = false;
}

/*
 * as_batch_expired: never while a change is pending; reads after their
 * time; writes after their time or their count.
 */
bool as_batch_expired(struct as_data *ad)
{
	struct as_batch *b = &ad->batch;

	if (b->changed || b->new)
		return false;
	return ad->now > b->expires ||
	       (b->dir == AS_ASYNC && b->current_write_count == 0);
}

/* "Signal that the write batch was uncontended, so we can't time it." */
void as_batch_note_idle(struct as_data *ad, bool reads, bool writes)
{
	struct as_batch *b = &ad->batch;

	if (b->dir == AS_ASYNC && !reads &&
	    (b->current_write_count == 0 || !writes))
		b->write_idled = true;
}

void as_batch_to_sync(struct as_data *ad)
{
	struct as_batch *b = &ad->batch;

	if (b->dir == AS_ASYNC)
		b->changed = true;
	b->dir = AS_SYNC;
}

void as_batch_to_async(struct as_data *ad)
{
	struct as_batch *b = &ad->batch;

	if (b->dir == AS_SYNC) {
		b->changed = true;
		/*
		 * new_batch may be set if reads ran out before the first
		 * read completed; a write batch cancels it.
		 */
		b->new = false;
	}
	b->dir = AS_ASYNC;
	b->current_write_count = b->write_batch_count;
	b->write_idled = false;
}

/*
 * After a direction change, hold back until the old direction has drained,
 * then start the batch's clock (writes now, reads at their first
 * completion). Returns whether dispatch may go on.
 */
bool as_batch_may_start(struct as_data *ad)
{
	struct as_batch *b = &ad->batch;

	if (!b->changed)
		return true;
	if (ad->nr_dispatched > 0)
		return false;
	if (b->dir == AS_ASYNC)
		b->expires = ad->now + ad->batch_expire[AS_ASYNC];
	else
		b->new = true;
	b->changed = false;
	return true;
}

/*
 * update_write_batch: resize the write batch so that it lasts about
 * write_batch_expire; write_time runs from the write batch's start (its
 * expiry minus its length) to now.
 */
static void as_update_write_batch(struct as_data *ad)
{
	struct as_batch *b = &ad->batch;
	u64 batch = ad->batch_expire[AS_ASYNC];
	u64 end = ad->now + batch;
	u64 write_time = end > b->expires ? end - b->expires : 0;
	u32 n = b->write_batch_count;

	if (write_time > batch && !b->write_idled) {
		n = write_time > batch * 3 ? n / 2 : (n ? n - 1 : 0);
	} else if (write_time < batch && b->current_write_count == 0) {
		if (batch > write_time * 3)
			n = n > U32_MAX / 2 ? U32_MAX : n * 2;
		else
			n++;
	}
	b->write_batch_count = max_t(u32, n, 1);
}

/*
 * as_completed_request's batch part; @nr_dispatched counts this request.
 * When the last request of the old direction completes the change is
 * done. The first completion of a new read batch times the write batch
 * that preceded it and starts the read batch's clock.
 */
void as_batch_completed(struct as_data *ad, int dir)
{
	struct as_batch *b = &ad->batch;

	if (b->changed && ad->nr_dispatched == 1) {
		b->changed = false;
		if (b->dir == AS_SYNC)
			b->new = true;
	}
	if (b->new && b->dir == dir) {
		as_update_write_batch(ad);
		b->expires = ad->now + ad->batch_expire[AS_SYNC];
		b->new = false;
	}
}

