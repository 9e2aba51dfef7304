//! The block layer of Linux 6.1 in front of its elevators (none,
//! mq-deadline, BFQ, Kyber): `blk_mq_submit_bio` and what it calls in
//! block/blk-mq.c, blk-mq-sched.c, blk-merge.c and elevator.c. The 2.6.20
//! path (`__make_request`, the request list, the queue plug) stays for the
//! 2.6.20 elevators; [`BlockLayer::set_mq`] chooses this one.
//!
//! A bio is merged, in this order, into (`blk_mq_attempt_bio_merge`):
//! 1. the last request of its task's plug (`blk_attempt_plug_merge`: back
//!    or front, no elevator asked);
//! 2. a request the elevator holds (`blk_mq_sched_bio_merge` → the
//!    elevator's `bio_merge`), as [`MergeStyle`] says: mq-deadline and BFQ
//!    through `blk_mq_sched_try_merge` (`elv_merge`: `q->last_merge`, the
//!    back-merge hash, the elevator's front-merge lookup; then the grown
//!    request with its neighbour, `attempt_back_merge` /
//!    `attempt_front_merge`), Kyber through `blk_bio_list_merge` over its
//!    software queue's list of the bio's domain; `none` holds no request
//!    long enough (it issues each at once).
//!
//! A merge needs `blk_rq_merge_ok`: the request not started and not
//! `REQ_NOMERGE`, the same operation and data direction, the same I/O
//! priority; and the result within `max_sectors` (`ll_back_merge_fn`,
//! `ll_front_merge_fn`: past it the request is marked `REQ_NOMERGE`).
//!
//! Otherwise the bio needs a request, which needs a tag
//! (`blk_mq_get_new_requests` → `blk_mq_get_tag`): with none free the
//! task runs the queue, sleeps on the tags' wait queues (flushing its
//! plug as it sleeps, `sched_submit_work` → `blk_flush_plug`), and tries
//! again when woken, with no claim on the freed tag
//! ([`crate::sched::mq::sbitmap::SbitmapQueue`]). With a tag, the request
//! goes to the task's plug if it has one (`blk_add_rq_to_plug`: a plug of
//! `BLK_MAX_REQUEST_COUNT` requests, or whose last request is
//! `BLK_PLUG_FLUSH_SIZE` or more, is flushed first), else to the elevator
//! with a queue run from kblockd (`blk_mq_sched_insert_request`).
//!
//! A plug (`struct blk_plug`, per task) exists while a task is in a call
//! that plugs: a write(2) to the block device (`blkdev_write_iter`), a
//! direct I/O of several bios (`__blkdev_direct_IO`), read-ahead
//! (`read_pages`), write-back (`wb_writeback`). It is flushed by
//! `blk_finish_plug` at the end of the call (the queue runs at once) or
//! when the task sleeps (`blk_flush_plug(plug, true)`: the queue runs from
//! kblockd); there is no timer. A flush inserts the requests in submission
//! order (`blk_mq_flush_plug_list` → `blk_mq_sched_insert_requests`);
//! mq-deadline and BFQ try to merge each into a queued request first
//! (`blk_mq_sched_try_insert_merge` → `elv_attempt_insert_merge`:
//! `q->last_merge`, then back merges through the hash, repeatedly).
//!
//! A request merged into another is freed at once (`blk_mq_free_request`):
//! its tag goes back and may wake a sleeper.

use super::bio::Bio;
use super::{BlockLayer, Entry, Submitted, Wake};
use crate::request::{IoPrio, ProcessId, Request, RequestId};
use crate::sched::mq::MergeStyle;
use crate::sched::{Elevator, MergeKind};
use crate::time::SimTime;

/// `BLK_MAX_REQUEST_COUNT` (block/blk.h): requests a plug holds before a
/// new one flushes it.
pub const BLK_MAX_REQUEST_COUNT: usize = 32;
/// `BLK_PLUG_FLUSH_SIZE` (block/blk.h), bytes: a plug whose last request is
/// this large is flushed before another is added.
pub const BLK_PLUG_FLUSH_SIZE: u64 = 128 * 1024;
/// `blk_bio_list_merge`'s "hand-wavy stop count of 8".
const LIST_MERGE_CHECKED: usize = 8;

/// A task's `struct blk_plug`.
#[derive(Debug, Default)]
pub(super) struct TaskPlug {
    /// Between `blk_start_plug` and `blk_finish_plug`.
    pub active: bool,
    /// `plug->mq_list`, oldest first.
    pub rqs: Vec<RequestId>,
}

/// `blk_attempt_bio_merge`'s answer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum BioMerge {
    /// `BIO_MERGE_OK`.
    Ok,
    /// `BIO_MERGE_NONE`: not a candidate (look further).
    None,
    /// `BIO_MERGE_FAILED`: a candidate, refused (stop looking).
    Failed,
}

/// The elevator's blk-mq hardware queue; every elevator on this path has one.
fn mq(elv: &mut dyn Elevator) -> &mut dyn crate::sched::mq::MqOps {
    elv.as_mq().expect("the blk-mq path needs a blk-mq elevator")
}

impl BlockLayer {
    /// Take the blk-mq path (a 6.1 elevator) instead of 2.6.20's.
    pub fn set_mq(&mut self, mq: bool) {
        self.mq = mq;
    }

    /// On the blk-mq path.
    pub fn is_mq(&self) -> bool {
        self.mq
    }

    /// The I/O priority of `pid`'s bios (`bio_set_ioprio`: the task's).
    pub fn set_ioprio(&mut self, pid: ProcessId, prio: IoPrio) {
        let i = pid as usize;
        if self.ioprio.len() <= i {
            self.ioprio.resize(i + 1, IoPrio::default());
        }
        self.ioprio[i] = prio;
    }

    fn prio_of(&self, pid: ProcessId) -> IoPrio {
        self.ioprio.get(pid as usize).copied().unwrap_or_default()
    }

    /// `blk_start_plug` for `pid` (blk-mq path only).
    pub fn start_plug(&mut self, pid: ProcessId) {
        if self.mq {
            self.plugs.entry(pid).or_default().active = true;
        }
    }

    /// `blk_finish_plug`: flush `pid`'s plug and run the queue now.
    pub fn finish_plug(&mut self, pid: ProcessId, elv: &mut dyn Elevator, now: SimTime) {
        if !self.mq {
            return;
        }
        self.flush_plug(pid, elv, now, false);
        if let Some(p) = self.plugs.get_mut(&pid) {
            p.active = false;
        }
    }

    /// `pid` sleeps: `sched_submit_work` → `blk_flush_plug(plug, true)`;
    /// the queue runs from kblockd. The plug stays.
    pub fn sleep_flush(&mut self, pid: ProcessId, elv: &mut dyn Elevator, now: SimTime) {
        if self.mq {
            self.flush_plug(pid, elv, now, true);
        }
    }

    /// `blk_mq_flush_plug_list`: the plugged requests, in submission
    /// order, into the elevator (`blk_mq_sched_insert_requests`), then a
    /// queue run (from kblockd if `from_schedule`).
    fn flush_plug(&mut self, pid: ProcessId, elv: &mut dyn Elevator, now: SimTime, from_schedule: bool) {
        let Some(p) = self.plugs.get_mut(&pid) else { return };
        if p.rqs.is_empty() {
            return;
        }
        let rqs = std::mem::take(&mut p.rqs);
        for &id in &rqs {
            self.mq_insert(id, elv, now);
        }
        // Keep the vector's capacity for the next plug.
        if let Some(p) = self.plugs.get_mut(&pid) {
            let mut rqs = rqs;
            rqs.clear();
            if p.rqs.is_empty() {
                p.rqs = rqs;
            }
        }
        mq(elv).run_hw_queue(from_schedule);
        self.fx.run_queue = true;
    }

    /// `blk_mq_submit_bio`.
    pub(super) fn mq_submit(&mut self, bio: Bio, elv: &mut dyn Elevator, now: SimTime) -> Submitted {
        if bio.nr_sectors == 0 {
            return self.flush_submit(bio, elv, now);
        }
        if self.spec.merges {
            if let Some(into) = self.plug_merge(&bio, now) {
                return Submitted::Merged { into, absorbed: None };
            }
            let merged = match mq(elv).merge_style() {
                MergeStyle::Hash => self.merge(&bio, elv, now),
                MergeStyle::List => self.list_merge(&bio, elv, now).map(|id| (id, None)),
                MergeStyle::Plug => None,
            };
            if let Some((into, absorbed)) = merged {
                return Submitted::Merged { into, absorbed };
            }
        }
        let view = bio.as_request(0, now);
        match mq(elv).get_tag(&view) {
            Some(tag) => Submitted::Inserted(self.mq_new_request(bio, tag, now, elv, now)),
            None => {
                self.tag_sleep(bio.pid, elv, now);
                let clash = self.parked.insert(bio.pid, (bio, now));
                debug_assert!(clash.is_none(), "process {} parked twice", bio.pid);
                Submitted::Sleeping
            }
        }
    }

    /// An empty flush bio (`blkdev_issue_flush`): no merging, a tag with
    /// no elevator limit (`__blk_mq_alloc_requests` skips `limit_depth` for
    /// flushes), then `blk_insert_flush`: the flush request bypasses the
    /// elevator to the head of the dispatch list (`blk_flush_queue_rq` →
    /// the requeue work → `blk_mq_sched_insert_request` with at_head for
    /// `RQF_FLUSH_SEQ`) and the queues run (`blk_mq_run_hw_queues(q,
    /// false)`). The simulated device always has a write cache to flush
    /// (the guest's virtio disk does: QEMU's default `cache=writeback`);
    /// the model's flush may take no time.
    fn flush_submit(&mut self, bio: Bio, elv: &mut dyn Elevator, now: SimTime) -> Submitted {
        let view = bio.as_request(0, now);
        match mq(elv).get_flush_tag(&view) {
            Some(tag) => Submitted::Inserted(self.mq_new_request(bio, tag, now, elv, now)),
            None => {
                self.tag_sleep(bio.pid, elv, now);
                let clash = self.parked.insert(bio.pid, (bio, now));
                debug_assert!(clash.is_none(), "process {} parked twice", bio.pid);
                Submitted::Sleeping
            }
        }
    }

    /// `blk_mq_get_tag` without a tag: run the queue (`blk_mq_run_hw_queue
    /// (hctx, false)`), get on a wait queue, sleep (flushing the plug).
    fn tag_sleep(&mut self, pid: ProcessId, elv: &mut dyn Elevator, now: SimTime) {
        let m = mq(elv);
        m.run_hw_queue(false);
        m.prepare_to_wait(pid);
        self.fx.run_queue = true;
        self.sleep_flush(pid, elv, now);
    }

    /// A task woken on the tags runs again (`sbitmap_finish_wait`), runs
    /// the queue and tries for a tag; without one it sleeps again, on the
    /// next wait queue.
    pub(super) fn mq_retry(&mut self, pid: ProcessId, elv: &mut dyn Elevator, now: SimTime) -> Option<Request> {
        let &(bio, submitted) = self.parked.get(&pid)?;
        let m = mq(elv);
        m.finish_wait(pid);
        m.run_hw_queue(false);
        self.fx.run_queue = true;
        let view = bio.as_request(0, submitted);
        let tag = if bio.nr_sectors == 0 { m.get_flush_tag(&view) } else { m.get_tag(&view) };
        match tag {
            Some(tag) => {
                self.parked.remove(&pid);
                Some(self.mq_new_request(bio, tag, submitted, elv, now))
            }
            None => {
                self.tag_sleep(pid, elv, now);
                None
            }
        }
    }

    /// A request of its own for `bio`, holding `tag`: into the task's plug
    /// (`blk_add_rq_to_plug`), or into the elevator with a run from
    /// kblockd (`blk_mq_sched_insert_request(rq, false, true, true)`).
    fn mq_new_request(&mut self, bio: Bio, tag: u32, submitted: SimTime, elv: &mut dyn Elevator, now: SimTime) -> Request {
        let rq = self.new_entry(bio, submitted, false, tag);
        let id = rq.id;
        if bio.nr_sectors == 0 {
            // blk_insert_flush.
            mq(elv).insert_flush(rq);
            self.fx.run_queue = true;
            return rq;
        }
        let plugged = self.plugs.get(&bio.pid).is_some_and(|p| p.active);
        if plugged {
            let p = &self.plugs[&bio.pid];
            let full = p.rqs.len() >= BLK_MAX_REQUEST_COUNT;
            let large = self.spec.merges
                && p.rqs.last().and_then(|&l| self.table.get(l)).is_some_and(|e| e.rq.bytes() >= BLK_PLUG_FLUSH_SIZE);
            if full || large {
                self.flush_plug(bio.pid, elv, now, false);
            }
            self.plugs.get_mut(&bio.pid).expect("plugged").rqs.push(id);
        } else {
            self.mq_insert(id, elv, now);
            mq(elv).run_hw_queue(true);
            self.fx.run_queue = true;
        }
        rq
    }

    /// `insert_requests` for one request: mq-deadline and BFQ first try to
    /// merge it into a queued request (`blk_mq_sched_try_insert_merge`);
    /// otherwise it joins the elevator, the hash and, if unset,
    /// `q->last_merge`.
    fn mq_insert(&mut self, id: RequestId, elv: &mut dyn Elevator, now: SimTime) {
        let e = self.table.get_mut(id).expect("a request to insert");
        let rq = e.rq;
        e.elv = rq;
        let style = mq(elv).merge_style();
        mq(elv).prepare(&rq, now);
        if style == MergeStyle::Hash && self.spec.merges && self.insert_merge(id, elv, now) {
            return;
        }
        self.table.get_mut(id).expect("known").queued = true;
        mq(elv).insert_prepared(rq, now);
        if style == MergeStyle::Hash {
            self.hash_add(&rq);
            self.last_merge.get_or_insert(id);
        }
    }

    /// `elv_attempt_insert_merge`: `q->last_merge` takes the new request
    /// at its back; else a queued request ending where it starts (the
    /// hash), and again with the grown one, while that works.
    fn insert_merge(&mut self, id: RequestId, elv: &mut dyn Elevator, now: SimTime) -> bool {
        if let Some(lm) = self.last_merge {
            if self.attempt_merge(lm, id, elv, now) {
                self.fx.absorbed.push((lm, id));
                return true;
            }
        }
        let mut ret = false;
        let mut rq = id;
        loop {
            let sector = self.table.get(rq).expect("known").rq.sector;
            let Some(cand) = self.hash.get(sector) else { break };
            if !self.attempt_merge(cand, rq, elv, now) {
                break;
            }
            self.fx.absorbed.push((cand, rq));
            ret = true;
            rq = cand;
        }
        ret
    }

    pub(super) fn prio_of_entry(&self, e: &Entry) -> IoPrio {
        self.prio_of(e.rq.pid)
    }

    /// `elv_merge` on the blk-mq path: `q->last_merge` (back or front),
    /// the hash (back), the elevator's `request_merge` (front), each
    /// candidate checked by `elv_bio_merge_ok`, whose elevator half may
    /// change the elevator (BFQ's cooperator merges), so it is asked
    /// through [`crate::sched::mq::MqOps::allow_bio_merge`].
    pub(super) fn mq_find_merge(
        &mut self,
        bio: &Bio,
        view: &Request,
        elv: &mut dyn Elevator,
        now: SimTime,
    ) -> Option<(RequestId, MergeKind)> {
        if let Some(id) = self.last_merge {
            if self.mq_bio_merge_ok(id, view, elv, now) {
                let rq = self.table.get(id).expect("known").rq;
                if rq.end_sector() == bio.sector {
                    return Some((id, MergeKind::Back));
                }
                if rq.sector == bio.end_sector() {
                    return Some((id, MergeKind::Front));
                }
            }
        }
        if let Some(id) = self.hash.get(bio.sector) {
            if self.mq_bio_merge_ok(id, view, elv, now) {
                return Some((id, MergeKind::Back));
            }
        }
        let cand = elv.front_merge_candidate(view)?;
        debug_assert_eq!(cand.sector, bio.end_sector(), "a front-merge candidate starts where the bio ends");
        self.mq_bio_merge_ok(cand.id, view, elv, now).then_some((cand.id, MergeKind::Front))
    }

    /// `elv_bio_merge_ok`: `blk_rq_merge_ok` and the elevator's consent.
    fn mq_bio_merge_ok(&mut self, id: RequestId, view: &Request, elv: &mut dyn Elevator, now: SimTime) -> bool {
        match self.table.get(id) {
            Some(e) if e.queued && self.mq_merge_ok(e, view) => self.mq_allow(id, view, elv, now),
            _ => false,
        }
    }

    /// The elevator's `allow_merge` for queued request `id` and a bio.
    pub(super) fn mq_allow(&mut self, id: RequestId, view: &Request, elv: &mut dyn Elevator, now: SimTime) -> bool {
        let rq = self.table.get(id).expect("known").elv;
        mq(elv).allow_bio_merge(&rq, view, now)
    }

    /// `blk_rq_merge_ok` on the blk-mq path: mergeable (not started, not
    /// `REQ_NOMERGE`), the same data direction and I/O priority.
    pub(super) fn mq_merge_ok(&self, e: &Entry, view: &Request) -> bool {
        !e.nomerge && e.rq.dir == view.dir && self.prio_of(e.rq.pid) == self.prio_of(view.pid)
    }

    /// `blk_try_merge` then `bio_attempt_back_merge` /
    /// `bio_attempt_front_merge` of `bio` into request `id`, without the
    /// elevator (`blk_attempt_bio_merge`). The request's elevator copy is
    /// left behind (the caller tells the elevator, if it holds it).
    fn attempt_bio_merge(&mut self, id: RequestId, bio: &Bio, now: SimTime) -> (BioMerge, Option<(Request, MergeKind)>) {
        let Some(e) = self.table.get(id).copied() else { return (BioMerge::None, None) };
        let view = bio.as_request(0, now);
        if !self.mq_merge_ok(&e, &view) {
            return (BioMerge::None, None);
        }
        let kind = if e.rq.end_sector() == bio.sector {
            MergeKind::Back
        } else if e.rq.sector == bio.end_sector() {
            MergeKind::Front
        } else {
            return (BioMerge::None, None);
        };
        if e.rq.nr_sectors + bio.nr_sectors > self.max_sectors {
            self.set_nomerge(id);
            return (BioMerge::Failed, None);
        }
        let old = e.elv;
        self.grow(id, bio, kind, now);
        (BioMerge::Ok, Some((old, kind)))
    }

    /// `blk_attempt_plug_merge`: the bio joins the last request of its
    /// task's plug, or nothing.
    fn plug_merge(&mut self, bio: &Bio, now: SimTime) -> Option<RequestId> {
        let &last = self.plugs.get(&bio.pid)?.rqs.last()?;
        let (r, _) = self.attempt_bio_merge(last, bio, now);
        (r == BioMerge::Ok).then_some(last)
    }

    /// `blk_bio_list_merge` over the elevator's list for `bio` (Kyber's
    /// `kyber_bio_merge`), newest first, 8 at most; the elevator hears of
    /// the grown request.
    fn list_merge(&mut self, bio: &Bio, elv: &mut dyn Elevator, now: SimTime) -> Option<RequestId> {
        let view = bio.as_request(0, now);
        let mut list = std::mem::take(&mut self.scratch_rqs);
        list.clear();
        mq(elv).bio_merge_list(&view, &mut list);
        let mut found = None;
        for rq in list.iter().take(LIST_MERGE_CHECKED) {
            let queued = self.table.get(rq.id).is_some_and(|e| e.queued);
            if !queued {
                continue;
            }
            match self.attempt_bio_merge(rq.id, bio, now) {
                (BioMerge::None, _) => continue,
                (BioMerge::Failed, _) => break,
                (BioMerge::Ok, Some((old, kind))) => {
                    let e = self.table.get_mut(rq.id).expect("known");
                    let grown = e.rq;
                    e.elv = grown;
                    elv.merged(&old, &grown, kind);
                    found = Some(rq.id);
                    break;
                }
                (BioMerge::Ok, None) => unreachable!("a merge has a kind"),
            }
        }
        self.scratch_rqs = list;
        found
    }

    /// The blk-mq side of freeing a request merged into another: the
    /// elevator forgets it (`finish_request` of a request never started)
    /// and its tag goes back (waking sleepers).
    pub(super) fn mq_free_merged(&mut self, gone: &Entry, elv: &mut dyn Elevator) {
        let m = mq(elv);
        m.freed(&gone.elv);
        let mut woken = std::mem::take(&mut self.scratch_pids);
        woken.clear();
        m.put_tag(gone.tag, &mut woken);
        for &pid in &woken {
            self.fx.wake.push((pid, Wake::Request));
        }
        self.scratch_pids = woken;
    }

    /// The queue run took `rq` from the elevator: it can no longer be
    /// merged into (`deadline_remove_request` / `bfq_remove_request`:
    /// `elv_rqhash_del`, `q->last_merge`).
    pub fn mq_pulled(&mut self, rq: &Request) {
        if let Some(e) = self.table.get_mut(rq.id) {
            e.queued = false;
            let r = e.rq;
            self.hash_del(&r);
            if self.last_merge == Some(rq.id) {
                self.last_merge = None;
            }
        }
    }

    /// Requests in `pid`'s plug (tests).
    pub fn plugged_requests(&self, pid: ProcessId) -> usize {
        self.plugs.get(&pid).map_or(0, |p| p.rqs.len())
    }
}

#[cfg(test)]
mod tests {
    use super::super::bio::{Origin, SINGLE};
    use super::super::{Done, QueueSpec};
    use super::*;
    use crate::request::{Dir, IoClass};
    use crate::sched::mq::MqRun;
    use std::collections::BTreeMap;

    const T: SimTime = SimTime::ZERO;

    /// A blk-mq elevator at queue depth 1 with `nr_requests` tags (`none`:
    /// at queue depth 8, its tags being the driver's).
    fn elv(name: &str, nr_requests: u32, extra: &[(&str, f64)]) -> Box<dyn Elevator> {
        let mut given: BTreeMap<String, f64> = extra.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let mut c = crate::sched::testutil::ctx();
        if name == "none" {
            c.queue_depth = 8;
        } else {
            given.insert("nr_requests".into(), nr_requests as f64);
        }
        if name == "mq-deadline" {
            // Writes may use the whole pool (the switch's pool of 2 would
            // limit them to 4 tags: async_depth_keeps_the_pool_of_the_switch).
            given.entry("async_depth".into()).or_insert(nr_requests as f64);
        }
        let (mut e, _) = crate::sched::build(name, &given, &c).unwrap();
        e.as_mq().unwrap().set_driver(c.queue_depth, false);
        e
    }

    fn blk() -> BlockLayer {
        let mut b = BlockLayer::new(&QueueSpec::default()).unwrap();
        b.set_mq(true);
        b
    }

    fn bio(pid: u32, sector: u64, nr: u32, dir: Dir, sync: bool) -> Bio {
        Bio { pid, sector, nr_sectors: nr, dir, sync, origin: Origin::Direct { op: SINGLE } }
    }

    fn write(pid: u32, sector: u64) -> Bio {
        bio(pid, sector, 8, Dir::Write, false)
    }

    fn read(pid: u32, sector: u64) -> Bio {
        bio(pid, sector, 8, Dir::Read, false)
    }

    fn inserted(r: Submitted) -> RequestId {
        match r {
            Submitted::Inserted(rq) => rq.id,
            other => panic!("expected a new request, got {other:?}"),
        }
    }

    fn merged_into(r: Submitted) -> RequestId {
        match r {
            Submitted::Merged { into, .. } => into,
            other => panic!("expected a merge, got {other:?}"),
        }
    }

    /// Run the queue; the requests given to the driver, as the block layer
    /// has them (sector, sectors).
    fn run(b: &mut BlockLayer, e: &mut dyn Elevator) -> Vec<(u64, u32)> {
        let mut out = MqRun::default();
        e.as_mq().unwrap().run(T, &mut out);
        for rq in &out.pulled {
            b.mq_pulled(rq);
        }
        out.to_driver.iter().map(|rq| (b.current(rq.id).unwrap().sector, rq.nr_sectors)).collect()
    }

    fn complete(b: &mut BlockLayer, e: &mut dyn Elevator, id: RequestId) -> Vec<Done> {
        let rq = b.current(id).unwrap();
        e.completed(&rq, T);
        let mut done = Vec::new();
        b.complete(id, T, &mut done, e);
        done
    }

    /// `blk_attempt_plug_merge`: only the last request of the task's plug,
    /// back or front, and no other task's plug.
    #[test]
    fn a_bio_merges_into_the_last_request_of_its_own_plug() {
        for name in ["none", "mq-deadline", "bfq", "kyber"] {
            let mut b = blk();
            let mut e = elv(name, 64, &[]);
            b.start_plug(0);
            let r0 = inserted(b.submit(write(0, 1000), &mut *e, T));
            assert_eq!(merged_into(b.submit(write(0, 1008), &mut *e, T)), r0, "{name}: back merge in the plug");
            assert_eq!(merged_into(b.submit(write(0, 992), &mut *e, T)), r0, "{name}: front merge in the plug");
            let r1 = inserted(b.submit(write(0, 5000), &mut *e, T));
            assert_ne!(r0, r1);
            // Contiguous with r0, but r0 is not the plug's last request.
            assert!(matches!(b.submit(write(0, 1016), &mut *e, T), Submitted::Inserted(_)), "{name}");
            assert_eq!(b.plugged_requests(0), 3);
            assert_eq!(e.queued(), 0, "{name}: nothing reaches the elevator before the flush");
            b.finish_plug(0, &mut *e, T);
            assert_eq!(b.plugged_requests(0), 0);
            let sent = run(&mut b, &mut *e);
            // mq-deadline and BFQ merge 1016 into it as the flush inserts
            // it (blk_mq_sched_try_insert_merge); Kyber and none do not.
            let want = if matches!(name, "mq-deadline" | "bfq") { 32 } else { 24 };
            assert_eq!(sent[0], (992, want), "{name}: the plug's first request");
        }
    }

    /// `blk_add_rq_to_plug`: a plug of `BLK_MAX_REQUEST_COUNT` requests, or
    /// one whose last request is `BLK_PLUG_FLUSH_SIZE` or more, is flushed
    /// before the next is added; with no merging, size does not count.
    #[test]
    fn a_full_plug_or_a_large_last_request_is_flushed_first() {
        let mut b = blk();
        let mut e = elv("mq-deadline", 256, &[]);
        b.start_plug(0);
        for i in 0..32u64 {
            b.submit(write(0, i * 100), &mut *e, T);
        }
        assert_eq!(b.plugged_requests(0), 32);
        b.submit(write(0, 99_999), &mut *e, T);
        assert_eq!((b.plugged_requests(0), e.queued()), (1, 32));
        // 128 KiB in the last request: the next request flushes.
        let mut b = blk();
        let mut e = elv("mq-deadline", 256, &[]);
        b.start_plug(0);
        b.submit(bio(0, 0, 248, Dir::Write, false), &mut *e, T);
        b.submit(write(0, 248), &mut *e, T); // plug merge: 256 sectors
        b.submit(write(0, 9000), &mut *e, T);
        assert_eq!((b.plugged_requests(0), e.queued()), (1, 1));
    }

    /// mq-deadline and BFQ: `blk_mq_sched_try_merge` through `last_merge`,
    /// the hash (back) and the elevator's front lookup; Kyber through its
    /// software queue's list; none: no elevator merges.
    #[test]
    fn bios_merge_into_the_elevators_requests_as_each_elevator_allows() {
        for name in ["mq-deadline", "bfq", "kyber", "none"] {
            let mut b = blk();
            let mut e = elv(name, 64, &[]);
            let _ = inserted(b.submit(write(0, 100_000), &mut *e, T)); // to the driver at the run
            run(&mut b, &mut *e);
            let _ = inserted(b.submit(write(0, 200_000), &mut *e, T)); // taken beyond the driver tags
            run(&mut b, &mut *e);
            let r = inserted(b.submit(write(0, 1000), &mut *e, T));
            let back = b.submit(write(0, 1008), &mut *e, T);
            let front = b.submit(write(0, 992), &mut *e, T);
            if name == "none" {
                assert!(matches!((back, front), (Submitted::Inserted(_), Submitted::Inserted(_))), "none: no elevator merges");
                continue;
            }
            assert_eq!(merged_into(back), r, "{name}: back");
            assert_eq!(merged_into(front), r, "{name}: front");
            assert_eq!(b.current(r).unwrap().sector, 992);
            assert_eq!(e.queued(), 2, "{name}: one request waits in the elevator, one on the dispatch list");
        }
    }

    /// The merge rules of `blk_rq_merge_ok`: the same direction and I/O
    /// priority; mq-deadline's `front_merges`; BFQ only within the bio's
    /// own queue, never a sync bio into an async request.
    #[test]
    fn merges_need_the_same_direction_priority_and_the_elevators_consent() {
        let setup = |name: &str, extra: &[(&str, f64)]| {
            let mut b = blk();
            let mut e = elv(name, 64, extra);
            b.set_ioprio(3, crate::request::IoPrio { class: IoClass::Be, level: 0 });
            for s in [100_000, 200_000] {
                b.submit(write(9, s), &mut *e, T);
                run(&mut b, &mut *e);
            }
            let r = inserted(b.submit(write(0, 1000), &mut *e, T));
            (b, e, r)
        };
        let (mut b, mut e, _) = setup("mq-deadline", &[]);
        assert!(matches!(b.submit(read(0, 1008), &mut *e, T), Submitted::Inserted(_)), "a read into a write");
        assert!(matches!(b.submit(write(3, 1008), &mut *e, T), Submitted::Inserted(_)), "another I/O priority");
        assert!(matches!(b.submit(write(1, 992), &mut *e, T), Submitted::Merged { .. }), "mq-deadline: another process");
        let (mut b, mut e, _) = setup("mq-deadline", &[("front_merges", 0.0)]);
        // Front merges go through last_merge first (elv_merge's one-hit
        // cache, whatever front_merges says); move it to another request
        // (a merge does) so only dd_request_merge is left.
        b.submit(write(0, 50_000), &mut *e, T);
        assert!(matches!(b.submit(write(0, 50_008), &mut *e, T), Submitted::Merged { .. }));
        assert!(matches!(b.submit(write(0, 992), &mut *e, T), Submitted::Inserted(_)), "front_merges = 0");
        // BFQ: a bio merges only into a request of the queue it would join
        // (bfq_allow_bio_merge): not before its task has a queue (no icq
        // yet), not a sync bio into an async request; async queues are
        // shared by all tasks of one priority.
        let (mut b, mut e, r) = setup("bfq", &[]);
        let sync_bio = bio(0, 1008, 8, Dir::Write, true);
        assert!(matches!(b.submit(sync_bio, &mut *e, T), Submitted::Inserted(_)), "bfq: a sync bio into an async request");
        b.submit(write(1, 70_000), &mut *e, T);
        assert!(matches!(b.submit(write(1, 992), &mut *e, T), Submitted::Merged { .. }), "the shared async queue");
        assert_eq!(b.current(r).unwrap().sector, 992);
        // Another task's sync queue: the bio may join only because BFQ
        // first merges the two queues (bfq_allow_bio_merge →
        // bfq_setup_cooperator: new queues, close requests).
        let r0 = inserted(b.submit(read(0, 3000), &mut *e, T));
        b.submit(read(1, 90_000), &mut *e, T);
        assert_eq!(merged_into(b.submit(read(1, 3008), &mut *e, T)), r0, "bfq: cooperating queues merged");
    }

    /// `ll_back_merge_fn`: a merge past `max_sectors` is refused and marks
    /// the request `REQ_NOMERGE` for good.
    #[test]
    fn the_size_limit_marks_the_request_nomerge() {
        let spec = QueueSpec { max_sectors_kb: 8, ..QueueSpec::default() }; // 16 sectors
        let mut b = BlockLayer::new(&spec).unwrap();
        b.set_mq(true);
        let mut e = elv("mq-deadline", 64, &[]);
        for s in [100_000, 200_000] {
            b.submit(write(9, s), &mut *e, T);
            run(&mut b, &mut *e);
        }
        let r = inserted(b.submit(write(0, 1000), &mut *e, T));
        assert_eq!(merged_into(b.submit(write(0, 1008), &mut *e, T)), r);
        assert!(matches!(b.submit(write(0, 1016), &mut *e, T), Submitted::Inserted(_)));
        assert!(matches!(b.submit(write(0, 992), &mut *e, T), Submitted::Inserted(_)), "REQ_NOMERGE: no front merge either");
    }

    /// `blk_mq_sched_try_insert_merge` at a plug's flush: a plugged request
    /// that starts where a queued one ends joins it, through `last_merge`
    /// or the hash, repeatedly; the absorbed request's tag goes back.
    #[test]
    fn a_flushed_request_merges_into_a_queued_one_and_gives_its_tag_back() {
        for name in ["mq-deadline", "bfq"] {
            let mut b = blk();
            let mut e = elv(name, 64, &[]);
            for s in [100_000, 200_000] {
                b.submit(write(9, s), &mut *e, T);
                run(&mut b, &mut *e);
            }
            // Task 0 plugs a request before task 1's request below it is
            // queued: no bio merge was possible, the insert merge is.
            b.start_plug(0);
            b.submit(write(0, 1008), &mut *e, T);
            let q = inserted(b.submit(write(1, 1000), &mut *e, T));
            b.submit(write(1, 50_000), &mut *e, T);
            let tags = e.as_mq().unwrap().tags_in_use();
            b.finish_plug(0, &mut *e, T);
            assert_eq!(b.fx.absorbed.len(), 1, "{name}");
            assert_eq!(b.fx.absorbed[0].0, q);
            assert_eq!(e.as_mq().unwrap().tags_in_use(), tags - 1, "{name}: the tag went back");
            assert_eq!(b.current(q).unwrap().nr_sectors, 16);
            assert_eq!(e.queued(), 3, "{name}: q, the other, and the dispatch list's one");
        }
        // Kyber has no insert merging.
        let mut b = blk();
        let mut e = elv("kyber", 64, &[]);
        b.start_plug(0);
        b.submit(write(0, 1008), &mut *e, T);
        b.submit(write(1, 1000), &mut *e, T);
        b.finish_plug(0, &mut *e, T);
        assert!(b.fx.absorbed.is_empty());
        assert_eq!(e.queued(), 2);
    }

    /// Kyber merges a bio only into a request still in its software
    /// queue's list: once a dispatch flushed the list, not.
    #[test]
    fn kyber_merges_only_into_its_software_queue() {
        let mut b = blk();
        let mut e = elv("kyber", 64, &[]);
        let r = inserted(b.submit(write(0, 1000), &mut *e, T));
        assert_eq!(merged_into(b.submit(write(0, 1008), &mut *e, T)), r);
        let r2 = inserted(b.submit(write(0, 5000), &mut *e, T));
        let _ = inserted(b.submit(write(0, 9000), &mut *e, T));
        // The run takes r (driver) and r2 (no driver tag): the flush moved
        // the whole list, 9000 included, out of the software queue.
        assert_eq!(run(&mut b, &mut *e), vec![(1000, 16)]);
        assert!(matches!(b.submit(write(0, 9008), &mut *e, T), Submitted::Inserted(_)));
        assert_ne!(r, r2);
    }

    /// `blk_mq_get_tag`: without a tag the submitter sleeps (its bio waits
    /// in the block layer); a completion wakes it, and it tries again.
    #[test]
    fn a_submitter_without_a_tag_sleeps_until_a_freed_tag_wakes_it() {
        let mut b = blk();
        let mut e = elv("mq-deadline", 4, &[]);
        let ids: Vec<_> = (0..4).map(|i| inserted(b.submit(read(i, 1000 * i as u64), &mut *e, T))).collect();
        assert_eq!(b.submit(read(7, 90_000), &mut *e, T), Submitted::Sleeping);
        assert!(b.parked(7));
        assert_eq!(b.retry(7, &mut *e, T), None, "no tag yet: asleep again");
        b.fx.wake.clear();
        run(&mut b, &mut *e);
        complete(&mut b, &mut *e, ids[0]);
        assert_eq!(b.fx.wake, vec![(7, Wake::Request)]);
        assert!(b.retry(7, &mut *e, T).is_some());
        assert!(!b.parked(7));
    }
}
