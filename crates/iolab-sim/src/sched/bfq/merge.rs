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
//! Not modelled: merging by position (the in-service queue's last sector
//! and the `rq_pos_tree` of close cooperators, `bfq_find_close_cooperator`)
//! and therefore splitting (`bfq_split_bfqq`; stably merged queues are
//! never split, `bic->stably_merged`), and the state a merged queue saves
//! for a later split (`bfq_bfqq_save_state`).

use super::queue::QueueId;
use super::Bfq;
use crate::request::ProcessId;

/// `bfq_activation_stable_merging`, ms: a new queue is compared with the
/// last one created if that one is at most this old.
const ACTIVATION_STABLE_MERGING_MS: u64 = 600;
/// `bfq_late_stable_merging`, ms: how long a scheduled merge waits.
const LATE_STABLE_MERGING_MS: u64 = 600;

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

    /// `bfq_setup_cooperator`, the part modelled: a merge already set up
    /// is followed to its end; a scheduled stable merge is done (or
    /// dropped) once both the queue and its last split are
    /// `bfq_late_stable_merging` old.
    pub(super) fn setup_cooperator(&mut self, id: QueueId, pid: ProcessId) -> Option<QueueId> {
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
        let target = self.bic(pid).stable_merge?;
        if !sync || just_created || now_j <= split + late || now_j <= created + late {
            return None;
        }
        let proc_ref = self.queues[id].process_refs.min(self.queues[target].process_refs);
        // The scheduled merge is done or dropped here (bfq_put_stable_ref).
        self.bic(pid).stable_merge = None;
        self.put_stable_ref(target);
        if self.idling_boosts_thr_without_issues(id) || proc_ref == 0 {
            return None;
        }
        let new = self.setup_merge(id, target)?;
        self.mark_stably_merged(pid, new);
        Some(new)
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
