//! NOOP: a FIFO with no reordering (Linux 2.6 `noop-iosched.c`; Linux
//! 6.1's no-elevator path is `none`, see `none.rs`).
//! The reference scheduler, kept as simple as fio's `null` engine.

use super::{Dispatch, Elevator, MergeKind, SchedContext, SchedulerInfo, TunableValues};
use crate::request::Request;
use crate::time::SimTime;
use std::collections::VecDeque;

pub const NAME: &str = "noop";

pub const INFO: SchedulerInfo = SchedulerInfo {
    name: NAME,
    aliases: &["fifo"],
    summary: "first come, first served; no reordering (merges through the block layer)",
    tunables: &[],
    build,
    accept: None,
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

    /// Noop takes merges but has no front-merge lookup of its own: bios
    /// join requests through the block layer's hash and `last_merge`.
    fn merges(&self) -> bool {
        true
    }

    /// noop_former_request / noop_latter_request: neighbours in the FIFO.
    fn former_request(&self, rq: &Request) -> Option<Request> {
        let i = self.position(rq)?;
        i.checked_sub(1).map(|j| self.fifo[j])
    }
    fn latter_request(&self, rq: &Request) -> Option<Request> {
        let i = self.position(rq)?;
        self.fifo.get(i + 1).copied()
    }

    fn merged(&mut self, old: &Request, new: &Request, _kind: MergeKind) {
        if let Some(i) = self.position(old) {
            self.fifo[i] = *new;
        }
    }

    /// noop_merged_requests: `next` leaves the FIFO.
    fn merged_requests(&mut self, rq: &Request, merged: &Request, next: &Request, _now: SimTime) {
        if let Some(j) = self.position(next) {
            self.fifo.remove(j);
        }
        if let Some(i) = self.position(rq) {
            self.fifo[i] = *merged;
        }
    }
}

impl Noop {
    fn position(&self, rq: &Request) -> Option<usize> {
        self.fifo.iter().position(|r| r.id == rq.id)
    }
}
