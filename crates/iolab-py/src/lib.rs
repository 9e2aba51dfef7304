//! The native module `iolab._iolab`. Each component registers its own
//! functions and classes from its own file; Python exceptions are made only
//! here, at the boundary (library errors become `ValueError`/`OSError`).

use pyo3::prelude::*;

mod emu;
mod fastqueue;
mod mail;
mod sim;
mod stats;
mod validate;

#[pymodule]
fn _iolab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    sim::register(m)?;
    stats::register(m)?;
    validate::register(m)?;
    fastqueue::register(m)?;
    mail::register(m)?;
    emu::register(m)?;
    Ok(())
}
