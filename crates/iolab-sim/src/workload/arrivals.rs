//! Bursty request arrivals: "hot news" that draws a burst of requests and
//! then cools.
//!
//! The WPCAS paper (seed 000, section 4.5) explains WPCAS's advantage on
//! its web-server load this way: a hot news item draws many I/O requests in
//! a short time, then turns cold and draws few for a long time, so a fixed
//! anticipation period (AS's 6 ms) fits neither phase. This module makes
//! such a stream: a Poisson process whose rate is
//!
//!   λ(t) = rate + Σ_k peak · exp(−(t − t_k) / cool)
//!
//! where the t_k are hot-news events (a Poisson process of mean gap
//! `burst_every_s`, or the explicit `burst_times_s`). Arrivals are drawn by
//! thinning (Lewis & Shedler, 1979): λ only decreases between events, so
//! its value now bounds it until the next event starts.

use crate::error::{Error, Result};
use crate::limits;
use crate::rng::SimRng;
use crate::time::{SimTime, NS_PER_S};
use serde::{Deserialize, Serialize};

/// Bursts active at once at most; the oldest is replaced by a new one.
pub const MAX_BURSTS: usize = 8;
/// A burst whose rate fell below this fraction of its peak is over.
const BURST_FLOOR: f64 = 1e-3;
/// The highest rate a stream takes, per second: one arrival per µs on
/// average, far beyond what a disk serves. Above it the generator would
/// spend the run drawing arrivals at one nanosecond.
pub const MAX_RATE_PER_S: f64 = 1e6;
/// The shortest mean gap between hot-news events and the shortest cooling
/// time, in seconds: shorter ones make no burst and stall the clock.
pub const MIN_BURST_S: f64 = 1e-3;

/// An arrival stream as written in a spec; rates per second, times in s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArrivalSpec {
    /// Base rate of the stream, per second.
    pub rate_per_s: f64,
    /// Mean time between hot-news events (exponential gaps); 0 = none.
    pub burst_every_s: f64,
    /// Explicit event times instead (when not empty).
    pub burst_times_s: Vec<f64>,
    /// Extra rate at the start of a burst, per second.
    pub burst_peak_per_s: f64,
    /// Time constant of a burst's exponential cooling.
    pub burst_cool_s: f64,
}

impl Default for ArrivalSpec {
    fn default() -> Self {
        ArrivalSpec {
            rate_per_s: 5.0,
            burst_every_s: 20.0,
            burst_times_s: Vec::new(),
            burst_peak_per_s: 60.0,
            burst_cool_s: 3.0,
        }
    }
}

/// One arrival: when, and which burst drew it (`None`: the base stream).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Arrival {
    pub time: SimTime,
    /// Sequence number of the burst (0 for the first event of the run).
    pub burst: Option<u64>,
}

/// A validated stream generator.
#[derive(Clone, Debug)]
pub struct Arrivals {
    base: f64,
    peak: f64,
    cool_ns: f64,
    every_ns: f64,
    explicit: Vec<f64>,
    next_explicit: usize,
    end_ns: f64,
    /// The generator's clock (ns).
    t: f64,
    next_event: f64,
    /// Start times (ns) and sequence numbers of active bursts, by slot
    /// `seq % MAX_BURSTS`.
    bursts: [Option<(f64, u64)>; MAX_BURSTS],
    events: u64,
    started: bool,
}

fn check(field: &str, v: f64, positive: bool) -> Result<f64> {
    if v.is_finite() && (v > 0.0 || (!positive && v == 0.0)) {
        Ok(v)
    } else {
        let what = if positive { "positive" } else { "non-negative" };
        Err(Error::invalid(field, format!("must be a {what} number, got {v}")))
    }
}

impl Arrivals {
    /// A stream from `start` to `end` (exclusive); `field` names the spec.
    pub fn new(spec: &ArrivalSpec, start: SimTime, end: SimTime, field: &str) -> Result<Arrivals> {
        let rate = |name: &str, v: f64| {
            let f = format!("{field}.{name}");
            let v = check(&f, v, false)?;
            if v > MAX_RATE_PER_S {
                return Err(Error::invalid(
                    f,
                    format!("{} per second is above the most, {MAX_RATE_PER_S:e} (one per µs)", limits::show(v)),
                ));
            }
            Ok(v)
        };
        let span = |name: &str, v: f64| {
            let f = format!("{field}.{name}");
            if v != 0.0 || name == "burst_cool_s" {
                if !(v.is_finite() && v >= MIN_BURST_S) {
                    return Err(Error::invalid(f, format!("must be at least {MIN_BURST_S} s, got {}", limits::show(v))));
                }
                limits::check_seconds(&f, v)?;
            }
            check(&f, v, false)
        };
        let base = rate("rate_per_s", spec.rate_per_s)?;
        let every = span("burst_every_s", spec.burst_every_s)?;
        let peak = rate("burst_peak_per_s", spec.burst_peak_per_s)?;
        let cool = span("burst_cool_s", spec.burst_cool_s)?;
        let mut explicit = Vec::with_capacity(spec.burst_times_s.len());
        for (i, &t) in spec.burst_times_s.iter().enumerate() {
            let f = format!("{field}.burst_times_s[{i}]");
            let t = check(&f, t, false)?;
            if t > 0.0 {
                limits::check_seconds(&f, t)?;
            }
            let t = start.0 as f64 + t * NS_PER_S as f64;
            if explicit.last().is_some_and(|&prev| t < prev) {
                return Err(Error::invalid(format!("{field}.burst_times_s"), "must be in increasing order"));
            }
            explicit.push(t);
        }
        let bursty = peak > 0.0 && (every > 0.0 || !explicit.is_empty());
        if base == 0.0 && !bursty {
            return Err(Error::invalid(
                format!("{field}.rate_per_s"),
                "the stream has no arrivals: give a rate or bursts",
            ));
        }
        let per_ns = 1.0 / NS_PER_S as f64;
        Ok(Arrivals {
            base: base * per_ns,
            peak: if bursty { peak * per_ns } else { 0.0 },
            cool_ns: cool * NS_PER_S as f64,
            every_ns: if bursty && explicit.is_empty() { every * NS_PER_S as f64 } else { 0.0 },
            explicit: if bursty { explicit } else { Vec::new() },
            next_explicit: 0,
            end_ns: end.0 as f64,
            t: start.0 as f64,
            next_event: f64::INFINITY,
            bursts: [None; MAX_BURSTS],
            events: 0,
            started: false,
        })
    }

    /// Total burst rate at time `t` (per ns).
    fn hot(&self, t: f64) -> f64 {
        self.bursts.iter().flatten().map(|&(s, _)| self.peak * (-(t - s) / self.cool_ns).exp()).sum()
    }

    fn schedule_event(&mut self, rng: &mut SimRng) {
        self.next_event = if self.every_ns > 0.0 {
            self.t + -self.every_ns * (1.0 - rng.unit()).ln()
        } else if let Some(&t) = self.explicit.get(self.next_explicit) {
            self.next_explicit += 1;
            t
        } else {
            f64::INFINITY
        };
    }

    fn start_burst(&mut self, rng: &mut SimRng) {
        self.t = self.next_event;
        let seq = self.events;
        self.events += 1;
        self.bursts[(seq % MAX_BURSTS as u64) as usize] = Some((self.t, seq));
        self.schedule_event(rng);
    }

    /// The next arrival, or `None` once the stream has ended.
    pub fn next(&mut self, rng: &mut SimRng) -> Option<Arrival> {
        if !self.started {
            self.started = true;
            if self.peak > 0.0 {
                self.schedule_event(rng);
            }
        }
        loop {
            if self.t >= self.end_ns {
                return None;
            }
            // Drop bursts that have cooled off.
            let (t, cool, floor) = (self.t, self.cool_ns, -BURST_FLOOR.ln());
            for b in self.bursts.iter_mut() {
                if b.is_some_and(|(s, _)| (t - s) / cool > floor) {
                    *b = None;
                }
            }
            let bound = self.base + self.hot(self.t);
            if bound <= 0.0 {
                if !self.next_event.is_finite() {
                    return None;
                }
                self.start_burst(rng);
                continue;
            }
            let gap = -(1.0 - rng.unit()).ln() / bound;
            if self.t + gap >= self.next_event {
                self.start_burst(rng);
                continue;
            }
            self.t += gap;
            if self.t >= self.end_ns {
                return None;
            }
            let hot = self.hot(self.t);
            let u = rng.unit() * bound;
            if u >= self.base + hot {
                continue; // thinned out
            }
            let burst = if u < self.base { None } else { self.pick_burst(u - self.base) };
            return Some(Arrival { time: SimTime(self.t.ceil() as u64), burst });
        }
    }

    /// The burst whose share of the hot rate contains `x`.
    fn pick_burst(&self, mut x: f64) -> Option<u64> {
        let mut last = None;
        for &(s, seq) in self.bursts.iter().flatten() {
            let r = self.peak * (-(self.t - s) / self.cool_ns).exp();
            last = Some(seq);
            if x < r {
                return last;
            }
            x -= r;
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(spec: &ArrivalSpec, end_s: f64, seed: u64) -> Vec<Arrival> {
        let mut a = Arrivals::new(spec, SimTime::ZERO, SimTime::from_ms_f64(end_s * 1e3), "w").unwrap();
        let mut rng = SimRng::new(seed);
        std::iter::from_fn(|| a.next(&mut rng)).collect()
    }

    #[test]
    fn plain_poisson_rate() {
        let spec = ArrivalSpec { rate_per_s: 100.0, burst_every_s: 0.0, ..ArrivalSpec::default() };
        let v = collect(&spec, 100.0, 1);
        assert!((v.len() as f64 - 10_000.0).abs() < 400.0, "{} arrivals", v.len());
        assert!(v.windows(2).all(|w| w[0].time <= w[1].time));
        assert!(v.iter().all(|a| a.burst.is_none()));
    }

    #[test]
    fn a_burst_adds_peak_times_cool_and_decays() {
        let spec = ArrivalSpec {
            rate_per_s: 10.0,
            burst_times_s: vec![10.0],
            burst_peak_per_s: 500.0,
            burst_cool_s: 2.0,
            ..ArrivalSpec::default()
        };
        let mut hot = 0;
        let mut first_s = 0;
        let mut total = 0;
        for seed in 0..20 {
            let v = collect(&spec, 40.0, seed);
            total += v.len();
            hot += v.iter().filter(|a| a.burst == Some(0)).count();
            first_s += v.iter().filter(|a| a.burst.is_some() && a.time < SimTime::from_ms_f64(12_000.0)).count();
            assert!(v.iter().all(|a| a.burst.is_none() || a.time >= SimTime::from_ms_f64(10_000.0)));
        }
        // Expected per run: 500 × 2 = 1000 hot arrivals, 63% in the first 2 s.
        let (hot, first) = (hot as f64 / 20.0, first_s as f64 / 20.0);
        assert!((hot - 1000.0).abs() < 60.0, "hot {hot}");
        assert!((first / hot - 0.632).abs() < 0.03, "first cool period {first} of {hot}");
        assert!(((total as f64 / 20.0) - hot - 400.0).abs() < 25.0);
    }

    #[test]
    fn poisson_events_and_bad_fields() {
        let spec = ArrivalSpec {
            rate_per_s: 1.0,
            burst_every_s: 5.0,
            burst_peak_per_s: 100.0,
            burst_cool_s: 0.5,
            ..ArrivalSpec::default()
        };
        let v = collect(&spec, 200.0, 3);
        let bursts: std::collections::BTreeSet<u64> = v.iter().filter_map(|a| a.burst).collect();
        assert!((25..=55).contains(&bursts.len()), "{} bursts in 200 s", bursts.len());
        let bad = ArrivalSpec { burst_cool_s: 0.0, ..ArrivalSpec::default() };
        let err = Arrivals::new(&bad, SimTime::ZERO, SimTime::NEVER, "workload.arrivals").unwrap_err();
        assert!(err.to_string().starts_with("workload.arrivals.burst_cool_s"), "{err}");
        let none = ArrivalSpec { rate_per_s: 0.0, burst_every_s: 0.0, ..ArrivalSpec::default() };
        assert!(Arrivals::new(&none, SimTime::ZERO, SimTime::NEVER, "a").is_err());
    }
}
