//! The round-robin lists of CFQ 2.6.20: `rr_list[prio]`, `busy_rr` and
//! `cur_rr`, with `cfq_resort_rr_list`, `cfq_add_cfqq_rr`,
//! `cfq_del_cfqq_rr`, `cfq_get_next_prio_level` and the choice half of
//! `cfq_set_active_queue`. Only the best-effort class is modelled, so
//! `idle_rr` and the RT placement on `cur_rr` are left out.
//!
//! Lists hold queue ids; they are as long as the number of busy queues,
//! so the linear scans here are over a handful of entries.

use super::queue::{CfqQueue, QueueId, RrList, PRIO_LEVELS};
use std::collections::VecDeque;

#[derive(Debug, Default)]
pub(super) struct RoundRobin {
    prio: [VecDeque<QueueId>; PRIO_LEVELS],
    busy: VecDeque<QueueId>,
    cur: VecDeque<QueueId>,
    cur_prio: usize,
    cur_end_prio: usize,
    /// `busy_queues`: queues with requests in their sort tree.
    pub busy_queues: u32,
}

impl RoundRobin {
    fn list_mut(&mut self, which: RrList) -> Option<&mut VecDeque<QueueId>> {
        match which {
            RrList::Off => None,
            RrList::Prio(p) => Some(&mut self.prio[p as usize]),
            RrList::Busy => Some(&mut self.busy),
            RrList::Cur => Some(&mut self.cur),
        }
    }

    fn unlink(&mut self, queues: &mut [CfqQueue], id: QueueId) {
        let which = queues[id].list;
        if let Some(list) = self.list_mut(which) {
            let at = list.iter().position(|&q| q == id).expect("queue not on its list");
            list.remove(at);
        }
        queues[id].list = RrList::Off;
    }

    /// `cfq_resort_rr_list(cfqq, 0)`: a queue with requests in flight goes
    /// to `busy_rr`, so it is not picked again before they finish; any
    /// other to `rr_list[prio]`. It goes to the tail, except a queue never
    /// served yet (`queue_new`): 2.6.20 walks past the leading new queues
    /// and then links it *before* the last of them (its comment says
    /// behind; the code does `list_add_tail` on that node). With no new
    /// queue at the head, that is the tail.
    pub fn resort(&mut self, queues: &mut [CfqQueue], id: QueueId) {
        debug_assert!(queues[id].on_rr);
        self.unlink(queues, id);
        let target = if queues[id].dispatched() > 0 { RrList::Busy } else { RrList::Prio(queues[id].ioprio) };
        let is_new = queues[id].queue_new;
        let list = self.list_mut(target).expect("a real list");
        let at = if is_new {
            match list.iter().take_while(|&&q| queues[q].queue_new).count() {
                0 => list.len(),
                k => k - 1,
            }
        } else {
            list.len()
        };
        list.insert(at, id);
        queues[id].list = target;
    }

    /// `cfq_add_cfqq_rr`.
    pub fn add(&mut self, queues: &mut [CfqQueue], id: QueueId) {
        debug_assert!(!queues[id].on_rr);
        queues[id].on_rr = true;
        self.busy_queues += 1;
        self.resort(queues, id);
    }

    /// `cfq_del_cfqq_rr`.
    pub fn del(&mut self, queues: &mut [CfqQueue], id: QueueId) {
        debug_assert!(queues[id].on_rr);
        queues[id].on_rr = false;
        self.unlink(queues, id);
        self.busy_queues -= 1;
    }

    /// `cfq_get_next_prio_level`: scan `cur_prio..=cur_end_prio`, widening
    /// the window one level per empty scan (0; 0,1; 0,1,2; …), so that
    /// higher priorities get more turns; splice the first non-empty level
    /// onto `cur_rr`. Gives up after wrapping twice.
    fn next_prio_level(&mut self, queues: &mut [CfqQueue]) -> Option<usize> {
        let mut wrapped = false;
        let prio = loop {
            if let Some(p) = (self.cur_prio..=self.cur_end_prio).find(|&p| !self.prio[p].is_empty()) {
                break p;
            }
            self.cur_prio = 0;
            self.cur_end_prio += 1;
            if self.cur_end_prio == PRIO_LEVELS {
                self.cur_end_prio = 0;
                if wrapped {
                    return None;
                }
                wrapped = true;
            }
        };
        debug_assert!(self.cur.is_empty());
        self.cur = std::mem::take(&mut self.prio[prio]);
        for &q in &self.cur {
            queues[q].list = RrList::Cur;
        }
        self.cur_prio = prio + 1;
        if self.cur_prio > self.cur_end_prio {
            self.cur_end_prio = self.cur_prio;
            self.cur_prio = 0;
        }
        if self.cur_end_prio == PRIO_LEVELS {
            self.cur_prio = 0;
            self.cur_end_prio = 0;
        }
        Some(prio)
    }

    /// The choice in `cfq_set_active_queue`: the head of `cur_rr`
    /// (refilled from the next priority level when empty), else the head
    /// of `busy_rr`. The chosen queue stays linked where it is.
    pub fn pick(&mut self, queues: &mut [CfqQueue]) -> Option<QueueId> {
        if !self.cur.is_empty() || self.next_prio_level(queues).is_some() {
            return self.cur.front().copied();
        }
        self.busy.front().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(prios: &[u8]) -> Vec<CfqQueue> {
        prios.iter().enumerate().map(|(i, &p)| CfqQueue::new(Some(i as u32), p)).collect()
    }

    /// Serve like `cfq_set_active_queue` + `cfq_slice_expired` would: pick,
    /// then resort the picked queue (no longer new) and return its id.
    fn serve(rr: &mut RoundRobin, qs: &mut [CfqQueue]) -> QueueId {
        let id = rr.pick(qs).unwrap();
        qs[id].queue_new = false;
        rr.resort(qs, id);
        id
    }

    #[test]
    fn same_priority_queues_take_turns() {
        let mut qs = queues(&[4, 4, 4]);
        let mut rr = RoundRobin::default();
        for id in 0..3 {
            qs[id].queue_new = false;
            rr.add(&mut qs, id);
        }
        assert_eq!(rr.busy_queues, 3);
        let order: Vec<_> = (0..6).map(|_| serve(&mut rr, &mut qs)).collect();
        assert_eq!(order, vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn new_queues_are_linked_before_the_last_leading_new_one() {
        let mut qs = queues(&[4, 4, 4, 4]);
        let mut rr = RoundRobin::default();
        qs[0].queue_new = false;
        rr.add(&mut qs, 0); // [0]
        rr.add(&mut qs, 1); // no new queue at the head: tail → [0, 1]
        assert_eq!(rr.prio[4], [0, 1]);
        let mut qs2 = queues(&[4, 4, 4]);
        let mut rr2 = RoundRobin::default();
        rr2.add(&mut qs2, 0); // [0]
        rr2.add(&mut qs2, 1); // before 0 → [1, 0]
        rr2.add(&mut qs2, 2); // before the last leading new (0) → [1, 2, 0]
        assert_eq!(rr2.prio[4], [1, 2, 0]);
    }

    #[test]
    fn queues_with_requests_in_flight_wait_on_busy_rr() {
        let mut qs = queues(&[4, 4]);
        let mut rr = RoundRobin::default();
        qs[0].on_dispatch[1] = 1;
        qs[0].queue_new = false;
        qs[1].queue_new = false;
        rr.add(&mut qs, 0);
        rr.add(&mut qs, 1);
        assert_eq!(qs[0].list, RrList::Busy);
        // The prio lists go first; busy_rr only when they are empty.
        assert_eq!(rr.pick(&mut qs), Some(1));
        rr.del(&mut qs, 1);
        assert_eq!(rr.pick(&mut qs), Some(0));
        // Its requests complete: resorted onto its priority list.
        qs[0].on_dispatch[1] = 0;
        rr.resort(&mut qs, 0);
        assert_eq!(qs[0].list, RrList::Prio(4));
        rr.del(&mut qs, 0);
        assert_eq!(rr.pick(&mut qs), None);
        assert_eq!(rr.busy_queues, 0);
    }

    #[test]
    fn higher_priorities_get_more_rounds() {
        // One queue at prio 0, one at prio 7, both always busy.
        let mut qs = queues(&[0, 7]);
        let mut rr = RoundRobin::default();
        for id in 0..2 {
            qs[id].queue_new = false;
            rr.add(&mut qs, id);
        }
        let order: Vec<_> = (0..40).map(|_| serve(&mut rr, &mut qs)).collect();
        let high = order.iter().filter(|&&q| q == 0).count();
        assert!(high > 30, "prio 0 served {high} of 40: {order:?}");
        assert!(order.contains(&1), "prio 7 is not starved");
        // The widening window: 0; then 0..1 … up to 0..7, where 7 is found.
        assert_eq!(&order[..9], &[0, 0, 0, 0, 0, 0, 0, 0, 1]);
    }
}
