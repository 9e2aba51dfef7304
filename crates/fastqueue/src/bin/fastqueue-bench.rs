//! `fastqueue-bench`: FastQueue against its Rust peers, one table.
//! `iolab queue bench` runs the same cases (and adds persist-queue).

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use fastqueue::bench::{self, Case, PEERS};

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
    /// Also time the recovery (open) of a queue of this many MiB.
    #[arg(long)]
    recovery_mib: Option<u64>,
}

fn main() {
    let a = Args::parse();
    println!(
        "{:<17} {:>6} {:>4} {:>10} {:>9} {:>9} {:>9} {:>10} {:>10}",
        "peer", "size", "prod", "msg/s", "MB/s", "p50 us", "p99 us", "read msg/s", "cold msg/s"
    );
    for &size in &a.sizes {
        for &producers in &a.producers {
            for peer in &a.peers {
                let case = Case {
                    peer: peer.clone(),
                    size,
                    producers,
                    seconds: a.seconds,
                    max_bytes: a.max_mib << 20,
                    dir: a.dir.join(peer),
                    batch_delay: Duration::from_micros(a.batch_delay_us),
                };
                match bench::run(&case) {
                    Ok(o) => println!(
                        "{:<17} {:>6} {:>4} {:>10.0} {:>9.1} {:>9.0} {:>9.0} {:>10.0} {:>10.0}",
                        peer, size, producers, o.write_msgs_per_s, o.write_mb_per_s, o.p50_us, o.p99_us, o.read_msgs_per_s,
                        o.cold_read_msgs_per_s
                    ),
                    Err(e) => {
                        eprintln!("fastqueue-bench: {peer}: {e}");
                        std::process::exit(1);
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
    let _ = std::fs::remove_dir_all(&a.dir);
}
