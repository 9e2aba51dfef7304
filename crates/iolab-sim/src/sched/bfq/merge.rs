//! Queue merging by creation time ("stable merging", Linux 6.1.192
//! `block/bfq-iosched.c`): the sync queues of processes that start within
//! `bfq_burst_interval` of each other are scheduled to be merged into one
//! shared queue, and the merge is done `bfq_late_stable_merging` after
//! creation unless idling for the queue would pay for throughput by then
//! (`bfq_do_or_sched_stable_merge`, the first part of
//! `bfq_setup_cooperator`, `bfq_setup_merge`, `bfq_merge_bfqqs`). A merged
//! queue holds the requests of all its processes and BFQ serves them as
//! one queue, picking the next request by position (`bfq_choose_req`).
//!
//! Why it matters: fio starts its jobs together, so on the 6.1 kernel the
//! four processes of each `iolab kernel compare` workload end up in one
//! shared queue within a second (traced in the guest with the blk tracer:
//! "scheduling merge with queue", "bfqSHARED-S"; docs/schedulers.md).
//!
//! Merging by position ("close cooperators", issue 25): early in a sync
//! queue's life (`bfq_too_late_for_merging`: within HZ/10 of its first
//! service since it last became backlogged), a request or bio within
//! `BFQQ_CLOSE_THR` of where the in-service queue's last request ended, or
//! of another queue's next request in the `rq_pos_tree`
//! (`bfq_find_close_cooperator`), redirects its process to that queue, at
//! insertion (`__bfq_insert_request`) or at a bio merge
//! (`bfq_allow_bio_merge`). A shared queue is `coop`: it never becomes a
//! waker, and found seeky at an expiry it is split at its processes' next
//! requests (`bfq_split_bfqq`; stably merged processes stay).
//!
//! Not modelled: the state a merged queue saves for a later split
//! (`bfq_bfqq_save_state`, `bfq_bfqq_resume_state`): a split process's
//! queue starts afresh.

use super::queue::QueueId;
use super::Bfq;
use crate::request::ProcessId;

/// `bfq_activation_stable_merging`, ms: a new queue is compared with the
/// last one created if that one is at most this old.
const ACTIVATION_STABLE_MERGING_MS: u64 = 600;
/// `bfq_late_stable_merging`, ms: how long a scheduled merge waits.
const LATE_STABLE_MERGING_MS: u64 = 600;
/// `BFQQ_CLOSE_THR`, sectors: a request this near is a cooperator's.
const CLOSE_THR: u64 = 8 * 1024;
/// `bfq_merge_time_limit` = HZ/10, jiffies.
const MERGE_TIME_LIMIT_J: i64 = super::KERNEL_HZ as i64 / 10;

impl Bfq {
    /// `bfq_do_or_sched_stable_merge`, for the new sync queue `id` of
    /// `pid`: remember it as the last created, or, if it comes within
    /// `burst_interval` of that one, merge it at once (non-rotational
    /// with queueing) or schedule a merge with it. Returns the queue the
    /// process uses.
    pub(super) fn do_or_sched_stable_merge(&mut self, id: QueueId, pid: ProcessId) -> QueueId {
        let activation = self.ms_to_j(ACTIVATION_STABLE_MERGING_MS);
        let q = &self.queues[id];
        let Some(last) = self.last_bfqq_created.filter(|&l| {
            let l = &self.queues[l];
            l.creation_time + activation >= q.creation_time
                && l.ioprio == q.ioprio
                && l.ioprio_class == q.ioprio_class
        }) else {
            self.last_bfqq_created = Some(id);
            return id;
        };
        if self.queues[last].creation_time + self.p.burst_interval_j < q.creation_time {
            return id;
        }
        if self.nonrot_with_queueing {
            // bfq_do_early_stable_merge.
            let Some(new) = self.setup_merge(id, last) else { return id };
            self.mark_stably_merged(pid, new);
            return self.merge_bfqqs(pid, id);
        }
        self.queues[last].stable_ref += 1;
        self.bic(pid).stable_merge = Some(last);
        id
    }

    /// `bfq_setup_cooperator`: the queue a request (or bio) at `pos` of
    /// `pid`'s queue `id` is to go to, if a merge is set up: a merge set
    /// up already, followed to its end; a scheduled stable merge, done (or
    /// dropped) once the queue and its last split are
    /// `bfq_late_stable_merging` old; else, on a rotational device or one
    /// without queueing, a close cooperator: the queue in service if `pos`
    /// is within `BFQQ_CLOSE_THR` of where its last request ended, else the
    /// queue whose next request is closest to `pos`
    /// (`bfq_find_close_cooperator`), if `bfq_may_be_close_cooperator`.
    pub(super) fn setup_cooperator(&mut self, id: QueueId, pid: ProcessId, pos: Option<u64>) -> Option<QueueId> {
        if let Some(mut new) = self.queues[id].new_bfqq {
            while let Some(next) = self.queues[new].new_bfqq {
                new = next;
            }
            return Some(new);
        }
        if self.nonrot_with_queueing {
            return None;
        }
        let now_j = self.jif();
        let late = self.ms_to_j(LATE_STABLE_MERGING_MS);
        let q = &self.queues[id];
        let (sync, just_created, split, created) = (q.sync, q.just_created, q.split_time, q.creation_time);
        let stable = self.bic(pid).stable_merge;
        if let Some(target) = stable.filter(|_| sync && !just_created && now_j > split + late && now_j > created + late) {
            let proc_ref = self.queues[id].process_refs.min(self.queues[target].process_refs);
            // The scheduled merge is done or dropped here (bfq_put_stable_ref).
            self.bic(pid).stable_merge = None;
            self.put_stable_ref(target);
            if self.idling_boosts_thr_without_issues(id) || proc_ref == 0 {
                return None;
            }
            let new = self.setup_merge(id, target)?;
            self.mark_stably_merged(pid, new);
            return Some(new);
        }
        // Close cooperators: only early in a queue's life.
        if self.too_late_for_merging(id) {
            return None;
        }
        let pos = pos?;
        // "If there is only one backlogged queue, don't search."
        if self.tot_busy_queues() == 1 {
            return None;
        }
        if let Some(ins) = self.in_service.filter(|&ins| ins != id) {
            if pos.abs_diff(self.in_serv_last_pos) <= CLOSE_THR && self.may_be_close_cooperator(id, ins) {
                if let Some(new) = self.setup_merge(id, ins) {
                    return Some(new);
                }
            }
        }
        let new = self.find_close_cooperator(id, pos)?;
        if !self.may_be_close_cooperator(id, new) {
            return None;
        }
        self.setup_merge(id, new)
    }

    /// `bfq_too_late_for_merging`: the queue has had service since it last
    /// became backlogged, and its first of it was more than
    /// `bfq_merge_time_limit` (HZ/10) ago.
    pub(super) fn too_late_for_merging(&self, id: QueueId) -> bool {
        let q = &self.queues[id];
        q.service_from_backlogged > 0 && self.jif() > q.first_io_time + MERGE_TIME_LIMIT_J
    }

    /// `bfq_may_be_close_cooperator`: `new` not too late, neither of the
    /// idle class, the same class, neither seeky, both sync.
    fn may_be_close_cooperator(&self, id: QueueId, new: QueueId) -> bool {
        let (q, n) = (&self.queues[id], &self.queues[new]);
        !self.too_late_for_merging(new)
            && !q.class_idle()
            && !n.class_idle()
            && q.ioprio_class == n.ioprio_class
            && !q.seeky()
            && !n.seeky()
            && q.sync
            && n.sync
    }

    /// `bfq_pos_tree_add_move`: the queue (re)enters the request-position
    /// tree at its next request's sector, unless it is too late for
    /// merging, of the idle class, without a next request, or another
    /// queue holds that sector.
    pub(super) fn pos_tree_add_move(&mut self, id: QueueId) {
        self.queues[id].pos_key = None;
        if self.too_late_for_merging(id) || self.queues[id].class_idle() {
            return;
        }
        let Some(rq) = self.next_request(id) else { return };
        if self.queues.iter().any(|q| q.pos_key == Some(rq.sector)) {
            return;
        }
        self.queues[id].pos_key = Some(rq.sector);
    }

    /// `bfq_find_close_cooperator` → `bfqq_find_close`: the queue of the
    /// tree at `pos`; else the neighbour `bfq_rq_pos_tree_lookup` stops at
    /// if its next request is within `BFQQ_CLOSE_THR`, else the next one
    /// towards `pos` on the other side, if within. Which of the two
    /// neighbours the rb-tree walk stops at depends on the tree's shape;
    /// the simulator looks at the nearer first (the lower on a tie).
    fn find_close_cooperator(&self, cur: QueueId, pos: u64) -> Option<QueueId> {
        let mut pred: Option<(u64, QueueId)> = None;
        let mut succ: Option<(u64, QueueId)> = None;
        for (i, q) in self.queues.iter().enumerate() {
            let Some(k) = q.pos_key else { continue };
            if k == pos {
                return (i != cur).then_some(i);
            }
            if k < pos && pred.is_none_or(|(pk, _)| k > pk) {
                pred = Some((k, i));
            }
            if k > pos && succ.is_none_or(|(sk, _)| k < sk) {
                succ = Some((k, i));
            }
        }
        let order = match (pred, succ) {
            (Some(p), Some(s)) if s.0 - pos < pos - p.0 => [Some(s), Some(p)],
            (p, s) => [p, s],
        };
        let close = order.into_iter().flatten().find(|&(k, _)| k.abs_diff(pos) <= CLOSE_THR)?;
        (close.1 != cur).then_some(close.1)
    }

    /// `bfq_split_bfqq`: `pid` leaves the shared queue `id`; if it was its
    /// last process the queue is simply its own again (returned),
    /// otherwise it needs a new queue (None). The state the kernel saved
    /// at the merge for this moment (`bfq_bfqq_save_state`,
    /// `bfq_bfqq_resume_state`: think time, I/O-boundness, weight raising,
    /// injection) is not kept: the new queue starts afresh.
    pub(super) fn split_bfqq(&mut self, pid: ProcessId, id: QueueId) -> Option<QueueId> {
        if self.queues[id].process_refs == 1 && self.queues[id].new_bfqq.is_none() {
            self.queues[id].coop = false;
            self.queues[id].split_coop = false;
            return Some(id);
        }
        self.bic(pid).sync_q = None;
        self.put_cooperator(id);
        self.release_process_ref(id);
        None
    }

    /// `bic->stably_merged` for `pid` and for the process that owns `new`
    /// alone, if one does (`new_bfqq->bic`).
    fn mark_stably_merged(&mut self, pid: ProcessId, new: QueueId) {
        self.bic(pid).stably_merged = true;
        if self.queues[new].bic_set {
            if let Some(owner) = self.queues[new].owner {
                self.bic(owner).stably_merged = true;
            }
        }
    }

    /// `bfq_setup_merge`: redirect `id` to the end of `new`'s merge chain,
    /// which takes `id`'s process references in advance; none if either
    /// has no process left or the chain leads back to `id`.
    pub(super) fn setup_merge(&mut self, id: QueueId, new: QueueId) -> Option<QueueId> {
        if self.queues[new].process_refs == 0 {
            return None;
        }
        let mut new = new;
        while let Some(next) = self.queues[new].new_bfqq {
            if next == id {
                return None;
            }
            new = next;
        }
        let refs = self.queues[id].process_refs;
        if refs == 0 || self.queues[new].process_refs == 0 {
            return None;
        }
        self.queues[id].new_bfqq = Some(new);
        self.queues[new].process_refs += refs;
        Some(new)
    }

    /// `bfq_merge_bfqqs`: `pid`'s requests go to `id`'s `new_bfqq` from now
    /// on; the shared queue takes over I/O-boundness, a waker and weight
    /// raising, and `id` gives up the process. Returns the shared queue.
    pub(super) fn merge_bfqqs(&mut self, pid: ProcessId, id: QueueId) -> QueueId {
        let new = self.queues[id].new_bfqq.expect("merge_bfqqs on a queue with no merge set up");
        if self.queues[id].io_bound {
            self.queues[new].io_bound = true;
        }
        self.queues[id].io_bound = false;
        if let Some(w) = self.queues[id].waker {
            if self.queues[new].waker.is_none() && w != new {
                self.queues[new].waker = Some(w);
                self.queues[new].tentative_waker = None;
                self.queues[w].woken.insert(0, new);
            }
        }
        let (q, n) = (&self.queues[id], &self.queues[new]);
        if n.wr_coeff == 1 && q.wr_coeff > 1 {
            let (coeff, max, start, srt) = (q.wr_coeff, q.wr_cur_max_time, q.last_wr_start_finish, q.wr_start_at_switch_to_srt);
            let n = &mut self.queues[new];
            n.wr_coeff = coeff;
            n.wr_cur_max_time = max;
            n.last_wr_start_finish = start;
            n.wr_start_at_switch_to_srt = srt;
            n.e.prio_changed = true;
            if n.busy {
                self.wr_busy_queues += 1;
            }
        }
        if self.queues[id].wr_coeff > 1 {
            let q = &mut self.queues[id];
            q.wr_coeff = 1;
            q.e.prio_changed = true;
            if q.busy {
                self.wr_busy_queues -= 1;
            }
        }
        // bic_set_bfqq: the process now uses the shared queue; a stable
        // merge scheduled with that very queue is moot.
        self.bic(pid).sync_q = Some(new);
        if self.bic(pid).stable_merge == Some(new) {
            self.bic(pid).stable_merge = None;
            self.put_stable_ref(new);
        }
        self.queues[new].coop = true;
        self.queues[new].bic_set = false;
        self.queues[id].bic_set = false;
        self.reassign_last_bfqq(id, Some(new));
        self.release_process_ref(id);
        new
    }

    /// `bfq_release_process_ref`: one process less; an empty busy queue
    /// that is not in service leaves the scheduler.
    pub(super) fn release_process_ref(&mut self, id: QueueId) {
        let q = &self.queues[id];
        if q.busy && q.rqs.is_empty() && self.in_service != Some(id) {
            self.del_bfqq_busy(id, false);
        }
        self.reassign_last_bfqq(id, None);
        let q = &mut self.queues[id];
        q.process_refs = q.process_refs.saturating_sub(1);
        self.maybe_free(id);
    }

    /// `bfq_put_cooperator`: a process leaves before its scheduled
    /// redirection: the queues down `id`'s merge chain lose the
    /// reference `bfq_setup_merge` gave them.
    pub(super) fn put_cooperator(&mut self, id: QueueId) {
        let mut next = self.queues[id].new_bfqq;
        while let Some(q) = next {
            if q == id {
                break;
            }
            next = self.queues[q].new_bfqq;
            self.queues[q].process_refs = self.queues[q].process_refs.saturating_sub(1);
            self.maybe_free(q);
        }
    }

    /// `bfq_put_stable_ref`.
    pub(super) fn put_stable_ref(&mut self, id: QueueId) {
        self.queues[id].stable_ref = self.queues[id].stable_ref.saturating_sub(1);
        self.maybe_free(id);
    }

    /// `bfq_reassign_last_bfqq` (one root group).
    fn reassign_last_bfqq(&mut self, cur: QueueId, new: Option<QueueId>) {
        if self.last_bfqq_created == Some(cur) {
            self.last_bfqq_created = new;
        }
    }
}
