//! The queue commands (`iolab mail queue ...`, `queue_command`) on both
//! queues: against a running server (through its control socket) and
//! against a stopped one (the queue opened directly); hostile clients of
//! the control socket; deletes and requeues while deliveries run; the
//! socket's permissions and a stale socket.
//!
//! The next hop is a small SMTP sink here whose answer to `RCPT` depends on
//! the recipient's local part: `ok-...` is taken, `defer-...` gets `451`
//! and `bounce-...` `550` until the test lets them through. It counts the
//! copies each recipient received.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iolab_mail::admin::Entry;
use iolab_mail::{queue_command, Delivery, Line, MailServer, QueueChoice, Request, ServerConfig, Via};

mod common;

#[derive(Default)]
struct Sink {
    /// `defer-...` recipients are taken.
    take_deferred: AtomicBool,
    /// `bounce-...` recipients are taken.
    take_bounced: AtomicBool,
    /// `slow-...` recipients wait for this to be cleared, then are
    /// deferred like `defer-...`.
    hold: AtomicBool,
    /// Copies per recipient.
    got: Mutex<HashMap<String, usize>>,
}

impl Sink {
    fn copies(&self, rcpt: &str) -> usize {
        self.got.lock().unwrap().get(rcpt).copied().unwrap_or(0)
    }
}

fn sink() -> (SocketAddr, Arc<Sink>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let s = Arc::new(Sink::default());
    let s2 = s.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(conn) = conn else { continue };
            let s = s2.clone();
            std::thread::spawn(move || serve_sink(conn, &s));
        }
    });
    (addr, s)
}

fn serve_sink(conn: TcpStream, s: &Sink) {
    let mut w = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    let _ = w.write_all(b"220 sink ESMTP\r\n");
    let mut rcpts: Vec<String> = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let upper = line.to_ascii_uppercase();
        let reply: String = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            // No PIPELINING: one command at a time.
            "250 sink\r\n".into()
        } else if upper.starts_with("MAIL") {
            rcpts.clear();
            "250 2.1.0 ok\r\n".into()
        } else if upper.starts_with("RCPT") {
            let addr = line.split('<').nth(1).and_then(|a| a.split('>').next()).unwrap_or("").to_string();
            if addr.starts_with("slow-") {
                let until = Instant::now() + Duration::from_secs(20);
                while s.hold.load(Ordering::SeqCst) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            if (addr.starts_with("defer-") || addr.starts_with("slow-")) && !s.take_deferred.load(Ordering::SeqCst) {
                "451 4.3.0 try again later\r\n".into()
            } else if addr.starts_with("bounce-") && !s.take_bounced.load(Ordering::SeqCst) {
                "550 5.1.1 no such user\r\n".into()
            } else {
                rcpts.push(addr);
                "250 2.1.5 ok\r\n".into()
            }
        } else if upper.starts_with("DATA") {
            if rcpts.is_empty() {
                "554 5.5.1 no valid recipients\r\n".into()
            } else {
                let _ = w.write_all(b"354 go\r\n");
                if common::read_text(&mut r).is_none() {
                    return;
                }
                let mut got = s.got.lock().unwrap();
                for rc in rcpts.drain(..) {
                    *got.entry(rc).or_default() += 1;
                }
                "250 2.0.0 queued\r\n".into()
            }
        } else if upper.starts_with("QUIT") {
            let _ = w.write_all(b"221 bye\r\n");
            return;
        } else {
            "250 ok\r\n".into()
        };
        if w.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

fn config(choice: QueueChoice, dir: &Path, next_hop: SocketAddr) -> ServerConfig {
    let mut c = ServerConfig::new("127.0.0.1:0".parse().unwrap(), choice, dir.to_path_buf(), Delivery::Relay(next_hop));
    c.segment_size = 16 << 20;
    c.max_message_bytes = 1 << 20;
    // Deferred messages stay deferred until a flush.
    c.retry_base = Duration::from_secs(3600);
    c.drain_timeout = Duration::from_secs(2);
    c
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < until, "hang detector: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a command; returns how it went, its records and its `done` line.
fn run(dir: &Path, req: Request) -> (Via, Vec<Line>, iolab_mail::admin::Done) {
    let a = queue_command(dir, &req).unwrap();
    let mut lines = a.lines;
    match lines.pop() {
        Some(Line::Done(d)) => (a.via, lines, d),
        other => panic!("{req:?}: ended with {other:?}"),
    }
}

fn list(dir: &Path) -> (Via, Vec<Entry>) {
    let (via, lines, done) = run(dir, Request::List);
    let entries: Vec<Entry> = lines
        .into_iter()
        .map(|l| match l {
            Line::Entry(e) => e,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(done.count, entries.len());
    (via, entries)
}

/// The entries naming recipient `rcpt`.
fn with_rcpt<'a>(entries: &'a [Entry], rcpt: &str) -> Vec<&'a Entry> {
    entries.iter().filter(|e| e.recipients.iter().any(|r| r.address == rcpt)).collect()
}

fn ids(strs: &[&str]) -> Vec<String> {
    strs.iter().map(|s| s.to_string()).collect()
}

/// Every command against a running server and then against the stopped
/// one, on both queues.
#[test]
fn every_command_works_with_the_server_running_and_stopped() {
    for choice in [QueueChoice::Fast, QueueChoice::FileDir] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("q");
        let (hop, sink) = sink();
        let s = MailServer::start(config(choice, &dir, hop)).unwrap();
        let addr = s.local_addr();
        common::send(addr, &["defer-a@t"], "msg-a");
        common::send(addr, &["bounce-b@t"], "msg-b");
        common::send(addr, &["ok-c@t", "defer-c@t"], "msg-c");
        common::send(addr, &["defer-d@t"], "msg-d");
        // a, d deferred; b a dead letter (its DSN to a@x is sent); c sent
        // to ok-c and deferred for defer-c.
        wait_for("the first attempts", || {
            let (_, e) = list(&dir);
            e.len() == 4 && e.iter().all(|e| e.state != "ready" && e.state != "active") && sink.copies("ok-c@t") == 1
        });
        let (via, entries) = list(&dir);
        assert_eq!(via, Via::Server, "{choice:?}");
        let a = with_rcpt(&entries, "defer-a@t")[0];
        assert_eq!((a.queue.as_str(), a.state.as_str(), a.attempts, a.sender.as_str()), ("main", "deferred", 1, "a@x"), "{choice:?}");
        assert!(a.next_retry_ms.unwrap() > a.arrival_ms + 3_000_000, "{a:?}");
        assert_eq!(a.recipients[0].state, "deferred");
        assert!(a.recipients[0].reason.as_deref().unwrap().contains("451 4.3.0 try again later"), "{a:?}");
        let b = with_rcpt(&entries, "bounce-b@t")[0];
        assert_eq!((b.queue.as_str(), b.state.as_str(), b.recipients[0].state.as_str()), ("dead", "dead", "bounced"));
        assert!(b.recipients[0].reason.as_deref().unwrap().contains("550 5.1.1 no such user"), "{b:?}");
        let c = with_rcpt(&entries, "defer-c@t")[0];
        assert_eq!(c.recipients.len(), 1, "ok-c@t is done: {c:?}");
        assert_eq!(c.state, "deferred");
        // The queue id is the one in the Received: header.
        let (_, shown, done) = run(&dir, Request::Show { id: a.qid.to_lowercase(), body: true });
        assert_eq!(done.count, 1);
        let Line::Shown(sh) = &shown[0] else { panic!() };
        assert!(sh.headers.contains(&format!("with ESMTP id {}", a.qid)) && sh.headers.contains("Subject: msg-a"), "{sh:?}");
        assert!(sh.envelope.contains("T defer-a@t\n"), "{sh:?}");
        assert!(sh.body_base64.is_some());
        let (_, _, none) = run(&dir, Request::Show { id: "NOSUCHID".into(), body: false });
        assert_eq!((none.count, none.missing.clone()), (0, ids(&["NOSUCHID"])));

        // Delete d; flush the rest with the next hop taking them now.
        let d = with_rcpt(&entries, "defer-d@t")[0].qid.clone();
        let (_, _, del) = run(&dir, Request::Delete { ids: vec![d.clone(), "FFFF".into()] });
        assert_eq!((del.count, del.ids.clone(), del.missing.clone()), (1, vec![d.clone()], ids(&["FFFF"])));
        sink.take_deferred.store(true, Ordering::SeqCst);
        let (_, _, fl) = run(&dir, Request::Flush { ids: vec![] });
        assert_eq!(fl.count, 2, "{choice:?}: a and c: {fl:?}");
        wait_for("the flushed messages", || sink.copies("defer-a@t") == 1 && sink.copies("defer-c@t") == 1);
        // The dead letter back for another try, taken this time.
        sink.take_bounced.store(true, Ordering::SeqCst);
        let (_, _, rq) = run(&dir, Request::Requeue { ids: vec![b.qid.clone()], all: false });
        assert_eq!((rq.count, rq.ids.clone()), (1, vec![b.qid.clone()]));
        wait_for("the requeued message", || sink.copies("bounce-b@t") == 1);
        wait_for("an empty queue", || list(&dir).1.is_empty());
        assert_eq!(sink.copies("defer-d@t"), 0, "deleted");
        assert_eq!(sink.copies("ok-c@t"), 1, "not sent twice");

        // Stopped: the same commands open the queue themselves.
        sink.take_deferred.store(false, Ordering::SeqCst);
        sink.take_bounced.store(false, Ordering::SeqCst);
        common::send(addr, &["defer-e@t"], "msg-e");
        common::send(addr, &["defer-f@t"], "msg-f");
        common::send(addr, &["bounce-g@t"], "msg-g");
        wait_for("e, f deferred, g dead", || {
            let e = list(&dir).1;
            e.len() == 3 && e.iter().all(|e| e.state == "deferred" || e.state == "dead")
        });
        s.shutdown();
        s.join().unwrap();
        drop(s);
        assert!(!dir.join("control").exists(), "the socket goes with the server");
        // The committer threads let go of the queue just after the drop
        // (in a process of its own the command never sees this).
        wait_for("the queue closed in this process", || queue_command(&dir, &Request::List).is_ok());
        let (via, entries) = list(&dir);
        assert_eq!(via, Via::Direct);
        assert_eq!(entries.len(), 3, "{choice:?}: {entries:?}");
        let e = with_rcpt(&entries, "defer-e@t")[0].qid.clone();
        let f = with_rcpt(&entries, "defer-f@t")[0].qid.clone();
        let g = with_rcpt(&entries, "bounce-g@t")[0].qid.clone();
        let (via, _, shown) = run(&dir, Request::Show { id: f.clone(), body: false });
        assert_eq!((via, shown.count), (Via::Direct, 1));
        let (_, _, del) = run(&dir, Request::Delete { ids: vec![e.clone()] });
        assert_eq!(del.ids, vec![e.clone()]);
        let (_, _, fl) = run(&dir, Request::Flush { ids: vec![f.clone()] });
        // FastQueue keeps the delay on disk and moves it; the file queue
        // keeps it in memory only, so after a stop it is due anyway.
        let want = if choice == QueueChoice::Fast { 1 } else { 0 };
        assert_eq!(fl.count, want, "{choice:?}: {fl:?}");
        let (_, _, rq) = run(&dir, Request::Requeue { ids: vec![], all: true });
        assert_eq!(rq.ids, vec![g.clone()]);
        let (_, entries) = list(&dir);
        assert_eq!(entries.len(), 2, "{entries:?}");
        let mut left: Vec<(&str, &str)> = entries.iter().map(|x| (x.queue.as_str(), x.qid.as_str())).collect();
        left.sort();
        let mut want = vec![("main", f.as_str()), ("main", g.as_str())];
        want.sort();
        assert_eq!(left, want, "{choice:?}");
        // Started again: f and g go out at once, e never.
        sink.take_deferred.store(true, Ordering::SeqCst);
        sink.take_bounced.store(true, Ordering::SeqCst);
        let s = MailServer::start(config(choice, &dir, hop)).unwrap();
        wait_for("f and g after the restart", || sink.copies("defer-f@t") == 1 && sink.copies("bounce-g@t") == 1);
        wait_for("an empty queue", || list(&dir).1.is_empty());
        assert_eq!(sink.copies("defer-e@t"), 0, "{choice:?}: deleted while stopped");
        s.shutdown();
        s.join().unwrap();
    }
}

/// Sends one message of `size` bytes of text to `rcpt`.
fn send_big(addr: SocketAddr, rcpt: &str, size: usize) {
    let line = "x".repeat(98);
    let body: String = std::iter::repeat_n(format!("{line}\r\n"), size / 100 + 1).collect();
    let w = TcpStream::connect(addr).unwrap();
    w.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = BufReader::new(w.try_clone().unwrap());
    let mut w = w;
    let mut reply = || {
        let mut l = String::new();
        loop {
            l.clear();
            r.read_line(&mut l).unwrap();
            if l.as_bytes().get(3) != Some(&b'-') {
                return l;
            }
        }
    };
    assert!(reply().starts_with("220"));
    for (cmd, want) in [("EHLO t".to_string(), "250"), ("MAIL FROM:<a@x>".into(), "250"), (format!("RCPT TO:<{rcpt}>"), "250"), ("DATA".into(), "354")] {
        w.write_all(format!("{cmd}\r\n").as_bytes()).unwrap();
        assert!(reply().starts_with(want), "{cmd}");
    }
    w.write_all(format!("Subject: big\r\n\r\n{body}.\r\n").as_bytes()).unwrap();
    assert!(reply().starts_with("250"));
}

/// A client's answer: its lines, as text, until the server closes.
fn answer(mut c: UnixStream) -> String {
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut s = String::new();
    c.read_to_string(&mut s).unwrap();
    s
}

/// Garbage, an over-long request, a client that never reads its answer
/// and a crowd of clients that say nothing: SMTP service and delivery go
/// on meanwhile, the crowd gets `busy`, and once it has gone an honest
/// client is answered (while the one that never reads is still stuck).
#[test]
fn hostile_control_clients_do_not_disturb_smtp_or_delivery() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("q");
    let (hop, sink) = sink();
    let mut c = config(QueueChoice::Fast, &dir, hop);
    c.max_message_bytes = 4 << 20;
    let s = MailServer::start(c).unwrap();
    let addr = s.local_addr();
    // Its `show --body` answer (about 1.3 MB of base64) is far more than a
    // socket buffer holds.
    send_big(addr, "defer-big@t", 1 << 20);
    wait_for("the big message deferred", || list(&dir).1.iter().any(|e| e.state == "deferred"));
    let qid = list(&dir).1[0].qid.clone();
    let sock = dir.join("control");

    let mut garbage = UnixStream::connect(&sock).unwrap();
    garbage.write_all(b"\x00\xffhello {{{\n").unwrap();
    assert!(answer(garbage).contains("not a request"));
    let mut long = UnixStream::connect(&sock).unwrap();
    long.write_all(&vec![b'x'; 100 << 10]).unwrap();
    assert!(answer(long).contains("request longer than 65536 bytes"));

    let mut stuck = UnixStream::connect(&sock).unwrap();
    stuck.write_all(format!("{{\"op\":\"show\",\"id\":\"{qid}\",\"body\":true}}\n").as_bytes()).unwrap();
    let crowd: Vec<UnixStream> = (0..40).map(|_| UnixStream::connect(&sock).unwrap()).collect();
    // Mail goes on: accepted and delivered.
    for i in 0..5 {
        common::send(addr, &[&format!("ok-{i}@t")], &format!("during-{i}"));
    }
    wait_for("the mail sent meanwhile", || (0..5).all(|i| sink.copies(&format!("ok-{i}@t")) == 1));
    // The crowd: the slots left are taken, the rest told at once.
    let mut told = vec![false; crowd.len()];
    for c in &crowd {
        c.set_nonblocking(true).unwrap();
    }
    wait_for("the crowd told it is busy", || {
        for (c, t) in crowd.iter().zip(told.iter_mut()) {
            let mut buf = [0u8; 200];
            if let Ok(n) = (&*c).read(&mut buf) {
                *t |= String::from_utf8_lossy(&buf[..n]).contains("busy");
            }
        }
        told.iter().filter(|&&t| t).count() >= 40 - iolab_mail::control::MAX_CLIENTS
    });
    drop(crowd);
    // The crowd has gone: its slots are free again.
    wait_for("an honest client answered", || matches!(queue_command(&dir, &Request::List).unwrap().lines.last(), Some(Line::Done(_))));
    drop(stuck);
    s.shutdown();
    assert!(s.wait(Some(Duration::from_secs(20))), "hang detector: shutdown");
    s.join().unwrap();
}

/// Deletes, requeues and flushes by an operator while messages arrive and
/// are delivered (some sent, some deferred until they give up, some
/// bounced): every recipient of every message not deleted gets exactly one
/// copy (no crash here, so the at-least-once bound allows no duplicate),
/// and a deleted message's recipients at most one.
#[test]
fn deletes_and_requeues_while_deliveries_run_lose_nothing_and_send_nothing_twice() {
    for choice in [QueueChoice::Fast, QueueChoice::FileDir] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("q");
        let (hop, sink) = sink();
        let mut c = config(choice, &dir, hop);
        c.retry_base = Duration::from_millis(50);
        c.retry_max = Duration::from_millis(200);
        c.max_attempts = 4;
        let s = MailServer::start(c).unwrap();
        let addr = s.local_addr();
        const N: usize = 60;
        let kinds = ["ok2", "defer", "bounce"];
        let sender = std::thread::spawn(move || {
            for i in 0..N {
                let other = format!("{}-{i}@t", kinds[i % 3]);
                common::send(addr, &[&format!("ok-{i}@t"), &other], &format!("m{i}"));
            }
        });
        // The message number a listed record is about (DSNs to a@x: none).
        let number = |e: &Entry| e.recipients.iter().find_map(|r| r.address.split(['-', '@']).nth(1)?.parse::<usize>().ok());
        let mut deleted = std::collections::BTreeSet::new();
        let until = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < until || !sender.is_finished() {
            let (_, entries) = list(&dir);
            let doomed: Vec<String> = entries.iter().filter(|e| number(e).is_some_and(|n| n % 7 == 3)).map(|e| e.qid.clone()).collect();
            if !doomed.is_empty() {
                let (_, _, d) = run(&dir, Request::Delete { ids: doomed });
                for e in entries.iter().filter(|e| d.ids.contains(&e.qid)) {
                    deleted.insert(number(e).unwrap());
                }
            }
            run(&dir, Request::Requeue { ids: vec![], all: true });
            run(&dir, Request::Flush { ids: vec![] });
            std::thread::sleep(Duration::from_millis(20));
        }
        sender.join().unwrap();
        sink.take_deferred.store(true, Ordering::SeqCst);
        sink.take_bounced.store(true, Ordering::SeqCst);
        wait_for("everything delivered", || {
            run(&dir, Request::Requeue { ids: vec![], all: true });
            run(&dir, Request::Flush { ids: vec![] });
            list(&dir).1.is_empty()
        });
        assert!(!deleted.is_empty(), "{choice:?}: the test deleted nothing");
        for i in 0..N {
            for rcpt in [format!("ok-{i}@t"), format!("{}-{i}@t", kinds[i % 3])] {
                let n = sink.copies(&rcpt);
                if deleted.contains(&i) {
                    assert!(n <= 1, "{choice:?}: {rcpt}: {n} copies of a deleted message");
                } else {
                    assert_eq!(n, 1, "{choice:?}: {rcpt}: {n} copies");
                }
            }
        }
        s.shutdown();
        s.join().unwrap();
    }
}

/// The socket: mode 0600, the server's user; made where the queue
/// directory's path is too long for a socket address too; removed at
/// stop; a stale socket replaced; a file or a live socket in its place
/// refused at start, and left alone.
#[test]
fn the_control_socket_is_private_and_only_a_stale_one_is_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a-queue-directory-whose-path-is-longer-than-a-unix-socket-address-can-hold-0123456789").join("q");
    assert!(dir.join("control").as_os_str().len() > 108);
    let mail = tmp.path().join("mail");
    let cfg = || {
        let mut c = ServerConfig::new("127.0.0.1:0".parse().unwrap(), QueueChoice::Fast, dir.clone(), Delivery::Maildir(mail.clone()));
        c.segment_size = 16 << 20;
        c.max_message_bytes = 1 << 20;
        c
    };
    let sock = dir.join("control");
    let s = MailServer::start(cfg()).unwrap();
    let m = std::fs::symlink_metadata(&sock).unwrap();
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    assert_eq!((m.mode() & 0o777, m.uid()), (0o600, me));
    assert!(std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()));
    assert_eq!(queue_command(&dir, &Request::List).unwrap().via, Via::Server);
    // The stand-alone binary's `queue` (JSON in, JSON lines out).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iolab-mail"))
        .args(["queue", "--queue-dir", dir.to_str().unwrap(), r#"{"op": "list"}"#])
        .output()
        .unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains(r#""via":"server""#), "{out:?}");
    assert!(!std::fs::read_dir(&dir).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().starts_with(".control")));
    s.shutdown();
    s.join().unwrap();
    drop(s);
    assert!(!sock.exists());
    // A stale socket (a server killed with SIGKILL leaves one).
    let short = tmp.path().join("s");
    std::fs::create_dir(&short).unwrap();
    drop(std::os::unix::net::UnixListener::bind(short.join("control")).unwrap());
    std::fs::rename(short.join("control"), &sock).unwrap();
    wait_for("the queue closed in this process", || queue_command(&dir, &Request::List).is_ok());
    // And the private directory of a server killed while it made its socket.
    std::fs::create_dir(dir.join(".control-4242.tmp")).unwrap();
    let s = MailServer::start(cfg()).unwrap();
    assert_eq!(queue_command(&dir, &Request::List).unwrap().via, Via::Server);
    assert!(!dir.join(".control-4242.tmp").exists());
    s.shutdown();
    s.join().unwrap();
    drop(s);
    // Not a socket: refused, left as it was.
    std::fs::write(&sock, b"operator's notes").unwrap();
    wait_for("the queue closed in this process", || queue_command(&dir, &Request::Show { id: "A".into(), body: false }).is_ok());
    let e = MailServer::start(cfg()).err().expect("refused");
    assert!(e.to_string().contains("control socket") && e.to_string().contains("not a socket"), "{e}");
    assert_eq!(std::fs::read(&sock).unwrap(), b"operator's notes");
    // A socket something answers on: refused, left as it was.
    std::fs::remove_file(&sock).unwrap();
    let live = std::os::unix::net::UnixListener::bind(short.join("live")).unwrap();
    std::fs::rename(short.join("live"), &sock).unwrap();
    let e = MailServer::start(cfg()).err().expect("refused");
    assert!(e.to_string().contains("another process answers"), "{e}");
    assert!(sock.exists());
    drop(live);
}

/// A message deleted while its delivery runs, whose delivery then sends
/// one recipient and defers the other: the record for the deferred one is
/// not stored (the delete is final), so it never goes out.
#[test]
fn a_message_deleted_during_its_delivery_stays_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("q");
    let (hop, sink) = sink();
    let mut c = config(QueueChoice::Fast, &dir, hop);
    // One delivery at a time: the next message's delivery begins only
    // once the first is settled.
    c.delivery_concurrency = 1;
    c.max_in_flight = 1;
    let s = MailServer::start(c).unwrap();
    sink.hold.store(true, Ordering::SeqCst);
    common::send(s.local_addr(), &["ok-h@t", "slow-h@t"], "held");
    wait_for("the delivery under way", || list(&dir).1.first().is_some_and(|e| e.state == "active"));
    let qid = list(&dir).1[0].qid.clone();
    let (_, _, d) = run(&dir, Request::Delete { ids: vec![qid] });
    assert_eq!(d.count, 1);
    sink.hold.store(false, Ordering::SeqCst);
    common::send(s.local_addr(), &["ok-after@t"], "after");
    wait_for("the next message", || sink.copies("ok-after@t") == 1);
    assert_eq!(sink.copies("ok-h@t"), 1, "sent before the delete took effect");
    assert!(list(&dir).1.is_empty(), "no record for slow-h@t: {:?}", list(&dir).1);
    s.shutdown();
    s.join().unwrap();
}
