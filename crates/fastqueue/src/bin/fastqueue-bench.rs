//! `fastqueue-bench`: FastQueue against its Rust peers, one table.
//! `iolab queue bench` runs the same cases (and adds persist-queue).

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use fastqueue::bench::{self, Case, ReadApi, PEERS};

/// Benchmark of FastQueue and its peers (durable writes, then read-back).
#[derive(Parser)]
struct Args {
    /// Directory for the stores' files (on the disk to measure).
    #[arg(long, default_value = "bench-queue")]
    dir: PathBuf,
    /// Message sizes in bytes.
    #[arg(long, value_delimiter = ',', default_values_t = [256usize, 1024, 8192, 65536])]
    sizes: Vec<usize>,
    /// Producer thread counts.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4, 16, 64])]
    producers: Vec<usize>,
    /// Peers to run.
    #[arg(long, value_delimiter = ',', default_values_t = PEERS.iter().map(|s| s.to_string()).collect::<Vec<_>>())]
    peers: Vec<String>,
    /// Seconds of writing per case.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Most MiB written per case.
    #[arg(long, default_value_t = 256)]
    max_mib: u64,
    /// FastQueue's batch timer in microseconds.
    #[arg(long, default_value_t = 1000)]
    batch_delay_us: u64,
    /// How consumers read back: "batch" (one reused MessageBatch), "vec"
    /// (a fresh Vec per message), "mapped" (FastQueue: payloads borrowed
    /// from the segments' mappings; the baseline: its best, "batch"); with
    /// several, each case runs once per API, back to back, so they are
    /// paired.
    #[arg(long, value_delimiter = ',', default_values_t = [String::from("batch")])]
    read_api: Vec<String>,
    /// Repetitions of every case (each round runs all cases in turn).
    #[arg(long, default_value_t = 1)]
    reps: usize,
    /// Also time the recovery (open) of a queue of this many MiB.
    #[arg(long)]
    recovery_mib: Option<u64>,
}

fn main() {
    let a = Args::parse();
    let apis: Vec<ReadApi> = a.read_api.iter().map(|s| ReadApi::parse(s)).collect::<Result<_, _>>().unwrap_or_else(|e| {
        eprintln!("fastqueue-bench: --{e}");
        std::process::exit(2);
    });
    // "read" says how the consumer read: "batch" = dequeue_batch_into one
    // reused MessageBatch, "vec" = a fresh Vec per message (queue-file and
    // SQLite only have that), "mapped" = FastQueue's dequeue_batch_mapped
    // (the baseline reads as with "batch").
    println!(
        "{:>3} {:<17} {:>6} {:>4} {:>10} {:>9} {:>9} {:>9} {:>5} {:>10} {:>10}",
        "rep", "peer", "size", "prod", "msg/s", "MB/s", "p50 us", "p99 us", "read", "read msg/s", "cold msg/s"
    );
    for rep in 1..=a.reps.max(1) {
        for &size in &a.sizes {
            for &producers in &a.producers {
                for &api in &apis {
                    for peer in &a.peers {
                        run_case(&a, rep, peer, size, producers, api);
                    }
                }
            }
        }
    }
    if let Some(mib) = a.recovery_mib {
        match bench::recovery(&a.dir.join("recovery"), mib << 20) {
            Ok(r) => println!("recovery: {} MiB, {} messages, open in {:.2} s", r.bytes >> 20, r.messages, r.seconds),
            Err(e) => {
                eprintln!("fastqueue-bench: recovery: {e}");
                std::process::exit(1);
            }
        }
    }
    // Only the directories the cases made (each emptied by its case), and
    // `--dir` itself if that leaves it empty: never a user's files.
    for name in a.peers.iter().map(String::as_str).chain(["recovery"]) {
        let _ = std::fs::remove_dir(a.dir.join(name));
    }
    let _ = std::fs::remove_dir(&a.dir);
}

/// Runs one case and prints its row (exits on error).
fn run_case(a: &Args, rep: usize, peer: &str, size: usize, producers: usize, api: ReadApi) {
    let case = Case {
        peer: peer.to_string(),
        size,
        producers,
        seconds: a.seconds,
        max_bytes: a.max_mib << 20,
        dir: a.dir.join(peer),
        batch_delay: Duration::from_micros(a.batch_delay_us),
    };
    match bench::run_with(&case, api) {
        Ok(o) => println!(
            "{:>3} {:<17} {:>6} {:>4} {:>10.0} {:>9.1} {:>9.0} {:>9.0} {:>5} {:>10.0} {:>10.0}",
            rep,
            peer,
            size,
            producers,
            o.write_msgs_per_s,
            o.write_mb_per_s,
            o.p50_us,
            o.p99_us,
            if o.read_api.is_empty() { "-" } else { o.read_api },
            o.read_msgs_per_s,
            o.cold_read_msgs_per_s
        ),
        Err(e) => {
            eprintln!("fastqueue-bench: {peer}: {e}");
            std::process::exit(1);
        }
    }
}
