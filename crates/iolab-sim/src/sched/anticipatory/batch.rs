//! Read (sync) and write (async) batches of AS (ELEVATORS.md 1.6): which
//! direction is being served, when its batch expires, and the write-batch
//! size that update_write_batch tunes. Times are ns (Linux: jiffies).

use super::hz::Hz;
use super::{ASYNC, SYNC};
use crate::time::SimTime;

#[derive(Clone, Debug)]
pub struct Batch {
    /// `batch_data_dir`: SYNC or ASYNC.
    pub dir: usize,
    /// `changed_batch`: the direction changed; dispatch nothing until the
    /// old direction's requests have all completed.
    pub changed: bool,
    /// `new_batch`: a read batch whose clock starts at its first completion.
    pub new: bool,
    /// `current_batch_expires`.
    pub expires: SimTime,
    /// `write_batch_count`: target number of requests in a write batch.
    pub write_batch_count: u32,
    /// `current_write_count`: writes left in this batch.
    pub current_write_count: u32,
    /// `write_batch_idled`: the write batch ran out of work, so its
    /// duration says nothing about the device.
    pub write_idled: bool,
    /// `batch_expire[2]`.
    expire_ns: [u64; 2],
}

impl Batch {
    /// as_init_queue: the batch fields start zeroed, so the first batch
    /// "was" an async one (REQ_ASYNC is 0) and the first read switches.
    pub fn new(batch_expire_ns: [u64; 2], hz: Hz) -> Batch {
        let write_batch_count = (hz.from_ns_ceil(batch_expire_ns[ASYNC]) / 10).max(2) as u32;
        Batch {
            dir: ASYNC,
            changed: false,
            new: false,
            expires: SimTime::ZERO + batch_expire_ns[SYNC],
            write_batch_count,
            current_write_count: 0,
            write_idled: false,
            expire_ns: batch_expire_ns,
        }
    }

    /// as_batch_expired: never while a change is pending; reads after
    /// their time; writes after their time or their count.
    pub fn expired(&self, now: SimTime) -> bool {
        if self.changed || self.new {
            return false;
        }
        now > self.expires || (self.dir == ASYNC && self.current_write_count == 0)
    }

    /// Reads only: the read batch goes on (as_dispatch_request).
    pub fn extend_reads(&mut self, now: SimTime) {
        self.expires = now + self.expire_ns[SYNC];
    }

    /// "Signal that the write batch was uncontended, so we can't time it."
    pub fn note_idle(&mut self, reads: bool, writes: bool) {
        if self.dir == ASYNC && !reads && (self.current_write_count == 0 || !writes) {
            self.write_idled = true;
        }
    }

    /// Switch to (or stay with) reads.
    pub fn to_sync(&mut self) {
        if self.dir == ASYNC {
            debug_assert!(!self.new);
            self.changed = true;
        }
        self.dir = SYNC;
    }

    /// Switch to writes and start a write batch.
    pub fn to_async(&mut self) {
        if self.dir == SYNC {
            self.changed = true;
            // new_batch may be set if reads ran out before the first read
            // completed; a write batch cancels it.
            self.new = false;
        }
        self.dir = ASYNC;
        self.current_write_count = self.write_batch_count;
        self.write_idled = false;
    }

    /// At dispatch, after a direction change: hold back until the old
    /// direction has drained (`nr_dispatched` = 0), then start the batch's
    /// clock (writes now, reads at their first completion). Returns whether
    /// dispatch may go on.
    pub fn may_start(&mut self, now: SimTime, nr_dispatched: u32) -> bool {
        if !self.changed {
            return true;
        }
        if nr_dispatched > 0 {
            return false;
        }
        if self.dir == ASYNC {
            self.expires = now + self.expire_ns[ASYNC];
        } else {
            self.new = true;
        }
        self.changed = false;
        true
    }

    /// A write left: count it against the batch.
    pub fn wrote(&mut self) {
        self.current_write_count = self.current_write_count.saturating_sub(1);
    }

    /// as_completed_request's batch part; `nr_dispatched` is the count
    /// before this completion. When the last request of the old direction
    /// completes the change is done (the engine's next dispatch is Linux's
    /// kick). 2.6.20 does not start a write batch's clock here: it keeps
    /// the old `current_batch_expires` (see docs/schedulers.md). The first
    /// completion of a new read batch times the write batch that preceded
    /// it and starts the read batch's clock.
    pub fn completed(&mut self, sync_index: usize, nr_dispatched: u32, now: SimTime) {
        if self.changed && nr_dispatched == 1 {
            self.changed = false;
            if self.dir == SYNC {
                self.new = true;
            }
        }
        if self.new && self.dir == sync_index {
            self.update_write_batch(now);
            self.expires = now + self.expire_ns[SYNC];
            self.new = false;
        }
    }

    /// update_write_batch: resize the write batch so that it lasts about
    /// `write_batch_expire`. `write_time` is from the write batch's start
    /// (its expiry minus its length) to now.
    fn update_write_batch(&mut self, now: SimTime) {
        let batch = self.expire_ns[ASYNC];
        let write_time = (now.ns() + batch).saturating_sub(self.expires.ns());
        let n = &mut self.write_batch_count;
        if write_time > batch && !self.write_idled {
            *n = if write_time > batch * 3 { *n / 2 } else { n.saturating_sub(1) };
        } else if write_time < batch && self.current_write_count == 0 {
            *n = if batch > write_time * 3 { n.saturating_mul(2) } else { *n + 1 };
        }
        *n = (*n).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::anticipatory::hz::PAPER_HZ;
    use crate::sched::testutil::ms;

    fn batch() -> Batch {
        Batch::new([ms(500).ns(), ms(125).ns()], Hz::new(PAPER_HZ))
    }

    /// A write batch that started at 0 ms (expiring at 125 ms), whose
    /// reads' first completion comes at `end`.
    fn timed(end: u64, used_all: bool, idled: bool) -> u32 {
        let mut b = batch();
        b.write_batch_count = 12;
        b.expires = ms(125);
        b.current_write_count = if used_all { 0 } else { 3 };
        b.write_idled = idled;
        b.dir = SYNC;
        b.new = true;
        b.completed(SYNC, 1, ms(end));
        assert_eq!(b.expires, ms(end + 500));
        b.write_batch_count
    }

    #[test]
    fn initial_write_batch_is_a_tenth_of_its_jiffies() {
        assert_eq!(batch().write_batch_count, 12); // 125 j / 10
        let b = Batch::new([ms(500).ns(), ms(10).ns()], Hz::new(PAPER_HZ));
        assert_eq!(b.write_batch_count, 2); // at least 2
        assert_eq!(batch().dir, ASYNC);
    }

    #[test]
    fn write_batch_shrinks_when_it_took_too_long() {
        assert_eq!(timed(200, false, false), 11); // 125 < 200 <= 375: -1
        assert_eq!(timed(400, false, false), 6); // > 3x: halve
        assert_eq!(timed(400, false, true), 12); // idled: not timed
    }

    #[test]
    fn write_batch_grows_when_it_used_its_count_quickly() {
        assert_eq!(timed(100, true, false), 13); // 100 < 125, 125 <= 300: +1
        assert_eq!(timed(40, true, false), 24); // 125 > 3*40: double
        assert_eq!(timed(40, false, false), 12); // count not used up: keep
    }

    #[test]
    fn write_batch_never_drops_below_one() {
        let mut b = batch();
        b.write_batch_count = 1;
        b.dir = SYNC;
        b.new = true;
        b.expires = ms(0);
        b.completed(SYNC, 1, ms(10_000));
        assert_eq!(b.write_batch_count, 1);
    }

    #[test]
    fn expiry_rules() {
        let mut b = batch();
        b.dir = SYNC;
        b.expires = ms(10);
        assert!(!b.expired(ms(10)) && b.expired(ms(11)));
        b.new = true;
        assert!(!b.expired(ms(11)));
        b.new = false;
        b.to_async();
        assert!(!b.expired(ms(11))); // changed_batch pending
        assert!(b.may_start(ms(20), 0));
        assert_eq!(b.expires, ms(145));
        assert!(!b.expired(ms(21)));
        b.current_write_count = 0;
        assert!(b.expired(ms(21))); // writes also end by count
    }

    #[test]
    fn a_changed_batch_waits_for_the_old_direction_to_drain() {
        let mut b = batch();
        b.dir = SYNC;
        b.to_async();
        assert!(!b.may_start(ms(5), 2));
        b.completed(SYNC, 2, ms(6)); // one of two reads done
        assert!(b.changed);
        b.completed(SYNC, 1, ms(7)); // the last
        assert!(!b.changed && !b.new);
        // Back to reads: the read batch clock waits for the first read.
        b.to_sync();
        assert!(b.may_start(ms(8), 0));
        assert!(b.new && !b.expired(ms(9_000)));
        b.completed(ASYNC, 1, ms(9)); // a write completing does not count
        assert!(b.new);
        b.completed(SYNC, 1, ms(10));
        assert_eq!((b.new, b.expires), (false, ms(510)));
    }
}
