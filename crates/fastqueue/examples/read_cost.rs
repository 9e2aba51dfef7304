//! What reading one message back costs, the read path alone: `COUNT`
//! messages of `SIZE` bytes (default 65536) are stored, then one consumer
//! reads and deletes them all in batches of 512, as the benchmark's read
//! phase does, with each read API ("vec": `dequeue_batch`, a fresh `Vec`
//! per message; "batch": `dequeue_batch_into` one reused `MessageBatch`;
//! "mapped": `dequeue_batch_mapped` into one reused `MessageBatch`, the
//! payloads borrowed from the segments' mappings, for FastQueue; the
//! baseline has no such read and uses its best, the "batch" one),
//! for FastQueue and the file-per-message baseline, warm (as the writes
//! left the page cache) and cold (files evicted first). Prints per message
//! the wall time, the consumer thread's CPU time and page faults
//! (`getrusage(RUSAGE_THREAD)`), and for FastQueue the wait for the last
//! acknowledgement to be durable (included in the wall time).
//!
//!     cargo run --release -p fastqueue --features bench --example read_cost -- DIR COUNT [SIZE] [REPS]
//!
//! `STORES=fastqueue` and `APIS=batch` in the environment run only those
//! (for a profile of one consumer; `PAUSE_MS=500` announces each read
//! phase on stderr and waits before it, for `perf record -p`); `PREFETCH_KIB` sets FastQueue's
//! `prefetch_bytes` (the longest run of records read with one call).
//!
//! Unlike the benchmark the stores are filled without timing (FastQueue
//! with `durability = os` and a flush at the end, which leaves the same
//! bytes on disk), so the figures do not depend on the write phase.

use std::path::Path;
use std::time::Instant;

use fastqueue::{bench, Config, Durability, FastQueue, FilePerMessageQueue, MessageBatch};

/// The consumer thread's (CPU seconds, minor page faults, voluntary
/// context switches), and the whole process's CPU seconds (the queue's
/// writer and syncer threads write and sync the delete flags meanwhile).
fn thread_usage() -> (f64, i64, i64, f64) {
    let usage = |who| {
        // SAFETY: getrusage fills the struct we pass.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        u
    };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    let (me, all) = (usage(libc::RUSAGE_THREAD), usage(libc::RUSAGE_SELF));
    (t(me.ru_utime) + t(me.ru_stime), me.ru_minflt, me.ru_nvcsw, t(all.ru_utime) + t(all.ru_stime))
}

struct Cost {
    msgs: usize,
    wall: f64,
    cpu: f64,
    faults: i64,
    /// The consumer's voluntary context switches (it slept: a lock, I/O).
    sleeps: i64,
    /// CPU of every thread of the process.
    proc_cpu: f64,
    wait: f64,
}

fn fill_fq(dir: &Path, count: usize, size: usize) -> FastQueue {
    let _ = std::fs::remove_dir_all(dir);
    let mut cfg = Config { durability: Durability::Os, ..Config::default() };
    if let Some(kib) = std::env::var("PREFETCH_KIB").ok().and_then(|v| v.parse::<usize>().ok()) {
        cfg.prefetch_bytes = kib << 10;
    }
    let q = FastQueue::open(dir, cfg).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let payload = vec![0x42u8; size];
    let chunk: Vec<&[u8]> = vec![&payload[..]; 64];
    let mut left = count;
    while left > 0 {
        let n = left.min(chunk.len());
        q.enqueue_many(&chunk[..n]).unwrap();
        left -= n;
    }
    q.flush().unwrap();
    q
}

fn read_fq(q: &FastQueue, batch: Option<&mut MessageBatch>, mapped: bool) -> Cost {
    let (c0, f0, s0, p0) = thread_usage();
    let t0 = Instant::now();
    let mut msgs = 0;
    let mut last = None;
    let mut batch = batch;
    loop {
        let ids: Vec<u64> = match batch.as_deref_mut() {
            Some(b) => {
                if mapped {
                    q.dequeue_batch_mapped(512, None, b).unwrap();
                } else {
                    q.dequeue_batch_into(512, None, b).unwrap();
                }
                std::hint::black_box(&*b);
                b.ids()
            }
            None => {
                let v = q.dequeue_batch(512, None).unwrap();
                std::hint::black_box(&v);
                v.iter().map(|m| m.id).collect()
            }
        };
        if ids.is_empty() {
            break;
        }
        msgs += ids.len();
        last = Some(q.ack_many_nowait(&ids).unwrap());
    }
    if let Some(b) = batch {
        // A finished consumer lets go of its pins.
        b.clear();
    }
    let t1 = Instant::now();
    if let Some(r) = last {
        q.wait_durable(r).unwrap();
    }
    let wall = t0.elapsed().as_secs_f64();
    let (c1, f1, s1, p1) = thread_usage();
    Cost { msgs, wall, cpu: c1 - c0, faults: f1 - f0, sleeps: s1 - s0, proc_cpu: p1 - p0, wait: t1.elapsed().as_secs_f64() }
}

fn fill_fpm(dir: &Path, count: usize, size: usize) -> FilePerMessageQueue {
    let _ = std::fs::remove_dir_all(dir);
    let q = FilePerMessageQueue::open(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let payload = vec![0x42u8; size];
    // Filled by 16 threads: one file, fsync and rename each is slow alone.
    std::thread::scope(|s| {
        for t in 0..16 {
            let (q, payload) = (&q, &payload);
            s.spawn(move || {
                for _ in (t..count).step_by(16) {
                    q.enqueue(payload).unwrap();
                }
            });
        }
    });
    q
}

fn read_fpm(q: &FilePerMessageQueue, batch: Option<&mut MessageBatch>) -> Cost {
    let (c0, f0, s0, p0) = thread_usage();
    let t0 = Instant::now();
    let mut msgs = 0;
    let mut batch = batch;
    loop {
        let ids: Vec<u64> = match batch.as_deref_mut() {
            Some(b) => {
                q.dequeue_batch_into(512, b).unwrap();
                std::hint::black_box(&*b);
                b.ids()
            }
            None => {
                let v = q.dequeue_batch(512).unwrap();
                std::hint::black_box(&v);
                v.iter().map(|m| m.id).collect()
            }
        };
        if ids.is_empty() {
            break;
        }
        msgs += ids.len();
        for id in ids {
            q.ack(id).unwrap();
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let (c1, f1, s1, p1) = thread_usage();
    Cost { msgs, wall, cpu: c1 - c0, faults: f1 - f0, sleeps: s1 - s0, proc_cpu: p1 - p0, wait: 0.0 }
}

/// With `PAUSE_MS` set: says on stderr that a read phase starts and waits
/// that long first, so that a profiler can be attached to it alone
/// (`perf record -p PID`), not to the filling.
fn mark(store: &str, api: &str, cold: bool) {
    if let Some(ms) = std::env::var("PAUSE_MS").ok().and_then(|v| v.parse::<u64>().ok()) {
        eprintln!("read_cost {}: reading {store} {api} {}", std::process::id(), if cold { "cold" } else { "warm" });
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 || args.len() > 5 {
        eprintln!("usage: read_cost DIR COUNT [SIZE] [REPS]");
        std::process::exit(2);
    }
    let dir = std::path::PathBuf::from(&args[1]);
    let num = |i: usize, default: usize| args.get(i).map_or(Ok(default), |s| s.parse::<usize>()).unwrap_or_else(|e| {
        eprintln!("read_cost: argument {i}: {e}");
        std::process::exit(2);
    });
    let (count, size, reps) = (num(2, 0), num(3, 65536), num(4, 1));
    println!("# {count} messages of {size} B per row; per message: wall, consumer CPU, consumer page faults, the process's CPU (all threads); per batch of 512: the consumer's sleeps (voluntary context switches); wait = the last ack's sync");
    println!(
        "{:>3} {:<17} {:<6} {:<4} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>8}",
        "rep", "store", "api", "page", "msg/s", "wall us", "cpu us", "faults", "proc us", "sleeps", "wait ms"
    );
    let pick = |var: &str, all: &[&'static str]| -> Vec<&'static str> {
        let want = std::env::var(var).unwrap_or_default();
        all.iter().copied().filter(|x| want.is_empty() || want.split(',').any(|w| w == *x)).collect()
    };
    let (stores, apis) = (pick("STORES", &["fastqueue", "file-per-message"]), pick("APIS", &["vec", "batch", "mapped"]));
    for rep in 1..=reps {
        for &store in &stores {
            for cold in [false, true] {
                for &api in &apis {
                    let path = dir.join(store);
                    // A consumer keeps its batch for its life: grown before the
                    // clock to a batch's size, as the benchmark does (a fresh
                    // one per row, so that no row inherits another's pages).
                    let mut b = MessageBatch::with_capacity(512 * fastqueue::format::record_len(size));
                    let batch = (api != "vec").then_some(&mut b);
                    let c = if store == "fastqueue" {
                        let q = fill_fq(&path, count, size);
                        if cold {
                            bench::evict(&path);
                        }
                        mark(store, api, cold);
                        read_fq(&q, batch, api == "mapped")
                    } else {
                        let q = fill_fpm(&path, count, size);
                        if cold {
                            bench::evict(&path);
                        }
                        mark(store, api, cold);
                        read_fpm(&q, batch)
                    };
                    assert_eq!(c.msgs, count, "{store}: read back {} of {count}", c.msgs);
                    let per = |x: f64| x / c.msgs.max(1) as f64 * 1e6;
                    println!(
                        "{:>3} {:<17} {:<6} {:<4} {:>9.0} {:>9.1} {:>8.1} {:>8.2} {:>8.1} {:>7.1} {:>8.1}",
                        rep,
                        store,
                        api,
                        if cold { "cold" } else { "warm" },
                        c.msgs as f64 / c.wall,
                        per(c.wall),
                        per(c.cpu),
                        c.faults as f64 / c.msgs.max(1) as f64,
                        per(c.proc_cpu),
                        c.sleeps as f64 / c.msgs.max(1) as f64 * 512.0,
                        c.wait * 1e3
                    );
                    let _ = std::fs::remove_dir_all(&path);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
