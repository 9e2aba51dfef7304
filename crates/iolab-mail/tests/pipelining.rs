//! The relay's pipelined transaction (RFC 2920) when the next hop refuses
//! one recipient of two but still answers `DATA` with `354` (a server may:
//! one recipient was valid). Our relay fails the whole message on any
//! refused recipient, so it must not send the text (the accepted recipient
//! would get it, and again on every retry): it drops the connection, which
//! makes the next hop discard the transaction (RFC 5321 section 4.1.1.4).
//! The message is dead-lettered (5xx); the next message goes through a new
//! connection.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iolab_mail::{Delivery, MailServer, QueueChoice, ServerConfig};

mod common;

#[derive(Default)]
struct Seen {
    delivered: Vec<String>,
    cut_in_data: usize,
}

/// A pipelining next hop that refuses recipients named `refused@...` and
/// answers DATA with 354 whatever the recipients were.
fn sink() -> (SocketAddr, Arc<Mutex<Seen>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            let seen = seen2.clone();
            std::thread::spawn(move || serve(conn, &seen));
        }
    });
    (addr, seen)
}

fn serve(conn: TcpStream, seen: &Mutex<Seen>) {
    let mut w = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    let _ = w.write_all(b"220 sink ESMTP\r\n");
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let upper = line.to_ascii_uppercase();
        let reply: &[u8] = if upper.starts_with("EHLO") {
            b"250-sink\r\n250 PIPELINING\r\n"
        } else if upper.starts_with("RCPT") && upper.contains("REFUSED@") {
            b"550 5.1.1 no such user\r\n"
        } else if upper.starts_with("DATA") {
            let _ = w.write_all(b"354 go\r\n");
            let Some(text) = common::read_text(&mut r) else {
                seen.lock().unwrap().cut_in_data += 1;
                return;
            };
            seen.lock().unwrap().delivered.push(text);
            b"250 queued\r\n"
        } else if upper.starts_with("QUIT") {
            let _ = w.write_all(b"221 bye\r\n");
            return;
        } else {
            b"250 ok\r\n"
        };
        let _ = w.write_all(reply);
    }
}

#[test]
fn a_refused_recipient_under_pipelining_sends_no_text() {
    let tmp = tempfile::tempdir().unwrap();
    let (next_hop, seen) = sink();
    let mut c = ServerConfig::new("127.0.0.1:0".parse().unwrap(), QueueChoice::Fast, tmp.path().join("q"), Delivery::Relay(next_hop));
    c.segment_size = 16 << 20;
    c.max_message_bytes = 1 << 20;
    c.delivery_concurrency = 1;
    c.drain_timeout = Duration::from_secs(1);
    let s = MailServer::start(c).unwrap();
    common::send(s.local_addr(), &["ok@y", "refused@y"], "half-refused");
    let until = Instant::now() + Duration::from_secs(10);
    while s.stats().dead < 1 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    common::send(s.local_addr(), &["ok@y"], "all-accepted");
    while s.stats().delivered < 1 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = s.stats();
    assert_eq!((st.dead, st.delivered, st.retried), (1, 1, 0), "{st:?}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.delivered.len(), 1, "only the second message's text reached the next hop");
    assert!(seen.delivered[0].contains("all-accepted"));
    assert_eq!(seen.cut_in_data, 1, "the first transaction was cut in DATA, without its text");
    drop(seen);
    s.shutdown();
    let _ = s.join();
}
