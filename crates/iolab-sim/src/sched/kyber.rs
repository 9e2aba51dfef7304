//! Kyber, as in Linux 6.1.192 `block/kyber-iosched.c` (ELEVATORS.md 6).
//!
//! Brief overview. Requests are sorted into scheduling domains by
//! operation (`kyber_sched_domain`: READ, WRITE, DISCARD, OTHER) and kept
//! in arrival order per domain. Each domain has a pool of tokens (an
//! sbitmap of `kyber_depth` bits: 256, 128, 64, 16); a request needs one
//! to be dispatched and gives it back when it completes, so a domain's
//! depth bounds its requests in flight. Dispatch serves the current domain
//! for up to `kyber_batch_size` requests (16, 8, 1, 1), then moves round
//! robin to the next domain that has a request and a token.
//!
//! Every completion records two latencies per domain into 8-bucket
//! histograms whose buckets are a quarter of the domain's target wide
//! (`read_lat_nsec` 2 ms, `write_lat_nsec` 10 ms): total latency (from
//! the request's allocation) and I/O latency (from its issue to the
//! device); and pulls the statistics timer to at most HZ/10 ahead
//! (`timer_reduce`). When the timer fires (`kyber_timer_fn`), a domain's
//! percentiles are computed once it has 500 samples or a second has
//! passed since its first: if any domain's p90 I/O latency is past its
//! target, the device is congested; then each domain with a p99 total
//! latency scales its depth by (p99 bucket + 1)/4 — good domains shrink
//! under congestion, bad ones grow — clamped to [1, kyber_depth].
//!
//! 6.1's Kyber enables blk-stat only for the timestamps
//! (`blk_stat_enable_accounting`: `start_time_ns` and `io_start_time_ns`);
//! its windows are its own timer and sample counts, modelled here.
//!
//! Requests wait in the software queue's list of their domain
//! (`kyber_ctx_queue.rq_list`, `kyber_insert_requests`) until a dispatch in
//! that domain finds its flushed list empty and gets a token: then the
//! whole list moves to the flushed list (`kyber_flush_busy_kcqs`) and the
//! oldest goes. A bio merges only into a request still in the software
//! queue's list (`kyber_bio_merge` → `blk_bio_list_merge`). A dispatch
//! that finds no token puts the hardware queue on the domain's token wait
//! queue; a token freed then runs the queue (`kyber_domain_wake`), as the
//! tokens' wake batch allows (`sbitmap_queue_wake_up`).
//!
//! Simplified: one CPU, so one software queue per domain (6.1 has one per
//! CPU, flushed CPU by CPU: the guest's order differs, docs/schedulers.md)
//! and the per-CPU histograms are one.

use super::anticipatory::hz::Hz;
use super::mq::sbitmap::{Sbitmap, SbitmapQueue};
use super::mq::{self, op_is_sync, BlkMq, MergeStyle, MqSched, KERNEL_HZ};
use super::{Dispatch, Elevator, MergeKind, SchedContext, SchedulerInfo, Tunable, TunableValues};
use crate::request::{Dir, Request, RequestId};
use crate::time::SimTime;
use std::collections::{HashMap, VecDeque};

pub const NAME: &str = "kyber";

/// Scheduling domains (`enum { KYBER_READ, ... }`).
pub const READ: usize = 0;
pub const WRITE: usize = 1;
pub const DISCARD: usize = 2;
pub const OTHER: usize = 3;
const NUM_DOMAINS: usize = 4;
/// Domains with latency statistics (all but OTHER).
const LAT_DOMAINS: usize = OTHER;

/// `KYBER_ASYNC_PERCENT`: async requests may use 75% of the tags.
const ASYNC_PERCENT: u32 = 75;
/// `kyber_depth`: the most tokens of each domain.
pub const KYBER_DEPTH: [u32; NUM_DOMAINS] = [256, 128, 64, 16];
/// `kyber_batch_size`.
pub const BATCH_SIZE: [u32; NUM_DOMAINS] = [16, 8, 1, 1];
/// `kyber_latency_targets` (DISCARD: 5 s, not tunable).
const DISCARD_TARGET_NS: u64 = 5_000_000_000;
/// `KYBER_LATENCY_SHIFT`: buckets are target/4 wide.
const LATENCY_SHIFT: u32 = 2;
/// `KYBER_GOOD_BUCKETS`: buckets 0..4 are within the target.
const GOOD_BUCKETS: i32 = 1 << LATENCY_SHIFT;
/// `KYBER_LATENCY_BUCKETS`.
const BUCKETS: usize = 2 << LATENCY_SHIFT;
/// `KYBER_TOTAL_LATENCY`, `KYBER_IO_LATENCY`.
const TOTAL: usize = 0;
const IO: usize = 1;
/// Samples before a percentile is taken early (`calculate_percentile`).
const MIN_SAMPLES: u32 = 500;

/// `kyber_sched_domain`.
pub fn sched_domain(rq: &Request) -> usize {
    match rq.dir {
        Dir::Read => READ,
        Dir::Write => WRITE,
    }
}

/// What Kyber keeps per request (`elv.priv[0]` is the token; the times
/// are `start_time_ns` and `io_start_time_ns`).
struct RqInfo {
    token: Option<u32>,
    start: SimTime,
    io_start: SimTime,
}

/// `struct kyber_queue_data` and `struct kyber_hctx_data` (one of each).
pub struct Kyber {
    tokens: [SbitmapQueue; NUM_DOMAINS],
    latency_buckets: [[[u32; BUCKETS]; 2]; LAT_DOMAINS],
    /// `latency_timeout`, jiffies; 0 = not started.
    latency_timeout: [u64; LAT_DOMAINS],
    domain_p99: [i32; LAT_DOMAINS],
    latency_targets: [u64; LAT_DOMAINS],
    /// The statistics timer's expiry (jiffies), if pending.
    timer: Option<u64>,
    /// `khd->rqs`: requests flushed from the software queue, per domain.
    rqs: [VecDeque<Request>; NUM_DOMAINS],
    /// `kcq->rq_list`: requests in the software queue, per domain.
    kcq: [VecDeque<Request>; NUM_DOMAINS],
    /// The hardware queue waits for a token of the domain
    /// (`khd->domain_wait` on a wait queue).
    token_wait: [bool; NUM_DOMAINS],
    /// `kyber_domain_wake` asked for a queue run.
    kick: bool,
    cur_domain: usize,
    batching: u32,
    info: HashMap<RequestId, RqInfo>,
    hz: Hz,
}

impl Kyber {
    pub fn new(v: &TunableValues) -> Kyber {
        Kyber {
            tokens: KYBER_DEPTH.map(SbitmapQueue::new),
            latency_buckets: [[[0; BUCKETS]; 2]; LAT_DOMAINS],
            latency_timeout: [0; LAT_DOMAINS],
            domain_p99: [-1; LAT_DOMAINS],
            latency_targets: [v.get("read_lat_nsec") as u64, v.get("write_lat_nsec") as u64, DISCARD_TARGET_NS],
            timer: None,
            rqs: Default::default(),
            kcq: Default::default(),
            token_wait: [false; NUM_DOMAINS],
            kick: false,
            cur_domain: 0,
            batching: 0,
            info: HashMap::new(),
            hz: Hz::new(KERNEL_HZ),
        }
    }

    /// A domain's current depth (`domain_tokens[d].sb.depth`).
    pub fn depth(&self, domain: usize) -> u32 {
        self.tokens[domain].sb.depth()
    }

    /// `add_latency_sample`.
    fn add_sample(&mut self, domain: usize, kind: usize, latency_ns: u64) {
        let bucket = if latency_ns > 0 {
            let divisor = (self.latency_targets[domain] >> LATENCY_SHIFT).max(1);
            ((latency_ns - 1) / divisor).min(BUCKETS as u64 - 1) as usize
        } else {
            0
        };
        self.latency_buckets[domain][kind][bucket] += 1;
    }

    /// `calculate_percentile`: the bucket holding the `percentile`, or -1
    /// while there are too few samples. Taking it clears the histogram.
    fn percentile(&mut self, domain: usize, kind: usize, percentile: u32, now_j: u64) -> i32 {
        let buckets = &mut self.latency_buckets[domain][kind];
        let samples: u32 = buckets.iter().sum();
        if samples == 0 {
            return -1;
        }
        // 500 samples or a second since the first, whichever comes first.
        if self.latency_timeout[domain] == 0 {
            self.latency_timeout[domain] = (now_j + KERNEL_HZ as u64).max(1);
        }
        if samples < MIN_SAMPLES && self.latency_timeout[domain] > now_j {
            return -1;
        }
        self.latency_timeout[domain] = 0;
        let mut left = (samples as u64 * percentile as u64).div_ceil(100) as u32;
        let mut bucket = 0;
        while bucket < BUCKETS - 1 {
            if buckets[bucket] >= left {
                break;
            }
            left -= buckets[bucket];
            bucket += 1;
        }
        *buckets = [0; BUCKETS];
        bucket as i32
    }

    /// `kyber_resize_domain`.
    fn resize(&mut self, domain: usize, depth: u32) {
        let depth = depth.clamp(1, KYBER_DEPTH[domain]);
        if depth != self.tokens[domain].sb.depth() {
            self.tokens[domain].resize(depth);
        }
    }

    /// `kyber_timer_fn`.
    fn timer_fn(&mut self, now_j: u64) {
        let mut bad = false;
        for d in 0..LAT_DOMAINS {
            if self.percentile(d, IO, 90, now_j) >= GOOD_BUCKETS {
                bad = true;
            }
        }
        for d in 0..LAT_DOMAINS {
            let mut p99 = self.percentile(d, TOTAL, 99, now_j);
            // A domain without enough samples now uses the p99 it had
            // when congestion is seen, once; otherwise remember it.
            if bad {
                if p99 < 0 {
                    p99 = self.domain_p99[d];
                }
                self.domain_p99[d] = -1;
            } else if p99 >= 0 {
                self.domain_p99[d] = p99;
            }
            if p99 < 0 {
                continue;
            }
            // Scale the depth by p99 / target (in quarters).
            if bad || p99 >= GOOD_BUCKETS {
                let orig = self.tokens[d].sb.depth();
                self.resize(d, (orig * (p99 as u32 + 1)) >> LATENCY_SHIFT);
            }
        }
    }

    /// `kyber_get_domain_token`: a token of the current domain; without
    /// one, the hardware queue waits on the domain's tokens (once), and
    /// tries again.
    fn get_domain_token(&mut self) -> Option<u32> {
        let d = self.cur_domain;
        let mut nr = self.tokens[d].sb.get(None);
        if nr.is_none() && !self.token_wait[d] {
            self.tokens[d].prepare_to_wait(HCTX);
            self.token_wait[d] = true;
            nr = self.tokens[d].sb.get(None);
        }
        if nr.is_some() && self.token_wait[d] {
            // A token while on the wait queue: off it.
            self.tokens[d].finish_wait(HCTX);
            self.token_wait[d] = false;
        }
        nr
    }

    /// `kyber_dispatch_cur_domain`: the current domain's oldest flushed
    /// request if a token is free; with none flushed, the software queue's
    /// list is flushed first (only once a token is had, so that requests
    /// stay mergeable until they can go).
    fn dispatch_cur_domain(&mut self, now: SimTime) -> Option<Request> {
        let d = self.cur_domain;
        if self.rqs[d].is_empty() && self.kcq[d].is_empty() {
            return None;
        }
        let token = self.get_domain_token()?;
        if self.rqs[d].is_empty() {
            // kyber_flush_busy_kcqs (one software queue).
            let kcq = std::mem::take(&mut self.kcq[d]);
            self.rqs[d].extend(kcq);
        }
        self.batching += 1;
        let rq = self.rqs[d].pop_front().expect("not empty");
        if let Some(i) = self.info.get_mut(&rq.id) {
            i.token = Some(token);
            i.io_start = now;
        }
        Some(rq)
    }
}

impl Elevator for Kyber {
    fn name(&self) -> &'static str {
        NAME
    }

    /// `kyber_insert_requests`: the tail of the software queue's list of
    /// its domain; the request was allocated now (`start_time_ns`).
    fn insert(&mut self, rq: Request, now: SimTime) {
        self.info.insert(rq.id, RqInfo { token: None, start: now, io_start: now });
        self.kcq[sched_domain(&rq)].push_back(rq);
    }

    /// `kyber_dispatch_request`.
    fn dispatch(&mut self, now: SimTime) -> Dispatch {
        if self.batching < BATCH_SIZE[self.cur_domain] {
            if let Some(rq) = self.dispatch_cur_domain(now) {
                return Dispatch::Request(rq);
            }
        }
        // A new batch, from the next domain with a request and a token
        // (back round to this one if no other has).
        self.batching = 0;
        for _ in 0..NUM_DOMAINS {
            self.cur_domain = (self.cur_domain + 1) % NUM_DOMAINS;
            if let Some(rq) = self.dispatch_cur_domain(now) {
                return Dispatch::Request(rq);
            }
        }
        Dispatch::Nothing
    }

    /// `kyber_completed_request` (samples, timer) and
    /// `kyber_finish_request` (the token goes back).
    fn completed(&mut self, rq: &Request, now: SimTime) {
        let d = sched_domain(rq);
        let Some(info) = self.info.remove(&rq.id) else { return };
        if let Some(t) = info.token {
            // rq_clear_domain_token → sbitmap_queue_clear: a wake reaches
            // the waiting hardware queue (kyber_domain_wake).
            let mut woken = Vec::new();
            self.tokens[d].clear(t, &mut woken);
            if !woken.is_empty() {
                self.tokens[d].finish_wait(HCTX);
                self.token_wait[d] = false;
                self.kick = true;
            }
        }
        if d == OTHER {
            return;
        }
        self.add_sample(d, TOTAL, now.since(info.start));
        self.add_sample(d, IO, now.since(info.io_start));
        // timer_reduce(&timer, jiffies + HZ / 10).
        let at = self.hz.jiffies(now) + KERNEL_HZ as u64 / 10;
        self.timer = Some(self.timer.map_or(at, |t| t.min(at)));
    }

    fn timer(&mut self, now: SimTime) {
        let now_j = self.hz.jiffies(now);
        if self.timer.is_some_and(|t| t <= now_j) {
            self.timer = None;
            self.timer_fn(now_j);
        }
    }

    fn armed_timer(&self) -> Option<SimTime> {
        self.timer.map(|j| SimTime(j * self.hz.jiffy_ns()))
    }

    fn queued(&self) -> usize {
        self.rqs.iter().chain(&self.kcq).map(VecDeque::len).sum()
    }

    fn merges(&self) -> bool {
        true
    }

    /// A bio merged into a request of the software queue's list.
    fn merged(&mut self, old: &Request, new: &Request, _kind: MergeKind) {
        if let Some(r) = self.kcq[sched_domain(old)].iter_mut().find(|r| r.id == old.id) {
            *r = *new;
        }
    }
}

impl MqSched for Kyber {
    /// `kyber_limit_depth`: async requests get 75% of each tag word
    /// (`kyber_depth_updated`: `(1 << shift) * 75 / 100`).
    fn limit_depth(&self, rq: &Request, tags: &Sbitmap) -> Option<u32> {
        (!op_is_sync(rq)).then(|| async_depth(tags))
    }

    /// `kyber_depth_updated`: the async depth is the tags' least shallow
    /// depth (`sbitmap_queue_min_shallow_depth`).
    fn min_shallow_depth(&self, tags: &Sbitmap) -> Option<u32> {
        Some(async_depth(tags))
    }

    fn merge_style(&self) -> MergeStyle {
        MergeStyle::List
    }

    /// `kyber_bio_merge`: the software queue's list of the bio's domain,
    /// newest first.
    fn bio_merge_list(&self, bio: &Request, out: &mut Vec<Request>) {
        out.extend(self.kcq[sched_domain(bio)].iter().rev());
    }

    fn take_kick(&mut self) -> bool {
        std::mem::take(&mut self.kick)
    }
}

/// `kqd->async_depth` = `(1 << shift) * KYBER_ASYNC_PERCENT / 100`.
fn async_depth(tags: &Sbitmap) -> u32 {
    tags.bits_per_word() * ASYNC_PERCENT / 100
}

/// The waiter on a domain's tokens: the (one) hardware queue.
const HCTX: u32 = 0;

/// `kyber_attrs`: the two latency targets, in ns.
static TUNABLES: [Tunable; 3] = [
    Tunable {
        name: "read_lat_nsec",
        unit: "ns",
        min: 1.0,
        max: 1e15,
        default: 2_000_000.0,
        help: "latency target of reads (kyber_latency_targets: 2 ms)",
    },
    Tunable {
        name: "write_lat_nsec",
        unit: "ns",
        min: 1.0,
        max: 1e15,
        default: 10_000_000.0,
        help: "latency target of writes (kyber_latency_targets: 10 ms)",
    },
    mq::NR_REQUESTS,
];

pub const INFO: SchedulerInfo = SchedulerInfo {
    name: NAME,
    aliases: &["kyber-6.1"],
    summary: "Linux 6.1 Kyber: per-domain token pools sized from read/write latency targets",
    tunables: &TUNABLES,
    build,
    accept: None,
};

fn build(v: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    let nr = mq::nr_requests(v, ctx.queue_depth);
    Box::new(BlkMq::new(Kyber::new(v), nr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::resolve_tunables;
    use crate::sched::testutil::{ms, read, take, write};
    use crate::time::NS_PER_MS;
    use std::collections::BTreeMap;

    fn kyber(given: &[(&str, f64)]) -> Kyber {
        let given: BTreeMap<String, f64> = given.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Kyber::new(&resolve_tunables(&INFO, &given, "test").unwrap())
    }

    /// Run `n` requests of `domain` that each take `lat_ms` in the device
    /// and were allocated `wait_ms` before their issue, completing at `at`.
    fn samples(k: &mut Kyber, domain: usize, n: u32, wait_ms: u64, lat_ms: u64, at: SimTime) {
        for i in 0..n {
            let id = 100_000 + i;
            let rq = if domain == READ { read(id, 0, 0) } else { write(id, 0, 0) };
            let start = SimTime(at.ns() - (wait_ms + lat_ms) * NS_PER_MS);
            k.info.insert(id, RqInfo { token: None, start, io_start: SimTime(at.ns() - lat_ms * NS_PER_MS) });
            k.completed(&rq, at);
        }
    }

    #[test]
    fn defaults_and_domains() {
        let k = kyber(&[]);
        assert_eq!(k.latency_targets, [2_000_000, 10_000_000, 5_000_000_000]);
        assert_eq!([k.depth(READ), k.depth(WRITE), k.depth(DISCARD), k.depth(OTHER)], [256, 128, 64, 16]);
        assert_eq!(sched_domain(&read(0, 0, 0)), READ);
        assert_eq!(sched_domain(&write(0, 0, 0)), WRITE);
        // Async requests get 75% of each word of the scheduler tags.
        let tags = Sbitmap::new(256);
        assert_eq!(k.limit_depth(&write(0, 0, 0), &tags), Some(48));
        assert_eq!(k.limit_depth(&read(0, 0, 0), &tags), None);
        assert_eq!(k.limit_depth(&Request { sync: true, ..write(0, 0, 0) }, &tags), None);
    }

    #[test]
    fn buckets_are_quarters_of_the_target() {
        let mut k = kyber(&[]);
        for (ns, bucket) in [(0, 0), (1, 0), (500_000, 0), (500_001, 1), (2_000_000, 3), (2_000_001, 4), (99_000_000, 7)] {
            k.latency_buckets = [[[0; BUCKETS]; 2]; LAT_DOMAINS];
            k.add_sample(READ, IO, ns);
            assert_eq!(k.latency_buckets[READ][IO][bucket], 1, "{ns} ns");
        }
    }

    #[test]
    fn batches_of_16_reads_then_8_writes_round_robin() {
        let mut k = kyber(&[]);
        for i in 0..20 {
            k.insert(read(i, 0, 8 * i as u64), ms(0));
        }
        for i in 20..30 {
            k.insert(write(i, 1, 8 * i as u64), ms(0));
        }
        let order: Vec<_> = (0..30).map(|_| take(&mut k, ms(1))).collect();
        let expect: Vec<u32> = (0..16).chain(20..28).chain(16..20).chain(28..30).collect();
        assert_eq!(order, expect);
    }

    #[test]
    fn a_domain_out_of_tokens_yields_to_the_others() {
        let mut k = kyber(&[]);
        k.resize(READ, 2);
        for i in 0..4 {
            k.insert(read(i, 0, 8 * i as u64), ms(0));
        }
        k.insert(write(9, 1, 1000), ms(0));
        assert_eq!([take(&mut k, ms(0)), take(&mut k, ms(0))], [0, 1]);
        assert_eq!(take(&mut k, ms(0)), 9, "reads have no token: the write goes");
        assert_eq!(k.dispatch(ms(0)), Dispatch::Nothing);
        k.completed(&read(0, 0, 0), ms(1));
        assert_eq!(take(&mut k, ms(1)), 2, "the freed token");
    }

    #[test]
    fn completions_pull_the_timer_to_at_most_a_tenth_of_a_second() {
        let mut k = kyber(&[]);
        samples(&mut k, READ, 1, 0, 1, ms(10)); // tick 2 → timer at tick 27
        assert_eq!(k.armed_timer(), Some(ms(108)));
        samples(&mut k, READ, 1, 0, 1, ms(50));
        assert_eq!(k.armed_timer(), Some(ms(108)), "timer_reduce never delays");
    }

    #[test]
    fn percentiles_wait_for_500_samples_or_a_second() {
        let mut k = kyber(&[]);
        samples(&mut k, READ, 100, 0, 1, ms(10));
        let t0 = k.hz.jiffies(ms(100));
        assert_eq!(k.percentile(READ, IO, 90, t0), -1, "100 samples, first look starts the second");
        assert_eq!(k.latency_timeout[READ], t0 + 250);
        assert_eq!(k.percentile(READ, IO, 90, t0 + 249), -1);
        assert_eq!(k.percentile(READ, IO, 90, t0 + 250), 1, "1 ms is bucket 1 of 0.5 ms buckets");
        assert_eq!(k.latency_buckets[READ][IO].iter().sum::<u32>(), 0, "cleared");
        samples(&mut k, READ, 500, 0, 3, ms(10));
        assert_eq!(k.percentile(READ, IO, 90, t0 + 251), 5, "500 samples: at once");
    }

    #[test]
    fn congestion_shrinks_good_domains_and_grows_bad_ones() {
        let mut k = kyber(&[]);
        // Reads: I/O latency 3 ms (bucket 5: past the 2 ms target) →
        // congestion; total 3 ms → p99 bucket 5: 256·6/4 = 384 → 256 (max).
        // Writes: total 4 ms of a 10 ms target (bucket 1): 128·2/4 = 64.
        samples(&mut k, READ, 600, 0, 3, ms(10));
        samples(&mut k, WRITE, 600, 2, 2, ms(10));
        k.resize(READ, 100);
        k.timer(ms(108));
        assert_eq!(k.depth(READ), 150, "bad: 100·6/4");
        assert_eq!(k.depth(WRITE), 64, "good under congestion: 128·2/4");
        assert_eq!(k.armed_timer(), None);
    }

    #[test]
    fn without_congestion_only_bad_domains_change() {
        let mut k = kyber(&[]);
        // Reads: I/O 1 ms (good), total 5 ms (bucket 9 → 7 of 8: bad).
        samples(&mut k, READ, 600, 4, 1, ms(10));
        samples(&mut k, WRITE, 600, 0, 1, ms(10));
        k.resize(READ, 16);
        k.timer(ms(108));
        assert_eq!(k.depth(READ), 32, "16·8/4");
        assert_eq!(k.depth(WRITE), 128, "good and no congestion: unchanged");
        assert_eq!(k.domain_p99[WRITE], 0, "remembered");
    }

    #[test]
    fn a_remembered_p99_is_used_once_when_congestion_comes() {
        let mut k = kyber(&[]);
        samples(&mut k, WRITE, 600, 0, 1, ms(10));
        k.timer(ms(108));
        assert_eq!((k.domain_p99[WRITE], k.depth(WRITE)), (0, 128));
        // Next window: congested reads, no write samples: writes use the
        // remembered p99 (bucket 0): 128·1/4 = 32, and forget it.
        samples(&mut k, READ, 600, 0, 5, ms(200));
        k.timer(ms(300));
        assert_eq!((k.domain_p99[WRITE], k.depth(WRITE)), (-1, 32));
    }

    #[test]
    fn runs_in_the_engine_with_a_tight_read_target() {
        use crate::experiment::{self, Format};
        let spec = "[disk]\npreset = \"ssd\"\nqueue_depth = 64\n[[scheduler]]\nname = \"kyber\"\nread_lat_nsec = 100000\n\
                    [workload]\nkind = \"processes\"\n[[workload.group]]\ncount = 48\npattern = \"random\"\nfile_mb = 8\n\
                    request_kb = 4\npasses = 1\n[[workload.group]]\ncount = 2\nop = \"write\"\nsync = false\nfile_mb = 8\npasses = 1\n";
        let e = experiment::parse(spec, "t.toml", Format::Toml, &[]).unwrap();
        let r = e.run_job(experiment::Job { scheduler: 0, seed: 1 }, &Default::default()).unwrap();
        assert_eq!(r.requests.inserted, r.requests.completed);
    }
}
