//! Merging a bio into a queued request, as 2.6.20 does it (block/
//! elevator.c `elv_merge`, `elv_try_merge`, `elv_rq_merge_ok`, the merge
//! hash; block/ll_rw_blk.c `__make_request`, `ll_back_merge_fn`,
//! `ll_front_merge_fn`, `attempt_merge`).
//!
//! The lookup order of `elv_merge`:
//! 1. `q->last_merge`, the request last merged into (or the first queued
//!    while none was): a back merge if it ends where the bio starts, a front
//!    merge if it starts where the bio ends;
//! 2. the merge hash: a queued request ending where the bio starts (back);
//! 3. the elevator's own lookup (`elevator_merge_fn`): a request starting
//!    where the bio ends (front). Deadline searches the sort tree of the
//!    bio's data direction; CFQ the queue the bio would join; AS
//!    `sort_list[bio_data_dir(bio)]` of its sync-indexed trees (so a read
//!    bio searches the async tree and never finds a read: 2.6.20 as it is);
//!    noop has no lookup.
//!
//! A candidate must be queued (not started), not marked `REQ_NOMERGE`, of
//! the bio's data direction, and allowed by the elevator
//! (`elevator_allow_merge_fn`: CFQ lets a sync bio join only a sync request
//! of the bio's own queue). The merged request may not exceed
//! `max_sectors`: if it would, the request is marked `REQ_NOMERGE` and the
//! bio gets a request of its own. After a merge the grown request is
//! merged with its neighbour in the elevator's order if the two now touch
//! (`attempt_back_merge` with the latter request, `attempt_front_merge`
//! with the former); the neighbour's bios join it and the neighbour is
//! freed. Otherwise the elevator hears of the grown request
//! (`elv_merged_request`).
//!
//! The hash keeps one request per end sector (two queued requests ending
//! at one sector overlap; the newer wins, as the head of Linux's hash
//! chain does).

use super::bio::Bio;
use super::{BlockLayer, Entry};
use crate::request::{Request, RequestId};
use crate::sched::{Elevator, MergeKind};
use crate::time::SimTime;

impl BlockLayer {
    /// `elv_merge` and the merge half of `__make_request`. If `bio` joined
    /// a queued request: that request, and the one it then absorbed.
    pub(super) fn merge(
        &mut self,
        bio: &Bio,
        elv: &mut dyn Elevator,
        now: SimTime,
    ) -> Option<(RequestId, Option<RequestId>)> {
        let view = bio.as_request(0, now);
        let (id, kind) = if self.mq { self.mq_find_merge(bio, &view, elv, now)? } else { self.find_merge(bio, &view, elv)? };
        let e = *self.table.get(id).expect("a merge candidate is known");
        // blk_mq_sched_try_merge asks the elevator again
        // (blk_mq_sched_allow_merge) before bio_attempt_*_merge.
        if self.mq && !self.mq_allow(id, &view, elv, now) {
            return None;
        }
        // ll_back_merge_fn / ll_front_merge_fn: the size limit.
        if e.rq.nr_sectors + bio.nr_sectors > self.max_sectors {
            self.set_nomerge(id);
            return None;
        }
        let grown = self.grow(id, bio, kind, now);
        // The back merge moves the request's end: rehash it.
        self.hash_del(&e.rq);
        self.hash_add(&grown);
        let joined = match kind {
            MergeKind::Back => self.attempt_back_merge(id, elv, now),
            MergeKind::Front => self.attempt_front_merge(id, elv, now),
        };
        match joined {
            // A front merge's request is the one absorbed, by its former.
            Some((survivor, gone)) => Some((survivor, Some(gone))),
            None => {
                // elv_merged_request: the elevator's copy catches up.
                let entry = self.table.get_mut(id).expect("known");
                let old = entry.elv;
                entry.elv = grown;
                elv.merged(&old, &grown, kind);
                self.last_merge = Some(id);
                Some((id, None))
            }
        }
    }

    /// `bio` joins request `id` at its back or front (its bios, extent);
    /// the request as it is now.
    pub(super) fn grow(&mut self, id: RequestId, bio: &Bio, kind: MergeKind, now: SimTime) -> Request {
        let b = self.bios.push(*bio, now);
        let entry = self.table.get_mut(id).expect("known");
        let mut grown = entry.rq;
        grown.nr_sectors += bio.nr_sectors;
        match kind {
            MergeKind::Back => {
                self.bios.link(entry.last_bio, b);
                entry.last_bio = b;
            }
            MergeKind::Front => {
                self.bios.link(b, entry.first_bio);
                entry.first_bio = b;
                grown.sector = bio.sector;
            }
        }
        entry.rq = grown;
        grown
    }

    /// The candidate and the kind of merge, in `elv_merge`'s order.
    fn find_merge(&mut self, bio: &Bio, view: &Request, elv: &dyn Elevator) -> Option<(RequestId, MergeKind)> {
        if let Some(id) = self.last_merge {
            if let Some(kind) = self.try_merge(id, bio, view, elv) {
                return Some((id, kind));
            }
        }
        if let Some(id) = self.hash.get(bio.sector) {
            if self.merge_ok(id, view, elv) {
                return Some((id, MergeKind::Back));
            }
        }
        let cand = elv.front_merge_candidate(view)?;
        debug_assert_eq!(cand.sector, bio.end_sector(), "a front-merge candidate starts where the bio ends");
        self.merge_ok(cand.id, view, elv).then_some((cand.id, MergeKind::Front))
    }

    /// `elv_try_merge`.
    fn try_merge(&self, id: RequestId, bio: &Bio, view: &Request, elv: &dyn Elevator) -> Option<MergeKind> {
        if !self.merge_ok(id, view, elv) {
            return None;
        }
        let rq = self.table.get(id)?.rq;
        if rq.end_sector() == bio.sector {
            Some(MergeKind::Back)
        } else if rq.sector == bio.end_sector() {
            Some(MergeKind::Front)
        } else {
            None
        }
    }

    /// `elv_rq_merge_ok`: mergeable (queued, not `REQ_NOMERGE`), same data
    /// direction, and the elevator agrees.
    /// On the blk-mq path also the same I/O priority (`blk_rq_merge_ok`).
    fn merge_ok(&self, id: RequestId, view: &Request, elv: &dyn Elevator) -> bool {
        match self.table.get(id) {
            Some(e) if self.mq => e.queued && self.mq_merge_ok(e, view) && elv.allow_merge(&e.elv, view),
            Some(e) => e.queued && !e.nomerge && e.rq.dir == view.dir && elv.allow_merge(&e.elv, view),
            None => false,
        }
    }

    /// `req_set_nomerge`.
    pub(super) fn set_nomerge(&mut self, id: RequestId) {
        if let Some(e) = self.table.get_mut(id) {
            e.nomerge = true;
            let rq = e.rq;
            self.hash_del(&rq);
        }
        if self.last_merge == Some(id) {
            self.last_merge = None;
        }
    }

    /// `attempt_back_merge`: the request after `id` in the elevator's
    /// order, if it now starts where `id` ends, joins it.
    fn attempt_back_merge(
        &mut self,
        id: RequestId,
        elv: &mut dyn Elevator,
        now: SimTime,
    ) -> Option<(RequestId, RequestId)> {
        let view = self.table.get(id).expect("known").elv;
        let next = elv.latter_request(&view)?;
        self.attempt_merge(id, next.id, elv, now).then_some((id, next.id))
    }

    /// `attempt_front_merge`: `id` joins the request before it in the
    /// elevator's order, if that one now ends where `id` starts.
    fn attempt_front_merge(
        &mut self,
        id: RequestId,
        elv: &mut dyn Elevator,
        now: SimTime,
    ) -> Option<(RequestId, RequestId)> {
        let view = self.table.get(id).expect("known").elv;
        let prev = elv.former_request(&view)?;
        self.attempt_merge(prev.id, id, elv, now).then_some((prev.id, id))
    }

    /// `attempt_merge`: append `next` to `rq` if both are mergeable,
    /// contiguous, of one data direction, and fit `max_sectors`
    /// (`ll_merge_requests_fn`); the elevator drops `next`
    /// (`elv_merge_requests`) and the request list frees it. On the
    /// blk-mq path (6.1's `attempt_merge`) the two must also share an I/O
    /// priority; `next` may be a new request not in the elevator yet (an
    /// insert merge); the freed `next` gives its tag back.
    pub(super) fn attempt_merge(&mut self, rq_id: RequestId, next_id: RequestId, elv: &mut dyn Elevator, now: SimTime) -> bool {
        let (Some(a), Some(b)) = (self.table.get(rq_id).copied(), self.table.get(next_id).copied()) else {
            return false;
        };
        if self.mq {
            if rq_id == next_id || !a.queued || a.nomerge || b.nomerge {
                return false;
            }
            if self.prio_of_entry(&a) != self.prio_of_entry(&b) {
                return false;
            }
        }
        let mergeable = |e: &Entry| (e.queued || self.mq) && !e.nomerge;
        if !mergeable(&a) || !mergeable(&b) || a.rq.end_sector() != b.rq.sector || a.rq.dir != b.rq.dir {
            return false;
        }
        if a.rq.nr_sectors + b.rq.nr_sectors > self.max_sectors {
            return false;
        }
        let mut merged = a.rq;
        merged.nr_sectors += b.rq.nr_sectors;
        // The survivor keeps the earlier start time (accounting only).
        merged.arrival = a.rq.arrival.min(b.rq.arrival);
        self.bios.link(a.last_bio, b.first_bio);
        self.hash_del(&a.rq);
        self.hash_del(&b.rq);
        self.table.remove(next_id);
        let e = self.table.get_mut(rq_id).expect("known");
        e.rq = merged;
        e.last_bio = b.last_bio;
        e.elv = merged;
        elv.merged_requests(&a.elv, &merged, &b.elv, now);
        self.hash_add(&merged);
        self.last_merge = Some(rq_id);
        if self.mq {
            self.mq_free_merged(&b, elv);
        } else {
            self.rl.freed(b.rq.dir, now, &mut self.fx);
        }
        true
    }

    /// `elv_rqhash_add`.
    pub(super) fn hash_add(&mut self, rq: &Request) {
        self.hash.insert(rq.end_sector(), rq.id);
    }

    /// `elv_rqhash_del`.
    pub(super) fn hash_del(&mut self, rq: &Request) {
        self.hash.remove_if(rq.end_sector(), rq.id);
    }
}
