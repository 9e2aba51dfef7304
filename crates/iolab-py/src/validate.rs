//! `validate()`, `disk_report()` and `disk_presets()`: the disk-model
//! validation replay, what a `[disk]` table builds, and the built-in drives,
//! for `iolab validate` and `iolab run`.

use iolab_sim::disk::{DiskSpec, PRESETS};
use iolab_sim::validate::{Options, DISKSIM_DEMERITS};
use iolab_sim::Error;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

/// Library errors as Python exceptions: I/O problems are `OSError`,
/// everything else `ValueError`; the message names the file and line.
fn to_py(e: Error) -> PyErr {
    match e {
        Error::Io { .. } => PyOSError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Replays a DiskSim validation trace against the drive of a DiskSim
/// parameter file; returns the report as JSON. `per_request` names a CSV
/// file to write one row per request to.
#[pyfunction]
#[pyo3(signature = (diskspecs_path, trace_path, zero_latency=false, per_request=None))]
fn validate(
    py: Python<'_>,
    diskspecs_path: &str,
    trace_path: &str,
    zero_latency: bool,
    per_request: Option<String>,
) -> PyResult<String> {
    let opts = Options { zero_latency, per_request: per_request.map(PathBuf::from) };
    let report = py
        .allow_threads(|| iolab_sim::validate::validate_files(Path::new(diskspecs_path), Path::new(trace_path), &opts))
        .map_err(to_py)?;
    serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// What the `[disk]` table `disk_json` builds (paths relative to
/// `base_dir`), as lines of text.
#[pyfunction]
fn disk_report(disk_json: &str, base_dir: &str) -> PyResult<Vec<String>> {
    let spec: DiskSpec = serde_json::from_str(disk_json).map_err(|e| PyValueError::new_err(format!("disk: {e}")))?;
    iolab_sim::disk::report(&spec, Path::new(base_dir)).map_err(to_py)
}

/// DiskSim 4.0's own demerit on each drive of its validation suite, as
/// (disksim_disk name, ms) pairs.
#[pyfunction]
fn disksim_demerits() -> Vec<(&'static str, f64)> {
    DISKSIM_DEMERITS.to_vec()
}

/// The built-in disk presets as (name, description) pairs.
#[pyfunction]
fn disk_presets() -> Vec<(&'static str, &'static str)> {
    PRESETS.to_vec()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(disk_report, m)?)?;
    m.add_function(wrap_pyfunction!(disksim_demerits, m)?)?;
    m.add_function(wrap_pyfunction!(disk_presets, m)?)?;
    Ok(())
}
