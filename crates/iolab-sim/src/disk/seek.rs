//! Seek curves: how long the arm takes to move a number of cylinders.
//!
//! Every form DiskSim 4.0's g1 mechanics accept ("Seek type"):
//! `constant`; `linear`, the three-point form (single-cylinder, average and
//! full-strobe seek times, interpolated linearly through distances 1, N/3
//! and N-1 for N cylinders, as the manual describes); `curve`, Lee's
//! equation through the same three points; `hpl`, Ruemmler & Wilkes's
//! two-piece curve — a square-root part for short seeks (the arm
//! accelerates, then decelerates) and a linear part for long ones (it
//! coasts at top speed) — with an optional single-cylinder time;
//! `hplplus10`, the same with the first ten distances given explicitly,
//! since real curves are choppy there; and `extracted`, a measured table
//! interpolated linearly between points (and extrapolated from the last
//! two beyond the last point, as DiskSim does).
//!
//! Seek time here is arm movement plus settling for reads. Head switch and
//! the extra write settle are separate ([`Mechanics`]), because DiskSim
//! combines them as max(seek, head switch) + write settle.

use crate::error::{Error, Result};
use std::sync::Arc;

/// A seek curve, in milliseconds as parameter files give it.
#[derive(Clone, Debug, PartialEq)]
pub enum SeekCurve {
    /// Every seek takes this long.
    Constant(f64),
    /// Linear through (1, `one`), (N/3, `avg`) and (N-1, `full`) for a disk
    /// of N = `cylinders` cylinders.
    ThreePoint { one: f64, avg: f64, full: f64, cylinders: u32 },
    /// Lee's equation (DiskSim manual, "Lee's Seek Equation"):
    /// seek(d) = a·√(d-1) + b·(d-1) + c with a, b, c fitted to the three
    /// points of [`SeekCurve::ThreePoint`].
    Lee { a: f64, b: f64, c: f64 },
    /// seek(d) = `sqrt_a + sqrt_b·√d` for 0 < d < `linear_from`, else
    /// `lin_a + lin_b·d`; `first_ten[d-1]` overrides d = 1..=10 when given.
    TwoPiece {
        linear_from: u32,
        sqrt_a: f64,
        sqrt_b: f64,
        lin_a: f64,
        lin_b: f64,
        first_ten: Option<[f64; 10]>,
    },
    /// Measured points (distance, ms), distances strictly increasing and
    /// starting at 1 or more; between points linear, past the last point
    /// extrapolated from the last two.
    Table(Vec<(u32, f64)>),
    /// `curve` worked out once for every distance below the drive's
    /// cylinder count ([`SeekCurve::tabulated`]): the same values, read
    /// from memory instead of a binary search or a square root per seek.
    Tabulated { lut: SeekLut, curve: Box<SeekCurve> },
}

/// The values of a [`SeekCurve::Tabulated`], ms by distance.
#[derive(Clone, PartialEq)]
pub struct SeekLut(Arc<[f64]>);

impl std::fmt::Debug for SeekLut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SeekLut({} distances)", self.0.len())
    }
}

/// Drives up to this many cylinders get a lookup table (8 bytes each: 2 MiB
/// at most, once per simulated drive); larger ones compute each seek.
const LUT_MAX_CYLINDERS: u32 = 1 << 18;

impl SeekCurve {
    /// This curve with its values for distances 0..`cylinders` precomputed
    /// (every seek on a drive of that many cylinders is shorter), exactly
    /// as [`SeekCurve::ms`] gives them; unchanged when the drive is larger
    /// than [`LUT_MAX_CYLINDERS`] or the curve is tabulated already.
    pub fn tabulated(self, cylinders: u32) -> SeekCurve {
        if cylinders > LUT_MAX_CYLINDERS || matches!(self, SeekCurve::Tabulated { .. }) {
            return self;
        }
        let lut: Arc<[f64]> = (0..cylinders).map(|d| self.ms(d)).collect();
        SeekCurve::Tabulated { lut: SeekLut(lut), curve: Box::new(self) }
    }

    /// The curve's two pieces (`linear_from`, `sqrt_a`, `sqrt_b`, `lin_a`,
    /// `lin_b`, ms), if it is [`SeekCurve::TwoPiece`] (tabulated or not)
    /// with no override of the first ten distances.
    pub fn two_piece(&self) -> Option<(u32, f64, f64, f64, f64)> {
        match self {
            SeekCurve::TwoPiece { linear_from, sqrt_a, sqrt_b, lin_a, lin_b, first_ten: None } => {
                Some((*linear_from, *sqrt_a, *sqrt_b, *lin_a, *lin_b))
            }
            SeekCurve::Tabulated { curve, .. } => curve.two_piece(),
            _ => None,
        }
    }

    /// The WPCAS paper's equation (2), Ruemmler & Wilkes's HP 97560 curve
    /// (DISKS.md): 3.24 + 0.400·√d ms for d ≤ 383, 8.00 + 0.008·d beyond.
    pub fn hp97560() -> SeekCurve {
        SeekCurve::TwoPiece {
            linear_from: 384,
            sqrt_a: 3.24,
            sqrt_b: 0.400,
            lin_a: 8.00,
            lin_b: 0.008,
            first_ten: None,
        }
    }

    /// Lee's curve through the single-cylinder, average and full-strobe
    /// times of a disk of `cylinders` cylinders.
    pub fn lee(one: f64, avg: f64, full: f64, cylinders: u32) -> SeekCurve {
        let n = cylinders.max(1) as f64;
        SeekCurve::Lee {
            a: (-10.0 * one + 15.0 * avg - 5.0 * full) / (3.0 * n.sqrt()),
            b: (7.0 * one - 15.0 * avg + 8.0 * full) / (3.0 * n),
            c: one,
        }
    }

    /// Checks that the curve is usable: finite, non-negative, and (for a
    /// table) sorted. `what` names the source for the error.
    pub fn check(&self, what: &str) -> Result<()> {
        let bad = |m: &str| Err(Error::invalid(what, m));
        match self {
            SeekCurve::Constant(t) => {
                if !(t.is_finite() && *t >= 0.0) {
                    return bad("the constant seek time must be finite and non-negative");
                }
            }
            SeekCurve::ThreePoint { one, avg, full, cylinders } => {
                if [one, avg, full].iter().any(|v| !v.is_finite() || **v < 0.0) {
                    return bad("seek times must be finite and non-negative");
                }
                if *cylinders < 4 {
                    return bad("the three-point seek curve needs at least 4 cylinders");
                }
            }
            SeekCurve::Lee { a, b, c } => {
                if [a, b, c].iter().any(|v| !v.is_finite()) || *c < 0.0 {
                    return bad("seek curve coefficients must be finite");
                }
                // The curve must not go negative anywhere: its minimum over
                // x = √(d-1) >= 0 is at x = -a/(2b) when that is positive.
                if *b > 0.0 && *a < 0.0 && c - a * a / (4.0 * b) < 0.0 {
                    return bad("Lee's seek curve through these three times goes negative");
                }
            }
            SeekCurve::TwoPiece { linear_from, sqrt_a, sqrt_b, lin_a, lin_b, first_ten } => {
                let mut all = vec![*sqrt_a, *sqrt_b, *lin_a, *lin_b];
                all.extend(first_ten.iter().flatten());
                if all.iter().any(|v| !v.is_finite() || *v < 0.0) {
                    return bad("seek coefficients must be finite and non-negative");
                }
                if *linear_from == 0 {
                    return bad("the square-root part must cover at least distance 1");
                }
            }
            SeekCurve::Tabulated { curve, .. } => return curve.check(what),
            SeekCurve::Table(points) => {
                if points.len() < 2 {
                    return bad("a seek table needs at least two points");
                }
                if points[0].0 == 0 {
                    return bad("seek table distances start at 1 (distance 0 costs nothing)");
                }
                for w in points.windows(2) {
                    if w[1].0 <= w[0].0 {
                        return bad("seek table distances must increase strictly");
                    }
                }
                if points.iter().any(|p| !p.1.is_finite() || p.1 < 0.0) {
                    return bad("seek times must be finite and non-negative");
                }
            }
        }
        Ok(())
    }

    /// Seek time for a move of `d` cylinders, in ms (0 for d = 0).
    ///
    /// A tabulated curve's lookup is inlined into every seek (its entry 0
    /// is 0.0); the rest is a call.
    #[inline(always)]
    pub fn ms(&self, d: u32) -> f64 {
        if let SeekCurve::Tabulated { lut, .. } = self {
            if let Some(&v) = lut.0.get(d as usize) {
                return v;
            }
        }
        self.ms_computed(d)
    }

    fn ms_computed(&self, d: u32) -> f64 {
        if d == 0 {
            return 0.0;
        }
        match self {
            SeekCurve::Tabulated { lut, curve } => match lut.0.get(d as usize) {
                Some(&v) => v,
                None => curve.ms(d),
            },
            SeekCurve::Constant(t) => *t,
            SeekCurve::ThreePoint { one, avg, full, cylinders } => {
                let third = (*cylinders / 3).max(2) as f64;
                let last = (cylinders - 1) as f64;
                let d = d as f64;
                if d <= third {
                    one + (d - 1.0) * (avg - one) / (third - 1.0)
                } else {
                    avg + (d - third) * (full - avg) / (last - third).max(1.0)
                }
            }
            SeekCurve::Lee { a, b, c } => {
                let x = (d - 1) as f64;
                (a * x.sqrt() + b * x + c).max(0.0)
            }
            SeekCurve::TwoPiece { linear_from, sqrt_a, sqrt_b, lin_a, lin_b, first_ten } => {
                if let (Some(t), true) = (first_ten, d <= 10) {
                    return t[d as usize - 1];
                }
                if d < *linear_from {
                    sqrt_a + sqrt_b * (d as f64).sqrt()
                } else {
                    lin_a + lin_b * d as f64
                }
            }
            SeekCurve::Table(p) => {
                // First point with distance >= d, by binary search.
                let i = p.partition_point(|&(dist, _)| dist < d);
                if i < p.len() && p[i].0 == d {
                    return p[i].1;
                }
                if i == 0 {
                    // Below the first measured distance: from (0, 0).
                    return p[0].1 * d as f64 / p[0].0 as f64;
                }
                let i = i.min(p.len() - 1);
                let (d0, t0) = p[i - 1];
                let (d1, t1) = p[i];
                let v = t0 + (d as f64 - d0 as f64) * (t1 - t0) / (d1 as f64 - d0 as f64);
                v.max(0.0)
            }
        }
    }
}

/// The arm: seek curve plus the two switching costs DiskSim adds to it.
#[derive(Clone, Debug, PartialEq)]
pub struct Mechanics {
    pub seek: SeekCurve,
    /// Time to switch to another head on the same cylinder, ms.
    pub head_switch_ms: f64,
    /// Extra settling before writing after any arm or head movement, ms
    /// ("Add. write settling delay"). May be negative: the extracted DEC
    /// RZ26 and HP C2490A models settle faster for writes than the read
    /// seek curve says.
    pub write_settle_ms: f64,
}

impl Mechanics {
    /// Checks the switching costs: a head switch is never negative, and a
    /// negative write settle never makes a write positioning negative.
    pub fn check(&self, what: &str) -> Result<()> {
        self.seek.check(what)?;
        if !(self.head_switch_ms.is_finite() && self.head_switch_ms >= 0.0) {
            return Err(Error::invalid(what, format!("head switch time must be >= 0 ms, not {}", self.head_switch_ms)));
        }
        if !self.write_settle_ms.is_finite() {
            return Err(Error::invalid(what, "write settling delay must be a finite number"));
        }
        if self.write_settle_ms < 0.0 {
            let shortest = (1..=16).map(|d| self.seek.ms(d)).fold(self.head_switch_ms, f64::min);
            if shortest + self.write_settle_ms < 0.0 {
                return Err(Error::invalid(
                    what,
                    format!(
                        "a write settling delay of {} ms makes a {shortest} ms head move negative",
                        self.write_settle_ms
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Positioning time in ns from (cylinder, head) to (cylinder, head):
    /// max(seek, head switch) plus the write settle when anything moved.
    /// This is how DiskSim 4.0's g1 mechanics combine them (DISKS.md).
    #[inline]
    pub fn move_ns(&self, from: (u32, u32), to: (u32, u32), write: bool) -> f64 {
        let dist = from.0.abs_diff(to.0);
        let mut ms = self.seek.ms(dist);
        if from.1 != to.1 && self.head_switch_ms > ms {
            ms = self.head_switch_ms;
        }
        if ms > 0.0 && write {
            ms = (ms + self.write_settle_ms).max(0.0);
        }
        ms * 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_formula_is_continuous_at_the_knee() {
        let s = SeekCurve::hp97560();
        assert!((s.ms(383) - 11.068).abs() < 5e-4, "{}", s.ms(383));
        assert!((s.ms(384) - 11.072).abs() < 1e-9, "{}", s.ms(384));
        assert!((s.ms(1) - 3.64).abs() < 1e-9);
        assert_eq!(s.ms(0), 0.0);
        assert!((s.ms(1961) - (8.0 + 0.008 * 1961.0)).abs() < 1e-9);
    }

    #[test]
    fn first_ten_override_short_seeks() {
        let mut ten = [0.0; 10];
        ten.iter_mut().enumerate().for_each(|(i, v)| *v = 1.0 + i as f64);
        let s = SeekCurve::TwoPiece {
            linear_from: 300,
            sqrt_a: 3.81,
            sqrt_b: 0.33,
            lin_a: 7.75,
            lin_b: 0.0059,
            first_ten: Some(ten),
        };
        assert_eq!(s.ms(1), 1.0);
        assert_eq!(s.ms(10), 10.0);
        assert!((s.ms(100) - 7.11).abs() < 1e-9);
        assert!((s.ms(300) - (7.75 + 0.0059 * 300.0)).abs() < 1e-9);
    }

    #[test]
    fn table_interpolates_and_extrapolates() {
        let s = SeekCurve::Table(vec![(2, 1.0), (12, 2.0), (112, 4.0)]);
        s.check("t").unwrap();
        assert_eq!(s.ms(2), 1.0);
        assert_eq!(s.ms(1), 0.5, "below the first point: from (0, 0)");
        assert!((s.ms(7) - 1.5).abs() < 1e-12);
        assert!((s.ms(212) - 6.0).abs() < 1e-12);
        assert!(SeekCurve::Table(vec![(5, 1.0), (5, 2.0)]).check("t").is_err());
        // A table that dips (the Atlas 10K's: 10 -> 1.531, 12 -> 1.515)
        // interpolates downwards too.
        let s = SeekCurve::Table(vec![(10, 1.531), (12, 1.515)]);
        assert!((s.ms(11) - 1.523).abs() < 1e-12);
    }

    #[test]
    fn a_tabulated_curve_gives_the_same_values() {
        let curves = [
            SeekCurve::hp97560(),
            SeekCurve::Table(vec![(2, 1.0), (12, 2.0), (112, 4.0)]),
            SeekCurve::lee(1.0, 8.0, 16.0, 3000),
            SeekCurve::ThreePoint { one: 1.0, avg: 5.0, full: 9.0, cylinders: 301 },
        ];
        for c in curves {
            let t = c.clone().tabulated(2000);
            assert!(matches!(t, SeekCurve::Tabulated { .. }));
            t.check("t").unwrap();
            // Inside the table and past it (a distance no drive of 2,000
            // cylinders has, answered by the curve itself).
            for d in [0, 1, 2, 7, 11, 12, 100, 383, 384, 1999, 2000, 5000] {
                assert_eq!(t.ms(d).to_bits(), c.ms(d).to_bits(), "{c:?} at {d}");
            }
        }
        let big = SeekCurve::Constant(2.0).tabulated(LUT_MAX_CYLINDERS + 1);
        assert_eq!(big, SeekCurve::Constant(2.0), "too many cylinders: no table");
        let bad = SeekCurve::Table(vec![(5, 1.0), (5, 2.0)]).tabulated(10);
        assert!(bad.check("t").is_err(), "checks see through the table");
    }

    #[test]
    fn three_point_forms() {
        // 301 cylinders: points at 1, 100 and 300.
        let s = SeekCurve::ThreePoint { one: 1.0, avg: 5.0, full: 9.0, cylinders: 301 };
        s.check("t").unwrap();
        assert_eq!(s.ms(1), 1.0);
        assert!((s.ms(100) - 5.0).abs() < 1e-12);
        assert!((s.ms(300) - 9.0).abs() < 1e-12);
        assert!((s.ms(200) - 7.0).abs() < 1e-12);
        assert_eq!(SeekCurve::Constant(2.5).ms(77), 2.5);
        assert_eq!(SeekCurve::Constant(2.5).ms(0), 0.0);
        // Lee's curve passes through its three points: d = 1 gives the
        // single-cylinder time, and its mean over uniformly random pairs of
        // cylinders is close to the average time.
        let n = 3000;
        let l = SeekCurve::lee(1.0, 8.0, 16.0, n);
        l.check("t").unwrap();
        assert!((l.ms(1) - 1.0).abs() < 1e-12);
        let mean: f64 = (1..n).map(|d| l.ms(d) * 2.0 * (n - d) as f64).sum::<f64>() / (n as f64 * n as f64);
        assert!((mean - 8.0).abs() < 0.2, "{mean}");
        assert!((l.ms(n) - 16.0).abs() < 0.2, "{}", l.ms(n));
    }

    #[test]
    fn head_switch_and_write_settle_combine_like_disksim() {
        let m = Mechanics { seek: SeekCurve::hp97560(), head_switch_ms: 1.6, write_settle_ms: 0.5 };
        assert_eq!(m.move_ns((5, 0), (5, 0), true), 0.0);
        assert!((m.move_ns((5, 0), (5, 3), false) - 1.6e6).abs() < 1e-6);
        assert!((m.move_ns((5, 0), (6, 3), true) - 4.14e6).abs() < 1e-6);
        // A negative settle (the DEC RZ26's -0.483 ms) shortens writes.
        let m = Mechanics { seek: SeekCurve::hp97560(), head_switch_ms: 0.865, write_settle_ms: -0.483 };
        m.check("t").unwrap();
        assert!((m.move_ns((5, 0), (5, 1), true) - 0.382e6).abs() < 1e-3);
        assert_eq!(m.move_ns((5, 0), (5, 0), true), 0.0, "no movement, no settle");
        let m = Mechanics { seek: SeekCurve::hp97560(), head_switch_ms: 0.1, write_settle_ms: -0.5 };
        assert!(m.check("t").unwrap_err().to_string().contains("makes a 0.1 ms head move negative"));
    }
}
