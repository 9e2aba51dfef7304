//! Visibility timeouts in delivery: a delivery task that hangs does not pin
//! its message. The next hop here accepts its first connection and never
//! greets (the first delivery task waits for the greeting, up to the relay
//! timeout of 6 s); every later connection is a working SMTP sink. With a
//! visibility timeout of 1 s the message must reach the sink through a
//! second task within a few seconds, long before the hung one gives up.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iolab_mail::{Delivery, MailServer, QueueChoice, ServerConfig};

/// A next hop whose first connection hangs; returns its address and the
/// messages (DATA text) it received.
fn hanging_then_working_sink() -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let got2 = got.clone();
    std::thread::spawn(move || {
        let mut hung = Vec::new();
        for (n, conn) in l.incoming().enumerate() {
            let Ok(conn) = conn else { continue };
            if n == 0 {
                hung.push(conn); // kept open, never answered
                continue;
            }
            let got = got2.clone();
            std::thread::spawn(move || serve_sink(conn, &got));
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
                let mut text = String::new();
                loop {
                    line.clear();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if line == ".\r\n" {
                        break;
                    }
                    text.push_str(&line);
                }
                got.lock().unwrap().push(text);
                b"250 queued\r\n"
            }
            _ => b"502 what\r\n",
        };
        let _ = w.write_all(reply);
    }
}

fn send(s: &MailServer, marker: &str) {
    let w = TcpStream::connect(s.local_addr()).unwrap();
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
    for (cmd, want) in [("EHLO t", "250"), ("MAIL FROM:<a@x>", "250"), ("RCPT TO:<b@y>", "250"), ("DATA", "354")] {
        w.write_all(format!("{cmd}\r\n").as_bytes()).unwrap();
        assert!(reply().starts_with(want), "{cmd}");
    }
    w.write_all(format!("Subject: {marker}\r\n\r\n{marker}\r\n.\r\n").as_bytes()).unwrap();
    assert!(reply().starts_with("250"), "the message is durable");
    w.write_all(b"QUIT\r\n").unwrap();
}

#[test]
fn a_hung_delivery_does_not_pin_its_message() {
    let tmp = tempfile::tempdir().unwrap();
    let (sink, got) = hanging_then_working_sink();
    let mut c = ServerConfig::new("127.0.0.1:0".parse().unwrap(), QueueChoice::Fast, tmp.path().join("q"), Delivery::Relay(sink));
    c.segment_size = 16 << 20;
    c.max_message_bytes = 1 << 20;
    c.delivery_concurrency = 2;
    c.relay_timeout = Duration::from_secs(6);
    c.visibility_timeout = Duration::from_secs(1);
    c.drain_timeout = Duration::from_secs(1);
    let s = MailServer::start(c).unwrap();
    let sent = Instant::now();
    send(&s, "visibility-marker-1");
    while got.lock().unwrap().is_empty() && sent.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let waited = sent.elapsed();
    let texts = got.lock().unwrap().clone();
    assert_eq!(texts.len(), 1, "delivered by a second task after {waited:?}");
    assert!(texts[0].contains("visibility-marker-1"));
    assert!(waited >= Duration::from_millis(900), "not before the visibility timeout: {waited:?}");
    // Acknowledged by the second delivery: the queue is empty although the
    // first task is still waiting for its greeting.
    let until = Instant::now() + Duration::from_secs(3);
    while s.stats().delivered < 1 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = s.stats();
    assert_eq!((st.delivered, st.queued), (1, 0), "{st:?}");
    s.shutdown();
    let _ = s.join();
}
