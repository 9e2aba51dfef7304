//! Statistics the reports need without importing scipy (its import alone
//! costs half a second of every command's start-up): the Student t
//! quantile, from statrs.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The `p` quantile of Student's t distribution with `df` degrees of
/// freedom (scipy's `stats.t.ppf(p, df)`; equal to it within 1e-11 for
/// df up to 10,000).
#[pyfunction]
fn student_t_quantile(p: f64, df: f64) -> PyResult<f64> {
    if !(p > 0.0 && p < 1.0) {
        return Err(PyValueError::new_err(format!("p must be within (0, 1), got {p}")));
    }
    let t = StudentsT::new(0.0, 1.0, df)
        .map_err(|_| PyValueError::new_err(format!("degrees of freedom must be positive, got {df}")))?;
    Ok(t.inverse_cdf(p))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(student_t_quantile, m)?)?;
    Ok(())
}
