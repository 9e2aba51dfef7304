//! Deadline, as in Linux 2.6.20 `block/deadline-iosched.c`
//! (ELEVATORS.md 3.1).
//!
//! Per data direction (READ/WRITE, not sync/async) a sort tree and a FIFO.
//! Requests go out in ascending sector order in batches of up to
//! `fifo_batch` sequential requests; a request that does not start where
//! the last one ended ends the batch. Between batches reads are preferred,
//! but writes go after `writes_starved` read batches have passed them, and
//! an expired FIFO head jumps the sort order and starts a new batch.
//!
//! Merging: the block layer (`crate::blk`) merges bios into the queued
//! requests; deadline's part is the front-merge lookup (`front_merges`),
//! re-sorting a grown request and the FIFO rule when two requests merge.
//! Not modelled: aliases (two requests at one sector are both kept, see
//! `sortfifo`).

use super::sortfifo::{Slot, SortFifo};
use super::{Dispatch, Elevator, MergeKind, SchedContext, SchedulerInfo, Tunable, TunableValues};
use crate::request::Request;
use crate::time::SimTime;

pub const NAME: &str = "deadline";

// Defaults (2.6.20: read_expire HZ/2, write_expire 5*HZ).
const READ_EXPIRE_MS: f64 = 500.0;
const WRITE_EXPIRE_MS: f64 = 5000.0;
const WRITES_STARVED: f64 = 2.0;
const FRONT_MERGES: f64 = 1.0;
const FIFO_BATCH: f64 = 16.0;

const READ: usize = 0;
const WRITE: usize = 1;

pub struct Deadline {
    q: SortFifo,
    /// Next request in sort order; set for the direction last dispatched
    /// only ("read, write or both are NULL").
    next_rq: [Option<Slot>; 2],
    /// Requests dispatched in this batch (wrapping, as C's unsigned int).
    batching: u32,
    /// Where the last dispatched request ended (the head position).
    last_sector: u64,
    /// Times reads were chosen while writes waited.
    starved: u32,
    fifo_expire_ns: [u64; 2],
    fifo_batch: u32,
    writes_starved: u32,
    front_merges: bool,
}

impl Deadline {
    pub fn new(v: &TunableValues) -> Deadline {
        Deadline {
            q: SortFifo::default(),
            next_rq: [None; 2],
            batching: 0,
            last_sector: 0,
            starved: 0,
            fifo_expire_ns: [v.ms_as_ns("read_expire"), v.ms_as_ns("write_expire")],
            fifo_batch: v.get("fifo_batch") as u32,
            writes_starved: v.get("writes_starved") as u32,
            front_merges: v.get("front_merges") != 0.0,
        }
    }

    /// deadline_check_fifo: the oldest request of `dir` has expired
    /// (`time_after(jiffies, fifo_time)`). The caller knows `dir` is busy.
    fn check_fifo(&self, dir: usize, now: SimTime) -> bool {
        self.q.fifo_first(dir).is_some_and(|s| now > self.q.fifo_time(s))
    }

    /// deadline_move_request: only the dispatched direction keeps a next
    /// request, its sort successor; the head moves to the request's end.
    fn move_request(&mut self, slot: Slot) -> Request {
        let dir = self.q.rq(slot).dir.index();
        self.next_rq = [None; 2];
        self.next_rq[dir] = self.q.sort_next(slot);
        let rq = self.q.remove(slot);
        self.last_sector = rq.end_sector();
        rq
    }

    /// The direction to serve when no batch is running: reads, unless
    /// writes are waiting and reads have already starved them
    /// `writes_starved` times (the post-increment is Linux's).
    fn choose_dir(&mut self) -> Option<usize> {
        let reads = !self.q.fifo_empty(READ);
        let writes = !self.q.fifo_empty(WRITE);
        if reads && !(writes && self.bump_starved()) {
            return Some(READ);
        }
        if writes {
            self.starved = 0;
            return Some(WRITE);
        }
        None
    }

    fn bump_starved(&mut self) -> bool {
        let before = self.starved;
        self.starved = self.starved.wrapping_add(1);
        before >= self.writes_starved
    }
}

impl Elevator for Deadline {
    fn name(&self) -> &'static str {
        NAME
    }

    /// deadline_add_request: into the tree and at the FIFO tail with its
    /// expiry. `next_rq` is not touched (2.6.20 updates it on removal only).
    fn insert(&mut self, rq: Request, now: SimTime) {
        let dir = rq.dir.index();
        self.q.add(dir, rq, now + self.fifo_expire_ns[dir]);
    }

    /// deadline_dispatch_requests.
    fn dispatch(&mut self, now: SimTime) -> Dispatch {
        // Continue the batch: writes first ("batches are reads XOR writes").
        if let Some(slot) = self.next_rq[WRITE].or(self.next_rq[READ]) {
            if self.last_sector != self.q.rq(slot).sector {
                // A non-sequential request ends the batch.
                self.batching = self.batching.wrapping_add(self.fifo_batch);
            }
            if self.batching < self.fifo_batch {
                self.batching += 1;
                return Dispatch::Request(self.move_request(slot));
            }
        }
        let Some(dir) = self.choose_dir() else {
            return Dispatch::Nothing;
        };
        let slot = if self.check_fifo(dir, now) {
            // An expired request exists: serve it and start a new batch.
            self.batching = 0;
            self.q.fifo_first(dir)
        } else if let Some(next) = self.next_rq[dir] {
            Some(next)
        } else {
            // Other direction last, or past the highest sector: back to
            // the lowest (one-way elevator) and a new batch.
            self.batching = 0;
            self.q.sort_first(dir)
        };
        let slot = slot.expect("a chosen direction has requests");
        self.batching = self.batching.wrapping_add(1);
        Dispatch::Request(self.move_request(slot))
    }

    fn queued(&self) -> usize {
        self.q.len()
    }

    fn merges(&self) -> bool {
        true
    }

    /// deadline_merge: with `front_merges` on, the request of the bio's
    /// data direction that starts where the bio ends.
    fn front_merge_candidate(&self, bio: &Request) -> Option<Request> {
        if !self.front_merges {
            return None;
        }
        self.q.find(bio.dir.index(), bio.end_sector()).map(|s| *self.q.rq(s))
    }

    /// elv_rb_former_request / elv_rb_latter_request.
    fn former_request(&self, rq: &Request) -> Option<Request> {
        let slot = self.q.slot_of(rq.dir.index(), rq)?;
        self.q.sort_prev(slot).map(|s| *self.q.rq(s))
    }
    fn latter_request(&self, rq: &Request) -> Option<Request> {
        let slot = self.q.slot_of(rq.dir.index(), rq)?;
        self.q.sort_next(slot).map(|s| *self.q.rq(s))
    }

    /// deadline_merged_request: the grown request (re-sorted if it grew at
    /// its front).
    fn merged(&mut self, old: &Request, new: &Request, _kind: MergeKind) {
        if let Some(slot) = self.q.slot_of(old.dir.index(), old) {
            self.q.update(slot, *new);
        }
    }

    /// deadline_merged_requests: `rq` takes `next`'s FIFO place and expiry
    /// if `next` expires first; `next` goes (deadline_remove_request,
    /// moving `next_rq` on if it pointed there).
    fn merged_requests(&mut self, rq: &Request, merged: &Request, next: &Request, _now: SimTime) {
        let dir = rq.dir.index();
        let (Some(r), Some(n)) = (self.q.slot_of(dir, rq), self.q.slot_of(dir, next)) else {
            debug_assert!(false, "merged requests must be queued");
            return;
        };
        if self.q.fifo_time(n) < self.q.fifo_time(r) {
            self.q.take_fifo_place(r, n);
        }
        if self.next_rq[dir] == Some(n) {
            self.next_rq[dir] = self.q.sort_next(n);
        }
        self.q.remove(n);
        self.q.update(r, *merged);
    }
}

/// Tunables, as `/sys/block/<dev>/queue/iosched/` shows them in 2.6.20.
static TUNABLES: [Tunable; 5] = [
    Tunable::ms(
        "read_expire",
        READ_EXPIRE_MS,
        "a read is served once it is this old (2.6.20: HZ/2)",
    ),
    Tunable::ms(
        "write_expire",
        WRITE_EXPIRE_MS,
        "a write is served once it is this old (2.6.20: 5*HZ)",
    ),
    Tunable {
        name: "writes_starved",
        unit: "batches",
        // Linux accepts negative values, which the unsigned comparison
        // turns into "never"; the simulator asks for 0 or more instead.
        min: 0.0,
        max: i32::MAX as f64,
        default: WRITES_STARVED,
        help: "read batches allowed to pass waiting writes",
    },
    Tunable {
        name: "front_merges",
        unit: "bool",
        min: 0.0,
        max: 1.0,
        default: FRONT_MERGES,
        help: "look for a front merge in the sort tree (deadline_merge)",
    },
    Tunable {
        name: "fifo_batch",
        unit: "requests",
        min: 0.0,
        max: i32::MAX as f64,
        default: FIFO_BATCH,
        help: "sequential requests dispatched as one batch",
    },
];

pub const INFO: SchedulerInfo = SchedulerInfo {
    name: NAME,
    aliases: &["deadline-2.6.20"],
    summary: "Linux 2.6.20 deadline: sector-sorted batches with read/write FIFO expiry",
    tunables: &TUNABLES,
    build,
    accept: None,
};

fn build(v: &TunableValues, _: &SchedContext) -> Box<dyn Elevator> {
    Box::new(Deadline::new(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::resolve_tunables;
    use crate::sched::testutil::{ms, read, take, write, LEN};
    use std::collections::BTreeMap;

    fn deadline(given: &[(&str, f64)]) -> Deadline {
        let given: BTreeMap<String, f64> = given.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Deadline::new(&resolve_tunables(&INFO, &given, "test").unwrap())
    }

    #[test]
    fn defaults_are_2_6_20s() {
        let d = deadline(&[]);
        assert_eq!(d.fifo_expire_ns, [ms(500).ns(), ms(5000).ns()]);
        assert_eq!((d.fifo_batch, d.writes_starved), (16, 2));
    }

    #[test]
    fn serves_ascending_sectors_within_a_batch() {
        let mut d = deadline(&[]);
        for (id, s) in [(0, 500), (1, 100), (2, 300)] {
            d.insert(read(id, 0, s), ms(0));
        }
        // First pick is the lowest sector (no next request yet).
        assert_eq!([take(&mut d, ms(1)), take(&mut d, ms(1)), take(&mut d, ms(1))], [1, 2, 0]);
        assert_eq!(d.dispatch(ms(1)), Dispatch::Nothing);
    }

    #[test]
    fn a_batch_is_fifo_batch_sequential_requests_then_the_direction_is_chosen_again() {
        let mut d = deadline(&[("fifo_batch", 3.0)]);
        for i in 0..5 {
            d.insert(read(i, 0, 1000 + i as u64 * LEN as u64), ms(0));
        }
        d.insert(write(9, 1, 10), ms(0));
        // Choice 1 (starved 0 < 2): reads; three sequential reads batch.
        let batch: Vec<_> = (0..3).map(|_| take(&mut d, ms(1))).collect();
        assert_eq!((batch, d.starved, d.batching), (vec![0, 1, 2], 1, 3));
        // The batch is full: choice 2 (starved 1 < 2) goes on at next_rq.
        assert_eq!(take(&mut d, ms(1)), 3);
        assert_eq!(d.starved, 2);
        // Choice 3: reads have starved the write twice: the write goes.
        assert_eq!(take(&mut d, ms(1)), 9);
        assert_eq!(d.starved, 0);
    }

    #[test]
    fn a_non_sequential_request_ends_the_batch() {
        let mut d = deadline(&[]);
        d.insert(read(0, 0, 100), ms(0));
        d.insert(read(1, 0, 5000), ms(0)); // not at 100+8
        d.insert(write(2, 1, 50), ms(0));
        assert_eq!(take(&mut d, ms(1)), 0);
        assert_eq!(d.batching, 1);
        // next_rq[READ] is 5000 but does not follow 108: the batch ends,
        // and the direction choice (starved 1 < 2: reads) runs again.
        assert_eq!(take(&mut d, ms(1)), 1);
        assert_eq!(d.starved, 2);
        assert!(d.batching > d.fifo_batch);
    }

    #[test]
    fn writes_go_after_writes_starved_read_batches() {
        let mut d = deadline(&[("fifo_batch", 1.0)]);
        for i in 0..4 {
            d.insert(read(i, 0, 1000 * (i as u64 + 1)), ms(0));
        }
        d.insert(write(10, 1, 10), ms(0));
        d.insert(write(11, 1, 18), ms(0));
        // starved: 0 -> read, 1 -> read, 2 >= 2 -> writes.
        assert_eq!([take(&mut d, ms(1)), take(&mut d, ms(1))], [0, 1]);
        assert_eq!(take(&mut d, ms(1)), 10);
        assert_eq!(d.starved, 0);
        // fifo_batch 1: the write batch is over, reads again.
        assert_eq!(take(&mut d, ms(1)), 2);
    }

    #[test]
    fn an_expired_fifo_head_is_served_and_resets_batching() {
        let mut d = deadline(&[("fifo_batch", 1.0)]);
        d.insert(read(0, 0, 9000), ms(0)); // oldest, highest
        d.insert(read(1, 0, 100), ms(10));
        d.insert(read(2, 0, 108), ms(10));
        // Read 1 has the lowest sector. Read 2 follows it, but the batch
        // (1 request) is full. At 501 ms read 0 has expired (500 ms): it
        // goes first, and the batch resets.
        assert_eq!(take(&mut d, ms(20)), 1);
        assert_eq!(take(&mut d, ms(501)), 0);
        assert_eq!(d.batching, 1);
        assert_eq!(take(&mut d, ms(502)), 2);
    }

    #[test]
    fn expiry_is_strictly_after_the_deadline() {
        let mut d = deadline(&[("read_expire", 10.0)]);
        d.insert(read(0, 0, 9000), ms(0));
        d.insert(read(1, 0, 100), ms(0));
        assert!(!d.check_fifo(READ, ms(10)));
        assert!(d.check_fifo(READ, SimTime(ms(10).ns() + 1)));
    }
}
