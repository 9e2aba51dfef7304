//! Bindings of the simulator: parse a spec, list its jobs, run one job with
//! the GIL released (so Python threads run jobs on every core), and the
//! presets. Results cross the boundary as JSON text, the same bytes the
//! Rust library produces.

use iolab_sim::engine::RunControl;
use iolab_sim::experiment::{self, Format, Job};
use iolab_sim::{disk, sched, workload, Error};
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyValueError};
use pyo3::prelude::*;
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Library errors become Python exceptions here, and only here, each as
/// one line (control characters from the input escaped).
pub fn to_py(e: Error) -> PyErr {
    let text = iolab_sim::error::one_line(&e.to_string());
    match e {
        Error::Io { .. } => PyOSError::new_err(text),
        Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        _ => PyValueError::new_err(text),
    }
}

/// Cancel flag and progress counter shared with a running job.
#[pyclass(name = "RunControl", module = "iolab._iolab")]
pub struct PyRunControl {
    inner: Arc<RunControl>,
}

#[pymethods]
impl PyRunControl {
    #[new]
    fn new() -> Self {
        PyRunControl { inner: Arc::new(RunControl::default()) }
    }
    /// Ask every job using this control to stop soon.
    fn cancel(&self) {
        self.inner.cancel.store(true, Ordering::Relaxed);
    }
    /// Requests completed so far by the job(s) using this control.
    #[getter]
    fn completed(&self) -> u64 {
        self.inner.completed.load(Ordering::Relaxed)
    }
}

/// A checked experiment spec.
#[pyclass(name = "Experiment", module = "iolab._iolab", frozen)]
pub struct PyExperiment {
    inner: experiment::Experiment,
}

#[pymethods]
impl PyExperiment {
    /// Parse `text` (TOML or JSON) named `file`, applying `overrides`
    /// (`[(key, value), ...]`); raises ValueError naming the line or field.
    /// With `control`, the GIL is released while a trace file is read, the
    /// bytes read so far show in `control.completed`, and `control.cancel()`
    /// stops the read (KeyboardInterrupt).
    #[staticmethod]
    #[pyo3(signature = (text, file, format = "toml", overrides = Vec::new(), control = None))]
    fn parse(
        py: Python<'_>,
        text: &str,
        file: &str,
        format: &str,
        overrides: Vec<(String, String)>,
        control: Option<PyRef<'_, PyRunControl>>,
    ) -> PyResult<Self> {
        let fmt = match format {
            "toml" => Format::Toml,
            "json" => Format::Json,
            other => return Err(PyValueError::new_err(format!("unknown spec format '{other}' (toml or json)"))),
        };
        let inner = match control {
            Some(c) => {
                let ctl = c.inner.clone();
                py.allow_threads(|| experiment::parse_controlled(text, file, fmt, &overrides, &ctl))
            }
            None => experiment::parse(text, file, fmt, &overrides),
        }
        .map_err(to_py)?;
        Ok(PyExperiment { inner })
    }

    /// The spec with every default filled in, as JSON.
    fn spec_json(&self) -> String {
        self.inner.spec_json().to_string()
    }

    /// Names (labels) of the scheduler configurations, in spec order.
    fn scheduler_names(&self) -> Vec<String> {
        self.inner.spec.schedulers.iter().map(|s| s.display_name().to_string()).collect()
    }

    /// Every job as `(scheduler_index, seed)`.
    fn jobs(&self) -> Vec<(usize, u64)> {
        self.inner.jobs().into_iter().map(|j| (j.scheduler, j.seed)).collect()
    }

    /// Run one job; returns its result as JSON. Releases the GIL.
    fn run_job(&self, py: Python<'_>, scheduler: usize, seed: u64, control: &PyRunControl) -> PyResult<String> {
        if scheduler >= self.inner.spec.schedulers.len() {
            return Err(PyValueError::new_err(format!("no scheduler #{scheduler} in this spec")));
        }
        let ctl = control.inner.clone();
        let result = py.allow_threads(|| self.inner.run_job(Job { scheduler, seed }, &ctl));
        let r = result.map_err(to_py)?;
        Ok(serde_json::to_string(&r).expect("results always serialize"))
    }
}

/// Disks, workloads and schedulers (with tunables and defaults) as JSON.
#[pyfunction]
fn presets() -> String {
    let disks: Vec<_> = disk::PRESETS.iter().map(|(n, d)| json!({"name": n, "summary": d})).collect();
    let workloads: Vec<_> = workload::presets()
        .into_iter()
        .map(|(n, d, spec)| json!({"name": n, "summary": d, "spec": spec}))
        .collect();
    let schedulers: Vec<_> = sched::all()
        .into_iter()
        .map(|s| json!({"name": s.name, "aliases": s.aliases, "summary": s.summary, "tunables": s.tunables}))
        .collect();
    json!({"disks": disks, "workloads": workloads, "schedulers": schedulers}).to_string()
}

/// The workload spec of a named workload, as JSON.
#[pyfunction]
fn workload_preset(name: &str) -> PyResult<String> {
    let spec = workload::preset(name).map_err(to_py)?;
    Ok(serde_json::to_string(&spec).expect("specs always serialize"))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRunControl>()?;
    m.add_class::<PyExperiment>()?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(workload_preset, m)?)?;
    m.add("RNG_ALGORITHM", iolab_sim::rng::RNG_ALGORITHM)?;
    m.add("SIM_VERSION", iolab_sim::VERSION)?;
    // The bounds the command checks before it builds anything (see iolab-sim's limits.rs).
    m.add("MAX_SEEDS", iolab_sim::limits::MAX_SEEDS)?;
    m.add("MAX_JOBS", iolab_sim::limits::MAX_JOBS)?;
    Ok(())
}
