//! NOOP: a FIFO with no reordering (Linux 2.6 `noop-iosched.c`; Linux
//! 6.1's no-elevator path is `none`, see `none.rs`).
//! The reference scheduler, kept as simple as fio's `null` engine.

use super::{Dispatch, Elevator, SchedContext, SchedulerInfo, TunableValues};
use crate::request::Request;
use crate::time::SimTime;
use std::collections::VecDeque;

pub const NAME: &str = "noop";

pub const INFO: SchedulerInfo = SchedulerInfo {
    name: NAME,
    aliases: &["fifo"],
    summary: "first come, first served; no reordering, no merging",
    tunables: &[],
    build,
};

fn build(_: &TunableValues, _: &SchedContext) -> Box<dyn Elevator> {
    Box::new(Noop { fifo: VecDeque::new() })
}

pub struct Noop {
    fifo: VecDeque<Request>,
}

impl Elevator for Noop {
    fn name(&self) -> &'static str {
        NAME
    }
    fn insert(&mut self, rq: Request, _now: SimTime) {
        self.fifo.push_back(rq);
    }
    fn dispatch(&mut self, _now: SimTime) -> Dispatch {
        match self.fifo.pop_front() {
            Some(rq) => Dispatch::Request(rq),
            None => Dispatch::Nothing,
        }
    }
    fn queued(&self) -> usize {
        self.fifo.len()
    }
}
