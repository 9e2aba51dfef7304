//! The request store of the deadline family (deadline, AS): per direction
//! a sort tree ordered by sector (Linux: `sort_list[2]`, an rbtree filled
//! by `elv_rb_add`) and a FIFO in arrival order carrying each request's
//! expiry (`fifo_list[2]` with `rq_set_fifo_time`), with what the merge
//! hooks need (`elv_rb_find`, re-keying a grown request, a merged
//! request taking the FIFO place of the one it absorbed).
//!
//! A request lives in a slab slot and is linked into both structures, so
//! removing it from the middle of the FIFO is O(1) like `list_del_init`,
//! and slots are reused. The "tree" is a sorted vector of (sector, id,
//! slot): a queue holds a few dozen requests at most (the request list
//! caps it at `nr_requests` per direction), where a binary search and a
//! short memmove cost less than a B-tree's node walks and allocations, and
//! nothing is allocated after warm-up. The key is (sector, request id): Linux's
//! rbtree keys on the sector alone and dispatches an "alias" (a second
//! request at the same sector) at once; the simulator keeps both, ordered
//! by id (see docs/schedulers.md).

use crate::request::{Request, RequestId};
use crate::time::SimTime;

/// Index of a request's slot; valid until the request is removed.
pub type Slot = u32;

const NIL: Slot = Slot::MAX;

struct Entry {
    rq: Request,
    dir: u8,
    fifo_time: SimTime,
    prev: Slot,
    next: Slot,
}

/// Sort trees and FIFOs for two directions (0 and 1; the caller decides
/// whether that means read/write or sync/async).
pub struct SortFifo {
    entries: Vec<Entry>,
    free: Vec<Slot>,
    /// Per direction, (sector, id, slot) in ascending (sector, id) order.
    sort: [Vec<Key>; 2],
    head: [Slot; 2],
    tail: [Slot; 2],
    len: usize,
}

impl Default for SortFifo {
    fn default() -> Self {
        SortFifo {
            entries: Vec::new(),
            free: Vec::new(),
            sort: [Vec::new(), Vec::new()],
            head: [NIL; 2],
            tail: [NIL; 2],
            len: 0,
        }
    }
}

impl SortFifo {
    /// Queue `rq` in direction `dir`, expiring at `fifo_time`.
    pub fn add(&mut self, dir: usize, rq: Request, fifo_time: SimTime) -> Slot {
        let entry = Entry { rq, dir: dir as u8, fifo_time, prev: self.tail[dir], next: NIL };
        let slot = match self.free.pop() {
            Some(s) => {
                self.entries[s as usize] = entry;
                s
            }
            None => {
                self.entries.push(entry);
                (self.entries.len() - 1) as Slot
            }
        };
        match self.tail[dir] {
            NIL => self.head[dir] = slot,
            t => self.entries[t as usize].next = slot,
        }
        self.tail[dir] = slot;
        self.tree_insert(dir, (rq.sector, rq.id), slot);
        self.len += 1;
        slot
    }

    /// Take a request off its tree and FIFO (`rq_fifo_clear` + `elv_rb_del`).
    pub fn remove(&mut self, slot: Slot) -> Request {
        let (rq, dir) = {
            let e = &self.entries[slot as usize];
            (e.rq, e.dir as usize)
        };
        self.unlink(slot, dir);
        self.tree_remove(dir, (rq.sector, rq.id));
        self.free.push(slot);
        self.len -= 1;
        rq
    }

    pub fn rq(&self, slot: Slot) -> &Request {
        &self.entries[slot as usize].rq
    }
    pub fn fifo_time(&self, slot: Slot) -> SimTime {
        self.entries[slot as usize].fifo_time
    }
    /// Oldest request of a direction (`rq_entry_fifo(fifo_list[dir].next)`).
    pub fn fifo_first(&self, dir: usize) -> Option<Slot> {
        some(self.head[dir])
    }
    /// Lowest-sector request of a direction (`rb_first`).
    pub fn sort_first(&self, dir: usize) -> Option<Slot> {
        self.sort[dir].first().map(|k| k.2)
    }
    /// The request after `slot` in sector order (`rb_next`).
    pub fn sort_next(&self, slot: Slot) -> Option<Slot> {
        let (dir, key) = self.key(slot);
        let t = &self.sort[dir];
        t.get(t.partition_point(|k| (k.0, k.1) <= key)).map(|k| k.2)
    }
    /// The request before `slot` in sector order (`rb_prev`).
    pub fn sort_prev(&self, slot: Slot) -> Option<Slot> {
        let (dir, key) = self.key(slot);
        let t = &self.sort[dir];
        t.partition_point(|k| (k.0, k.1) < key).checked_sub(1).map(|i| t[i].2)
    }
    /// `(sort_prev(slot), sort_next(slot))` by one search: AS's dispatch
    /// wants both (as_find_next_rq). `slot` is queued, so its key is in its
    /// tree, once: the entries before it are below, those after above.
    pub fn sort_neighbours(&self, slot: Slot) -> (Option<Slot>, Option<Slot>) {
        let (dir, key) = self.key(slot);
        let t = &self.sort[dir];
        let i = t.partition_point(|k| (k.0, k.1) < key);
        debug_assert!(t.get(i).is_some_and(|k| k.2 == slot), "slot not queued");
        (i.checked_sub(1).map(|j| t[j].2), t.get(i + 1).map(|k| k.2))
    }
    /// No request of direction `dir` (`list_empty(&fifo_list[dir])`).
    pub fn fifo_empty(&self, dir: usize) -> bool {
        self.head[dir] == NIL
    }
    /// Requests held, both directions.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot of a queued request, found by its direction, sector and
    /// id (the copy the caller was handed).
    pub fn slot_of(&self, dir: usize, rq: &Request) -> Option<Slot> {
        let t = &self.sort[dir];
        t.binary_search_by(|k| (k.0, k.1).cmp(&(rq.sector, rq.id))).ok().map(|i| t[i].2)
    }

    /// `elv_rb_find`: a request of direction `dir` starting at `sector`
    /// (the oldest-id one if two do).
    pub fn find(&self, dir: usize, sector: u64) -> Option<Slot> {
        let t = &self.sort[dir];
        t.get(t.partition_point(|k| k.0 < sector)).filter(|k| k.0 == sector).map(|k| k.2)
    }

    /// Replace a queued request with its grown self (a merge): same slot,
    /// same FIFO place, re-keyed in the tree if its sector moved.
    pub fn update(&mut self, slot: Slot, rq: Request) {
        let (dir, old) = self.key(slot);
        if old.0 != rq.sector {
            self.tree_remove(dir, old);
            self.tree_insert(dir, (rq.sector, rq.id), slot);
        }
        self.entries[slot as usize].rq = rq;
    }

    /// `list_move(&rq->queuelist, &next->queuelist)` then the caller
    /// removes `next`: `slot` takes `next`'s place in the FIFO, with its
    /// expiry.
    pub fn take_fifo_place(&mut self, slot: Slot, next: Slot) {
        let dir = self.entries[slot as usize].dir as usize;
        debug_assert_eq!(dir, self.entries[next as usize].dir as usize);
        self.unlink(slot, dir);
        // Link `slot` right after `next`.
        let after = self.entries[next as usize].next;
        {
            let e = &mut self.entries[slot as usize];
            e.prev = next;
            e.next = after;
        }
        self.entries[next as usize].next = slot;
        match after {
            NIL => self.tail[dir] = slot,
            a => self.entries[a as usize].prev = slot,
        }
        self.entries[slot as usize].fifo_time = self.entries[next as usize].fifo_time;
    }

    fn unlink(&mut self, slot: Slot, dir: usize) {
        let (prev, next) = {
            let e = &self.entries[slot as usize];
            (e.prev, e.next)
        };
        match prev {
            NIL => self.head[dir] = next,
            p => self.entries[p as usize].next = next,
        }
        match next {
            NIL => self.tail[dir] = prev,
            n => self.entries[n as usize].prev = prev,
        }
    }

    fn tree_insert(&mut self, dir: usize, key: (u64, RequestId), slot: Slot) {
        let t = &mut self.sort[dir];
        let i = t.partition_point(|k| (k.0, k.1) < key);
        debug_assert!(t.get(i).is_none_or(|k| (k.0, k.1) != key), "a request queued twice");
        t.insert(i, (key.0, key.1, slot));
    }

    fn tree_remove(&mut self, dir: usize, key: (u64, RequestId)) {
        let t = &mut self.sort[dir];
        if let Ok(i) = t.binary_search_by(|k| (k.0, k.1).cmp(&key)) {
            // The last by pop: `remove` calls memmove even to move nothing.
            if i + 1 == t.len() {
                t.pop();
            } else {
                t.remove(i);
            }
        }
    }

    fn key(&self, slot: Slot) -> (usize, (u64, RequestId)) {
        let e = &self.entries[slot as usize];
        (e.dir as usize, (e.rq.sector, e.rq.id))
    }
}

/// A tree entry: sector, request id, slot.
type Key = (u64, RequestId, Slot);

fn some(slot: Slot) -> Option<Slot> {
    (slot != NIL).then_some(slot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::read;

    #[test]
    fn fifo_keeps_arrival_order_and_tree_keeps_sector_order() {
        let mut q = SortFifo::default();
        let a = q.add(0, read(0, 0, 300), SimTime(1));
        let b = q.add(0, read(1, 0, 100), SimTime(2));
        let c = q.add(0, read(2, 0, 200), SimTime(3));
        assert_eq!(q.fifo_first(0), Some(a));
        assert_eq!(q.sort_first(0), Some(b));
        assert_eq!(q.sort_next(b), Some(c));
        assert_eq!(q.sort_prev(a), Some(c));
        assert_eq!(q.sort_next(a), None);
        assert_eq!(q.remove(a).id, 0);
        assert_eq!(q.fifo_first(0), Some(b));
        assert_eq!(q.fifo_time(b), SimTime(2));
        q.remove(c);
        q.remove(b);
        assert!(q.fifo_empty(0) && q.is_empty());
        assert_eq!(q.len(), 0);
        // Slots are reused.
        let d = q.add(1, read(3, 0, 5), SimTime(4));
        assert!(d <= c.max(a).max(b));
        assert!(q.fifo_empty(0) && !q.fifo_empty(1));
    }

    #[test]
    fn update_rekeys_and_a_merged_request_takes_the_fifo_place() {
        let mut q = SortFifo::default();
        let a = q.add(0, read(0, 0, 300), SimTime(10));
        let b = q.add(0, read(1, 0, 100), SimTime(20));
        let c = q.add(0, read(2, 0, 200), SimTime(30));
        assert_eq!(q.find(0, 200), Some(c));
        assert_eq!(q.find(0, 201), None);
        // c grows at its front to 150: re-keyed, still between b and a.
        q.update(c, Request { sector: 150, nr_sectors: 58, ..read(2, 0, 150) });
        assert_eq!(q.find(0, 150), Some(c));
        assert_eq!(q.sort_next(b), Some(c));
        assert_eq!(q.slot_of(0, &read(2, 0, 150)), Some(c));
        // c absorbs a (older in the FIFO): c takes a's place and expiry.
        q.take_fifo_place(c, a);
        q.remove(a);
        assert_eq!(q.fifo_first(0), Some(c));
        assert_eq!(q.fifo_time(c), SimTime(10));
        assert_eq!(q.remove(c).id, 2);
        assert_eq!(q.fifo_first(0), Some(b));
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn neighbours_are_prev_and_next() {
        let mut q = SortFifo::default();
        let mut slots = Vec::new();
        // Sectors with repeats (aliases), both directions, some removed.
        for (id, sector) in [50u64, 10, 50, 90, 10, 70, 30, 50].into_iter().enumerate() {
            slots.push(q.add(id % 2, read(id as RequestId, 0, sector), SimTime(0)));
        }
        q.remove(slots[3]);
        for (k, &s) in slots.iter().enumerate() {
            if k != 3 {
                assert_eq!(q.sort_neighbours(s), (q.sort_prev(s), q.sort_next(s)), "slot {s}");
            }
        }
    }

    #[test]
    fn same_sector_requests_coexist_in_id_order() {
        let mut q = SortFifo::default();
        let a = q.add(0, read(7, 0, 100), SimTime(0));
        let b = q.add(0, read(3, 0, 100), SimTime(0));
        assert_eq!(q.sort_first(0), Some(b));
        assert_eq!(q.sort_next(b), Some(a));
    }
}
