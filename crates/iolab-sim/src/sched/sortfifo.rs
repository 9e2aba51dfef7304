//! The request store of the deadline family (deadline, AS): per direction
//! a sort tree ordered by sector (Linux: `sort_list[2]`, an rbtree filled
//! by `elv_rb_add`) and a FIFO in arrival order carrying each request's
//! expiry (`fifo_list[2]` with `rq_set_fifo_time`), with what the merge
//! hooks need (`elv_rb_find`, re-keying a grown request, a merged
//! request taking the FIFO place of the one it absorbed).
//!
//! A request lives in a slab slot and is linked into both structures, so
//! removing it from the middle of the FIFO is O(1) like `list_del_init`,
//! and slots are reused. The "tree" is a second doubly linked list through
//! the slots, in ascending (sector, id) order: a queue holds a few dozen
//! requests at most (the request list caps it at `nr_requests` per
//! direction), usually a handful, so an insertion walks a few links, and
//! what the elevators ask most (a request's neighbours in sector order,
//! removing the dispatched one) is O(1), where a sorted vector paid a
//! binary search for each and a memmove call for every insertion and
//! removal. Nothing is allocated after warm-up. The key is (sector, request id): Linux's
//! rbtree keys on the sector alone and dispatches an "alias" (a second
//! request at the same sector) at once; the simulator keeps both, ordered
//! by id (see docs/schedulers.md), or, for AS
//! ([`SortFifo::with_ties_in_arrival_order`]), in the order they entered the
//! tree, as Linux's `elv_rb_add` leaves them (an equal key goes to the
//! right): a request re-sorted after a front merge goes after those at its
//! new sector, whatever their ids.

use crate::request::{Request, RequestId};
use crate::time::SimTime;

/// Index of a request's slot; valid until the request is removed.
pub type Slot = u32;

const NIL: Slot = Slot::MAX;

struct Entry {
    rq: Request,
    dir: u8,
    fifo_time: SimTime,
    /// FIFO neighbours.
    prev: Slot,
    next: Slot,
    /// Neighbours in (sector, id) order.
    sprev: Slot,
    snext: Slot,
}

/// Sort trees and FIFOs for two directions (0 and 1; the caller decides
/// whether that means read/write or sync/async).
pub struct SortFifo {
    entries: Vec<Entry>,
    free: Vec<Slot>,
    /// Per direction, the lowest and the highest (sector, id) request.
    sort_head: [Slot; 2],
    sort_tail: [Slot; 2],
    /// Per direction, the oldest and the newest request.
    head: [Slot; 2],
    tail: [Slot; 2],
    len: usize,
    /// Requests at one sector in the order they entered the tree (else by id).
    arrival_ties: bool,
}

impl Default for SortFifo {
    fn default() -> Self {
        SortFifo {
            entries: Vec::new(),
            free: Vec::new(),
            sort_head: [NIL; 2],
            sort_tail: [NIL; 2],
            head: [NIL; 2],
            tail: [NIL; 2],
            len: 0,
            arrival_ties: false,
        }
    }
}

impl SortFifo {
    /// A store whose tree keeps requests at one sector in the order they
    /// entered it (`elv_rb_add`), not by id: the two differ only for a
    /// request re-sorted after a front merge.
    pub fn with_ties_in_arrival_order() -> SortFifo {
        SortFifo { arrival_ties: true, ..SortFifo::default() }
    }

    /// Queue `rq` in direction `dir`, expiring at `fifo_time`.
    pub fn add(&mut self, dir: usize, rq: Request, fifo_time: SimTime) -> Slot {
        let entry = Entry { rq, dir: dir as u8, fifo_time, prev: self.tail[dir], next: NIL, sprev: NIL, snext: NIL };
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
        self.tree_insert(dir, slot);
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
        self.tree_remove(slot, dir);
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
        some(self.sort_head[dir])
    }
    /// The request after `slot` in sector order (`rb_next`).
    pub fn sort_next(&self, slot: Slot) -> Option<Slot> {
        some(self.entries[slot as usize].snext)
    }
    /// The request before `slot` in sector order (`rb_prev`).
    pub fn sort_prev(&self, slot: Slot) -> Option<Slot> {
        some(self.entries[slot as usize].sprev)
    }
    /// `(sort_prev(slot), sort_next(slot))`: AS's dispatch wants both
    /// (as_find_next_rq).
    pub fn sort_neighbours(&self, slot: Slot) -> (Option<Slot>, Option<Slot>) {
        let e = &self.entries[slot as usize];
        (some(e.sprev), some(e.snext))
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
        if self.arrival_ties {
            let mut s = self.first_not_below(dir, (rq.sector, 0));
            while s != NIL && self.entries[s as usize].rq.sector == rq.sector {
                if self.entries[s as usize].rq.id == rq.id {
                    return Some(s);
                }
                s = self.entries[s as usize].snext;
            }
            return None;
        }
        let s = self.first_not_below(dir, (rq.sector, rq.id));
        (s != NIL && self.key(s).1 == (rq.sector, rq.id)).then_some(s)
    }

    /// `elv_rb_find`: a request of direction `dir` starting at `sector`
    /// (the oldest-id one if two do).
    pub fn find(&self, dir: usize, sector: u64) -> Option<Slot> {
        let s = self.first_not_below(dir, (sector, 0));
        (s != NIL && self.entries[s as usize].rq.sector == sector).then_some(s)
    }

    /// The first request of direction `dir` in sort order whose key is not
    /// below `key` (NIL if none), walking from the lowest.
    fn first_not_below(&self, dir: usize, key: (u64, RequestId)) -> Slot {
        let mut s = self.sort_head[dir];
        while s != NIL {
            let e = &self.entries[s as usize];
            if (e.rq.sector, e.rq.id) >= key {
                break;
            }
            s = e.snext;
        }
        s
    }

    /// Replace a queued request with its grown self (a merge): same slot,
    /// same FIFO place, re-keyed in the tree if its sector moved.
    pub fn update(&mut self, slot: Slot, rq: Request) {
        let (dir, old) = self.key(slot);
        debug_assert_eq!(old.1, rq.id, "a merge keeps the request's id");
        self.entries[slot as usize].rq = rq;
        if old.0 != rq.sector {
            self.tree_remove(slot, dir);
            self.tree_insert(dir, slot);
        }
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

    #[inline]
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

    /// Links `slot` (its request in place, not linked in the sort order)
    /// into direction `dir`'s sort order.
    fn tree_insert(&mut self, dir: usize, slot: Slot) {
        let key = self.key(slot).1;
        // Walk down from the highest: the insertion point is after the
        // last request below `key` (NIL: `slot` becomes the lowest); with
        // arrival ties, after the last one not above its sector.
        let mut p = self.sort_tail[dir];
        while p != NIL {
            let e = &self.entries[p as usize];
            debug_assert!((e.rq.sector, e.rq.id) != key, "a request queued twice");
            if (e.rq.sector, e.rq.id) < key || (self.arrival_ties && e.rq.sector <= key.0) {
                break;
            }
            p = e.sprev;
        }
        let n = match p {
            NIL => std::mem::replace(&mut self.sort_head[dir], slot),
            p => std::mem::replace(&mut self.entries[p as usize].snext, slot),
        };
        match n {
            NIL => self.sort_tail[dir] = slot,
            n => self.entries[n as usize].sprev = slot,
        }
        let e = &mut self.entries[slot as usize];
        e.sprev = p;
        e.snext = n;
    }

    #[inline]
    fn tree_remove(&mut self, slot: Slot, dir: usize) {
        let (p, n) = {
            let e = &self.entries[slot as usize];
            (e.sprev, e.snext)
        };
        match p {
            NIL => self.sort_head[dir] = n,
            p => self.entries[p as usize].snext = n,
        }
        match n {
            NIL => self.sort_tail[dir] = p,
            n => self.entries[n as usize].sprev = p,
        }
    }

    fn key(&self, slot: Slot) -> (usize, (u64, RequestId)) {
        let e = &self.entries[slot as usize];
        (e.dir as usize, (e.rq.sector, e.rq.id))
    }
}

fn some(slot: Slot) -> Option<Slot> {
    (slot != NIL).then_some(slot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::read;

    /// elv_rb_add's order for one sector: a request re-sorted after a front
    /// merge goes after those already there, whatever its id.
    #[test]
    fn arrival_ties_put_a_re_sorted_request_after_its_equals() {
        for arrival in [false, true] {
            let mut q = if arrival { SortFifo::with_ties_in_arrival_order() } else { SortFifo::default() };
            let a = q.add(0, read(1, 0, 100), SimTime(1));
            let b = q.add(0, read(2, 0, 50), SimTime(2));
            assert_eq!(q.sort_first(0), Some(b));
            let mut grown = read(1, 0, 50);
            grown.nr_sectors = 58;
            q.update(a, grown);
            let first = if arrival { b } else { a };
            assert_eq!(q.sort_first(0), Some(first), "arrival ties: {arrival}");
            assert_eq!(q.slot_of(0, &grown), Some(a));
            assert_eq!(q.slot_of(0, q.rq(b)), Some(b));
            assert_eq!(q.find(0, 50), Some(first));
        }
    }

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

    /// The simple version: per direction a sorted vector of (sector, id,
    /// slot), as the store kept before the sort order became linked.
    #[derive(Default)]
    struct Model {
        sort: [Vec<(u64, RequestId, Slot)>; 2],
    }

    impl Model {
        fn pos(&self, dir: usize, slot: Slot) -> usize {
            self.sort[dir].iter().position(|k| k.2 == slot).unwrap()
        }
        fn insert(&mut self, dir: usize, rq: &Request, slot: Slot) {
            let t = &mut self.sort[dir];
            let i = t.partition_point(|k| (k.0, k.1) < (rq.sector, rq.id));
            t.insert(i, (rq.sector, rq.id, slot));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Adds, removals and re-keys in any order: the sort order, its
        /// first, neighbours, `find` and `slot_of` as the sorted vector
        /// gives them, in both directions.
        #[test]
        fn linked_sort_order_matches_a_sorted_vector(ops in proptest::collection::vec(
            (0u8..4, 0usize..2, 0u64..40, 0usize..64), 1..200)) {
            let mut q = SortFifo::default();
            let mut m = Model::default();
            let mut live: Vec<(Slot, usize)> = Vec::new();
            let mut id: RequestId = 0;
            for (op, dir, sector, pick) in ops {
                match op {
                    0 | 1 => {
                        let rq = read(id, 0, sector);
                        id += 1;
                        let s = q.add(dir, rq, SimTime(0));
                        m.insert(dir, &rq, s);
                        live.push((s, dir));
                    }
                    2 if !live.is_empty() => {
                        let (s, d) = live.swap_remove(pick % live.len());
                        let rq = q.remove(s);
                        let i = m.pos(d, s);
                        proptest::prop_assert_eq!(m.sort[d].remove(i).1, rq.id);
                    }
                    3 if !live.is_empty() => {
                        // A merge at the front moves the sector.
                        let (s, d) = live[pick % live.len()];
                        let rq = Request { sector, ..*q.rq(s) };
                        q.update(s, rq);
                        let i = m.pos(d, s);
                        m.sort[d].remove(i);
                        m.insert(d, &rq, s);
                    }
                    _ => {}
                }
                for d in 0..2 {
                    let t = &m.sort[d];
                    proptest::prop_assert_eq!(q.sort_first(d), t.first().map(|k| k.2));
                    let mut walk = Vec::new();
                    let mut s = q.sort_first(d);
                    while let Some(x) = s {
                        walk.push(x);
                        s = q.sort_next(x);
                    }
                    proptest::prop_assert_eq!(&walk, &t.iter().map(|k| k.2).collect::<Vec<_>>());
                    for (i, k) in t.iter().enumerate() {
                        let prev = i.checked_sub(1).map(|j| t[j].2);
                        let next = t.get(i + 1).map(|k| k.2);
                        proptest::prop_assert_eq!(q.sort_neighbours(k.2), (prev, next));
                        proptest::prop_assert_eq!(q.sort_prev(k.2), prev);
                        proptest::prop_assert_eq!(q.slot_of(d, q.rq(k.2)), Some(k.2));
                    }
                    for sec in 0..41 {
                        let want = t.get(t.partition_point(|k| k.0 < sec)).filter(|k| k.0 == sec).map(|k| k.2);
                        proptest::prop_assert_eq!(q.find(d, sec), want);
                    }
                }
                proptest::prop_assert_eq!(q.len(), live.len());
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
