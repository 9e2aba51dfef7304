//! Slow and hung deliveries, with both queues. The next hop here is slow
//! (or silent) on its first connection only; every later connection is a
//! working SMTP sink, so a second delivery of the same message by another
//! task shows up at once.
//!
//! - A delivery slower than the visibility timeout renews its deadline
//!   while it runs: the message is delivered once, not handed to a second
//!   task (which is what happened before renewals: two copies).
//! - A delivery that hangs is cut after `delivery_timeout` and retried: the
//!   message is not pinned until the relay timeout.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iolab_mail::{Delivery, MailServer, QueueChoice, ServerConfig};

mod common;

/// A next hop whose first connection greets after `first_greeting` (never
/// with `None`); returns its address and the messages (DATA text) it got.
fn slow_first_sink(first_greeting: Option<Duration>) -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let got2 = got.clone();
    std::thread::spawn(move || {
        let mut hung = Vec::new();
        for (n, conn) in l.incoming().enumerate() {
            let Ok(conn) = conn else { continue };
            let got = got2.clone();
            match (n, first_greeting) {
                (0, None) => hung.push(conn), // kept open, never answered
                (0, Some(delay)) => {
                    std::thread::spawn(move || {
                        std::thread::sleep(delay);
                        serve_sink(conn, &got)
                    });
                }
                _ => {
                    std::thread::spawn(move || serve_sink(conn, &got));
                }
            }
        }
    });
    (addr, got)
}

fn serve_sink(conn: TcpStream, got: &Mutex<Vec<String>>) {
    let mut w = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    let _ = w.write_all(b"220 sink ESMTP\r\n");
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
        let reply: &[u8] = match verb.as_str() {
            "EHLO" | "HELO" | "MAIL" | "RCPT" | "RSET" | "NOOP" => b"250 ok\r\n",
            "QUIT" => {
                let _ = w.write_all(b"221 bye\r\n");
                return;
            }
            "DATA" => {
                let _ = w.write_all(b"354 go\r\n");
                let Some(text) = common::read_text(&mut r) else { return };
                got.lock().unwrap().push(text);
                b"250 queued\r\n"
            }
            _ => b"502 what\r\n",
        };
        let _ = w.write_all(reply);
    }
}

fn config(choice: QueueChoice, dir: &std::path::Path, sink: std::net::SocketAddr) -> ServerConfig {
    let mut c = ServerConfig::new("127.0.0.1:0".parse().unwrap(), choice, dir.join("q"), Delivery::Relay(sink));
    c.segment_size = 16 << 20;
    c.max_message_bytes = 1 << 20;
    c.delivery_concurrency = 2;
    c.drain_timeout = Duration::from_secs(1);
    c
}

fn wait_delivered(s: &MailServer, n: u64, within: Duration) {
    let until = Instant::now() + within;
    while s.stats().delivered < n && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_slow_delivery_renews_its_deadline_and_is_delivered_once() {
    for choice in [QueueChoice::Fast, QueueChoice::FileDir] {
        let tmp = tempfile::tempdir().unwrap();
        let (sink, got) = slow_first_sink(Some(Duration::from_millis(2500)));
        let mut c = config(choice, tmp.path(), sink);
        c.relay_timeout = Duration::from_secs(10);
        c.visibility_timeout = Duration::from_millis(600);
        let s = MailServer::start(c).unwrap();
        let sent = Instant::now();
        common::send(s.local_addr(), &["b@y"], "slow-marker-1");
        wait_delivered(&s, 1, Duration::from_secs(10));
        let waited = sent.elapsed();
        // Time for a second copy to arrive, had one been started.
        std::thread::sleep(Duration::from_millis(1000));
        let texts = got.lock().unwrap().clone();
        assert_eq!(texts.len(), 1, "{choice:?}: one copy, through the slow connection, after {waited:?}");
        assert!(texts[0].contains("slow-marker-1"));
        assert!(waited >= Duration::from_millis(2400), "{choice:?}: delivered by the slow first task: {waited:?}");
        let st = s.stats();
        assert_eq!((st.delivered, st.queued, st.retried), (1, 0, 0), "{choice:?}: {st:?}");
        assert!(st.visibility_renewals >= 3, "{choice:?}: renewed every 200 ms: {st:?}");
        s.shutdown();
        let _ = s.join();
    }
}

#[test]
fn a_hung_delivery_is_cut_and_retried() {
    for choice in [QueueChoice::Fast, QueueChoice::FileDir] {
        let tmp = tempfile::tempdir().unwrap();
        let (sink, got) = slow_first_sink(None);
        let mut c = config(choice, tmp.path(), sink);
        // The relay timeout alone would pin the message for 30 s.
        c.relay_timeout = Duration::from_secs(30);
        c.delivery_timeout = Duration::from_secs(1);
        c.visibility_timeout = Duration::from_millis(600);
        c.retry_base = Duration::from_millis(100);
        let s = MailServer::start(c).unwrap();
        let sent = Instant::now();
        common::send(s.local_addr(), &["b@y"], "hung-marker-1");
        wait_delivered(&s, 1, Duration::from_secs(8));
        let waited = sent.elapsed();
        let texts = got.lock().unwrap().clone();
        assert_eq!(texts.len(), 1, "{choice:?}: delivered after {waited:?}");
        assert!(texts[0].contains("hung-marker-1"));
        assert!(waited >= Duration::from_millis(900), "{choice:?}: not before the delivery timeout: {waited:?}");
        let st = s.stats();
        assert_eq!((st.delivered, st.delivery_timeouts, st.retried, st.queued), (1, 1, 1, 0), "{choice:?}: {st:?}");
        s.shutdown();
        let _ = s.join();
    }
}
