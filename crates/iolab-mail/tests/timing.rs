//! The per-command timers (`StatsSnapshot::commands`, the FastQueue paper's
//! Figures 3 and 8) count what they should: each command line once under
//! its own name (refused ones too, pipelined ones too), `DATA` in its three
//! parts once per message, and every delivered message once in Deliver and
//! in each of its parts, which add up to it. Both queues.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use iolab_mail::stats::Timing;
use iolab_mail::{Delivery, MailServer, QueueChoice, ServerConfig};

struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Client {
    fn connect(s: &MailServer) -> Client {
        let w = TcpStream::connect(s.local_addr()).unwrap();
        w.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut c = Client { r: BufReader::new(w.try_clone().unwrap()), w };
        assert!(c.reply().starts_with("220"));
        c
    }

    /// The next complete reply (last line of a multi-line one).
    fn reply(&mut self) -> String {
        loop {
            let mut line = String::new();
            assert!(self.r.read_line(&mut line).unwrap() > 0, "connection closed");
            if line.as_bytes().get(3) != Some(&b'-') {
                return line.trim_end().to_string();
            }
        }
    }

    /// Sends `c` and expects a reply starting with `want`.
    fn cmd(&mut self, c: &str, want: &str) {
        self.w.write_all(format!("{c}\r\n").as_bytes()).unwrap();
        let got = self.reply();
        assert!(got.starts_with(want), "{c}: {got}");
    }

    fn text(&mut self, marker: &str) {
        self.w.write_all(format!("Subject: {marker}\r\n\r\n{marker}\r\n.\r\n").as_bytes()).unwrap();
        let got = self.reply();
        assert!(got.starts_with("250"), "{got}");
    }
}

fn server(choice: QueueChoice, dir: &std::path::Path) -> MailServer {
    let mut c = ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        choice,
        dir.join("queue"),
        Delivery::Maildir(dir.join("mail")),
    );
    c.segment_size = 16 << 20;
    c.max_message_bytes = 1 << 20;
    c.local_domains = vec!["iolab.test".into()];
    MailServer::start(c).unwrap()
}

fn assert_sane(name: &str, t: &Timing) {
    assert!(t.total_ms >= 0.0 && t.mean_ms >= 0.0 && t.p50_ms <= t.p99_ms, "{name}: {t:?}");
    if t.count > 0 {
        assert!((t.mean_ms - t.total_ms / t.count as f64).abs() < 1e-9, "{name}: {t:?}");
        assert!(t.max_ms > 0.0, "{name}: {t:?}");
    }
}

#[test]
fn each_command_and_each_delivery_is_timed_once() {
    for choice in [QueueChoice::Fast, QueueChoice::FileDir] {
        let tmp = tempfile::tempdir().unwrap();
        let s = server(choice, tmp.path());

        // One message to two recipients, then three other command lines
        // (one of them unknown).
        let mut a = Client::connect(&s);
        a.cmd("EHLO t.example", "250");
        a.cmd("MAIL FROM:<a@x.example>", "250");
        a.cmd("RCPT TO:<b@iolab.test>", "250");
        a.cmd("RCPT TO:<c@iolab.test>", "250");
        a.cmd("DATA", "354");
        a.text("first");
        a.cmd("RSET", "250");
        a.cmd("NOOP", "250");
        a.cmd("FROB", "5");
        a.cmd("QUIT", "221");

        // HELO; a refused recipient and a refused DATA still count as
        // RCPT and DATA commands (no text follows the refused DATA).
        let mut b = Client::connect(&s);
        b.cmd("HELO t.example", "250");
        b.cmd("MAIL FROM:<a@x.example>", "250");
        b.cmd("RCPT TO:<d@iolab.test>", "250");
        b.cmd("RCPT TO:<e@elsewhere.example>", "550");
        b.cmd("DATA", "354");
        b.text("second");
        b.cmd("DATA", "503");
        b.cmd("QUIT", "221");

        // Pipelined (RFC 2920): MAIL, RCPT and DATA in one write; their
        // replies come back together.
        let mut c = Client::connect(&s);
        c.cmd("EHLO t.example", "250");
        c.w.write_all(b"MAIL FROM:<a@x.example>\r\nRCPT TO:<f@iolab.test>\r\nDATA\r\n").unwrap();
        for want in ["250", "250", "354"] {
            let got = c.reply();
            assert!(got.starts_with(want), "{got}");
        }
        c.text("third");
        c.cmd("QUIT", "221");

        let until = Instant::now() + Duration::from_secs(20);
        while s.stats().commands.deliver.count < 3 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        s.shutdown();
        let st = s.join().unwrap();
        let t = &st.commands;
        let counts = [
            ("helo", t.helo.count, 3),
            ("mail", t.mail.count, 3),
            ("rcpt", t.rcpt.count, 5),
            ("data_command", t.data_command.count, 4),
            ("data_text", t.data_text.count, 3),
            ("data", t.data.count, 3),
            ("quit", t.quit.count, 3),
            ("other", t.other.count, 3),
            ("deliver", t.deliver.count, 3),
            ("deliver_wait", t.deliver_wait.count, 3),
            ("deliver_send", t.deliver_send.count, 3),
            ("deliver_ack", t.deliver_ack.count, 3),
            ("taken", t.taken, 3),
        ];
        for (name, got, want) in counts {
            assert_eq!(got, want, "{choice:?}: {name}: {t:#?}");
        }
        assert!((1..=3).contains(&t.take.count), "{choice:?}: {:?}", t.take);
        assert_eq!(st.accepted, 3, "{choice:?}");
        assert_eq!(st.delivered, 3, "{choice:?}");
        for (name, timing) in [
            ("helo", &t.helo),
            ("mail", &t.mail),
            ("rcpt", &t.rcpt),
            ("data", &t.data),
            ("deliver", &t.deliver),
            ("take", &t.take),
        ] {
            assert_sane(name, timing);
        }
        // Deliver's three parts are cut from the same instants: they add
        // up to it exactly (the sums are kept in ns).
        let parts = t.deliver_wait.total_ms + t.deliver_send.total_ms + t.deliver_ack.total_ms;
        assert!((t.deliver.total_ms - parts).abs() < 1e-6, "{choice:?}: {} vs {parts}", t.deliver.total_ms);
        // The JSON that `--stats` writes and the Python binding returns
        // carries the same figures.
        let json: serde_json::Value = serde_json::to_value(&st).unwrap();
        assert_eq!(json["commands"]["rcpt"]["count"], 5);
        assert_eq!(json["commands"]["deliver"]["count"], 3);
    }
}
