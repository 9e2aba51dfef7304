//! One inbound SMTP session (RFC 5321). Commands and the `DATA` stream
//! are parsed by `smtp-proto` (`RequestReceiver`, `DataReceiver`); this
//! file holds only the state machine and the limits. Replies to pipelined
//! commands (RFC 2920) are gathered and sent when the input read so far is
//! used up. The `250` after `DATA` is sent only when the queue says the
//! message is durable.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use smtp_proto::request::receiver::{DataReceiver, DummyDataReceiver, RequestReceiver};
use smtp_proto::{EhloResponse, Error as ProtoError, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::config::Delivery;
use crate::address::mailbox_name;
use crate::envelope::Envelope;
use crate::shared::Shared;
use crate::stats::Stats;

/// Bytes reserved for a message's text when `DATA` starts.
const BODY_RESERVE: usize = 4096;

enum Mode {
    Command,
    /// Receiving message text.
    Data(DataReceiver),
    /// Message text past the size limit: read to the end, then refuse.
    Discard(DummyDataReceiver),
}

struct Session {
    sh: Arc<Shared>,
    peer: SocketAddr,
    helo: Option<String>,
    esmtp: bool,
    from: Option<String>,
    rcpts: Vec<String>,
    body: Vec<u8>,
    out: Vec<u8>,
    quit: bool,
}

/// Serves one connection until QUIT, a timeout, an error or shutdown.
pub(crate) async fn run(mut stream: TcpStream, peer: SocketAddr, sh: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    let mut s = Session {
        sh,
        peer,
        helo: None,
        esmtp: false,
        from: None,
        rcpts: Vec::new(),
        body: Vec::new(),
        out: Vec::new(),
        quit: false,
    };
    s.reply(&format!("220 {} ESMTP iolab-mail", s.sh.cfg.hostname));
    let mut mode = Mode::Command;
    let mut receiver = RequestReceiver::default();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if write_out(&mut stream, &mut s.out).await.is_err() || s.quit {
            break;
        }
        let in_transaction = s.from.is_some() || !matches!(mode, Mode::Command);
        if *shutdown.borrow() && !in_transaction {
            s.reply("421 4.3.2 Service shutting down, closing channel");
            let _ = write_out(&mut stream, &mut s.out).await;
            break;
        }
        let limit = if matches!(mode, Mode::Command) { s.sh.cfg.command_timeout } else { s.sh.cfg.data_timeout };
        let n = tokio::select! {
            r = tokio::time::timeout(limit, stream.read(&mut buf)) => match r {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => n,
                Err(_) => {
                    s.reply("421 4.4.2 Timeout exceeded, closing channel");
                    let _ = write_out(&mut stream, &mut s.out).await;
                    break;
                }
            },
            _ = shutdown.changed(), if !in_transaction && !*shutdown.borrow() => continue,
        };
        let mut bytes = buf[..n].iter();
        while !s.quit {
            match &mut mode {
                Mode::Data(rx) => {
                    let done = rx.ingest(&mut bytes, &mut s.body);
                    if done {
                        // Replies to commands before DATA go out first.
                        if write_out(&mut stream, &mut s.out).await.is_err() {
                            return;
                        }
                        s.end_of_data().await;
                        mode = Mode::Command;
                    } else if s.body.len() > s.sh.cfg.max_message_bytes {
                        mode = Mode::Discard(DummyDataReceiver::new_data(rx));
                        s.body = Vec::new();
                    } else {
                        break;
                    }
                }
                Mode::Discard(rx) => {
                    if !rx.ingest(&mut bytes) {
                        break;
                    }
                    s.refuse_data(format!(
                        "552 5.3.4 Message size exceeds fixed limit of {} bytes",
                        s.sh.cfg.max_message_bytes
                    ));
                    mode = Mode::Command;
                }
                Mode::Command => match receiver.ingest(&mut bytes) {
                    Ok(req) => {
                        let req = req.into_owned();
                        if s.command(req) {
                            s.body.clear();
                            // Most mail is a few kB (the paper: 85% under
                            // 8 kB): one allocation instead of a doubling
                            // series from 8 bytes up.
                            s.body.reserve(BODY_RESERVE);
                            mode = Mode::Data(DataReceiver::new());
                        }
                    }
                    Err(ProtoError::NeedsMoreData { .. }) => break,
                    Err(e) => s.reply(proto_error(&e)),
                },
            }
        }
    }
    // Dropping the stream closes it (FIN); a shutdown() first would only
    // cost a syscall, which fails (ENOTCONN) when the client closed first,
    // as smtp-source does after QUIT.
}

async fn write_out(stream: &mut TcpStream, out: &mut Vec<u8>) -> std::io::Result<()> {
    if !out.is_empty() {
        stream.write_all(out).await?;
        out.clear();
    }
    Ok(())
}

fn proto_error(e: &ProtoError) -> &'static str {
    match e {
        ProtoError::UnknownCommand => "500 5.5.1 Command unrecognized",
        ProtoError::InvalidSenderAddress => "501 5.1.7 Bad sender address syntax",
        ProtoError::InvalidRecipientAddress => "501 5.1.3 Bad recipient address syntax",
        ProtoError::ResponseTooLong => "500 5.5.2 Line too long",
        ProtoError::InvalidParameter { .. } => "501 5.5.4 Invalid parameter",
        ProtoError::UnsupportedParameter { .. } => "555 5.5.4 Unsupported parameter",
        _ => "501 5.5.4 Syntax error",
    }
}

impl Session {
    fn reply(&mut self, line: &str) {
        self.out.extend_from_slice(line.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    fn reset(&mut self) {
        self.from = None;
        self.rcpts.clear();
        self.body = Vec::new();
    }

    /// Handles one command; true when message text follows.
    fn command(&mut self, req: Request<String>) -> bool {
        let sh = self.sh.clone();
        let cfg = &sh.cfg;
        match req {
            Request::Ehlo { host } => {
                self.reset();
                self.helo = Some(host);
                self.esmtp = true;
                let mut r = EhloResponse::new(cfg.hostname.as_str());
                r.capabilities = smtp_proto::EXT_SIZE
                    | smtp_proto::EXT_PIPELINING
                    | smtp_proto::EXT_8BIT_MIME
                    | smtp_proto::EXT_ENHANCED_STATUS_CODES;
                r.size = cfg.max_message_bytes;
                let _ = r.write(&mut self.out);
            }
            Request::Helo { host } => {
                self.reset();
                self.helo = Some(host);
                self.esmtp = false;
                let line = format!("250 {}", cfg.hostname);
                self.reply(&line);
            }
            Request::Lhlo { .. } => self.reply("500 5.5.1 This is an SMTP server, not LMTP"),
            Request::Mail { from } => {
                if self.helo.is_none() {
                    self.reply("503 5.5.1 Error: send HELO/EHLO first");
                } else if self.from.is_some() {
                    self.reply("503 5.5.1 Error: nested MAIL command");
                } else if from.size > cfg.max_message_bytes {
                    let line = format!("552 5.3.4 Message size exceeds fixed limit of {} bytes", cfg.max_message_bytes);
                    self.reply(&line);
                } else {
                    self.from = Some(from.address);
                    self.reply("250 2.1.0 Ok");
                }
            }
            Request::Rcpt { to } => {
                if self.from.is_none() {
                    self.reply("503 5.5.1 Error: need MAIL command");
                } else if self.rcpts.len() >= cfg.max_recipients {
                    // RFC 5321 section 4.5.3.1.10: 452 for too many recipients.
                    self.reply("452 4.5.3 Error: too many recipients");
                } else if matches!(cfg.delivery, Delivery::Maildir(_)) && mailbox_name(&to.address).is_none() {
                    self.reply("550 5.1.1 Recipient address rejected: not a local mailbox name");
                } else {
                    self.rcpts.push(to.address);
                    self.reply("250 2.1.5 Ok");
                }
            }
            Request::Data => {
                if self.from.is_none() {
                    self.reply("503 5.5.1 Error: need MAIL command");
                } else if self.rcpts.is_empty() {
                    self.reply("554 5.5.1 Error: no valid recipients");
                } else {
                    self.reply("354 End data with <CR><LF>.<CR><LF>");
                    return true;
                }
            }
            Request::Bdat { .. } => self.reply("502 5.5.1 BDAT not implemented (CHUNKING is not offered)"),
            Request::Rset => {
                self.reset();
                self.reply("250 2.0.0 Ok");
            }
            Request::Noop { .. } => self.reply("250 2.0.0 Ok"),
            Request::Quit => {
                self.reply("221 2.0.0 Bye");
                self.quit = true;
            }
            Request::Vrfy { .. } => self.reply("252 2.0.0 Cannot VRFY user"),
            Request::Help { .. } => self.reply("214 2.0.0 See RFC 5321"),
            Request::StartTls => self.reply("502 5.5.1 STARTTLS not offered"),
            Request::Auth { .. } => self.reply("502 5.5.1 AUTH not offered"),
            _ => self.reply("502 5.5.1 Command not implemented"),
        }
        false
    }

    fn refuse_data(&mut self, line: String) {
        Stats::add(&self.sh.stats.rejected, 1);
        self.reply(&line);
        self.reset();
    }

    /// The message text is complete: check it, store it durably, answer.
    async fn end_of_data(&mut self) {
        let max_size = self.sh.cfg.max_message_bytes;
        if self.body.len() > max_size {
            // The last block both passed the limit and ended the text.
            self.refuse_data(format!("552 5.3.4 Message size exceeds fixed limit of {max_size} bytes"));
            return;
        }
        let max_line = self.sh.cfg.max_line_bytes;
        if self.body.split(|&b| b == b'\n').any(|l| l.len() + 1 > max_line) {
            self.refuse_data(format!("552 5.6.0 Message has a line longer than {max_line} bytes"));
            return;
        }
        let started = Instant::now();
        let env = Envelope { from: self.from.take().unwrap_or_default(), rcpts: std::mem::take(&mut self.rcpts), ..Default::default() };
        let received = format!(
            "Received: from {} ([{}])\r\n\tby {} (iolab-mail) with {};\r\n\t{}\r\n",
            self.helo.as_deref().unwrap_or("unknown"),
            self.peer.ip(),
            self.sh.cfg.hostname,
            if self.esmtp { "ESMTP" } else { "SMTP" },
            chrono::Utc::now().to_rfc2822(),
        );
        let record = env.encode_parts(&[received.as_bytes(), &self.body]);
        self.body = Vec::new();
        let handed = Instant::now();
        let stored = match &self.sh.committer {
            Some(c) => c.commit(record).await.ok_or(()),
            None => {
                let queue = self.sh.queue.clone();
                tokio::task::spawn_blocking(move || {
                    let began = Instant::now();
                    let r = queue.enqueue(&record).map_err(|e| e.to_string());
                    (r, began, Instant::now())
                })
                .await
                .map_err(|_| ())
            }
        };
        let resumed = Instant::now();
        let stored = stored.map(|(r, began, ended)| {
            let st = &self.sh.stats;
            st.commit_thread_wait.record(began - handed);
            st.commit_enqueue.record(ended - began);
            st.commit_resume.record(resumed - ended);
            r
        });
        match stored {
            Ok(Ok(id)) => {
                self.sh.stats.commit.record(started.elapsed());
                Stats::add(&self.sh.stats.accepted, 1);
                let line = format!("250 2.0.0 Ok: queued as {id:X}");
                self.reply(&line);
            }
            Ok(Err(e)) => {
                eprintln!("iolab-mail: queue: {e}");
                self.refuse_data("451 4.3.0 Error: queue file write error".into());
            }
            Err(()) => self.refuse_data("451 4.3.0 Error: internal error".into()),
        }
        self.reset();
    }
}
