//! Injection: while BFQ idles for the in-service queue, it may dispatch
//! requests of other queues, as long as that does not delay the awaited
//! queue's service (`bfq_select_queue`'s idling branch,
//! `bfq_choose_bfqq_for_injection`). The number of requests it lets into
//! the device meanwhile (`inject_limit`) is learned from the service time
//! of the awaited queue's requests with and without injection
//! (`bfq_update_inject_limit`, `bfq_reset_inject_limit`). Queues whose
//! I/O is repeatedly started by another queue's completions learn their
//! *waker* (`bfq_check_waker`), whose requests are injected first.

use super::queue::QueueId;
use super::{Bfq, SECT_THR_NONROT};

impl Bfq {
    /// `bfq_reset_inject_limit`: invalidate the baseline service time;
    /// the limit restarts at 0 (short think time) or 1.
    pub(super) fn reset_inject_limit(&mut self, id: QueueId) {
        let now_j = self.jif();
        self.waited_rq = None;
        let q = &mut self.queues[id];
        q.last_serv_time_ns = 0;
        q.inject_limit = if q.has_short_ttime { 0 } else { 1 };
        q.decrease_time_jif = now_j;
    }

    /// `bfq_check_waker`: a sync queue whose request arrives within 4 ms
    /// of another queue's completion, three times in a row within
    /// 128·slice_idle, has that queue as its waker.
    pub(super) fn check_waker(&mut self, id: QueueId, now_ns: i64) {
        let Some(last) = self.last_completed_rq_bfqq else { return };
        if last == id || self.queues[id].has_short_ttime || now_ns - self.last_completion >= 4_000_000 {
            return;
        }
        let window = 128 * self.p.slice_idle_ns as i64;
        let q = &mut self.queues[id];
        if q.tentative_waker != Some(last) || now_ns > q.waker_detection_started + window {
            q.tentative_waker = Some(last);
            q.num_waker_detections = 1;
            q.waker_detection_started = now_ns;
        } else {
            q.num_waker_detections += 1;
        }
        if q.num_waker_detections == 3 {
            let old = q.waker.replace(last);
            q.tentative_waker = None;
            if let Some(o) = old {
                self.queues[o].woken.retain(|&x| x != id);
            }
            self.queues[last].woken.retain(|&x| x != id);
            self.queues[last].woken.insert(0, id);
        }
    }

    /// `bfq_update_inject_limit`, on the completion of the request whose
    /// service time is being measured.
    pub(super) fn update_inject_limit(&mut self, id: QueueId, _now: crate::time::SimTime) {
        let now_ns = self.ns();
        let now_j = self.jif();
        let tot_time_ns = (now_ns - self.last_empty_occupied_ns).max(0) as u64;
        let max_in_driver = self.max_rq_in_driver;
        let (injected, in_driver) = (self.rqs_injected, self.rq_in_driver);
        let q = &mut self.queues[id];
        let old_limit = q.inject_limit;
        if q.last_serv_time_ns > 0 && injected {
            let threshold = (q.last_serv_time_ns * 3) >> 1;
            if tot_time_ns >= threshold && old_limit > 0 {
                q.inject_limit -= 1;
                q.decrease_time_jif = now_j;
            } else if tot_time_ns < threshold && old_limit <= max_in_driver {
                q.inject_limit += 1;
            }
        }
        if (q.last_serv_time_ns == 0 && in_driver == 1) || tot_time_ns < q.last_serv_time_ns {
            if q.last_serv_time_ns == 0 {
                q.inject_limit = old_limit.max(1);
            }
            q.last_serv_time_ns = tot_time_ns;
        } else if !injected && in_driver == 1 {
            q.last_serv_time_ns = tot_time_ns;
        }
        self.waited_rq = None;
        self.rqs_injected = false;
    }

    /// Whether queue `other` has a next request that fits its budget.
    fn has_fitting_request(&self, other: QueueId) -> bool {
        let q = &self.queues[other];
        if !q.busy || q.freed {
            return false;
        }
        match self.next_request(other) {
            Some(rq) => self.serv_to_charge(other, &rq) <= q.budget_left(),
            None => false,
        }
    }

    /// The idling branch of `bfq_select_queue` for in-service queue `id`:
    /// the same process's async queue, then its waker, then the queue it
    /// woke most recently, then (if idling is for guarantees, not
    /// throughput) any queue within the injection limit; else nothing.
    pub(super) fn choose_while_idling(&mut self, id: QueueId) -> Option<QueueId> {
        let owner = self.queues[id].owner;
        let async_q = owner
            .and_then(|pid| self.bics.get(pid as usize))
            .filter(|_| self.queues[id].bic_set)
            .and_then(|b| b.async_q);
        // The async queue's next request must be this process's own.
        if let Some(a) = async_q {
            let own = self.next_request(a).is_some_and(|rq| Some(rq.pid) == owner);
            if own && self.has_fitting_request(a) {
                return Some(a);
            }
        }
        if let Some(w) = self.queues[id].waker {
            if self.has_fitting_request(w) {
                return Some(w);
            }
        }
        if let Some(&b) = self.queues[id].woken.first() {
            if self.has_fitting_request(b) {
                return Some(b);
            }
        }
        let q = &self.queues[id];
        if !self.idling_boosts_thr_without_issues(id)
            && (q.wr_coeff == 1 || self.wr_busy_queues > 1 || !q.has_short_ttime)
        {
            return self.choose_bfqq_for_injection();
        }
        None
    }

    /// `bfq_choose_bfqq_for_injection`: the most recently activated queue
    /// with a request that fits its budget, while fewer than
    /// `inject_limit` requests are in the device (one, on a
    /// non-rotational device, for a large request).
    fn choose_bfqq_for_injection(&mut self) -> Option<QueueId> {
        let now_j = self.jif();
        let in_serv = self.in_service?;
        let s = &self.queues[in_serv];
        let mut limit = s.inject_limit;
        let always_inject = s.wr_coeff == 1 || !s.has_short_ttime;
        // No baseline yet: allow one request, once the wait has lasted
        // slice_idle (in jiffies, as the kernel compares it).
        if limit == 0
            && s.last_serv_time_ns == 0
            && s.wait_request
            && now_j >= self.last_idling_start_jiffies + self.p.slice_idle_ns as i64
        {
            limit = 1;
        }
        if self.rq_in_driver >= limit {
            return None;
        }
        let candidates = self.active_list.clone();
        for b in candidates {
            let q = &self.queues[b];
            let Some(rq) = self.next_request(b) else { continue };
            if (always_inject || q.wr_coeff > 1) && self.serv_to_charge(b, &rq) <= q.budget_left() {
                limit = if self.nonrot && rq.nr_sectors >= SECT_THR_NONROT {
                    limit.min(1)
                } else {
                    self.queues[in_serv].inject_limit
                };
                if self.rq_in_driver < limit {
                    self.rqs_injected = true;
                    return Some(b);
                }
            }
        }
        None
    }
}
