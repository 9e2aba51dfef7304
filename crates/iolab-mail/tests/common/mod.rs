//! What the integration tests with a fake next hop share: an SMTP client
//! that sends one message to the server under test, and reading a message's
//! text after `354` on the fake next hop's side.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Sends one message to `rcpts` through the server at `addr` and expects
/// every step to be accepted, the final `250` meaning the message is durable.
pub fn send(addr: SocketAddr, rcpts: &[&str], marker: &str) {
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
    let mut cmds = vec![("EHLO t".to_string(), "250"), ("MAIL FROM:<a@x>".to_string(), "250")];
    cmds.extend(rcpts.iter().map(|r| (format!("RCPT TO:<{r}>"), "250")));
    cmds.push(("DATA".into(), "354"));
    for (cmd, want) in cmds {
        w.write_all(format!("{cmd}\r\n").as_bytes()).unwrap();
        let got = reply();
        assert!(got.starts_with(want), "{cmd}: {got}");
    }
    w.write_all(format!("Subject: {marker}\r\n\r\n{marker}\r\n.\r\n").as_bytes()).unwrap();
    assert!(reply().starts_with("250"), "the message is durable");
    w.write_all(b"QUIT\r\n").unwrap();
}

/// The text of one message after `354`, up to the lone dot; `None` if the
/// connection ended inside it.
pub fn read_text(r: &mut BufReader<TcpStream>) -> Option<String> {
    let mut text = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        if line == ".\r\n" {
            return Some(text);
        }
        text.push_str(&line);
    }
}
