//! `validate()` and `disk_presets()`: the disk-model validation replay and
//! the list of built-in drives, for `iolab validate`.

use iolab_sim::disk::PRESETS;
use iolab_sim::Error;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use std::path::Path;

/// Library errors as Python exceptions: I/O problems are `OSError`,
/// everything else `ValueError`; the message names the file and line.
fn to_py(e: Error) -> PyErr {
    match e {
        Error::Io { .. } => PyOSError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Replays a DiskSim validation trace against the drive of a DiskSim
/// parameter file; returns the report as JSON.
#[pyfunction]
fn validate(py: Python<'_>, diskspecs_path: &str, trace_path: &str) -> PyResult<String> {
    let report = py
        .allow_threads(|| iolab_sim::validate::validate_files(Path::new(diskspecs_path), Path::new(trace_path)))
        .map_err(to_py)?;
    serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The built-in disk presets as (name, description) pairs.
#[pyfunction]
fn disk_presets() -> Vec<(&'static str, &'static str)> {
    PRESETS.to_vec()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(disk_presets, m)?)?;
    Ok(())
}
