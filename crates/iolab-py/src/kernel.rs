//! What `iolab kernel` needs from the simulator's disk models: the seek
//! curve of a preset, as the `wpcas` module's sysfs tunables take it
//! (docs/kernel.md), so that the kernel's STE uses the same curve as the
//! simulated WPCAS and no number is copied by hand.

use iolab_sim::disk::hdd::HddParams;
use iolab_sim::disk::presets;
use iolab_sim::disk::seek::SeekCurve;
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
/// its mean cylinder size: the module's model has one.
#[pyfunction]
fn wpcas_seek_tunables(preset: &str) -> PyResult<String> {
    let p = hdd_preset(preset)?;
    let SeekCurve::TwoPiece { linear_from, sqrt_a, sqrt_b, lin_a, lin_b, first_ten: None } = p.mechanics.seek
    else {
        return Err(PyValueError::new_err(format!(
            "disk '{preset}' has a seek curve the module cannot take (a table, or explicit first ten distances)"
        )));
    };
    let capacity = p.layout.capacity();
    let cylinders = p.layout.cylinders as u64;
    let ns = |ms: f64| (ms * 1e6).round() as u64;
    Ok(json!({
        "capacity_sectors": capacity,
        "cylinders": cylinders,
        "zones": p.layout.zones.len(),
        "tunables": {
            "seek_cyl_sectors": capacity.div_ceil(cylinders),
            "seek_linear_cyl": linear_from,
            "seek_sqrt_a_ns": ns(sqrt_a),
            "seek_sqrt_b_ns": ns(sqrt_b),
            "seek_lin_a_ns": ns(lin_a),
            "seek_lin_b_ps": (lin_b * 1e9).round() as u64,
        }
    })
    .to_string())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(wpcas_seek_tunables, m)?)?;
    Ok(())
}
