//! The block layer's dispatch list as 2.6.20 keeps it (`q->queue_head`,
//! elevator.c): CFQ moves a whole round of requests onto it with
//! `elv_dispatch_sort`, and the driver takes them from the front one at a
//! time (`elv_next_request`) before the scheduler is asked again.

use crate::request::Request;
use std::collections::VecDeque;

#[derive(Debug, Default)]
pub(super) struct DispatchList {
    rqs: VecDeque<Request>,
    /// `q->end_sector`: the end of the request the driver took last, the
    /// boundary of the one-way sort.
    end_sector: u64,
}

impl DispatchList {
    pub fn len(&self) -> usize {
        self.rqs.len()
    }

    /// The last request on the list (`q->queue_head.prev`).
    pub fn back(&self) -> Option<&Request> {
        self.rqs.back()
    }

    /// `elv_dispatch_sort` of 2.6.20 (block/elevator.c): walk from the
    /// tail towards the head and link `rq` after the first request it may
    /// follow. Requests at or beyond the boundary come first, in ascending
    /// order, then those below it, ascending. The walk stops early only at
    /// a barrier or a started request, which this list never holds (the
    /// driver takes a request off as it starts it); in 2.6.20 it does not
    /// stop at a request of the other data direction (that stop came in
    /// later kernels), so a read may pass a write and the other way round.
    pub fn sort_insert(&mut self, rq: Request) {
        let boundary = self.end_sector;
        let mut at = 0; // link at the head if the walk runs out
        for i in (0..self.rqs.len()).rev() {
            let pos = &self.rqs[i];
            if rq.sector >= boundary {
                if pos.sector < boundary {
                    continue;
                }
            } else if pos.sector >= boundary {
                at = i + 1;
                break;
            }
            if rq.sector >= pos.sector {
                at = i + 1;
                break;
            }
        }
        self.rqs.insert(at, rq);
    }

    /// `elv_next_request` for a driver that starts and dequeues the head
    /// at once: take it and move the boundary to its end.
    pub fn pop_front(&mut self) -> Option<Request> {
        let rq = self.rqs.pop_front()?;
        self.end_sector = rq.end_sector();
        Some(rq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Dir;
    use crate::time::SimTime;

    fn rq(id: u32, sector: u64, dir: Dir) -> Request {
        Request { id, pid: 0, sector, nr_sectors: 8, dir, sync: true, arrival: SimTime::ZERO }
    }

    fn sectors(l: &DispatchList) -> Vec<u64> {
        l.rqs.iter().map(|r| r.sector).collect()
    }

    #[test]
    fn sorts_one_way_from_the_boundary() {
        let mut l = DispatchList::default();
        l.rqs.push_back(rq(0, 992, Dir::Read));
        assert_eq!(l.pop_front().unwrap().sector, 992); // boundary 1000
        for (i, s) in [5_000u64, 200, 3_000, 100, 1_000].into_iter().enumerate() {
            l.sort_insert(rq(i as u32, s, Dir::Read));
        }
        assert_eq!(sectors(&l), vec![1_000, 3_000, 5_000, 100, 200]);
        assert_eq!(l.back().unwrap().sector, 200);
    }

    /// Issue 9: 2.6.20 sorts reads and writes together.
    #[test]
    fn passes_the_other_direction_as_2_6_20_does() {
        let mut l = DispatchList::default();
        l.sort_insert(rq(0, 500, Dir::Write));
        l.sort_insert(rq(1, 100, Dir::Read));
        l.sort_insert(rq(2, 50, Dir::Read));
        assert_eq!(sectors(&l), vec![50, 100, 500]);
        l.sort_insert(rq(3, 70, Dir::Write));
        assert_eq!(sectors(&l), vec![50, 70, 100, 500]);
        assert_eq!(l.len(), 4);
    }
}
