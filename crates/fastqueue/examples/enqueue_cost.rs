//! What one durable enqueue costs: `producers` threads each enqueue
//! messages of `size` bytes (each call returns once the message is synced)
//! until `MIB` MiB (default 256) are stored, into segments prepared before
//! the clock starts. Prints the rate, the process's CPU time per message
//! (user + system, from `getrusage`: the writer and syncer threads' work
//! included), and the queue's round and sync counts.
//!
//!     cargo run --release -p fastqueue --example enqueue_cost -- DIR SIZE PRODUCERS
//!
//! docs/fastqueue.md ("Measured on a quiet machine") uses it for the CPU
//! ceiling of small messages: with `c` seconds of CPU per message and 2
//! cores, no more than `2 / c` messages per second.

use std::time::Instant;

use fastqueue::{Config, FastQueue};

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: enqueue_cost DIR SIZE PRODUCERS   (MIB=256 in the environment: bytes to write)");
        std::process::exit(2);
    }
    let dir = std::path::PathBuf::from(&args[1]);
    let (size, producers): (usize, usize) = match (args[2].parse(), args[3].parse()) {
        (Ok(s), Ok(p)) if s > 0 && p > 0 && p <= 1024 => (s, p),
        _ => {
            eprintln!("enqueue_cost: SIZE and PRODUCERS must be positive integers (PRODUCERS at most 1024)");
            std::process::exit(2);
        }
    };
    let mib: u64 = std::env::var("MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    let total = mib << 20;
    let _ = std::fs::remove_dir_all(&dir);
    let q = FastQueue::open(&dir, Config::default()).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    q.reserve_segments((total / q.config().segment_size) as usize + 2).expect("reserve segments");
    let per = (total / size as u64 / producers as u64).max(1);
    let c0 = cpu_seconds();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..producers {
            let q = &q;
            s.spawn(move || {
                let p = vec![3u8; size];
                for _ in 0..per {
                    q.enqueue(&p).expect("enqueue");
                }
            });
        }
    });
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c0;
    let n = per * producers as u64;
    let st = q.stats();
    println!(
        "{size} B x {producers} producers: {n} msgs in {secs:.3} s, {:.0} msg/s, {:.0} MB/s; cpu {cpu:.3} s = {:.2} cores, {:.2} us/msg; rounds {} syncs {} pipelined {}; sync p50 {:.0} us p99 {:.0} us",
        n as f64 / secs,
        (n * size as u64) as f64 / secs / 1e6,
        cpu / secs,
        cpu * 1e6 / n as f64,
        st.rounds,
        st.syncs,
        st.pipelined,
        st.sync_p50_us,
        st.sync_p99_us
    );
    drop(q);
    let _ = std::fs::remove_dir_all(&dir);
}
