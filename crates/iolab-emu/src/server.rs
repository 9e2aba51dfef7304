//! The server around the drive: a listener (Unix socket, or TCP on the
//! loopback address), a thread per connection that runs the handshake and
//! then reads requests, stamps their arrival and queues them, and the drive
//! thread that serves the queue ([`crate::drive`]).
//!
//! Stopping ([`Emulator::stop`]): the listener closes (and its socket file
//! goes), every connection stops being read, the drive serves what is
//! already queued, flushes the log and syncs the image, and the sockets
//! close. NBD asks a server that shuts down to serve in-flight requests
//! first (`doc/proto.md`, "Terminating the transmission phase").

use crate::clock::{tighten_timer_slack, try_realtime, ModelClock};
use crate::drive::{Drive, Item};
use crate::outbox::Conn;
use crate::error::{Error, Result};
use crate::image::{Image, Opened};
use crate::listen::{Listen, Listener, Stream};
use crate::log::{Header, RequestLog, FORMAT_VERSION};
use crate::model::Model;
use crate::nbd::handshake::{self, Export, Outcome};
use crate::nbd::proto::*;
use crate::nbd::request::{self, Command};
use crate::stats::{Shared, Stats};
use iolab_sim::disk::DiskSpec;
use std::collections::HashMap;
use std::io::{self, Read};
use std::net::Shutdown;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Requests queued for the drive at most; a connection that has this many
/// waiting is not read until one is served (so a client cannot make the
/// server buffer without bound). QEMU keeps at most 16 in flight.
pub const QUEUE_LIMIT: usize = 64;

/// How often the listener looks at the stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(20);

/// Everything `iolab emu` is given.
#[derive(Clone, Debug)]
pub struct Config {
    /// The disk model, as `[disk]` in an experiment spec (queue depth 1).
    pub disk: DiskSpec,
    /// Where a relative DiskSim path is resolved from.
    pub base_dir: PathBuf,
    /// Serve every request in 0 ns (the capacity is still the model's).
    pub zero_latency: bool,
    pub image: PathBuf,
    pub listen: Listen,
    /// Write the request log here (CSV, see [`crate::log`]).
    pub log: Option<PathBuf>,
    pub read_only: bool,
    /// fdatasync the image on FLUSH and FUA writes (default on).
    pub sync: bool,
    /// Print connection notices on stderr.
    pub verbose: bool,
    /// Run the drive and connection threads at real-time priority where
    /// permitted ([`crate::clock::try_realtime`]; default on).
    pub realtime: bool,
    /// A client that has not taken a reply within this long is dropped
    /// (default 10 s). The drive never waits for a client: replies a client
    /// has not taken wait in its connection's outbox (`outbox`).
    pub reply_timeout: Duration,
}

impl Config {
    /// A config with the defaults: log off, read-write, sync on.
    pub fn new(disk: DiskSpec, image: impl Into<PathBuf>, listen: Listen) -> Config {
        Config {
            disk,
            base_dir: PathBuf::from("."),
            zero_latency: false,
            image: image.into(),
            listen,
            log: None,
            read_only: false,
            sync: true,
            verbose: false,
            realtime: true,
            reply_timeout: Duration::from_secs(10),
        }
    }
}

struct Control {
    stop: AtomicBool,
    /// Open connections, to stop reading them at stop.
    conns: Mutex<HashMap<u64, Stream>>,
    next_conn: AtomicU64,
    done: Mutex<Option<std::result::Result<(), String>>>,
    done_cv: Condvar,
    verbose: bool,
}

impl Control {
    fn notice(&self, message: String) {
        if self.verbose {
            eprintln!("iolab emu: {message}");
        }
    }
}

/// A running emulator.
pub struct Emulator {
    control: Arc<Control>,
    shared: Arc<Shared>,
    address: String,
    describe: String,
    capacity_bytes: u64,
    opened: Opened,
    realtime: bool,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Emulator {
    /// Builds the model, opens the image and the log, binds the address
    /// and starts serving. Every error is reported before anything serves.
    pub fn start(cfg: Config) -> Result<Emulator> {
        let mut disk = cfg.disk.clone();
        if let Some(p) = &disk.diskspecs {
            // The log records an absolute path, so a replay finds the file.
            let abs = cfg.base_dir.join(p);
            disk.diskspecs = Some(
                std::fs::canonicalize(&abs)
                    .unwrap_or(abs)
                    .display()
                    .to_string(),
            );
        }
        let model = Model::build(&disk, cfg.zero_latency, &cfg.base_dir)?;
        let capacity_bytes = model.capacity_bytes();
        // The address first: a busy socket or port must not leave a new
        // image behind, and a refused image must not leave a socket.
        let listener = Listener::bind(&cfg.listen)?;
        let (image, opened) = match Image::open(&cfg.image, capacity_bytes, cfg.read_only) {
            Ok(x) => x,
            Err(e) => {
                listener.remove();
                return Err(e);
            }
        };
        // Whether threads may run at real-time priority: asked once, by a
        // thread that ends at once.
        let realtime = cfg.realtime && thread::spawn(try_realtime).join().unwrap_or(false);
        let clock = ModelClock::start();
        let describe = model.describe();
        let log = match &cfg.log {
            None => None,
            Some(path) => {
                let header = Header {
                    version: FORMAT_VERSION,
                    iolab_version: crate::VERSION,
                    disk: disk.clone(),
                    describe: describe.clone(),
                    zero_latency: cfg.zero_latency,
                    capacity_bytes,
                    image: std::fs::canonicalize(&cfg.image)
                        .unwrap_or(cfg.image.clone())
                        .display()
                        .to_string(),
                    origin_unix_ns: clock.origin_unix_ns(),
                    realtime,
                    clock: "CLOCK_MONOTONIC",
                };
                match RequestLog::create(path, &header) {
                    Ok(log) => Some(log),
                    Err(e) => {
                        // Undo what this start made: the socket, a new image.
                        listener.remove();
                        if opened == Opened::Created {
                            drop(image);
                            let _ = std::fs::remove_file(&cfg.image);
                        }
                        return Err(Error::io(path, e));
                    }
                }
            }
        };
        let mut flags = FLAG_HAS_FLAGS
            | FLAG_SEND_FLUSH
            | FLAG_SEND_FUA
            | FLAG_SEND_TRIM
            | FLAG_SEND_WRITE_ZEROES;
        if cfg.read_only {
            flags |= FLAG_READ_ONLY;
        }
        if model.rotational() {
            flags |= FLAG_ROTATIONAL;
        }
        let export = Arc::new(Export {
            size_bytes: capacity_bytes,
            transmission_flags: flags,
            description: format!("iolab emu: {describe}"),
        });
        let control = Arc::new(Control {
            stop: AtomicBool::new(false),
            conns: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(1),
            done: Mutex::new(None),
            done_cv: Condvar::new(),
            verbose: cfg.verbose,
        });
        let shared = Arc::new(Shared::default());
        let address = listener.address();
        let (tx, rx) = mpsc::sync_channel::<Item>(QUEUE_LIMIT);
        let drive = Drive {
            model,
            image,
            log,
            clock,
            sync: cfg.sync,
            free_ns: 0,
            seq: 0,
            shared: shared.clone(),
        };
        let drive_thread = {
            let control = control.clone();
            thread::Builder::new()
                .name("iolab-emu-drive".into())
                .spawn(move || {
                    tighten_timer_slack();
                    if realtime {
                        try_realtime();
                    }
                    run_drive(drive, rx, &control)
                })
                .map_err(|e| Error::io("thread", e))?
        };
        let accept_thread = {
            let (control, shared) = (control.clone(), shared.clone());
            let ctx = ConnCtx {
                export,
                size: capacity_bytes,
                read_only: cfg.read_only,
                clock,
                realtime,
                reply_timeout: cfg.reply_timeout.max(Duration::from_millis(1)),
            };
            thread::Builder::new()
                .name("iolab-emu-accept".into())
                .spawn(move || run_acceptor(listener, tx, &control, &shared, ctx))
                .map_err(|e| Error::io("thread", e))?
        };
        Ok(Emulator {
            control,
            shared,
            address,
            describe,
            capacity_bytes,
            opened,
            realtime,
            threads: Mutex::new(vec![accept_thread, drive_thread]),
        })
    }

    /// `unix:PATH` or `tcp:127.0.0.1:PORT`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The model's description (or the zero-latency mode's).
    pub fn describe(&self) -> &str {
        &self.describe
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// What opening the image did (created, extended, used as it was).
    pub fn image_opened(&self) -> Opened {
        self.opened
    }

    /// Whether the drive thread runs at real-time priority.
    pub fn realtime(&self) -> bool {
        self.realtime
    }

    pub fn stats(&self) -> Stats {
        self.shared.snapshot()
    }

    /// Asks the emulator to stop (returns at once; see [`Emulator::wait`]).
    pub fn stop(&self) {
        if self.control.stop.swap(true, Ordering::SeqCst) {
            return;
        }
        // Readers see end-of-file; replies can still be written.
        for s in self.control.conns.lock().unwrap().values() {
            let _ = s.shutdown(Shutdown::Read);
        }
    }

    /// Waits up to `timeout` for the emulator to have stopped; `Some` once
    /// it has, with the error of the final log flush or image sync if any.
    pub fn wait(&self, timeout: Duration) -> Option<std::result::Result<(), String>> {
        let g = self.control.done.lock().unwrap();
        let (g, _) = self
            .control
            .done_cv
            .wait_timeout_while(g, timeout, |d| d.is_none())
            .unwrap();
        let out = g.clone();
        drop(g);
        if out.is_some() {
            for t in self.threads.lock().unwrap().drain(..) {
                let _ = t.join();
            }
        }
        out
    }

    /// Stops, waits, and returns the final counters.
    pub fn shutdown(&self) -> std::result::Result<Stats, String> {
        self.stop();
        loop {
            if let Some(r) = self.wait(Duration::from_secs(1)) {
                return r.map(|()| self.stats());
            }
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

fn run_drive(mut drive: Drive, rx: mpsc::Receiver<Item>, control: &Control) {
    let mut result = Ok(());
    let mut dirty = false;
    let mut last_flush = Instant::now();
    loop {
        let idle = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(item) => {
                if let Err(e) = drive.serve(item) {
                    result = Err(format!("request log: {e}"));
                    control.notice(format!("stopping: request log: {e}"));
                    break;
                }
                dirty = true;
                false
            }
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        // The log reaches its file when the disk has been idle for 100 ms,
        // and at least every second under load.
        if dirty && (idle || last_flush.elapsed() > Duration::from_secs(1)) {
            if let Some(Err(e)) = drive.log.as_mut().map(|l| l.flush()) {
                result = Err(format!("request log: {e}"));
                break;
            }
            dirty = false;
            last_flush = Instant::now();
        }
    }
    if result.is_err() {
        // Stop taking requests; the owner sees the error from `wait`.
        control.stop.store(true, Ordering::SeqCst);
        for s in control.conns.lock().unwrap().values() {
            let _ = s.shutdown(Shutdown::Read);
        }
    }
    // Serve what is still queued (replies go out; the log may have failed).
    while let Ok(item) = rx.try_recv() {
        let _ = drive.serve(item);
    }
    if let Err(e) = drive.finish() {
        result = result.and(Err(format!("at stop: {e}")));
    }
    for s in control.conns.lock().unwrap().values() {
        let _ = s.shutdown(Shutdown::Both);
    }
    *control.done.lock().unwrap() = Some(result);
    control.done_cv.notify_all();
}

#[derive(Clone)]
struct ConnCtx {
    export: Arc<Export>,
    size: u64,
    read_only: bool,
    clock: ModelClock,
    /// Connection threads too: their stamp is the request's arrival.
    realtime: bool,
    reply_timeout: Duration,
}

fn run_acceptor(
    listener: Listener,
    tx: SyncSender<Item>,
    control: &Arc<Control>,
    shared: &Arc<Shared>,
    ctx: ConnCtx,
) {
    while !control.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok(stream) => {
                let id = control.next_conn.fetch_add(1, Ordering::SeqCst);
                let (tx, control, shared, ctx) =
                    (tx.clone(), control.clone(), shared.clone(), ctx.clone());
                let spawned = thread::Builder::new()
                    .name(format!("iolab-emu-conn{id}"))
                    .spawn(move || run_connection(id, stream, tx, &control, &shared, &ctx));
                if let Err(e) = spawned {
                    eprintln!("iolab emu: connection {id}: cannot start a thread: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => thread::sleep(ACCEPT_POLL),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("iolab emu: accept: {e}");
                thread::sleep(ACCEPT_POLL);
            }
        }
    }
    listener.remove();
}

fn run_connection(
    id: u64,
    stream: Stream,
    tx: SyncSender<Item>,
    control: &Control,
    shared: &Arc<Shared>,
    ctx: &ConnCtx,
) {
    if ctx.realtime {
        try_realtime();
    }
    let registered = stream
        .try_clone()
        .map(|s| control.conns.lock().unwrap().insert(id, s));
    if registered.is_err() || control.stop.load(Ordering::SeqCst) {
        control.conns.lock().unwrap().remove(&id);
        return;
    }
    let mut reader = stream;
    let end = match handshake::negotiate(&mut reader, &ctx.export) {
        Ok(Outcome::Closed) => "closed during the handshake".to_string(),
        Err(e) => format!("dropped during the handshake: {e}"),
        Ok(Outcome::Transmission) => {
            shared.connected();
            control.notice(format!("connection {id}: open"));
            match reader.try_clone() {
                Err(e) => format!("dropped: {e}"),
                // The one drive must not hang on a client that stopped
                // reading its replies (`outbox`).
                Ok(writer) => match Conn::new(id, writer, ctx.reply_timeout, shared.clone()) {
                    Ok(conn) => transmit(&mut reader, &conn, &tx, ctx),
                    Err(e) => format!("dropped: {e}"),
                },
            }
        }
    };
    control.notice(format!("connection {id}: {end}"));
    control.conns.lock().unwrap().remove(&id);
}

/// Reads requests until the client disconnects; returns how it ended.
fn transmit(reader: &mut Stream, conn: &Arc<Conn>, tx: &SyncSender<Item>, ctx: &ConnCtx) -> String {
    loop {
        let header = match request::read_header(reader) {
            Ok(Some(h)) => h,
            Ok(None) => return "closed".into(),
            Err(e) => return format!("dropped: {e}"),
        };
        let arrival_ns = ctx.clock.now_ns();
        let item = match request::check(&header, ctx.size, ctx.read_only) {
            Command::Disconnect => {
                let _ = tx.send(Item::Disconnect(conn.clone()));
                return "disconnected (NBD_CMD_DISC)".into();
            }
            Command::Io {
                op,
                fua,
                no_hole,
                error,
            } => {
                let mut payload = Vec::new();
                if header.kind == CMD_WRITE {
                    let read = if header.length <= MAX_PAYLOAD {
                        payload.resize(header.length as usize, 0);
                        reader.read_exact(&mut payload)
                    } else {
                        // Too large to hold: skip it to stay in step.
                        let n = io::copy(&mut reader.take(header.length as u64), &mut io::sink());
                        n.and_then(|n| {
                            (n == header.length as u64)
                                .then_some(())
                                .ok_or_else(|| io::ErrorKind::UnexpectedEof.into())
                        })
                    };
                    if let Err(e) = read {
                        return format!("dropped in a write's data: {e}");
                    }
                    if error.is_some() {
                        payload = Vec::new();
                    }
                }
                Item::Request {
                    conn: conn.clone(),
                    header,
                    op,
                    fua,
                    no_hole,
                    error,
                    arrival_ns,
                    payload,
                }
            }
        };
        if tx.send(item).is_err() {
            return "closed: the emulator stopped".into();
        }
    }
}
