//! `none`: Linux 6.1's block layer without an elevator.
//!
//! With no elevator, `blk_mq_submit_bio` gives the request a driver tag
//! (there are `queue_depth` of them: `blk_mq_init_sched` sets
//! `nr_requests = queue_depth` when `e` is NULL) and issues it straight to
//! the driver (`blk_mq_try_issue_directly`); if the driver is busy it goes
//! to the tail of the hardware queue's dispatch list
//! (`blk_mq_request_bypass_insert`) or, while the queue is marked busy,
//! into the software queue (`blk_mq_sched_insert_request` →
//! `blk_mq_insert_requests`), both first in, first out. A submitter that
//! finds no tag sleeps until one is freed. So `none` is a FIFO of at most
//! `queue_depth` requests, and the submitters beyond it wait in line.
//!
//! Plugging (a task's batch of requests, flushed in submission order since
//! 5.16 — `blk_mq_flush_plug_list` no longer sorts) and merging belong to
//! the block layer's blk-mq path (`crate::blk::mq`); a request of `none`
//! merges only in its task's plug: it holds a driver tag from its
//! allocation and goes to the driver at once, so the software queue that
//! `blk_bio_list_merge` would search stays empty.

use super::mq::{BlkMq, MqSched};
use super::{Dispatch, Elevator, SchedContext, SchedulerInfo, TunableValues};
use crate::request::Request;
use crate::time::SimTime;
use std::collections::VecDeque;

pub const NAME: &str = "none";

pub const INFO: SchedulerInfo = SchedulerInfo {
    name: NAME,
    aliases: &["blk-mq-none"],
    summary: "Linux 6.1 without an elevator: FIFO of queue_depth driver tags, submitters wait for a tag",
    tunables: &[],
    build,
    accept: None,
};

fn build(_: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    Box::new(BlkMq::new(NoElevator::default(), ctx.queue_depth))
}

/// The hardware queue's dispatch list: FIFO.
#[derive(Default)]
pub struct NoElevator {
    fifo: VecDeque<Request>,
}

impl Elevator for NoElevator {
    fn name(&self) -> &'static str {
        NAME
    }
    fn insert(&mut self, rq: Request, _now: SimTime) {
        self.fifo.push_back(rq);
    }
    fn dispatch(&mut self, _now: SimTime) -> Dispatch {
        self.fifo.pop_front().map_or(Dispatch::Nothing, Dispatch::Request)
    }
    fn queued(&self) -> usize {
        self.fifo.len()
    }
}

impl MqSched for NoElevator {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::mq::MqRun;
    use crate::sched::testutil::{ctx, ms, read, write};

    #[test]
    fn fifo_behind_queue_depth_tags() {
        let mut c = ctx();
        c.queue_depth = 2;
        let mut e = build(&TunableValues::default(), &c);
        let m = e.as_mq().expect("a blk-mq elevator");
        m.set_driver(2, false);
        // queue_depth driver tags and no more: the third submitter sleeps.
        let reqs = [read(0, 0, 900), read(1, 1, 100), read(2, 2, 500), write(3, 3, 50)];
        assert!(m.get_tag(&reqs[0]).is_some() && m.get_tag(&reqs[1]).is_some());
        assert_eq!(m.get_tag(&reqs[2]), None);
        for rq in &reqs[..2] {
            m.insert_prepared(*rq, ms(0));
        }
        m.run_hw_queue(true);
        let mut run = MqRun::default();
        m.run(ms(0), &mut run);
        let ids: Vec<_> = run.to_driver.iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![0, 1], "arrival order, not sector order");
        assert_eq!(e.queued(), 0, "nothing waits in the elevator: requests go straight to the driver");
    }
}
