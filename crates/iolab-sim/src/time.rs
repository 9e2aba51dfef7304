//! Simulated time: integer nanoseconds since the start of a run.
//!
//! Every instant inside the simulator is a [`SimTime`]; every duration is a
//! plain `u64` whose name ends in `_ns`. Integer time keeps runs exactly
//! reproducible: no rounding differs between machines or compilers.

use serde::Serialize;
use std::fmt;
use std::ops::{Add, AddAssign};

/// Nanoseconds per microsecond, millisecond and second.
pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

/// An instant of simulated time, in nanoseconds since the run started.
#[derive(Copy, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const NEVER: SimTime = SimTime(u64::MAX);

    pub fn ns(self) -> u64 {
        self.0
    }
    pub fn from_ms_f64(ms: f64) -> SimTime {
        SimTime(ms_to_ns(ms))
    }
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / NS_PER_MS as f64
    }
    /// Nanoseconds from `earlier` to `self`, or 0 if `earlier` is later.
    pub fn since(self, earlier: SimTime) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<u64> for SimTime {
    type Output = SimTime;
    fn add(self, ns: u64) -> SimTime {
        SimTime(self.0.saturating_add(ns))
    }
}

impl AddAssign<u64> for SimTime {
    fn add_assign(&mut self, ns: u64) {
        self.0 = self.0.saturating_add(ns);
    }
}

impl fmt::Debug for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}ms", self.as_ms_f64())
    }
}

/// Milliseconds (as a user writes them in a spec) to whole nanoseconds.
pub fn ms_to_ns(ms: f64) -> u64 {
    (ms * NS_PER_MS as f64).round().max(0.0) as u64
}

/// `x.round() as u64` (half away from zero; negative and NaN give 0),
/// without a call: without SSE4.1 in the baseline target, `f64::round` is
/// a libm call, and the disk model rounds four times per request. Below
/// 2^52 the fraction `x - trunc(x)` is exact; from there on every f64 is
/// an integer.
#[inline]
pub fn round_u64(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    if x >= 4_503_599_627_370_496.0 {
        return x as u64;
    }
    // 0 < x < 2^52: through i64 (see `trunc_u64`), the same integer.
    let i = x as i64;
    (i + (x - i as f64 >= 0.5) as i64) as u64
}

/// 2^63: below it, f64 <-> i64 conversions give what f64 <-> u64 ones do.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// `x as u64` for `0 <= x < 2^63` (sector counts, revolutions, times in
/// ns: the simulated horizon is 10^18 ns). On x86-64 a conversion between
/// f64 and i64 is one instruction, between f64 and u64 a dozen (u64 has no
/// hardware conversion, and `as` saturates); in that range both give the
/// same integer. The disk model converts a few dozen times per request.
#[inline]
pub fn trunc_u64(x: f64) -> u64 {
    debug_assert!((0.0..TWO_POW_63).contains(&x), "{x}");
    (x as i64) as u64
}

/// `n as f64` for `n < 2^63`: through i64, one instruction (see
/// `trunc_u64`); the same value, both round the same integer to nearest.
#[inline]
pub fn to_f64(n: u64) -> f64 {
    debug_assert!(n < 1 << 63);
    (n as i64) as f64
}

/// The fractional part of `x` >= 0 (below 2^63). Same as `f64::fract`
/// there, but a subtraction and two conversions instead of a libm call:
/// angles are taken on every run of every request.
#[inline]
pub fn frac(x: f64) -> f64 {
    debug_assert!((0.0..TWO_POW_63).contains(&x), "{x}");
    x - (x as i64) as f64
}

/// `x.max(y)` for an `x` that is not NaN: the same value, signed zeros
/// included (on x86-64 `f64::max` is `isnan(x) ? y : (y > x ? y : x)`),
/// without the NaN test and blend, four or five instructions a call. The
/// disk model takes a dozen maxima and minima of times per request, and
/// its times are never NaN: sums and products of the clock (an integer
/// converted), overheads and transfer times checked finite and >= 0 when
/// the drive is built, seek times from a tabulated curve clamped at 0,
/// rotational waits (a fraction of a revolution times the period); the one
/// infinity, a bound meaning "no bound", is compared, never subtracted
/// from another or multiplied by 0.
#[inline]
pub fn fmax(x: f64, y: f64) -> f64 {
    debug_assert!(!x.is_nan());
    if y > x {
        y
    } else {
        x
    }
}

/// `x.min(y)` for an `x` that is not NaN (see [`fmax`]).
#[inline]
pub fn fmin(x: f64, y: f64) -> f64 {
    debug_assert!(!x.is_nan());
    if y < x {
        y
    } else {
        x
    }
}

/// Nanoseconds to milliseconds, for reports.
pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fmax_and_fmin_are_max_and_min_bit_for_bit_when_x_is_not_nan() {
        let vals = [0.0, -0.0, 1.0, -1.0, 0.5, 1e300, -1e300, f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, f64::NAN];
        for &x in vals.iter().filter(|x| !x.is_nan()) {
            for &y in &vals {
                assert_eq!(fmax(x, y).to_bits(), x.max(y).to_bits(), "max({x}, {y})");
                assert_eq!(fmin(x, y).to_bits(), x.min(y).to_bits(), "min({x}, {y})");
            }
        }
    }

    #[test]
    fn round_u64_is_round_then_cast() {
        let edge = [0.0, -0.0, 0.5, 1.5, 2.5, 0.49999999999999994, -0.5, -0.7, 4503599627370495.5,
                    4503599627370496.0, 9007199254740993.0, 1.8e19, 1e300, f64::INFINITY, f64::NAN, f64::MIN_POSITIVE];
        for x in edge {
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
        }
        let mut r = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let x = f64::from_bits(r >> 1) % 1e13;
            let y = (r % 20_000_000) as f64 / 8.0;
            for v in [x, y, y + 0.5] {
                assert_eq!(round_u64(v), v.round() as u64, "{v}");
            }
        }
    }

    /// The i64 route gives what `as` gives over the range it is used in.
    #[test]
    fn trunc_to_f64_and_frac_are_the_casts() {
        let edge = [0.0, 0.25, 0.999_999_999_999_999_9, 1.0, 2.5, 4503599627370495.5, 4503599627370496.0,
                    9007199254740993.0, 1e18, 9.223_372_036_854_774e18];
        for x in edge {
            assert_eq!(trunc_u64(x), x as u64, "{x}");
            assert_eq!(frac(x).to_bits(), (x - (x as u64) as f64).to_bits(), "{x}");
            assert_eq!(frac(x).to_bits(), x.fract().to_bits(), "{x}");
        }
        let mut r = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let n = r >> 1;
            assert_eq!(to_f64(n).to_bits(), (n as f64).to_bits(), "{n}");
            assert_eq!(to_f64(n % 100_000).to_bits(), ((n % 100_000) as f64).to_bits());
            for x in [(r >> 11) as f64 / 1024.0, (r >> 30) as f64 * 1.37e-3, f64::from_bits(r >> 2)] {
                assert_eq!(trunc_u64(x), x as u64, "{x}");
                assert_eq!(frac(x).to_bits(), x.fract().to_bits(), "{x}");
            }
        }
    }

    #[test]
    fn conversions_round_trip() {
        assert_eq!(ms_to_ns(6.0), 6 * NS_PER_MS);
        assert_eq!(SimTime::from_ms_f64(0.5).ns(), 500_000);
        assert_eq!(SimTime(3 * NS_PER_MS).as_ms_f64(), 3.0);
        assert_eq!(SimTime(5).since(SimTime(9)), 0);
        assert_eq!(SimTime::NEVER + 10, SimTime::NEVER);
    }
}
