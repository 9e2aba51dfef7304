//! The limits and the drain, on a server started in-process: the
//! connection limit answers `421 4.7.0`, an idle session is closed with
//! `421 4.4.2`, and after `shutdown()` a transaction under way still gets
//! its `250` (then `421 4.3.2`), while new connections are refused.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use iolab_mail::{Delivery, MailServer, QueueChoice, ServerConfig};

fn server(dir: &std::path::Path, tweak: impl FnOnce(&mut ServerConfig)) -> MailServer {
    let mut c = ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        QueueChoice::Fast,
        dir.join("queue"),
        Delivery::Maildir(dir.join("mail")),
    );
    c.segment_size = 16 << 20;
    c.max_message_bytes = 1 << 20;
    tweak(&mut c);
    MailServer::start(c).unwrap()
}

struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Client {
    fn connect(s: &MailServer) -> Client {
        let w = TcpStream::connect(s.local_addr()).unwrap();
        w.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client { r: BufReader::new(w.try_clone().unwrap()), w }
    }

    /// The next complete reply (last line of a multi-line one).
    fn reply(&mut self) -> String {
        loop {
            let mut line = String::new();
            if self.r.read_line(&mut line).unwrap() == 0 {
                return String::new();
            }
            if line.as_bytes().get(3) != Some(&b'-') {
                return line.trim_end().to_string();
            }
        }
    }

    fn cmd(&mut self, c: &str) -> String {
        self.w.write_all(format!("{c}\r\n").as_bytes()).unwrap();
        self.reply()
    }

    fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.r.read(&mut b), Ok(0) | Err(_))
    }
}

#[test]
fn connection_limit_answers_421() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path(), |c| c.max_connections = 2);
    let mut a = Client::connect(&s);
    let mut b = Client::connect(&s);
    assert!(a.reply().starts_with("220 ") && b.reply().starts_with("220 "));
    let mut c = Client::connect(&s);
    assert!(c.reply().starts_with("421 4.7.0"));
    assert!(c.closed());
    drop(a);
    std::thread::sleep(Duration::from_millis(100));
    let mut d = Client::connect(&s);
    assert!(d.reply().starts_with("220 "), "a slot is free again");
    assert_eq!(d.cmd("QUIT"), "221 2.0.0 Bye");
    assert!(b.cmd("NOOP").starts_with("250"));
    s.shutdown();
    s.join().unwrap();
}

#[test]
fn idle_session_is_closed_with_421() {
    let tmp = tempfile::tempdir().unwrap();
    // The shortest timeout the server accepts (config.rs: RFC 5321 asks
    // for minutes; below a second is refused at start).
    let s = server(tmp.path(), |c| c.command_timeout = Duration::from_secs(1));
    let mut a = Client::connect(&s);
    assert!(a.reply().starts_with("220 "));
    assert!(a.cmd("EHLO t").starts_with("250 "));
    // Blocks (up to the client's 10 s) until the server gives up on us.
    assert!(a.reply().starts_with("421 4.4.2"));
    assert!(a.closed());
    s.shutdown();
    s.join().unwrap();
}

#[test]
fn shutdown_lets_an_open_transaction_finish_and_refuses_new_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path(), |_| {});
    let mut busy = Client::connect(&s);
    let mut idle = Client::connect(&s);
    assert!(busy.reply().starts_with("220 ") && idle.reply().starts_with("220 "));
    assert!(busy.cmd("EHLO t").starts_with("250 "));
    assert!(idle.cmd("EHLO t").starts_with("250 "));
    assert!(busy.cmd("MAIL FROM:<a@x>").starts_with("250"));
    s.shutdown();
    // The idle session is told at once; the busy one goes on.
    assert!(idle.reply().starts_with("421 4.3.2"));
    assert!(busy.cmd("RCPT TO:<alice@localhost>").starts_with("250"));
    assert!(busy.cmd("DATA").starts_with("354"));
    assert!(busy.cmd("Subject: drain\r\n\r\nbody\r\n.").starts_with("250 2.0.0"));
    assert!(busy.reply().starts_with("421 4.3.2"));
    let stats = s.join().unwrap();
    // Delivered before the stop, or kept in the queue for the next start.
    assert_eq!((stats.accepted, stats.delivered + stats.queued), (1, 1), "{stats:?}");
    assert!(TcpStream::connect(s.local_addr()).is_err(), "listener closed");
}
