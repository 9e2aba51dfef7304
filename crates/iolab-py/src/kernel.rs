//! What `iolab kernel` needs from the simulator's disk models: the seek
//! curve of a preset, as the `wpcas` module's sysfs tunables take it
//! (docs/kernel.md), so that the kernel's STE uses the same curve as the
//! simulated WPCAS and no number is copied by hand.

use iolab_sim::disk::hdd::HddParams;
use iolab_sim::disk::presets;
use iolab_sim::disk::DiskSpec;
use iolab_sim::workload::{iozone, WorkloadSpec};
use std::path::Path;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;

fn hdd_preset(name: &str) -> PyResult<HddParams> {
    match name {
        presets::HP97560 => Ok(presets::hp97560_params()),
        presets::MODERN7200 => Ok(presets::modern7200_params()),
        _ => Err(PyValueError::new_err(format!(
            "no seek model for disk '{name}': the kernel comparison knows {} and {}",
            presets::HP97560,
            presets::MODERN7200
        ))),
    }
}

/// The `wpcas` tunables (`seek_*`) for a disk preset, as JSON, with the
/// capacity and cylinder count they were derived from. A zoned disk gets
/// its mean cylinder size: the module's model has one. The same curve the
/// simulator's `kernel:wpcas` takes by default (`PositionCost::module_seek`).
#[pyfunction]
fn wpcas_seek_tunables(preset: &str) -> PyResult<String> {
    let p = hdd_preset(preset)?;
    let spec = DiskSpec { preset: Some(preset.to_string()), ..DiskSpec::default() };
    let disk = iolab_sim::disk::build(&spec, Path::new(".")).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let Some(curve) = disk.position_cost().module_seek() else {
        return Err(PyValueError::new_err(format!(
            "disk '{preset}' has a seek curve the module cannot take (a table, or explicit first ten distances)"
        )));
    };
    let tunables: serde_json::Map<String, serde_json::Value> =
        curve.tunables().iter().map(|(k, v)| (k.to_string(), json!(*v as u64))).collect();
    Ok(json!({
        "capacity_sectors": p.layout.capacity(),
        "cylinders": p.layout.cylinders as u64,
        "zones": p.layout.zones.len(),
        "tunables": tunables,
    })
    .to_string())
}

/// The first sector of each file of an IOzone `[workload]` (JSON, `kind =
/// "iozone"`) on a disk of `capacity_sectors`, placed as the simulator
/// places them, so that fio jobs on the raw device use the same sectors.
#[pyfunction]
fn iozone_file_starts(workload_json: &str, capacity_sectors: u64) -> PyResult<Vec<u64>> {
    let spec: WorkloadSpec =
        serde_json::from_str(workload_json).map_err(|e| PyValueError::new_err(format!("workload: {e}")))?;
    let WorkloadSpec::Iozone(spec) = spec else {
        return Err(PyValueError::new_err("workload: expected kind = \"iozone\""));
    };
    iozone::file_starts(&spec, capacity_sectors).map_err(|e| PyValueError::new_err(e.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(wpcas_seek_tunables, m)?)?;
    m.add_function(wrap_pyfunction!(iozone_file_starts, m)?)?;
    Ok(())
}
