//! The relay's pipelined transaction (RFC 2920) when the next hop refuses
//! recipients but still answers `DATA` with `354` (a server may: it
//! cannot know, when it reads DATA, that none of the recipients was
//! valid).
//!
//! - Every recipient refused: there is nothing to send, so the text must
//!   not go out; the relay drops the connection, which makes the next hop
//!   discard the transaction (RFC 5321 section 4.1.1.4).
//! - One of two refused: the text goes to the other (per-recipient status,
//!   as Postfix's smtp(8)), and the refused one gets a DSN to the sender.
//!
//! The next message goes through a new connection either way.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iolab_mail::{Delivery, MailServer, QueueChoice, ServerConfig};

mod common;

#[derive(Default)]
struct Seen {
    /// (MAIL FROM line, text) of each transaction that got its text.
    delivered: Vec<(String, String)>,
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
    let mut mail = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let upper = line.to_ascii_uppercase();
        let reply: &[u8] = if upper.starts_with("EHLO") {
            b"250-sink\r\n250 PIPELINING\r\n"
        } else if upper.starts_with("MAIL") {
            mail = line.trim_end().to_string();
            b"250 ok\r\n"
        } else if upper.starts_with("RCPT") && upper.contains("REFUSED@") {
            b"550 5.1.1 no such user\r\n"
        } else if upper.starts_with("DATA") {
            let _ = w.write_all(b"354 go\r\n");
            let Some(text) = common::read_text(&mut r) else {
                seen.lock().unwrap().cut_in_data += 1;
                return;
            };
            seen.lock().unwrap().delivered.push((mail.clone(), text));
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
fn refused_recipients_under_pipelining() {
    let tmp = tempfile::tempdir().unwrap();
    let (next_hop, seen) = sink();
    let mut c = ServerConfig::new("127.0.0.1:0".parse().unwrap(), QueueChoice::Fast, tmp.path().join("q"), Delivery::Relay(next_hop));
    c.segment_size = 16 << 20;
    c.max_message_bytes = 1 << 20;
    c.delivery_concurrency = 1;
    c.drain_timeout = Duration::from_secs(1);
    let s = MailServer::start(c).unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    let wait = |what: &str, cond: &dyn Fn(&Seen) -> bool| {
        while !cond(&seen.lock().unwrap()) {
            assert!(Instant::now() < until, "not reached: {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    common::send(s.local_addr(), &["refused@y"], "all-refused");
    wait("the first DSN", &|s| s.delivered.len() == 1);
    common::send(s.local_addr(), &["ok@y", "refused@y"], "half-refused");
    wait("the second message and its DSN", &|s| s.delivered.len() == 3);
    let st = s.stats();
    // Two messages with a bounced recipient, two DSNs, nothing retried.
    assert_eq!((st.dead, st.bounces, st.retried, st.rcpt_sent, st.rcpt_bounced), (2, 2, 0, 3, 2), "{st:?}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.cut_in_data, 1, "the all-refused transaction was cut in DATA, without its text");
    let from_sender: Vec<&String> = seen.delivered.iter().filter(|(m, _)| m == "MAIL FROM:<a@x>").map(|(_, t)| t).collect();
    assert_eq!(from_sender.len(), 1);
    assert!(from_sender[0].contains("\r\nhalf-refused\r\n"), "the accepted recipient got the text");
    let dsns: Vec<&String> = seen.delivered.iter().filter(|(m, _)| m == "MAIL FROM:<>").map(|(_, t)| t).collect();
    assert_eq!(dsns.len(), 2);
    assert!(dsns.iter().all(|t| t.contains("Final-Recipient: rfc822; refused@y") && t.contains("Status: 5.1.1")));
    drop(seen);
    s.shutdown();
    let _ = s.join();
}
