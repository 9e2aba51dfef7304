//! The benchmark (feature `bench`): FastQueue and its peers under the same
//! load. Used by the `fastqueue-bench` binary and by `iolab queue bench`.
//!
//! One case: `producers` threads each enqueue messages of `size` bytes, as
//! fast as the store acknowledges them (each call returns only when the
//! message is durable), for `seconds` or until `max_bytes` are stored.
//! Then one consumer reads everything back and deletes it: the first half
//! from the page cache, as the writes left it ("warm"), the second half
//! after the store's files were dropped from the page cache
//! (`posix_fadvise(DONTNEED)`, "cold": a queue read long after it was
//! written). Peers:
//!
//! - `fastqueue`: this crate, durable mode, default batch settings;
//! - `file-per-message`: [`FilePerMessageQueue`] (qmail/Postfix style);
//! - `queue-file`: the Rust `queue-file` crate (one file, `add` with
//!   synchronous writes), behind a mutex since it is single-threaded;
//! - `sqlite-wal`: a plain SQLite table in WAL mode with `synchronous=FULL`,
//!   one writer thread committing up to 128 waiting rows per transaction;
//! - `device`: the device's own limit: one thread writing the same bytes
//!   sequentially into a preallocated file, one `fdatasync` per MiB.
//!
//! How the consumer reads ([`ReadApi`]): FastQueue and the file-per-message
//! baseline read either into one [`MessageBatch`] reused from batch to
//! batch (the default, [`run`]) or into a fresh `Vec<u8>` per message
//! (`dequeue_batch`, [`run_with`]); both stores get the same choice, so
//! the ratio compares the stores and not their consumers' allocators. The
//! other peers have only the second kind. [`ReadApi::Mapped`] reads
//! FastQueue without a copy (`dequeue_batch_mapped`) and gives the
//! baseline the best read it has, the reused batch.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{Config, FastQueue, FilePerMessageQueue, MessageBatch};

/// The stores the benchmark knows.
pub const PEERS: &[&str] = &["fastqueue", "file-per-message", "queue-file", "sqlite-wal", "device"];

/// One benchmark case.
#[derive(Clone, Debug)]
pub struct Case {
    /// One of [`PEERS`].
    pub peer: String,
    /// Payload bytes per message.
    pub size: usize,
    /// Producer threads.
    pub producers: usize,
    /// Longest time spent writing.
    pub seconds: f64,
    /// Most payload bytes written.
    pub max_bytes: u64,
    /// Directory for the store's files (created, emptied afterwards).
    pub dir: PathBuf,
    /// FastQueue's batch timer.
    pub batch_delay: Duration,
}

/// Most producer threads a case may start.
pub const MAX_PRODUCERS: usize = 1024;
/// Longest writing time of a case, seconds.
pub const MAX_SECONDS: f64 = 3600.0;
/// Largest message: the largest payload of a default (64 MiB) segment.
pub const MAX_SIZE: usize = (64 << 20) - 4096 - 64;
/// Most bytes a case may write (64 GiB).
pub const MAX_BYTES: u64 = 64 << 30;

impl Case {
    /// Checks every field; the message names the field and its limit.
    pub fn validate(&self) -> Result<(), String> {
        if !PEERS.contains(&self.peer.as_str()) {
            return Err(format!("peer: unknown peer '{}'; expected one of: {}", self.peer, PEERS.join(", ")));
        }
        if self.size == 0 || self.size > MAX_SIZE {
            return Err(format!("size: {} is not between 1 and {MAX_SIZE} bytes", self.size));
        }
        if self.producers == 0 || self.producers > MAX_PRODUCERS {
            return Err(format!("producers: {} is not between 1 and {MAX_PRODUCERS}", self.producers));
        }
        if !(self.seconds > 0.0 && self.seconds <= MAX_SECONDS) {
            return Err(format!("seconds: {} is not a number of seconds above 0 and at most {MAX_SECONDS}", self.seconds));
        }
        if self.max_bytes == 0 || self.max_bytes > MAX_BYTES {
            return Err(format!("max_bytes: {} is not between 1 and {MAX_BYTES}", self.max_bytes));
        }
        if self.batch_delay > Duration::from_secs(10) {
            return Err(format!("batch_delay: {:?} is more than 10 s", self.batch_delay));
        }
        Ok(())
    }
}

/// How the consumer of a case reads its messages back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadApi {
    /// `dequeue_batch_into` one [`MessageBatch`] kept for the whole read
    /// phase: no allocation per message (FastQueue and file-per-message).
    #[default]
    Batch,
    /// `dequeue_batch`: every payload a freshly allocated `Vec<u8>`.
    Vec,
    /// FastQueue: `dequeue_batch_mapped` into one kept [`MessageBatch`]
    /// (payloads borrowed from the segments' mappings, no copy). The
    /// file-per-message baseline has no such read and uses its best, the
    /// kept batch of [`ReadApi::Batch`] (one `read` per file).
    Mapped,
}

impl ReadApi {
    /// The name used in the benchmark's output and options.
    pub fn name(self) -> &'static str {
        match self {
            ReadApi::Batch => "batch",
            ReadApi::Vec => "vec",
            ReadApi::Mapped => "mapped",
        }
    }

    /// Parses [`ReadApi::name`].
    pub fn parse(s: &str) -> Result<ReadApi, String> {
        match s {
            "batch" => Ok(ReadApi::Batch),
            "vec" => Ok(ReadApi::Vec),
            "mapped" => Ok(ReadApi::Mapped),
            _ => Err(format!("read API: unknown '{s}'; expected batch, vec or mapped")),
        }
    }
}

/// What one case measured.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Messages written (acknowledged).
    pub messages: u64,
    /// Seconds spent writing.
    pub write_seconds: f64,
    /// Messages per second written.
    pub write_msgs_per_s: f64,
    /// Payload MB (10^6 bytes) per second written.
    pub write_mb_per_s: f64,
    /// Median acknowledgement latency, microseconds.
    pub p50_us: f64,
    /// 99th-percentile acknowledgement latency, microseconds.
    pub p99_us: f64,
    /// Messages per second read back and deleted, the first half of the
    /// messages, from the page cache (0: not measured).
    pub read_msgs_per_s: f64,
    /// The same for the second half, after the store's files were evicted
    /// from the page cache (0: not measured).
    pub cold_read_msgs_per_s: f64,
    /// FastQueue only: median and 99th percentile of its own `fdatasync`
    /// calls during the case, microseconds (0 for the others).
    pub sync_p50_us: f64,
    /// See `sync_p50_us`.
    pub sync_p99_us: f64,
    /// How the read phase read ([`ReadApi::name`]; "" when there was
    /// none): "batch" only for the stores that have a reusable batch.
    pub read_api: &'static str,
}

/// A store under test.
trait Store: Sync {
    fn put(&self, payload: &[u8]) -> Result<(), String>;
    /// Reads and deletes up to `max` messages in order, each deletion
    /// durable where the store makes it so, before it returns; returns the
    /// count.
    fn drain(&self, max: u64) -> Result<u64, String>;
    /// The read API `drain` uses.
    fn read_api(&self) -> ReadApi {
        ReadApi::Vec
    }
    /// Latency of the store's own syncs (p50, p99 us), where it knows.
    fn sync_latency(&self) -> (f64, f64) {
        (0.0, 0.0)
    }
}

/// A store's consumer batch, kept across its `drain` calls as a consumer
/// would keep it for its life, and whether FastQueue fills it mapped
/// (`None`: the `Vec` API).
type Reuse = Option<(Mutex<MessageBatch>, bool)>;

/// Messages per dequeue in the read phase.
const READ_BATCH: usize = 512;

/// The consumer's batch, grown before the clock starts to what a batch of
/// `size`-byte messages needs (at most 64 MiB; beyond, it grows while
/// timed): a long-running consumer pays that growth once in its life, not
/// in each read phase, and the read phase of a 1 s case is only a few
/// batches long. Both stores get the same.
fn reuse(api: ReadApi, size: usize) -> Reuse {
    let bytes = (READ_BATCH * crate::format::record_len(size)).min(64 << 20);
    match api {
        ReadApi::Vec => None,
        ReadApi::Batch => Some((Mutex::new(MessageBatch::with_capacity(bytes)), false)),
        // FastQueue's mapped batch needs no buffer for large records, but
        // the baseline reads into it: both get the same.
        ReadApi::Mapped => Some((Mutex::new(MessageBatch::with_capacity(bytes)), true)),
    }
}

/// The read API a store with this `Reuse` uses.
fn api_of(reuse: &Reuse) -> ReadApi {
    match reuse {
        None => ReadApi::Vec,
        Some((_, false)) => ReadApi::Batch,
        Some((_, true)) => ReadApi::Mapped,
    }
}

struct Fq(FastQueue, Reuse);

impl Store for Fq {
    fn put(&self, payload: &[u8]) -> Result<(), String> {
        self.0.enqueue(payload).map(|_| ()).map_err(|e| e.to_string())
    }
    /// Acknowledges each batch without waiting (its delete flags are
    /// written and synced while the next batch is read), and waits at the
    /// end until every acknowledgement is durable.
    fn drain(&self, max: u64) -> Result<u64, String> {
        let mut n = 0;
        let mut last = None;
        let mapped = self.1.as_ref().is_some_and(|r| r.1);
        let mut kept = self.1.as_ref().map(|b| b.0.lock().unwrap());
        while n < max {
            let want = (READ_BATCH as u64).min(max - n) as usize;
            let ids: Vec<u64> = match kept.as_deref_mut() {
                Some(batch) => {
                    if mapped {
                        self.0.dequeue_batch_mapped(want, None, batch)
                    } else {
                        self.0.dequeue_batch_into(want, None, batch)
                    }
                    .map_err(|e| e.to_string())?;
                    std::hint::black_box(&*batch);
                    batch.ids()
                }
                None => {
                    let batch = self.0.dequeue_batch(want, None).map_err(|e| e.to_string())?;
                    std::hint::black_box(&batch);
                    batch.iter().map(|m| m.id).collect()
                }
            };
            if ids.is_empty() {
                break;
            }
            n += ids.len() as u64;
            last = Some(self.0.ack_many_nowait(&ids).map_err(|e| e.to_string())?);
        }
        if let Some(b) = kept.as_deref_mut() {
            // Lets go of the pins (a mapped batch): the read phase ends
            // with everything acknowledged, as a consumer that finished
            // would leave it.
            b.clear();
        }
        if let Some(round) = last {
            self.0.wait_durable(round).map_err(|e| e.to_string())?;
        }
        Ok(n)
    }
    fn sync_latency(&self) -> (f64, f64) {
        let s = self.0.stats();
        (s.sync_p50_us, s.sync_p99_us)
    }
    fn read_api(&self) -> ReadApi {
        api_of(&self.1)
    }
}

struct Fpm(FilePerMessageQueue, Reuse);

impl Store for Fpm {
    fn put(&self, payload: &[u8]) -> Result<(), String> {
        self.0.enqueue(payload).map(|_| ()).map_err(|e| e.to_string())
    }
    fn drain(&self, max: u64) -> Result<u64, String> {
        let mut n = 0;
        // Mapped or not: the baseline's best read is the kept batch.
        let mut kept = self.1.as_ref().map(|b| b.0.lock().unwrap());
        loop {
            let want = (READ_BATCH as u64).min(max - n) as usize;
            let ids: Vec<u64> = match kept.as_deref_mut() {
                Some(batch) => {
                    self.0.dequeue_batch_into(want, batch).map_err(|e| e.to_string())?;
                    std::hint::black_box(&*batch);
                    batch.ids()
                }
                None => {
                    let batch = self.0.dequeue_batch(want).map_err(|e| e.to_string())?;
                    std::hint::black_box(&batch);
                    batch.iter().map(|m| m.id).collect()
                }
            };
            if ids.is_empty() {
                return Ok(n);
            }
            for id in ids {
                self.0.ack(id).map_err(|e| e.to_string())?;
                n += 1;
            }
        }
    }
    fn read_api(&self) -> ReadApi {
        api_of(&self.1)
    }
}

struct Qf(Mutex<queue_file::QueueFile>);

impl Store for Qf {
    fn put(&self, payload: &[u8]) -> Result<(), String> {
        self.0.lock().unwrap().add(payload).map_err(|e| e.to_string())
    }
    fn drain(&self, max: u64) -> Result<u64, String> {
        let mut q = self.0.lock().unwrap();
        let mut n = 0;
        while n < max {
            let Some(bytes) = q.peek().map_err(|e| e.to_string())? else { break };
            std::hint::black_box(&bytes);
            q.remove().map_err(|e| e.to_string())?;
            n += 1;
        }
        Ok(n)
    }
}

type Reply = mpsc::Sender<Result<(), String>>;
/// A row to insert and where to say that it is committed.
type Insert = (Vec<u8>, Reply);

/// SQLite in WAL mode; one writer thread commits what is waiting (up to
/// 128 rows) in one transaction, then answers the producers.
struct Sqlite {
    path: PathBuf,
    tx: Mutex<Option<mpsc::Sender<Insert>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

fn sqlite_open(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let c = rusqlite::Connection::open(path)?;
    c.pragma_update(None, "journal_mode", "WAL")?;
    c.pragma_update(None, "synchronous", "FULL")?;
    c.execute("CREATE TABLE IF NOT EXISTS q (id INTEGER PRIMARY KEY, body BLOB NOT NULL)", [])?;
    Ok(c)
}

impl Sqlite {
    fn new(dir: &Path) -> Result<Sqlite, String> {
        let path = dir.join("queue.sqlite");
        let mut conn = sqlite_open(&path).map_err(|e| e.to_string())?;
        let (tx, rx) = mpsc::channel::<Insert>();
        let writer = std::thread::spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut batch = vec![first];
                while batch.len() < 128 {
                    match rx.try_recv() {
                        Ok(item) => batch.push(item),
                        Err(_) => break,
                    }
                }
                let result = (|| {
                    let t = conn.transaction()?;
                    {
                        let mut ins = t.prepare_cached("INSERT INTO q (body) VALUES (?1)")?;
                        for (body, _) in &batch {
                            ins.execute([body])?;
                        }
                    }
                    t.commit()
                })()
                .map_err(|e| e.to_string());
                for (_, reply) in batch {
                    let _ = reply.send(result.clone());
                }
            }
        });
        Ok(Sqlite { path, tx: Mutex::new(Some(tx)), writer: Mutex::new(Some(writer)) })
    }
}

impl Store for Sqlite {
    fn put(&self, payload: &[u8]) -> Result<(), String> {
        let (reply, answer) = mpsc::channel();
        let tx = self.tx.lock().unwrap().clone().ok_or("closed")?;
        tx.send((payload.to_vec(), reply)).map_err(|e| e.to_string())?;
        answer.recv().map_err(|e| e.to_string())?
    }
    fn drain(&self, max: u64) -> Result<u64, String> {
        self.tx.lock().unwrap().take();
        if let Some(w) = self.writer.lock().unwrap().take() {
            let _ = w.join();
        }
        let mut conn = sqlite_open(&self.path).map_err(|e| e.to_string())?;
        let mut n = 0;
        while n < max {
            let t = conn.transaction().map_err(|e| e.to_string())?;
            let (count, last) = {
                let mut sel = t
                    .prepare_cached("SELECT id, body FROM q ORDER BY id LIMIT ?1")
                    .map_err(|e| e.to_string())?;
                let mut rows = sel.query([512.min(max - n) as i64]).map_err(|e| e.to_string())?;
                let (mut count, mut last) = (0u64, 0i64);
                while let Some(row) = rows.next().map_err(|e| e.to_string())? {
                    last = row.get(0).map_err(|e| e.to_string())?;
                    let body: Vec<u8> = row.get(1).map_err(|e| e.to_string())?;
                    std::hint::black_box(body);
                    count += 1;
                }
                (count, last)
            };
            if count == 0 {
                return Ok(n);
            }
            t.execute("DELETE FROM q WHERE id <= ?1", [last]).map_err(|e| e.to_string())?;
            t.commit().map_err(|e| e.to_string())?;
            n += count;
        }
        Ok(n)
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// Runs the producers against `store`; returns (messages, seconds,
/// latencies in ns, sorted).
fn produce(store: &dyn Store, case: &Case) -> Result<(u64, f64, Vec<u64>), String> {
    let budget = (case.max_bytes / case.size.max(1) as u64).max(1);
    let taken = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let error = Mutex::new(None);
    let deadline = Duration::from_secs_f64(case.seconds);
    let start = Instant::now();
    let mut lat = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..case.producers)
            .map(|t| {
                let (taken, stop, error) = (&taken, &stop, &error);
                s.spawn(move || {
                    let mut payload = vec![0u8; case.size];
                    let mut mine = Vec::new();
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        if taken.fetch_add(1, Ordering::Relaxed) >= budget || start.elapsed() >= deadline {
                            break;
                        }
                        for (k, b) in payload.iter_mut().take(16).enumerate() {
                            *b = (t as u64 * 31 + i + k as u64) as u8;
                        }
                        let t0 = Instant::now();
                        if let Err(e) = store.put(&payload) {
                            error.lock().unwrap().get_or_insert(e);
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                        mine.push(t0.elapsed().as_nanos() as u64);
                        i += 1;
                    }
                    mine
                })
            })
            .collect();
        for h in handles {
            lat.extend(h.join().unwrap());
        }
    });
    let secs = start.elapsed().as_secs_f64();
    if let Some(e) = error.into_inner().unwrap() {
        return Err(e);
    }
    lat.sort_unstable();
    Ok((lat.len() as u64, secs, lat))
}

/// The device's limit: the same bytes written sequentially into a
/// preallocated file, one `fdatasync` per MiB.
fn device(case: &Case) -> Result<Outcome, String> {
    use std::os::unix::fs::FileExt;
    let path = case.dir.join("device.bin");
    let total = case.max_bytes.max(1 << 20).next_multiple_of(1 << 20);
    let f = scratch_file(&path)?;
    let chunk = vec![0x5Au8; 1 << 20];
    let mut at = 0;
    while at < total {
        f.write_all_at(&chunk, at).map_err(|e| e.to_string())?;
        at += chunk.len() as u64;
    }
    f.sync_all().map_err(|e| e.to_string())?;
    let deadline = Duration::from_secs_f64(case.seconds);
    let start = Instant::now();
    let mut lat = Vec::new();
    let mut written = 0u64;
    while written < total && start.elapsed() < deadline {
        let t0 = Instant::now();
        f.write_all_at(&chunk, written).map_err(|e| e.to_string())?;
        f.sync_data().map_err(|e| e.to_string())?;
        lat.push(t0.elapsed().as_nanos() as u64);
        written += chunk.len() as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let _ = std::fs::remove_file(&path);
    let messages = written / case.size.max(1) as u64;
    Ok(Outcome {
        messages,
        write_seconds: secs,
        write_msgs_per_s: messages as f64 / secs,
        write_mb_per_s: written as f64 / secs / 1e6,
        p50_us: percentile(&lat, 0.5),
        p99_us: percentile(&lat, 0.99),
        read_msgs_per_s: 0.0,
        cold_read_msgs_per_s: 0.0,
        sync_p50_us: 0.0,
        sync_p99_us: 0.0,
        read_api: "",
    })
}

/// A new file to write into, in a directory the bench made: created, never
/// opened if something is there (no truncation, no link followed).
fn scratch_file(path: &Path) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Gets `dir` ready for a case: made if absent, or an empty directory. The
/// bench deletes `dir` whole afterwards, so it refuses one that holds
/// anything it did not make (issue 27: `iolab queue bench --dir D` deleted
/// the user's `D/fastqueue`, `D/file-per-message`, `D/recovery`).
pub fn fresh_dir(dir: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {
            let mut entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            if entries.next().is_some() {
                return Err(format!(
                    "{}: not empty; the benchmark works only in a new or empty directory (it deletes it afterwards)",
                    dir.display()
                ));
            }
            Ok(())
        }
        Ok(_) => Err(format!("{}: not a directory (the benchmark's scratch directory must be one it can make)", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
        }
        Err(e) => Err(format!("{}: {e}", dir.display())),
    }
}

/// Runs one case, its consumer reading with [`ReadApi::Batch`] where the
/// store has it. The directory is emptied afterwards.
pub fn run(case: &Case) -> Result<Outcome, String> {
    run_with(case, ReadApi::Batch)
}

/// [`run`] with the read API of the consumer chosen (FastQueue and
/// file-per-message; the others always read a `Vec` per message).
pub fn run_with(case: &Case, api: ReadApi) -> Result<Outcome, String> {
    case.validate()?;
    fresh_dir(&case.dir)?;
    let result = run_in(case, api);
    let _ = std::fs::remove_dir_all(&case.dir);
    result
}

fn run_in(case: &Case, api: ReadApi) -> Result<Outcome, String> {
    let store: Box<dyn Store> = match case.peer.as_str() {
        "fastqueue" => {
            let cfg = Config { batch_delay: case.batch_delay, ..Config::default() };
            let q = FastQueue::open(case.dir.join("fq"), cfg).map_err(|e| e.to_string())?;
            // Segments are written once before the clock starts, as a
            // long-running queue would have recycled them.
            let per_seg = q.config().segment_size - 8192;
            let need = (case.max_bytes.min(case.size as u64 * 4_000_000)).div_ceil(per_seg) as usize + 1;
            q.reserve_segments(need).map_err(|e| e.to_string())?;
            Box::new(Fq(q, reuse(api, case.size)))
        }
        "file-per-message" => Box::new(Fpm(
            FilePerMessageQueue::open(case.dir.join("fpm")).map_err(|e| e.to_string())?,
            reuse(api, case.size),
        )),
        "queue-file" => {
            let q = queue_file::QueueFile::open(case.dir.join("queue.qf")).map_err(|e| e.to_string())?;
            Box::new(Qf(Mutex::new(q)))
        }
        "sqlite-wal" => Box::new(Sqlite::new(&case.dir)?),
        "device" => return device(case),
        other => return Err(format!("unknown peer '{other}'; expected one of: {}", PEERS.join(", "))),
    };
    let (messages, secs, lat) = produce(&*store, case)?;
    let (sync_p50_us, sync_p99_us) = store.sync_latency();
    // The first half read as the writes left it (in the page cache), the
    // second half after the store's files were dropped from the cache.
    let warm_count = messages.div_ceil(2);
    let t0 = Instant::now();
    let warm = store.drain(warm_count)?;
    let warm_secs = t0.elapsed().as_secs_f64();
    evict(&case.dir);
    let t0 = Instant::now();
    let cold = store.drain(u64::MAX)?;
    let cold_secs = t0.elapsed().as_secs_f64();
    if warm + cold != messages {
        return Err(format!("{}: wrote {messages} messages, read back {}", case.peer, warm + cold));
    }
    let rate = |n: u64, secs: f64| if n > 0 && secs > 0.0 { n as f64 / secs } else { 0.0 };
    Ok(Outcome {
        messages,
        write_seconds: secs,
        write_msgs_per_s: messages as f64 / secs,
        write_mb_per_s: (messages * case.size as u64) as f64 / secs / 1e6,
        p50_us: percentile(&lat, 0.5),
        p99_us: percentile(&lat, 0.99),
        read_msgs_per_s: rate(warm, warm_secs),
        cold_read_msgs_per_s: rate(cold, cold_secs),
        sync_p50_us,
        sync_p99_us,
        read_api: store.read_api().name(),
    })
}

/// What one sync costs here and now: `count` rounds of a 4 KiB write into
/// a preallocated file and its `fdatasync`, in `dir`; returns the p50 and
/// p99 latency in microseconds. The benchmark takes it at the start of
/// each group of cases, as the "one sync" of the latency goal.
pub fn sync_probe(dir: &Path, count: usize) -> Result<(f64, f64), String> {
    use std::os::unix::fs::FileExt;
    if count == 0 || count > 100_000 {
        return Err(format!("count: {count} is not between 1 and 100000"));
    }
    fresh_dir(dir)?;
    let path = dir.join("sync-probe.bin");
    let f = scratch_file(&path);
    let f = match f {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_dir(dir);
            return Err(e);
        }
    };
    let block = vec![0x3Cu8; 4096];
    let slots = 256u64;
    for i in 0..slots {
        f.write_all_at(&block, i * 4096).map_err(|e| e.to_string())?;
    }
    f.sync_all().map_err(|e| e.to_string())?;
    let mut lat = Vec::with_capacity(count);
    for i in 0..count as u64 {
        let t0 = Instant::now();
        f.write_all_at(&block, (i % slots) * 4096).map_err(|e| e.to_string())?;
        f.sync_data().map_err(|e| e.to_string())?;
        lat.push(t0.elapsed().as_nanos() as u64);
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir(dir);
    lat.sort_unstable();
    Ok((percentile(&lat, 0.5), percentile(&lat, 0.99)))
}

/// What [`recovery`] measured.
#[derive(Clone, Debug)]
pub struct Recovery {
    /// Bytes of segments scanned.
    pub bytes: u64,
    /// Live messages recovered.
    pub messages: u64,
    /// Seconds the open took (scan and index rebuild).
    pub seconds: f64,
}

/// Fills a queue in `dir` with `bytes` of 1 KiB messages, closes it,
/// evicts its files from the page cache, and times the open.
pub fn recovery(dir: &Path, bytes: u64) -> Result<Recovery, String> {
    fresh_dir(dir)?;
    let cfg = Config { durability: crate::Durability::Os, batch_delay: Duration::ZERO, ..Config::default() };
    {
        let q = Arc::new(FastQueue::open(dir, cfg.clone()).map_err(|e| e.to_string())?);
        let per_thread = bytes / 1024 / 4;
        std::thread::scope(|s| {
            for _ in 0..4 {
                let q = q.clone();
                s.spawn(move || {
                    let payload = vec![7u8; 1024];
                    for _ in 0..per_thread {
                        q.enqueue(&payload).unwrap();
                    }
                });
            }
        });
        q.flush().map_err(|e| e.to_string())?;
    }
    evict(dir);
    let t0 = Instant::now();
    let q = FastQueue::open(dir, cfg).map_err(|e| e.to_string())?;
    let seconds = t0.elapsed().as_secs_f64();
    let open = q.stats().open;
    drop(q);
    let _ = std::fs::remove_dir_all(dir);
    Ok(Recovery { bytes: open.bytes_scanned, messages: open.messages, seconds })
}

/// Asks the kernel to drop the cached pages of the files under `dir`
/// (every level: the file-per-message queue keeps its files in hashed
/// subdirectories). Written-back pages only: every store syncs its data
/// before it acknowledges. Directory entries and inodes stay cached (only
/// a global `drop_caches` would drop them), which favours the stores with
/// many files.
pub fn evict(dir: &Path) {
    use std::os::unix::io::AsRawFd;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                evict(&e.path());
                continue;
            }
            if let Ok(f) = std::fs::File::open(e.path()) {
                // SAFETY: advisory call on a descriptor we own.
                unsafe {
                    libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
                }
            }
        }
    }
}
