use std::time::Instant;
fn main() {
    let size: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let n: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let dir = std::path::Path::new("/work/fq-bench-tmp/probe-read");
    let _ = std::fs::remove_dir_all(dir);
    let cfg = fastqueue::Config { durability: fastqueue::Durability::Os, ..Default::default() };
    let q = fastqueue::FastQueue::open(dir, cfg).unwrap();
    let p = vec![7u8; size];
    for _ in 0..n {
        q.enqueue(&p).unwrap();
    }
    q.flush().unwrap();
    let t0 = Instant::now();
    let (mut got, mut tdeq, mut tack) = (0, 0.0, 0.0);
    loop {
        let t = Instant::now();
        let b = q.dequeue_batch(512, None).unwrap();
        tdeq += t.elapsed().as_secs_f64();
        if b.is_empty() { break; }
        got += b.len();
        let ids: Vec<u64> = b.iter().map(|m| m.id).collect();
        drop(b);
        let t = Instant::now();
        q.ack_many(&ids).unwrap();
        tack += t.elapsed().as_secs_f64();
    }
    let secs = t0.elapsed().as_secs_f64();
    println!("{got} read in {secs:.3} s = {:.0} msg/s ({:.0} MB/s); dequeue {tdeq:.3} s, ack {tack:.3} s; {:?}", got as f64 / secs, got as f64 * size as f64 / secs / 1e6, q.stats().syncs);
    drop(q);
    let _ = std::fs::remove_dir_all(dir);
}
