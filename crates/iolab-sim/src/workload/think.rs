//! Think time: how long a process computes between two requests.

use crate::error::{Error, Result};
use crate::rng::SimRng;
use crate::time::ms_to_ns;
use rand_distr::{Distribution, Exp};
use serde::{Deserialize, Serialize};

/// A think-time distribution as written in a spec, in ms:
/// `{ dist = "constant", ms = 2 }`, `{ dist = "uniform", min_ms = 1, max_ms = 3 }`,
/// `{ dist = "exponential", mean_ms = 2 }`, `{ dist = "samples", ms = [0.1, 4, 9] }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub enum ThinkSpec {
    Constant { ms: f64 },
    Uniform { min_ms: f64, max_ms: f64 },
    Exponential { mean_ms: f64 },
    /// Each think time is drawn uniformly from these measured values.
    Samples { ms: Vec<f64> },
}

impl Default for ThinkSpec {
    fn default() -> Self {
        ThinkSpec::Constant { ms: 0.0 }
    }
}

/// A validated think-time distribution in ns.
#[derive(Clone, Debug)]
pub enum ThinkTime {
    Constant(u64),
    Uniform { min_ns: u64, max_ns: u64 },
    Exponential(Exp<f64>),
    Samples(Vec<u64>),
}

fn non_negative(field: &str, ms: f64) -> Result<u64> {
    crate::limits::check_ms(field, ms, false)?;
    Ok(ms_to_ns(ms))
}

impl ThinkTime {
    /// Check a spec; `field` names it in errors (e.g. `workload.group[0].think`).
    pub fn from_spec(spec: &ThinkSpec, field: &str) -> Result<ThinkTime> {
        Ok(match spec {
            ThinkSpec::Constant { ms } => ThinkTime::Constant(non_negative(&format!("{field}.ms"), *ms)?),
            ThinkSpec::Uniform { min_ms, max_ms } => {
                let min_ns = non_negative(&format!("{field}.min_ms"), *min_ms)?;
                let max_ns = non_negative(&format!("{field}.max_ms"), *max_ms)?;
                if max_ns < min_ns {
                    return Err(Error::invalid(format!("{field}.max_ms"), "must be at least min_ms"));
                }
                ThinkTime::Uniform { min_ns, max_ns }
            }
            ThinkSpec::Exponential { mean_ms } => {
                if !(mean_ms.is_finite() && *mean_ms > 0.0) {
                    return Err(Error::invalid(format!("{field}.mean_ms"), "must be a positive number of ms"));
                }
                crate::limits::check_ms(&format!("{field}.mean_ms"), *mean_ms, true)?;
                ThinkTime::Exponential(Exp::new(1.0 / mean_ms).expect("positive rate"))
            }
            ThinkSpec::Samples { ms } => {
                if ms.is_empty() {
                    return Err(Error::invalid(format!("{field}.ms"), "needs at least one sample"));
                }
                let ns = ms
                    .iter()
                    .enumerate()
                    .map(|(i, v)| non_negative(&format!("{field}.ms[{i}]"), *v))
                    .collect::<Result<Vec<_>>>()?;
                ThinkTime::Samples(ns)
            }
        })
    }

    /// Draw one think time in ns.
    pub fn draw(&self, rng: &mut SimRng) -> u64 {
        match self {
            ThinkTime::Constant(ns) => *ns,
            ThinkTime::Uniform { min_ns, max_ns } => {
                if max_ns == min_ns {
                    *min_ns
                } else {
                    min_ns + rng.below(max_ns - min_ns + 1)
                }
            }
            ThinkTime::Exponential(exp) => ms_to_ns(exp.sample(rng.raw())),
            ThinkTime::Samples(v) => v[rng.below(v.len() as u64) as usize],
        }
    }

    /// True if every draw is zero (a process that never thinks).
    pub fn is_zero(&self) -> bool {
        matches!(self, ThinkTime::Constant(0)) || matches!(self, ThinkTime::Uniform { max_ns: 0, .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_range_and_mean_is_right() {
        let mut rng = SimRng::new(1);
        let u = ThinkTime::from_spec(&ThinkSpec::Uniform { min_ms: 1.0, max_ms: 3.0 }, "t").unwrap();
        for _ in 0..1000 {
            let x = u.draw(&mut rng);
            assert!((1_000_000..=3_000_000).contains(&x));
        }
        let e = ThinkTime::from_spec(&ThinkSpec::Exponential { mean_ms: 2.0 }, "t").unwrap();
        let mean = (0..20000).map(|_| e.draw(&mut rng)).sum::<u64>() as f64 / 20000.0;
        assert!((mean / 1e6 - 2.0).abs() < 0.1, "mean {mean}");
    }

    #[test]
    fn bad_values_name_the_field() {
        let err = ThinkTime::from_spec(&ThinkSpec::Uniform { min_ms: 3.0, max_ms: 1.0 }, "w.think")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("w.think.max_ms"), "{err}");
        let err = ThinkTime::from_spec(&ThinkSpec::Samples { ms: vec![] }, "w.think").unwrap_err();
        assert!(err.to_string().contains("w.think.ms"));
    }
}
