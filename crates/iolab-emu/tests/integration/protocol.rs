//! The NBD protocol as `doc/proto.md` states it, checked byte by byte.

use super::client::*;
use iolab_emu::nbd::proto::*;
use iolab_emu::{Config, Emulator, Listen};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

const HP_BYTES: u64 = 1962 * 19 * 72 * 512;

#[test]
fn go_gives_the_model_capacity_and_flags() {
    let srv = Server::start(preset("hp97560"), |_| {});
    let c = srv.client();
    assert_eq!(c.size, HP_BYTES);
    let want =
        FLAG_HAS_FLAGS | FLAG_SEND_FLUSH | FLAG_SEND_FUA | FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES;
    assert_eq!(c.flags, want | FLAG_ROTATIONAL);
    c.disconnect();
    // A fixed-latency disk is not rotational.
    let srv = Server::start(fixed(1.0), |_| {});
    assert_eq!(srv.client().flags, want);
}

#[test]
fn info_list_unsupported_options_then_go() {
    let srv = Server::start(preset("hp97560"), |_| {});
    let mut c = Client::connect(&srv.socket());
    // LIST: one export (the default, ""), then ACK.
    c.send_option(OPT_LIST, &[]);
    let r = c.option_replies();
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].0, r[0].1), (OPT_LIST, REP_SERVER));
    assert_eq!(&r[0].2[..4], &[0, 0, 0, 0]);
    assert!(String::from_utf8_lossy(&r[0].2[4..]).contains("hp97560"));
    // LIST with data is invalid, and the session goes on.
    c.send_option(OPT_LIST, b"x");
    assert_eq!(c.option_replies()[0].1, REP_ERR_INVALID);
    // Structured replies, TLS and unknown options: unsupported.
    for opt in [NBD_OPT_STRUCTURED_REPLY, OPT_STARTTLS, 9, 10, 11, 4242] {
        c.send_option(opt, &[1, 2, 3]);
        let r = c.option_replies();
        assert_eq!((r[0].0, r[0].1), (opt, REP_ERR_UNSUP), "option {opt}");
    }
    // INFO under any name, with name, description and block sizes.
    c.send_option(
        OPT_INFO,
        &Client::info_data("whatever", &[INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE]),
    );
    let r = c.option_replies();
    assert_eq!(r.last().unwrap().1, REP_ACK);
    let kinds: Vec<u16> = r
        .iter()
        .filter(|x| x.1 == REP_INFO)
        .map(|x| u16::from_be_bytes([x.2[0], x.2[1]]))
        .collect();
    for k in [INFO_EXPORT, INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE] {
        assert!(kinds.contains(&k), "{kinds:?}");
    }
    let bs = r
        .iter()
        .find(|x| x.1 == REP_INFO && x.2[..2] == INFO_BLOCK_SIZE.to_be_bytes())
        .unwrap();
    assert_eq!(bs.2.len(), 14);
    assert_eq!(
        u32::from_be_bytes(bs.2[10..14].try_into().unwrap()),
        1 << 25
    );
    // Malformed INFO data is refused, not fatal.
    c.send_option(OPT_GO, &[0, 0, 0, 200, 1]);
    assert_eq!(c.option_replies()[0].1, REP_ERR_INVALID);
    c.go();
    assert_eq!(c.size, HP_BYTES);
    assert_eq!(c.read(0, 512), vec![0; 512]);
    c.disconnect();
}

#[test]
fn export_name_with_and_without_zeroes() {
    let srv = Server::start(fixed(0.1), |_| {});
    for (flags, zeroes) in [
        (FLAG_C_FIXED_NEWSTYLE, 124),
        (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES, 0),
    ] {
        let mut c = Client::connect_with_flags(&srv.socket(), flags);
        c.send_option(OPT_EXPORT_NAME, b"");
        assert_eq!(c.u64(), 1 << 40);
        assert_eq!(c.u16() & FLAG_HAS_FLAGS, FLAG_HAS_FLAGS);
        let mut pad = vec![0xffu8; zeroes];
        c.s.read_exact(&mut pad).unwrap();
        assert!(pad.iter().all(|&b| b == 0));
        c.write(4096, b"hello");
        assert_eq!(c.read(4096, 5), b"hello");
        c.disconnect();
    }
}

#[test]
fn abort_and_bad_client_flags_end_the_session() {
    let srv = Server::start(fixed(0.1), |_| {});
    let mut c = Client::connect(&srv.socket());
    c.send_option(OPT_ABORT, &[]);
    assert_eq!(c.option_reply().1, REP_ACK);
    assert!(c.closed());
    let mut c = Client::connect_with_flags(&srv.socket(), 1 << 7);
    assert!(c.closed(), "an unknown client flag drops the connection");
    // The server serves the next client as if nothing happened.
    let mut c = srv.client();
    c.write(0, &[1; 512]);
    c.disconnect();
}

#[test]
fn out_of_range_and_malformed_requests_get_errors() {
    let srv = Server::start(fixed(0.1), |_| {});
    let mut c = srv.client();
    let size = c.size;
    let req = |c: &mut Client, kind, flags, off, len, data: &[u8]| {
        c.request(kind, flags, off, len, data).0
    };
    // Past the end: EINVAL for read and trim, ENOSPC for writes.
    assert_eq!(req(&mut c, CMD_READ, 0, size - 512, 1024, &[]), 22);
    assert_eq!(req(&mut c, CMD_READ, 0, u64::MAX - 10, 512, &[]), 22);
    assert_eq!(req(&mut c, CMD_TRIM, 0, size, 512, &[]), 22);
    assert_eq!(req(&mut c, CMD_WRITE_ZEROES, 0, size - 1, 2, &[]), 28);
    // The refused write's data is consumed: the stream stays in step.
    assert_eq!(
        req(&mut c, CMD_WRITE, 0, size - 512, 1024, &[0xee; 1024]),
        28
    );
    // Zero length, unknown command, flags not offered, flush with a range.
    assert_eq!(req(&mut c, CMD_READ, 0, 0, 0, &[]), 22);
    assert_eq!(req(&mut c, 5, 0, 0, 512, &[]), 22);
    assert_eq!(req(&mut c, 77, 0, 0, 512, &[]), 22);
    assert_eq!(req(&mut c, CMD_READ, 1 << 2, 0, 512, &[]), 22);
    assert_eq!(req(&mut c, CMD_WRITE_ZEROES, 1 << 4, 0, 512, &[]), 22);
    assert_eq!(req(&mut c, CMD_FLUSH, 0, 4096, 0, &[]), 22);
    // A read longer than the maximum payload; a write longer than it is
    // skipped, not buffered.
    assert_eq!(req(&mut c, CMD_READ, 0, 0, (1 << 25) + 1, &[]), 22);
    let big = vec![0x5a; (1 << 25) + 512];
    assert_eq!(req(&mut c, CMD_WRITE, 0, 0, big.len() as u32, &big), 22);
    // None of it reached the image.
    assert_eq!(c.read(0, 4096), vec![0; 4096]);
    assert_eq!(c.read(size - 512, 512), vec![0; 512]);
    // What is valid still works; FUA is accepted everywhere.
    assert_eq!(
        req(&mut c, CMD_WRITE, CMD_FLAG_FUA, size - 512, 512, &[7; 512]),
        0
    );
    assert_eq!(req(&mut c, CMD_FLUSH, CMD_FLAG_FUA, 0, 0, &[]), 0);
    assert_eq!(c.read(size - 512, 512), vec![7; 512]);
    c.disconnect();
    srv.emu.shutdown().unwrap();
    let rows = log_rows(&srv.log());
    let refused = rows.iter().filter(|r| !r["error"].is_empty()).count();
    assert_eq!(refused, 13);
    assert!(rows
        .iter()
        .any(|r| r["op"] == "cmd77" && r["error"] == "EINVAL"));
    assert!(rows
        .iter()
        .filter(|r| !r["error"].is_empty())
        .all(|r| r["service_ns"] == "0"));
}

#[test]
fn read_only_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("ro.img");
    // An image of the fixed disk's size (1 TiB, sparse) with data at 0.
    std::fs::write(&img, vec![3u8; 1 << 20]).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let mut cfg = Config::new(fixed(0.1), &img, Listen::Unix(dir.path().join("s")));
    cfg.read_only = true;
    let _emu = Emulator::start(cfg).unwrap();
    let mut c = Client::connect(&dir.path().join("s"));
    c.go();
    assert_eq!(c.flags & FLAG_READ_ONLY, FLAG_READ_ONLY);
    assert_eq!(c.read(0, 4), vec![3; 4]);
    assert_eq!(c.request(CMD_WRITE, 0, 0, 4, &[9; 4]).0, 1);
    assert_eq!(c.request(CMD_WRITE_ZEROES, 0, 0, 4, &[]).0, 1);
    assert_eq!(c.request(CMD_TRIM, 0, 0, 4, &[]).0, 1);
    assert_eq!(c.request(CMD_FLUSH, 0, 0, 0, &[]).0, 0);
    assert_eq!(c.read(0, 4), vec![3; 4]);
}

#[test]
fn garbage_and_hangups_drop_only_that_connection() {
    let srv = Server::start(fixed(0.1), |_| {});
    // A request with a bad magic: the stream cannot be trusted any more.
    let mut c = srv.client();
    c.s.write_all(&[0u8; 28]).unwrap();
    assert!(c.closed());
    // Garbage instead of an option.
    let mut c = Client::connect(&srv.socket());
    c.s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    assert!(c.closed());
    // An option that claims a huge length.
    let mut c = Client::connect(&srv.socket());
    let mut m = IHAVEOPT.to_be_bytes().to_vec();
    m.extend_from_slice(&OPT_GO.to_be_bytes());
    m.extend_from_slice(&u32::MAX.to_be_bytes());
    c.s.write_all(&m).unwrap();
    assert!(c.closed());
    // Half a header, half a write's data, then hang up.
    let mut c = srv.client();
    c.s.write_all(&REQUEST_MAGIC.to_be_bytes()).unwrap();
    drop(c);
    let mut c = srv.client();
    let mut m = REQUEST_MAGIC.to_be_bytes().to_vec();
    m.extend_from_slice(&[
        0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0,
    ]);
    m.extend_from_slice(&[1; 100]);
    c.s.write_all(&m).unwrap();
    drop(c);
    // Connect and leave at once, before the greeting is read.
    drop(UnixStream::connect(srv.socket()).unwrap());
    // Requests left in flight when the client goes.
    let mut c = srv.client();
    for i in 0..8 {
        c.send(CMD_READ, 0, i * 4096, 4096, &[]);
    }
    drop(c);
    // Still serving, and nothing of the broken write reached the image.
    let mut c = srv.client();
    assert_eq!(c.read(0, 4096), vec![0; 4096]);
    c.disconnect();
    let s = srv.emu.stats();
    assert!(s.connections >= 5, "{s:?}");
}

#[test]
fn a_client_that_stops_reading_replies_is_dropped_not_waited_for() {
    let srv = Server::start(fixed(0.1), |cfg| {
        cfg.reply_timeout = Duration::from_millis(300)
    });
    let mut greedy = srv.client();
    // 64 reads of 1 MiB, never read: far more than a socket buffers.
    for i in 0..64 {
        greedy.send(CMD_READ, 0, i << 20, 1 << 20, &[]);
    }
    std::thread::sleep(Duration::from_millis(100));
    let mut other = srv.client();
    assert_eq!(other.read(0, 512), vec![0; 512]);
    other.disconnect();
    // The greedy client's writer gives up after the reply timeout; its
    // replies are counted as unsent. (The deadline only catches a hang.)
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while srv.emu.stats().unsent == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = srv.emu.stats();
    assert!(s.unsent >= 1, "{s:?}");
    drop(greedy);
    srv.emu.shutdown().unwrap();
}

#[test]
fn a_client_that_stops_reading_holds_up_no_other() {
    // Issue 27: one client that never read its replies stalled every other
    // (the drive waited in its write). With a reply timeout of an hour, the
    // other client's read must still be answered at once.
    let srv = Server::start(fixed(0.1), |cfg| cfg.reply_timeout = Duration::from_secs(3600));
    let mut greedy = srv.client();
    for i in 0..64 {
        greedy.send(CMD_READ, 0, i << 20, 1 << 20, &[]);
    }
    // Every greedy read has been served (its replies wait for it).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while srv.emu.stats().requests < 64 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(srv.emu.stats().requests, 64, "the drive is stuck on the greedy client");
    let mut other = srv.client();
    // A hang detector, not a speed target: before the fix this waited an hour.
    other.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    for i in 0..8 {
        assert_eq!(other.read(i << 12, 4096), vec![0; 4096]);
    }
    other.disconnect();
    // Then the greedy client reads what waited for it, in order.
    for _ in 0..64 {
        let (err, _) = greedy.reply();
        assert_eq!(err, 0);
        let mut data = vec![0u8; 1 << 20];
        std::io::Read::read_exact(&mut greedy.s, &mut data).unwrap();
    }
    assert_eq!(srv.emu.stats().unsent, 0);
    drop(greedy);
    srv.emu.shutdown().unwrap();
}

#[test]
fn stop_serves_what_is_queued_then_closes() {
    let srv = Server::start(fixed(20.0), |_| {});
    let mut c = srv.client();
    let cookies: Vec<u64> = (0..4)
        .map(|i| c.send(CMD_READ, 0, i * 512, 512, &[]))
        .collect();
    std::thread::sleep(Duration::from_millis(10));
    srv.emu.stop();
    for want in cookies {
        let (err, cookie) = c.reply();
        assert_eq!((err, cookie), (0, want));
        let mut data = [0u8; 512];
        c.s.read_exact(&mut data).unwrap();
    }
    assert!(c.closed());
    assert_eq!(srv.emu.wait(Duration::from_secs(10)), Some(Ok(())));
    assert!(!srv.socket().exists(), "the socket file is removed at stop");
    assert_eq!(log_rows(&srv.log()).len(), 4, "the log is flushed at stop");
}

#[test]
fn socket_paths_stale_live_and_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("s");
    let cfg = |img: &str| Config::new(fixed(0.1), dir.path().join(img), Listen::Unix(sock.clone()));
    // A socket left by a server that died is reused.
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    let first = Emulator::start(cfg("a.img")).unwrap();
    // A live one is not taken over.
    let e = Emulator::start(cfg("b.img")).err().unwrap().to_string();
    assert!(e.contains("another server is listening"), "{e}");
    first.shutdown().unwrap();
    std::fs::write(&sock, b"x").unwrap();
    let e = Emulator::start(cfg("b.img")).err().unwrap().to_string();
    assert!(e.contains("not a socket"), "{e}");
    assert_eq!(
        std::fs::read(&sock).unwrap(),
        b"x",
        "a file in the way is left alone"
    );
}

#[test]
fn tcp_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let emu = Emulator::start(Config::new(
        fixed(0.1),
        dir.path().join("t.img"),
        Listen::Tcp(0),
    ))
    .unwrap();
    let addr = emu.address().strip_prefix("tcp:").unwrap().to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    let mut hello = [0u8; 18];
    s.read_exact(&mut hello).unwrap();
    assert_eq!(&hello[..8], b"NBDMAGIC");
    emu.shutdown().unwrap();
}
