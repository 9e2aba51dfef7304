//! Seek curves: how long the arm takes to move a number of cylinders.
//!
//! Two shapes are supported, the two that DiskSim 4.0's validated models
//! use (DISKS.md): Ruemmler & Wilkes's two-piece curve — a square-root
//! part for short seeks (the arm accelerates, then decelerates) and a
//! linear part for long ones (it coasts at top speed) — optionally with
//! the first ten distances given explicitly, since real curves are choppy
//! there; and a measured table, interpolated linearly between points.
//!
//! Seek time here is arm movement plus settling for reads. Head switch and
//! the extra write settle are separate ([`Mechanics`]), because DiskSim
//! combines them as max(seek, head switch) + write settle.

use crate::error::{Error, Result};

/// A seek curve, in milliseconds as parameter files give it.
#[derive(Clone, Debug, PartialEq)]
pub enum SeekCurve {
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
}

impl SeekCurve {
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

    /// Checks that the curve is usable: finite, non-negative, and (for a
    /// table) sorted. `what` names the source for the error.
    pub fn check(&self, what: &str) -> Result<()> {
        let bad = |m: &str| Err(Error::invalid(what, m));
        match self {
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
    pub fn ms(&self, d: u32) -> f64 {
        if d == 0 {
            return 0.0;
        }
        match self {
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
                let i = i.clamp(1, p.len() - 1);
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
    /// Extra settling before writing after any arm or head movement, ms.
    pub write_settle_ms: f64,
}

impl Mechanics {
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
            ms += self.write_settle_ms;
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
        let s = SeekCurve::Table(vec![(1, 1.0), (11, 2.0), (111, 4.0)]);
        s.check("t").unwrap();
        assert_eq!(s.ms(1), 1.0);
        assert!((s.ms(6) - 1.5).abs() < 1e-12);
        assert!((s.ms(211) - 6.0).abs() < 1e-12);
        assert!(SeekCurve::Table(vec![(5, 1.0), (5, 2.0)]).check("t").is_err());
    }

    #[test]
    fn head_switch_and_write_settle_combine_like_disksim() {
        let m = Mechanics { seek: SeekCurve::hp97560(), head_switch_ms: 1.6, write_settle_ms: 0.5 };
        assert_eq!(m.move_ns((5, 0), (5, 0), true), 0.0);
        assert!((m.move_ns((5, 0), (5, 3), false) - 1.6e6).abs() < 1e-6);
        assert!((m.move_ns((5, 0), (6, 3), true) - 4.14e6).abs() < 1e-6);
    }
}
