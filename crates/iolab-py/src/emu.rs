//! Bindings of the emulated disk: the NBD server (`Emulator`, which serves
//! on its own threads, so Python only waits for it with the GIL released)
//! and the cost model it charges requests with (`EmuModel`, for replaying
//! a request log).

use iolab_emu::{Config, Emulator, Error, Listen, Model, Op, Opened};
use iolab_sim::disk::DiskSpec;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

fn to_py(e: Error) -> PyErr {
    match e {
        Error::Io { .. } | Error::Listen { .. } => PyOSError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

fn disk_spec(preset: Option<String>, diskspecs: Option<String>, fixed_ms: Option<f64>) -> DiskSpec {
    DiskSpec { preset, diskspecs, fixed_ms, ..DiskSpec::default() }
}

/// A running emulated disk. It serves from the moment it is made until
/// `stop()` (or `shutdown()`); the object going away stops it too.
#[pyclass(name = "Emulator", module = "iolab._iolab", frozen)]
pub struct PyEmulator {
    inner: Emulator,
}

#[pymethods]
impl PyEmulator {
    #[new]
    #[pyo3(signature = (image, *, socket = None, port = None, preset = None, diskspecs = None, fixed_ms = None,
                        zero_latency = false, log = None, read_only = false, sync = true, verbose = false,
                        realtime = true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        image: PathBuf,
        socket: Option<PathBuf>,
        port: Option<u16>,
        preset: Option<String>,
        diskspecs: Option<String>,
        fixed_ms: Option<f64>,
        zero_latency: bool,
        log: Option<PathBuf>,
        read_only: bool,
        sync: bool,
        verbose: bool,
        realtime: bool,
    ) -> PyResult<Self> {
        let listen = match (socket, port) {
            (Some(s), None) => Listen::Unix(s),
            (None, Some(p)) => Listen::Tcp(p),
            _ => return Err(PyValueError::new_err("give either a socket path or a TCP port")),
        };
        let mut cfg = Config::new(disk_spec(preset, diskspecs, fixed_ms), image, listen);
        cfg.zero_latency = zero_latency;
        cfg.log = log;
        cfg.read_only = read_only;
        cfg.sync = sync;
        cfg.verbose = verbose;
        cfg.realtime = realtime;
        let inner = py.allow_threads(|| Emulator::start(cfg)).map_err(to_py)?;
        Ok(PyEmulator { inner })
    }

    /// `unix:PATH` or `tcp:127.0.0.1:PORT`.
    #[getter]
    fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// What disk is being emulated.
    #[getter]
    fn describe(&self) -> String {
        self.inner.describe().to_string()
    }

    #[getter]
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }

    /// Whether the serving threads run at real-time priority.
    #[getter]
    fn realtime(&self) -> bool {
        self.inner.realtime()
    }

    /// `(how, previous_size)`: "created", "extended" (from previous_size
    /// bytes) or "existing".
    #[getter]
    fn image_opened(&self) -> (&'static str, u64) {
        match self.inner.image_opened() {
            Opened::Created => ("created", 0),
            Opened::Extended { from_bytes } => ("extended", from_bytes),
            Opened::Existing => ("existing", self.inner.capacity_bytes()),
        }
    }

    /// The counters and timing error so far, as JSON.
    fn stats(&self) -> String {
        serde_json::to_string(&self.inner.stats()).expect("stats always serialize")
    }

    /// Asks the emulator to stop; returns at once.
    fn stop(&self) {
        self.inner.stop();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving a `with` block stops the emulator and waits for it.
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.inner.stop();
        while !self.wait(py, 1.0)? {}
        Ok(false)
    }

    /// Waits up to `timeout` seconds for the emulator to stop (releasing
    /// the GIL): True once stopped. Raises OSError if the final log flush
    /// or image sync failed.
    fn wait(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let d = Duration::from_secs_f64(timeout.clamp(0.0, 3600.0));
        match py.allow_threads(|| self.inner.wait(d)) {
            None => Ok(false),
            Some(Ok(())) => Ok(true),
            Some(Err(e)) => Err(PyOSError::new_err(e)),
        }
    }
}

/// The emulator's cost model on its own: charges one operation at a
/// model instant exactly as the server does. For replaying a log.
#[pyclass(name = "EmuModel", module = "iolab._iolab", frozen)]
pub struct PyEmuModel {
    // A disk model is `Send` but not `Sync`.
    inner: Mutex<Model>,
}

#[pymethods]
impl PyEmuModel {
    /// `disk_json`: the `disk` object of a log's header (a `[disk]` spec).
    #[new]
    #[pyo3(signature = (disk_json, zero_latency = false))]
    fn new(disk_json: &str, zero_latency: bool) -> PyResult<Self> {
        let spec: DiskSpec =
            serde_json::from_str(disk_json).map_err(|e| PyValueError::new_err(format!("disk spec: {e}")))?;
        let inner = Model::build(&spec, zero_latency, std::path::Path::new(".")).map_err(to_py)?;
        Ok(PyEmuModel { inner: Mutex::new(inner) })
    }

    #[getter]
    fn describe(&self) -> String {
        self.inner.lock().unwrap().describe()
    }

    #[getter]
    fn capacity_bytes(&self) -> u64 {
        self.inner.lock().unwrap().capacity_bytes()
    }

    /// Charges `op` ("read", "write", "flush", "trim", "write_zeroes") at
    /// `start_ns`: `(service, seek, rotation, transfer, overhead, cylinders,
    /// cache)`, times in ns.
    #[pyo3(signature = (op, offset, length, fua, start_ns))]
    fn charge(
        &self,
        op: &str,
        offset: u64,
        length: u64,
        fua: bool,
        start_ns: u64,
    ) -> PyResult<(u64, u64, u64, u64, u64, u64, &'static str)> {
        let op = Op::parse(op).ok_or_else(|| PyValueError::new_err(format!("unknown operation '{op}'")))?;
        let s = self.inner.lock().unwrap().charge(op, offset, length, fua, start_ns);
        let cache = if s.total_ns > 0 { iolab_emu::model::cache_name(s.cache) } else { "" };
        Ok((s.total_ns, s.seek_ns, s.rotation_ns, s.transfer_ns, s.overhead_ns, s.seek_cylinders, cache))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEmulator>()?;
    m.add_class::<PyEmuModel>()?;
    Ok(())
}
