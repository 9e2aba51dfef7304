//! Bindings of the `fastqueue` crate: the `FastQueue` and
//! `FilePerMessageQueue` classes, `fastqueue_check`, `fastqueue_repair`,
//! and the benchmark entry points. The Python wrapper is
//! `iolab/fastqueue.py`. Library errors become Python exceptions here:
//! `QueueError` (an `OSError`), `QueueLockedError` (a `QueueError`),
//! `QueueCorruptError` (a `ValueError`), and `ValueError` for bad input.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fastqueue::{Config, Durability, Error, QueueKind};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict};

create_exception!(_iolab, QueueError, PyOSError, "A queue's files could not be used.");
create_exception!(_iolab, QueueLockedError, QueueError, "Another process has the queue open.");
create_exception!(_iolab, QueueCorruptError, PyValueError, "Stored queue data fail their checks.");

fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Corrupt { .. } => QueueCorruptError::new_err(msg),
        Error::Locked { .. } | Error::AlreadyOpen { .. } => QueueLockedError::new_err(msg),
        Error::Invalid { .. }
        | Error::TooLarge { .. }
        | Error::UnknownId { .. }
        | Error::NotDelivered { .. }
        | Error::NotInFlight { .. }
        | Error::NotDead { .. } => PyValueError::new_err(msg),
        _ => QueueError::new_err(msg),
    }
}

fn seconds(field: &str, s: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| PyValueError::new_err(format!("{field}: {s} is not a duration in seconds (>= 0)")))
}

fn optional_seconds(field: &str, s: Option<f64>) -> PyResult<Option<Duration>> {
    s.map(|s| seconds(field, s)).transpose()
}

fn kind_name(k: QueueKind) -> &'static str {
    k.name()
}

type PyMessage = (u64, Py<PyBytes>, u32, &'static str, u64);

/// (id, size, attempts, kind, state, enqueued_ns, not_before_ns).
type BrowsedMessage = (u64, u32, u32, &'static str, &'static str, u64, u64);

fn message(py: Python<'_>, m: fastqueue::Message) -> PyMessage {
    (m.id, PyBytes::new(py, &m.payload).unbind(), m.attempts, kind_name(m.kind), m.enqueued_ns)
}

/// A queue handle that `close()` empties; the `Arc` lets a call run
/// without the GIL while another thread closes.
struct Slot<T>(std::sync::Mutex<Option<Arc<T>>>);

impl<T> Slot<T> {
    fn new(q: T) -> Self {
        Slot(std::sync::Mutex::new(Some(Arc::new(q))))
    }
    fn get(&self) -> PyResult<Arc<T>> {
        self.0.lock().unwrap().clone().ok_or_else(|| QueueError::new_err("fastqueue: queue is closed"))
    }
    fn take(&self) -> Option<Arc<T>> {
        self.0.lock().unwrap().take()
    }
}

/// The native FastQueue; see `iolab.fastqueue.FastQueue`.
#[pyclass(name = "FastQueue", module = "iolab._iolab", frozen)]
struct PyFastQueue {
    inner: Slot<fastqueue::FastQueue>,
}

impl PyFastQueue {
    fn get(&self) -> PyResult<Arc<fastqueue::FastQueue>> {
        self.inner.get()
    }
}

#[pymethods]
impl PyFastQueue {
    #[new]
    #[pyo3(signature = (path, segment_size, batch_bytes, batch_delay, durability, prefetch_bytes, max_attempts, spare_segments, visibility_timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        segment_size: u64,
        batch_bytes: usize,
        batch_delay: f64,
        durability: &str,
        prefetch_bytes: usize,
        max_attempts: u32,
        spare_segments: usize,
        visibility_timeout: Option<f64>,
    ) -> PyResult<Self> {
        let durability = match durability {
            "sync" => Durability::Sync,
            "os" => Durability::Os,
            other => {
                return Err(PyValueError::new_err(format!(
                    "durability: unknown value '{other}'; expected one of: sync, os"
                )))
            }
        };
        // `..default()`: a build with fastqueue's `loom` feature (for its
        // model checks) has one more field, only there.
        #[allow(clippy::needless_update)]
        let cfg = Config {
            segment_size,
            batch_bytes,
            batch_delay: seconds("batch_delay", batch_delay)?,
            durability,
            prefetch_bytes,
            max_attempts,
            spare_segments,
            visibility_timeout: optional_seconds("visibility_timeout", visibility_timeout)?,
            ..Config::default()
        };
        let q = py.allow_threads(|| fastqueue::FastQueue::open(&path, cfg)).map_err(to_py)?;
        Ok(PyFastQueue { inner: Slot::new(q) })
    }

    fn enqueue(&self, py: Python<'_>, payload: &[u8]) -> PyResult<u64> {
        let q = self.get()?;
        let payload = payload.to_vec();
        py.allow_threads(|| q.enqueue(&payload)).map_err(to_py)
    }

    fn enqueue_many(&self, py: Python<'_>, payloads: Vec<Vec<u8>>) -> PyResult<Vec<u64>> {
        let q = self.get()?;
        py.allow_threads(|| {
            let refs: Vec<&[u8]> = payloads.iter().map(|p| &p[..]).collect();
            q.enqueue_many(&refs)
        })
        .map_err(to_py)
    }

    /// (id, size, attempts, kind, state, enqueued_ns, not_before_ns) of
    /// every live message, by id.
    fn browse(&self, py: Python<'_>) -> PyResult<Vec<BrowsedMessage>> {
        let q = self.get()?;
        let list = py.allow_threads(|| q.browse()).map_err(to_py)?;
        Ok(list
            .into_iter()
            .map(|m| (m.id, m.size, m.attempts, kind_name(m.kind), m.state.name(), m.enqueued_ns, m.not_before_ns))
            .collect())
    }

    fn delete(&self, py: Python<'_>, ids: Vec<u64>) -> PyResult<()> {
        let q = self.get()?;
        py.allow_threads(|| q.delete(&ids)).map_err(to_py)
    }

    #[pyo3(signature = (ids=None))]
    fn requeue_dead(&self, py: Python<'_>, ids: Option<Vec<u64>>) -> PyResult<Vec<u64>> {
        let q = self.get()?;
        py.allow_threads(|| q.requeue_dead(ids.as_deref())).map_err(to_py)
    }

    /// Takes up to `max` messages into `batch` (its buffer reused from
    /// call to call), then copies their payloads, one after another, into
    /// `out` (grown when it must be; the caller has checked that nothing
    /// views it). Returns (id, start, length, attempts, kind, enqueued_ns)
    /// per message, `start` and `length` locating its payload in `out`.
    #[pyo3(signature = (batch, max, out, timeout=None, visibility=None))]
    #[allow(clippy::type_complexity)]
    fn dequeue_batch_into(
        &self,
        py: Python<'_>,
        batch: &Bound<'_, PyMessageBatch>,
        max: usize,
        out: &Bound<'_, PyByteArray>,
        timeout: Option<f64>,
        visibility: Option<f64>,
    ) -> PyResult<Vec<(u64, usize, usize, u32, &'static str, u64)>> {
        let q = self.get()?;
        let wait = optional_seconds("timeout", timeout)?;
        let visibility = match visibility {
            None => q.config().visibility_timeout,
            Some(v) if v > 0.0 || v.is_nan() => Some(seconds("visibility", v)?),
            Some(_) => None,
        };
        let mut b = batch.borrow_mut();
        let inner = &mut b.batch;
        py.allow_threads(|| q.dequeue_batch_into_with_visibility(max, wait, visibility, inner)).map_err(to_py)?;
        let total: usize = inner.iter().map(|m| m.payload.len()).sum();
        if out.len() < total {
            out.resize(total)?;
        }
        // SAFETY: the GIL is held and no Python code runs until the copy is
        // done, so nothing resizes or frees `out` meanwhile; `out` is at
        // least `total` bytes long (above).
        let dst = unsafe { out.as_bytes_mut() };
        let mut at = 0;
        let mut spans = Vec::with_capacity(inner.len());
        for m in inner.iter() {
            let len = m.payload.len();
            dst[at..at + len].copy_from_slice(m.payload);
            spans.push((m.id, at, len, m.attempts, kind_name(m.kind), m.enqueued_ns));
            at += len;
        }
        Ok(spans)
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let q = self.get()?;
        py.allow_threads(|| q.flush()).map_err(to_py)
    }

    /// `visibility`: `None` uses the queue's setting; a number of seconds
    /// sets it for this call; `0` (or less) means no timeout.
    #[pyo3(signature = (max, timeout=None, visibility=None))]
    fn dequeue_batch(
        &self,
        py: Python<'_>,
        max: usize,
        timeout: Option<f64>,
        visibility: Option<f64>,
    ) -> PyResult<Vec<PyMessage>> {
        let q = self.get()?;
        let wait = optional_seconds("timeout", timeout)?;
        let got = match visibility {
            None => py.allow_threads(|| q.dequeue_batch(max, wait)),
            Some(v) => {
                let v = if v > 0.0 || v.is_nan() { Some(seconds("visibility", v)?) } else { None };
                py.allow_threads(|| q.dequeue_batch_with_visibility(max, wait, v))
            }
        }
        .map_err(to_py)?;
        Ok(got.into_iter().map(|m| message(py, m)).collect())
    }

    fn extend_visibility(&self, py: Python<'_>, id: u64, by: f64) -> PyResult<()> {
        let q = self.get()?;
        let by = seconds("by", by)?;
        py.allow_threads(|| q.extend_visibility(id, by)).map_err(to_py)
    }

    fn dequeue_dead(&self, py: Python<'_>, max: usize) -> PyResult<Vec<PyMessage>> {
        let q = self.get()?;
        let got = py.allow_threads(|| q.dequeue_dead(max)).map_err(to_py)?;
        Ok(got.into_iter().map(|m| message(py, m)).collect())
    }

    fn ack_many(&self, py: Python<'_>, ids: Vec<u64>) -> PyResult<()> {
        let q = self.get()?;
        py.allow_threads(|| q.ack_many(&ids)).map_err(to_py)
    }

    fn nack(&self, py: Python<'_>, id: u64, delay: f64) -> PyResult<&'static str> {
        let q = self.get()?;
        let delay = seconds("delay", delay)?;
        py.allow_threads(|| q.nack(id, delay)).map(kind_name).map_err(to_py)
    }

    fn reserve_segments(&self, py: Python<'_>, count: usize) -> PyResult<()> {
        let q = self.get()?;
        py.allow_threads(|| q.reserve_segments(count)).map_err(to_py)
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.get()?.stats();
        let d = PyDict::new(py);
        d.set_item("ready", s.ready)?;
        d.set_item("retry", s.retry)?;
        d.set_item("dead", s.dead)?;
        d.set_item("in_flight", s.in_flight)?;
        d.set_item("expired", s.expired)?;
        d.set_item("segments", s.segments)?;
        d.set_item("free_segments", s.free_segments)?;
        d.set_item("enqueued", s.enqueued)?;
        d.set_item("acked", s.acked)?;
        d.set_item("deleted", s.deleted)?;
        d.set_item("rounds", s.rounds)?;
        d.set_item("syncs", s.syncs)?;
        d.set_item("pipelined", s.pipelined)?;
        d.set_item("sync_p50_us", s.sync_p50_us)?;
        d.set_item("sync_p99_us", s.sync_p99_us)?;
        d.set_item("bytes_written", s.bytes_written)?;
        d.set_item("recycled", s.recycled)?;
        d.set_item("open_messages", s.open.messages)?;
        d.set_item("open_bytes_scanned", s.open.bytes_scanned)?;
        d.set_item("open_seconds", s.open.duration.as_secs_f64())?;
        d.set_item("open_superseded", s.open.superseded)?;
        d.set_item(
            "open_torn_tail",
            s.open.torn_tail.map(|t| format!("{}: offset {}: {} ({} records dropped)", t.segment.display(), t.offset, t.reason, t.dropped_records)),
        )?;
        Ok(d)
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.get()?.len())
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.inner.take();
        match taken {
            Some(q) => py.allow_threads(move || {
                let r = q.close();
                drop(q); // releases the lock file
                r
            })
            .map_err(to_py),
            None => Ok(()),
        }
    }
}

/// The native side of `iolab.fastqueue.MessageBatch`: the Rust batch whose
/// buffer a consumer reuses from one `dequeue_batch_into` to the next.
#[pyclass(name = "MessageBatch", module = "iolab._iolab")]
struct PyMessageBatch {
    batch: fastqueue::MessageBatch,
}

#[pymethods]
impl PyMessageBatch {
    #[new]
    fn new() -> Self {
        PyMessageBatch { batch: fastqueue::MessageBatch::new() }
    }
}

/// The file-per-message baseline; see `iolab.fastqueue.FilePerMessageQueue`.
#[pyclass(name = "FilePerMessageQueue", module = "iolab._iolab", frozen)]
struct PyFilePerMessageQueue {
    inner: Slot<fastqueue::FilePerMessageQueue>,
}

impl PyFilePerMessageQueue {
    fn get(&self) -> PyResult<Arc<fastqueue::FilePerMessageQueue>> {
        self.inner.get()
    }
}

#[pymethods]
impl PyFilePerMessageQueue {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let q = py.allow_threads(|| fastqueue::FilePerMessageQueue::open(&path)).map_err(to_py)?;
        Ok(PyFilePerMessageQueue { inner: Slot::new(q) })
    }

    fn enqueue(&self, py: Python<'_>, payload: &[u8]) -> PyResult<u64> {
        let q = self.get()?;
        let payload = payload.to_vec();
        py.allow_threads(|| q.enqueue(&payload)).map_err(to_py)
    }

    fn dequeue_batch(&self, py: Python<'_>, max: usize) -> PyResult<Vec<PyMessage>> {
        let q = self.get()?;
        let got = py.allow_threads(|| q.dequeue_batch(max)).map_err(to_py)?;
        Ok(got.into_iter().map(|m| message(py, m)).collect())
    }

    fn ack(&self, py: Python<'_>, id: u64) -> PyResult<()> {
        let q = self.get()?;
        py.allow_threads(|| q.ack(id)).map_err(to_py)
    }

    fn nack(&self, id: u64) -> PyResult<()> {
        self.get()?.nack(id).map_err(to_py)
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.get()?.len())
    }

    fn close(&self) {
        self.inner.take();
    }
}

fn problems<'py>(py: Python<'py>, list: &[fastqueue::Problem]) -> PyResult<Vec<Bound<'py, PyDict>>> {
    list.iter()
        .map(|p| {
            let d = PyDict::new(py);
            d.set_item("segment", p.segment.display().to_string())?;
            d.set_item("offset", p.offset)?;
            d.set_item("reason", &p.reason)?;
            d.set_item("kind", format!("{:?}", p.kind))?;
            d.set_item("message", p.to_error().to_string())?;
            Ok(d)
        })
        .collect()
}

/// Reads a queue directory and reports its state and problems.
#[pyfunction]
fn fastqueue_check<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let r = py.allow_threads(|| fastqueue::check(&path)).map_err(to_py)?;
    let d = PyDict::new(py);
    d.set_item("segments", r.segments)?;
    d.set_item("free_segments", r.free_segments)?;
    d.set_item("live_messages", r.live_messages)?;
    d.set_item("deleted_records", r.deleted_records)?;
    d.set_item("live_bytes", r.live_bytes)?;
    d.set_item("bytes_scanned", r.bytes_scanned)?;
    d.set_item("manifest", r.manifest)?;
    d.set_item("closed_cleanly", r.closed_cleanly)?;
    d.set_item("problems", problems(py, &r.problems)?)?;
    d.set_item(
        "torn_tail",
        r.torn_tail.map(|t| format!("{}: offset {}: {} ({} records)", t.segment.display(), t.offset, t.reason, t.dropped_records)),
    )?;
    Ok(d)
}

/// Mends a queue directory's problems, keeping every valid record.
#[pyfunction]
fn fastqueue_repair<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let r = py.allow_threads(|| fastqueue::repair(&path)).map_err(to_py)?;
    let d = PyDict::new(py);
    d.set_item("mended", problems(py, &r.mended)?)?;
    let q: Vec<String> = r.quarantined.iter().map(|p| p.display().to_string()).collect();
    d.set_item("quarantined", q)?;
    Ok(d)
}

/// Runs one benchmark case of a Rust peer; returns its figures. `read_api`
/// is how FastQueue and the file-per-message baseline read back
/// (`fastqueue::bench::ReadApi`: "batch", "mapped" or "vec").
#[pyfunction]
#[pyo3(signature = (peer, size, producers, seconds, max_bytes, dir, batch_delay, read_api = "batch"))]
#[allow(clippy::too_many_arguments)]
fn fastqueue_bench<'py>(
    py: Python<'py>,
    peer: String,
    size: usize,
    producers: usize,
    seconds: f64,
    max_bytes: u64,
    dir: PathBuf,
    batch_delay: f64,
    read_api: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let api = fastqueue::bench::ReadApi::parse(read_api).map_err(PyValueError::new_err)?;
    let case = fastqueue::bench::Case {
        peer,
        size,
        producers,
        seconds,
        max_bytes,
        dir,
        batch_delay: self::seconds("batch_delay", batch_delay)?,
    };
    case.validate().map_err(PyValueError::new_err)?;
    let o = py.allow_threads(|| fastqueue::bench::run_with(&case, api)).map_err(QueueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("messages", o.messages)?;
    d.set_item("write_seconds", o.write_seconds)?;
    d.set_item("write_msgs_per_s", o.write_msgs_per_s)?;
    d.set_item("write_mb_per_s", o.write_mb_per_s)?;
    d.set_item("p50_us", o.p50_us)?;
    d.set_item("p99_us", o.p99_us)?;
    d.set_item("read_msgs_per_s", o.read_msgs_per_s)?;
    d.set_item("cold_read_msgs_per_s", o.cold_read_msgs_per_s)?;
    d.set_item("sync_p50_us", o.sync_p50_us)?;
    d.set_item("sync_p99_us", o.sync_p99_us)?;
    d.set_item("read_api", o.read_api)?;
    Ok(d)
}

/// p50 and p99 latency (us) of a 4 KiB write and its fdatasync in `dir`.
#[pyfunction]
fn fastqueue_sync_probe(py: Python<'_>, dir: PathBuf, count: usize) -> PyResult<(f64, f64)> {
    py.allow_threads(|| fastqueue::bench::sync_probe(&dir, count)).map_err(QueueError::new_err)
}

/// Times the open of a queue of `bytes` (filled first, then evicted from
/// the page cache).
#[pyfunction]
fn fastqueue_recovery<'py>(py: Python<'py>, dir: PathBuf, bytes: u64) -> PyResult<Bound<'py, PyDict>> {
    let r = py.allow_threads(|| fastqueue::bench::recovery(&dir, bytes)).map_err(QueueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("bytes", r.bytes)?;
    d.set_item("messages", r.messages)?;
    d.set_item("seconds", r.seconds)?;
    Ok(d)
}

/// Called from `lib.rs`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyFastQueue>()?;
    m.add_class::<PyFilePerMessageQueue>()?;
    m.add_class::<PyMessageBatch>()?;
    m.add("QueueError", py.get_type::<QueueError>())?;
    m.add("QueueLockedError", py.get_type::<QueueLockedError>())?;
    m.add("QueueCorruptError", py.get_type::<QueueCorruptError>())?;
    m.add("FASTQUEUE_PEERS", fastqueue::bench::PEERS.to_vec())?;
    let limits = PyDict::new(py);
    limits.set_item("producers", fastqueue::bench::MAX_PRODUCERS)?;
    limits.set_item("seconds", fastqueue::bench::MAX_SECONDS)?;
    limits.set_item("size", fastqueue::bench::MAX_SIZE)?;
    limits.set_item("bytes", fastqueue::bench::MAX_BYTES)?;
    m.add("FASTQUEUE_BENCH_LIMITS", limits)?;
    m.add_function(wrap_pyfunction!(fastqueue_check, m)?)?;
    m.add_function(wrap_pyfunction!(fastqueue_repair, m)?)?;
    m.add_function(wrap_pyfunction!(fastqueue_bench, m)?)?;
    m.add_function(wrap_pyfunction!(fastqueue_recovery, m)?)?;
    m.add_function(wrap_pyfunction!(fastqueue_sync_probe, m)?)?;
    Ok(())
}
