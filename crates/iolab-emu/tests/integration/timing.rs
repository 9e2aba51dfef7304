//! Timing: each request takes the model's service time on the model's
//! clock, one at a time, in arrival order, and the log records exactly
//! what the model charges. The lower bounds here are ones a server that
//! replied at once could not meet.

use super::client::*;
use iolab_emu::nbd::proto::*;
use iolab_emu::{Model, Op};
use std::path::Path;
use std::time::{Duration, Instant};

/// Charges the log's served requests again on a fresh model, at their
/// logged start instants: every figure must be the same.
fn replay_agrees(log: &Path, disk: &iolab_sim::disk::DiskSpec) -> usize {
    let mut model = Model::build(disk, false, Path::new(".")).unwrap();
    let mut n = 0;
    for r in log_rows(log) {
        if !r["error"].is_empty() {
            continue;
        }
        let op = Op::parse(&r["op"]).unwrap();
        let s = model.charge(
            op,
            num(&r, "offset"),
            num(&r, "length"),
            r["flags"].contains("fua"),
            num(&r, "start_ns"),
        );
        let logged = [
            num(&r, "service_ns"),
            num(&r, "seek_ns"),
            num(&r, "rotation_ns"),
            num(&r, "transfer_ns"),
        ];
        assert_eq!(
            logged,
            [s.total_ns, s.seek_ns, s.rotation_ns, s.transfer_ns],
            "request {}",
            r["seq"]
        );
        assert_eq!(num(&r, "complete_ns"), num(&r, "start_ns") + s.total_ns);
        assert!(
            num(&r, "reply_ns") >= num(&r, "complete_ns"),
            "replied before the model completed"
        );
        n += 1;
    }
    n
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort();
    v[v.len() / 2]
}

#[test]
fn a_fixed_disk_takes_its_service_time_per_request() {
    let srv = Server::start(fixed(4.0), |_| {});
    let mut c = srv.client();
    let n = 25;
    let t0 = Instant::now();
    let mut lat = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        c.read(i * 4096, 4096);
        lat.push(t.elapsed());
    }
    let total = t0.elapsed();
    c.disconnect();
    srv.emu.shutdown().unwrap();
    assert!(
        lat.iter().all(|l| *l >= Duration::from_millis(4)),
        "{lat:?}"
    );
    assert!(total >= Duration::from_millis(4 * n), "{total:?}");
    // Generous: a loaded machine delays wake-ups, never by 100 ms each.
    assert!(
        total < Duration::from_millis(4 * n) + Duration::from_millis(100 * n),
        "{total:?}"
    );
    assert_eq!(replay_agrees(&srv.log(), &fixed(4.0)), n as usize);
}

#[test]
fn random_reads_on_the_hp97560_take_the_model_time() {
    let disk = preset("hp97560");
    let srv = Server::start(disk.clone(), |_| {});
    let mut c = srv.client();
    let sectors = c.size / 512;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let n = 40;
    let t0 = Instant::now();
    let mut client_ns = Vec::new();
    for _ in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let sector = (x >> 11) % (sectors - 8) / 8 * 8;
        let t = Instant::now();
        c.read(sector * 512, 4096);
        client_ns.push(t.elapsed().as_nanos() as u64);
    }
    let wall_ns = t0.elapsed().as_nanos() as u64;
    c.disconnect();
    srv.emu.shutdown().unwrap();
    assert_eq!(replay_agrees(&srv.log(), &disk), n);
    let rows = log_rows(&srv.log());
    let service: Vec<u64> = rows.iter().map(|r| num(r, "service_ns")).collect();
    // Each request as the client saw it lasted at least its service time.
    for (i, (cl, s)) in client_ns.iter().zip(&service).enumerate() {
        assert!(
            cl >= s,
            "request {i}: client saw {cl} ns, model charged {s} ns"
        );
    }
    let busy: u64 = service.iter().sum();
    assert!(wall_ns >= busy, "wall {wall_ns} < model busy {busy}");
    // Random 4 KiB reads on this disk: seek + half a turn + overhead.
    let mean_ms = busy as f64 / n as f64 / 1e6;
    assert!((12.0..30.0).contains(&mean_ms), "mean service {mean_ms} ms");
    let late: Vec<u64> = rows
        .iter()
        .map(|r| num(r, "reply_ns") - num(r, "complete_ns"))
        .collect();
    assert!(
        median(late.clone()) < 2_000_000,
        "median lateness {} ns: {late:?}",
        median(late.clone())
    );
}

#[test]
fn queued_requests_are_served_one_at_a_time_in_arrival_order() {
    let srv = Server::start(fixed(10.0), |_| {});
    let mut a = srv.client();
    let mut b = srv.client();
    // Six requests from one client at once, then one from another.
    let t0 = Instant::now();
    let sent: Vec<u64> = (0..6)
        .map(|i| a.send(CMD_READ, 0, i * 512, 512, &[]))
        .collect();
    std::thread::sleep(Duration::from_millis(2));
    b.send(CMD_WRITE, 0, 0, 512, &[1; 512]);
    for want in &sent {
        let (err, cookie) = a.reply();
        assert_eq!((err, cookie), (0, *want), "replies in arrival order");
        let mut d = [0u8; 512];
        std::io::Read::read_exact(&mut a.s, &mut d).unwrap();
    }
    let a_done = t0.elapsed();
    assert_eq!(b.reply().0, 0);
    let b_done = t0.elapsed();
    // Served one after the other: 6 × 10 ms, then the other client's.
    assert!(a_done >= Duration::from_millis(60), "{a_done:?}");
    assert!(
        b_done >= Duration::from_millis(70),
        "the later client waits its turn: {b_done:?}"
    );
    a.disconnect();
    b.disconnect();
    srv.emu.shutdown().unwrap();
    let rows = log_rows(&srv.log());
    assert_eq!(rows.len(), 7);
    for w in rows.windows(2) {
        // Each starts when the previous completes (all had arrived).
        assert_eq!(num(&w[1], "start_ns"), num(&w[0], "complete_ns"));
        assert_eq!(
            num(&w[1], "complete_ns") - num(&w[0], "complete_ns"),
            10_000_000
        );
        assert!(num(&w[1], "arrival_ns") >= num(&w[0], "arrival_ns"));
    }
    assert_eq!(rows[6]["conn"], "2");
}

#[test]
fn zero_latency_charges_nothing() {
    let srv = Server::start(preset("modern7200"), |cfg| cfg.zero_latency = true);
    let mut c = srv.client();
    assert_eq!(c.size, 3_907_029_168 * 512);
    assert_eq!(c.flags & FLAG_ROTATIONAL, 0);
    let t0 = Instant::now();
    for i in 0..200 {
        c.read(i * 1_000_000_000 % (c.size - 4096) / 4096 * 4096, 4096);
    }
    let took = t0.elapsed();
    c.disconnect();
    srv.emu.shutdown().unwrap();
    let rows = log_rows(&srv.log());
    assert!(rows
        .iter()
        .all(|r| r["service_ns"] == "0" && r["start_ns"] == r["complete_ns"]));
    // 200 seeks on the modern drive would take over 1.6 s.
    assert!(took < Duration::from_millis(1600), "{took:?}");
}

#[test]
fn flush_and_fua_cost_the_write_back_on_the_modern_drive() {
    let disk = preset("modern7200");
    let srv = Server::start(disk.clone(), |_| {});
    let mut c = srv.client();
    let big = vec![0xa5u8; 1 << 20];
    // The flush goes out right behind the write, without waiting for its
    // reply: on a slow or loaded machine a flush sent after the reply could
    // arrive once the cache has already destaged the write, and then rightly
    // costs nothing.
    let w = c.send(CMD_WRITE, 0, 1 << 34, 1 << 20, &big);
    let f = c.send(CMD_FLUSH, 0, 0, 0, &[]);
    assert_eq!(c.reply(), (0, w));
    assert_eq!(c.reply(), (0, f));
    assert_eq!(
        c.request(CMD_WRITE, CMD_FLAG_FUA, 1 << 35, 1 << 20, &big).0,
        0
    );
    c.disconnect();
    srv.emu.shutdown().unwrap();
    assert_eq!(replay_agrees(&srv.log(), &disk), 3);
    let rows = log_rows(&srv.log());
    // The write is absorbed by the cache; the flush waits for the media.
    assert_eq!(rows[0]["cache"], "hit");
    assert!(num(&rows[1], "service_ns") > 1_000_000, "{:?}", rows[1]);
    assert!(num(&rows[2], "service_ns") > num(&rows[0], "service_ns") + 1_000_000);
}
