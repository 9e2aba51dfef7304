//! What reading one message back costs, the read path alone: `COUNT`
//! messages of `SIZE` bytes (default 65536) are stored, then one consumer
//! reads and deletes them all in batches of 512, as the benchmark's read
//! phase does, with each read API ("vec": `dequeue_batch`, a fresh `Vec`
//! per message; "batch": `dequeue_batch_into` one reused `MessageBatch`),
//! for FastQueue and the file-per-message baseline, warm (as the writes
//! left the page cache) and cold (files evicted first). Prints per message
//! the wall time, the consumer thread's CPU time and page faults
//! (`getrusage(RUSAGE_THREAD)`), and for FastQueue the wait for the last
//! acknowledgement to be durable (included in the wall time).
//!
//!     cargo run --release -p fastqueue --features bench --example read_cost -- DIR COUNT [SIZE] [REPS]
//!
//! `STORES=fastqueue` and `APIS=batch` in the environment run only those
//! (for a profile of one consumer); `PREFETCH_KIB` sets FastQueue's
//! `prefetch_bytes` (the longest run of records read with one call).
//!
//! Unlike the benchmark the stores are filled without timing (FastQueue
//! with `durability = os` and a flush at the end, which leaves the same
//! bytes on disk), so the figures do not depend on the write phase.

use std::path::Path;
use std::time::Instant;

use fastqueue::{bench, Config, Durability, FastQueue, FilePerMessageQueue, MessageBatch};

/// The consumer thread's (CPU seconds, minor page faults).
fn thread_usage() -> (f64, i64) {
    // SAFETY: getrusage fills the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    (t(u.ru_utime) + t(u.ru_stime), u.ru_minflt)
}

struct Cost {
    msgs: usize,
    wall: f64,
    cpu: f64,
    faults: i64,
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

fn read_fq(q: &FastQueue, batch: Option<&mut MessageBatch>) -> Cost {
    let (c0, f0) = thread_usage();
    let t0 = Instant::now();
    let mut msgs = 0;
    let mut last = None;
    let mut batch = batch;
    loop {
        let ids: Vec<u64> = match batch.as_deref_mut() {
            Some(b) => {
                q.dequeue_batch_into(512, None, b).unwrap();
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
    let t1 = Instant::now();
    if let Some(r) = last {
        q.wait_durable(r).unwrap();
    }
    let wall = t0.elapsed().as_secs_f64();
    let (c1, f1) = thread_usage();
    Cost { msgs, wall, cpu: c1 - c0, faults: f1 - f0, wait: t1.elapsed().as_secs_f64() }
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
    let (c0, f0) = thread_usage();
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
    let (c1, f1) = thread_usage();
    Cost { msgs, wall, cpu: c1 - c0, faults: f1 - f0, wait: 0.0 }
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
    println!("# {count} messages of {size} B per row; per message: wall, consumer CPU, consumer page faults; wait = the last ack's sync");
    println!("{:>3} {:<17} {:<5} {:<4} {:>9} {:>9} {:>8} {:>8} {:>8}", "rep", "store", "api", "page", "msg/s", "wall us", "cpu us", "faults", "wait ms");
    let pick = |var: &str, all: &[&'static str]| -> Vec<&'static str> {
        let want = std::env::var(var).unwrap_or_default();
        all.iter().copied().filter(|x| want.is_empty() || want.split(',').any(|w| w == *x)).collect()
    };
    let (stores, apis) = (pick("STORES", &["fastqueue", "file-per-message"]), pick("APIS", &["vec", "batch"]));
    for rep in 1..=reps {
        for &store in &stores {
            for cold in [false, true] {
                for &api in &apis {
                    let path = dir.join(store);
                    // A consumer keeps its batch for its life: grown before the
                    // clock to a batch's size, as the benchmark does (a fresh
                    // one per row, so that no row inherits another's pages).
                    let mut b = MessageBatch::with_capacity(512 * fastqueue::format::record_len(size));
                    let batch = (api == "batch").then_some(&mut b);
                    let c = if store == "fastqueue" {
                        let q = fill_fq(&path, count, size);
                        if cold {
                            bench::evict(&path);
                        }
                        read_fq(&q, batch)
                    } else {
                        let q = fill_fpm(&path, count, size);
                        if cold {
                            bench::evict(&path);
                        }
                        read_fpm(&q, batch)
                    };
                    assert_eq!(c.msgs, count, "{store}: read back {} of {count}", c.msgs);
                    let per = |x: f64| x / c.msgs.max(1) as f64 * 1e6;
                    println!(
                        "{:>3} {:<17} {:<5} {:<4} {:>9.0} {:>9.1} {:>8.1} {:>8.2} {:>8.1}",
                        rep,
                        store,
                        api,
                        if cold { "cold" } else { "warm" },
                        c.msgs as f64 / c.wall,
                        per(c.wall),
                        per(c.cpu),
                        c.faults as f64 / c.msgs.max(1) as f64,
                        c.wait * 1e3
                    );
                    let _ = std::fs::remove_dir_all(&path);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
