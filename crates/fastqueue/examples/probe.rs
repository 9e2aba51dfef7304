use std::sync::Arc;
use std::time::{Duration, Instant};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size: usize = args[1].parse().unwrap();
    let prod: usize = args[2].parse().unwrap();
    let dir = std::path::Path::new("/work/fq-bench-tmp/probe");
    let _ = std::fs::remove_dir_all(dir);
    let q = Arc::new(fastqueue::FastQueue::open(dir, fastqueue::Config::default()).unwrap());
    q.reserve_segments(12).unwrap();
    let t0 = Instant::now();
    let lat = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..prod {
            let q = q.clone();
            let lat = &lat;
            s.spawn(move || {
                let p = vec![1u8; size];
                let mut mine = Vec::new();
                while t0.elapsed() < Duration::from_secs(3) {
                    let t = Instant::now();
                    q.enqueue(&p).unwrap();
                    mine.push(t.elapsed().as_micros() as u64);
                }
                lat.lock().unwrap().extend(mine);
            });
        }
    });
    let secs = t0.elapsed().as_secs_f64();
    let st = q.stats();
    let mut l = lat.into_inner().unwrap();
    l.sort();
    println!("{} msgs, {:.0} MB/s, rounds {}, syncs {}, pipelined {}, per round {:.1}, p50 {} p99 {} us",
        st.enqueued, st.enqueued as f64 * size as f64 / secs / 1e6, st.rounds, st.syncs, st.pipelined,
        st.enqueued as f64 / st.rounds as f64, l[l.len() / 2], l[l.len() * 99 / 100]);
    drop(q);
    let _ = std::fs::remove_dir_all(dir);
}
