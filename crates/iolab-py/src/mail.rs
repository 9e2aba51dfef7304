//! Bindings of the `iolab-mail` crate: the `MailServer` class (the SMTP
//! server of `iolab mail serve`, run on its own threads; every blocking
//! call releases the GIL so that Python's signal handlers run) and the
//! `MailLoad` class, the small SMTP load client. Bad settings become
//! `ValueError`; a port in use or an unusable queue, `OSError`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use iolab_mail::loadgen::{self, LoadSpec, Outcome};
use iolab_mail::{init_logging, queue_command, Delivery, MailError, MailServer, Network, QueueChoice, Request, ServerConfig, Via};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

fn to_py(e: MailError) -> PyErr {
    match e {
        MailError::Config(m) => PyValueError::new_err(m),
        other => PyOSError::new_err(other.to_string()),
    }
}

fn addr(field: &str, s: &str) -> PyResult<SocketAddr> {
    s.parse().map_err(|_| PyValueError::new_err(format!("{field}: {s:?} is not an address like 127.0.0.1:2525")))
}

fn secs(field: &str, s: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| PyValueError::new_err(format!("{field}: {s} is not a duration in seconds (>= 0)")))
}

/// The SMTP server; see `iolab.cli.mail`.
#[pyclass(name = "MailServer", module = "iolab._iolab", frozen)]
struct PyMailServer {
    inner: MailServer,
}

#[pymethods]
impl PyMailServer {
    #[new]
    #[pyo3(signature = (listen, queue, queue_dir, maildir=None, relay=None, hostname=None,
        max_message_bytes=None, max_recipients=None, max_line_bytes=None, max_connections=None,
        command_timeout=None, data_timeout=None, drain_timeout=None, delivery_concurrency=None,
        delivery_batch=None, max_in_flight=None, retry_base=None, retry_max=None, max_attempts=None,
        segment_size=None, batch_delay=None, visibility_timeout=None, delivery_timeout=None,
        mynetworks=None, relay_domains=None, local_domains=None, open_relay=false,
        max_connections_per_client=None, log=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        listen: &str,
        queue: &str,
        queue_dir: PathBuf,
        maildir: Option<PathBuf>,
        relay: Option<&str>,
        hostname: Option<String>,
        max_message_bytes: Option<usize>,
        max_recipients: Option<usize>,
        max_line_bytes: Option<usize>,
        max_connections: Option<usize>,
        command_timeout: Option<f64>,
        data_timeout: Option<f64>,
        drain_timeout: Option<f64>,
        delivery_concurrency: Option<usize>,
        delivery_batch: Option<usize>,
        max_in_flight: Option<usize>,
        retry_base: Option<f64>,
        retry_max: Option<f64>,
        max_attempts: Option<u32>,
        segment_size: Option<u64>,
        batch_delay: Option<f64>,
        visibility_timeout: Option<f64>,
        delivery_timeout: Option<f64>,
        mynetworks: Option<Vec<String>>,
        relay_domains: Option<Vec<String>>,
        local_domains: Option<Vec<String>>,
        open_relay: bool,
        max_connections_per_client: Option<usize>,
        log: bool,
    ) -> PyResult<Self> {
        let delivery = match (maildir, relay) {
            (Some(m), None) => Delivery::Maildir(m),
            (None, Some(r)) => Delivery::Relay(addr("relay", r)?),
            _ => return Err(PyValueError::new_err("give exactly one of maildir and relay")),
        };
        let queue = QueueChoice::parse(queue).map_err(to_py)?;
        let mut c = ServerConfig::new(addr("listen", listen)?, queue, queue_dir, delivery);
        macro_rules! set {
            ($field:ident) => {
                if let Some(v) = $field {
                    c.$field = v;
                }
            };
            ($field:ident, secs) => {
                if let Some(v) = $field {
                    c.$field = secs(stringify!($field), v)?;
                }
            };
        }
        set!(hostname);
        set!(max_message_bytes);
        set!(max_recipients);
        set!(max_line_bytes);
        set!(max_connections);
        set!(command_timeout, secs);
        set!(data_timeout, secs);
        set!(drain_timeout, secs);
        set!(delivery_concurrency);
        set!(delivery_batch);
        set!(max_in_flight);
        set!(retry_base, secs);
        set!(retry_max, secs);
        set!(max_attempts);
        set!(segment_size);
        set!(batch_delay, secs);
        set!(visibility_timeout, secs);
        set!(delivery_timeout, secs);
        if let Some(nets) = mynetworks {
            c.mynetworks = nets.iter().map(|n| Network::parse(n)).collect::<Result<_, _>>().map_err(to_py)?;
        }
        set!(relay_domains);
        set!(local_domains);
        c.open_relay = open_relay;
        set!(max_connections_per_client);
        if log {
            // Postfix-style log lines on stderr (docs/mail.md, "Logs").
            init_logging();
        }
        let inner = py.allow_threads(|| MailServer::start(c)).map_err(to_py)?;
        Ok(PyMailServer { inner })
    }

    /// The address it listens on, as "host:port".
    fn local_addr(&self) -> String {
        self.inner.local_addr().to_string()
    }

    /// Starts the drain (what SIGTERM does).
    fn shutdown(&self) {
        self.inner.shutdown();
    }

    /// Waits up to `timeout` seconds (forever with None) for the server to
    /// stop; True once it has. Releases the GIL.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let t = timeout.map(|s| secs("timeout", s)).transpose()?;
        Ok(py.allow_threads(|| self.inner.wait(t)))
    }

    /// Counters as a JSON object string.
    fn stats_json(&self) -> String {
        serde_json::to_string(&self.inner.stats()).unwrap_or_default()
    }

    /// Waits for the end; the final counters as JSON, or OSError if the
    /// queue failed.
    fn join_json(&self, py: Python<'_>) -> PyResult<String> {
        let s = py.allow_threads(|| self.inner.join()).map_err(to_py)?;
        Ok(serde_json::to_string(&s).unwrap_or_default())
    }
}

type PySent = (u64, usize, &'static str, u16, u64);

fn report_to_py(report: loadgen::LoadReport) -> (f64, u64, Vec<PySent>) {
    let sent = report
        .sent
        .iter()
        .map(|s| {
            let (name, code) = match s.outcome {
                Outcome::Accepted => ("accepted", 250),
                Outcome::Refused(c) => ("refused", c),
                Outcome::Unknown => ("unknown", 0),
            };
            (s.n, s.size, name, code, s.data_us)
        })
        .collect();
    (report.elapsed.as_secs_f64(), report.connect_failures, sent)
}

/// The load client running in the background (the benchmark's latency
/// probe beside smtp-source): `stop()` ends it, `result()` waits for it.
#[pyclass(name = "MailLoad", module = "iolab._iolab", frozen)]
struct PyMailLoad {
    stop: Arc<AtomicBool>,
    handle: std::sync::Mutex<Option<std::thread::JoinHandle<std::io::Result<loadgen::LoadReport>>>>,
}

#[pymethods]
impl PyMailLoad {
    #[new]
    #[pyo3(signature = (addr_, sessions, messages, sizes, tag, per_connection=1, pause=0.0, timeout=30.0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        addr_: &str,
        sessions: usize,
        messages: u64,
        sizes: Vec<(usize, f64)>,
        tag: String,
        per_connection: u64,
        pause: f64,
        timeout: f64,
    ) -> PyResult<Self> {
        if sessions == 0 || sessions > 100_000 {
            return Err(PyValueError::new_err("sessions: must be between 1 and 100000"));
        }
        if sizes.is_empty() || sizes.iter().any(|&(s, w)| s == 0 || s > 64 << 20 || !(w > 0.0 && w.is_finite())) {
            return Err(PyValueError::new_err("sizes: give (bytes, weight) pairs with 0 < bytes <= 64 MiB and weight > 0"));
        }
        if tag.is_empty() || !tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(PyValueError::new_err("tag: letters, digits and '-' only"));
        }
        let spec = LoadSpec {
            addr: addr("addr", addr_)?,
            sessions,
            messages,
            sizes,
            per_connection,
            tag,
            pause: secs("pause", pause)?,
            timeout: secs("timeout", timeout)?,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("iolab-mail-load".into())
            .spawn(move || loadgen::run_blocking(spec, flag))
            .map_err(|e| PyOSError::new_err(format!("load client: {e}")))?;
        Ok(PyMailLoad { stop, handle: std::sync::Mutex::new(Some(handle)) })
    }

    /// Asks the sessions to stop after their current message.
    fn stop(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Waits for the end: (elapsed_s, connect_failures, [(n, size, outcome,
    /// code, data_us)]). Releases the GIL.
    fn result(&self, py: Python<'_>) -> PyResult<(f64, u64, Vec<PySent>)> {
        let h = self.handle.lock().unwrap().take().ok_or_else(|| PyValueError::new_err("result() was already taken"))?;
        let r = py.allow_threads(|| h.join());
        match r {
            Ok(Ok(report)) => Ok(report_to_py(report)),
            Ok(Err(e)) => Err(PyOSError::new_err(format!("load client: {e}"))),
            Err(_) => Err(PyOSError::new_err("load client panicked")),
        }
    }
}

/// Runs a queue command (`iolab mail queue ...`) on the queue in
/// `queue_dir`: `request` is one JSON request (`{"op": "list"}`, see
/// iolab_mail::admin::Request). Returns how it reached the queue
/// (`server` or `direct`) and the answer's lines, as JSON texts. The
/// command's own log lines (when it opens the queue itself) go to stderr.
/// Bad requests become ValueError; an unreachable queue, OSError.
/// Releases the GIL.
#[pyfunction]
fn mail_queue(py: Python<'_>, queue_dir: PathBuf, request: &str) -> PyResult<(&'static str, Vec<String>)> {
    let req: Request = serde_json::from_str(request).map_err(|e| PyValueError::new_err(format!("request: {e}")))?;
    init_logging();
    let answer = py.allow_threads(|| queue_command(&queue_dir, &req)).map_err(to_py)?;
    let via = match answer.via {
        Via::Server => "server",
        Via::Direct => "direct",
    };
    let lines = answer.lines.iter().map(|l| serde_json::to_string(l).unwrap_or_default()).collect();
    Ok((via, lines))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyMailServer>()?;
    m.add_class::<PyMailLoad>()?;
    m.add_function(wrap_pyfunction!(mail_queue, m)?)?;
    Ok(())
}
