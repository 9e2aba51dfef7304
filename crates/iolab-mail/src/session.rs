//! One inbound SMTP session (RFC 5321), written for hostile clients.
//!
//! The bytes are framed by our own code (`framing.rs`: command lines
//! bounded and discarded whole when too long; only `<CRLF>.<CRLF>` ends
//! the text) and commands are parsed by our own code (`command.rs`): the
//! smtp-proto crate this server used before got the end of data, the
//! first line's dot, over-long lines, quoted addresses and `<Postmaster>`
//! wrong (issue 26). Replies to pipelined commands (RFC 2920) are gathered
//! and sent when the input read so far is used up. The text goes to a
//! [`Spool`] as it arrives (memory bounded for all sessions together). The
//! `250` after `DATA` is sent only when the queue says the message is
//! durable.
//!
//! Each command's processing time is timed from its line read to its reply
//! written (`Stats::time`; the paper's Figures 3 and 8), `DATA` in three
//! parts: the command to its `354`, the text, and the end of the text to
//! the `250`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tracing::info;

use crate::address::{mailbox_name, ForwardPath, Mailbox};
use crate::command::{self, Command};
use crate::config::Delivery;
use crate::envelope::{new_queue_id, now_ms, Envelope};
use crate::framing::{DataReader, Frame, LineFramer, TextFault};
use crate::shared::Shared;
use crate::spool::Spool;
use crate::stats::{Stats, Step};

/// Longest command line, CRLF included. RFC 5321 section 4.5.3.1.4 says
/// 512 plus what extensions add; Postfix reads up to its
/// `line_length_limit`, 2048, which we follow.
pub(crate) const MAX_COMMAND_LINE: usize = 2048;

/// The transaction a `MAIL` command opened.
struct Transaction {
    queue_id: String,
    from: Option<Mailbox>,
    body_8bit: bool,
    rcpts: Vec<ForwardPath>,
}

enum Mode {
    Command,
    /// Receiving message text.
    Data { reader: DataReader, spool: Spool, spool_error: Option<std::io::Error> },
}

struct Session {
    sh: Arc<Shared>,
    peer: SocketAddr,
    helo: Option<String>,
    esmtp: bool,
    tx: Option<Transaction>,
    out: Vec<u8>,
    quit: bool,
    /// The commands whose replies are in `out`, and when each was read:
    /// timed when `out` is written.
    timed: Vec<(Step, Instant)>,
    /// When the `354` was written (the text's clock).
    text_since: Option<Instant>,
}

/// `unknown[1.2.3.4]`, the way Postfix names a client it did not look up.
fn client_name(peer: &SocketAddr) -> String {
    format!("unknown[{}]", peer.ip())
}

/// Serves one connection until QUIT, a timeout, an error or shutdown.
pub(crate) async fn run(mut stream: TcpStream, peer: SocketAddr, sh: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    info!(target: "smtpd", "connect from {}", client_name(&peer));
    let mut s = Session {
        sh,
        peer,
        helo: None,
        esmtp: false,
        tx: None,
        out: Vec::new(),
        quit: false,
        timed: Vec::new(),
        text_since: None,
    };
    s.reply(&format!("220 {} ESMTP iolab-mail", s.sh.cfg.hostname));
    let mut mode = Mode::Command;
    let mut framer = LineFramer::new(MAX_COMMAND_LINE);
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if s.flush(&mut stream).await.is_err() || s.quit {
            break;
        }
        let in_transaction = s.tx.is_some() || !matches!(mode, Mode::Command);
        if *shutdown.borrow() && !in_transaction {
            s.reply("421 4.3.2 Service shutting down, closing channel");
            let _ = s.flush(&mut stream).await;
            break;
        }
        let limit = if matches!(mode, Mode::Command) { s.sh.cfg.command_timeout } else { s.sh.cfg.data_timeout };
        let n = tokio::select! {
            r = tokio::time::timeout(limit, stream.read(&mut buf)) => match r {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => n,
                Err(_) => {
                    s.reply("421 4.4.2 Timeout exceeded, closing channel");
                    let _ = s.flush(&mut stream).await;
                    break;
                }
            },
            _ = shutdown.changed(), if !in_transaction && !*shutdown.borrow() => continue,
        };
        let input = &buf[..n];
        let mut pos = 0;
        while !s.quit && pos < input.len() {
            match &mut mode {
                Mode::Command => match framer.next(input, &mut pos) {
                    None => break,
                    // RFC 5321 section 4.5.3.1.4; one reply for the whole
                    // line, whatever its length (issue 26, defect 8).
                    Some(Frame::TooLong) => {
                        s.timed.push((Step::Other, Instant::now()));
                        s.reply("500 5.5.2 Error: line too long")
                    }
                    Some(Frame::Line(line)) => {
                        if s.command(&line) {
                            let cfg = &s.sh.cfg;
                            let reader = DataReader::new(cfg.max_line_bytes, cfg.max_message_bytes);
                            let spool = Spool::new(&s.sh.spool_dir, &s.sh.memory);
                            mode = Mode::Data { reader, spool, spool_error: None };
                        }
                    }
                },
                Mode::Data { reader, spool, spool_error } => {
                    let done = reader
                        .feed::<std::convert::Infallible>(input, &mut pos, |line| {
                            if spool_error.is_none() {
                                if let Err(e) = spool.push_line(line) {
                                    *spool_error = Some(e);
                                }
                            }
                            Ok(())
                        })
                        .unwrap_or_else(|never| match never {});
                    if !done {
                        break;
                    }
                    let text_end = Instant::now();
                    if let Some(since) = s.text_since.take() {
                        s.sh.stats.time(Step::DataText, text_end - since);
                    }
                    // Replies to commands before DATA go out first.
                    if s.flush(&mut stream).await.is_err() {
                        return;
                    }
                    s.timed.push((Step::Data, text_end));
                    let Mode::Data { reader, spool, spool_error } = std::mem::replace(&mut mode, Mode::Command) else {
                        unreachable!("in Data mode")
                    };
                    s.end_of_data(reader, spool, spool_error).await;
                }
            }
        }
    }
    info!(target: "smtpd", "disconnect from {}", client_name(&peer));
    // Dropping the stream closes it (FIN); a shutdown() first would only
    // cost a syscall, which fails (ENOTCONN) when the client closed first,
    // as smtp-source does after QUIT.
}

impl Session {
    /// Writes the replies gathered in `out`; each command they answer is
    /// timed now, from its line read to its reply written.
    async fn flush(&mut self, stream: &mut TcpStream) -> std::io::Result<()> {
        if !self.out.is_empty() {
            stream.write_all(&self.out).await?;
            self.out.clear();
        }
        if !self.timed.is_empty() {
            let now = Instant::now();
            for (step, since) in self.timed.drain(..) {
                self.sh.stats.time(step, now - since);
                if step == Step::DataCommand {
                    self.text_since = Some(now);
                }
            }
        }
        Ok(())
    }

    fn reply(&mut self, line: &str) {
        self.out.extend_from_slice(line.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// Postfix's `reject:` line for a refused command, with the queue id
    /// once a recipient was accepted (`NOQUEUE` before).
    fn log_reject(&self, what: &str, reply: &str, to: Option<&ForwardPath>) {
        let qid = self.tx.as_ref().filter(|t| !t.rcpts.is_empty()).map_or("NOQUEUE", |t| t.queue_id.as_str());
        let from = self.tx.as_ref().map_or(String::new(), |t| t.from.as_ref().map_or(String::new(), |m| m.to_string()));
        let to = to.map_or(String::new(), |r| format!(" to=<{r}>"));
        info!(
            target: "smtpd",
            "{qid}: reject: {what} from {}: {reply}; from=<{from}>{to} proto={} helo=<{}>",
            client_name(&self.peer),
            if self.esmtp { "ESMTP" } else { "SMTP" },
            self.helo.as_deref().unwrap_or(""),
        );
    }

    /// The EHLO reply: our name, then what we offer (RFC 5321 section
    /// 4.1.1.1), in the order Postfix lists them.
    fn ehlo_reply(&mut self) {
        let cfg = &self.sh.cfg;
        let lines = [
            cfg.hostname.clone(),
            "PIPELINING".into(),
            format!("SIZE {}", cfg.max_message_bytes),
            "ENHANCEDSTATUSCODES".into(),
            "8BITMIME".into(),
        ];
        for (i, l) in lines.iter().enumerate() {
            let sep = if i + 1 == lines.len() { ' ' } else { '-' };
            self.out.extend_from_slice(format!("250{sep}{l}\r\n").as_bytes());
        }
    }

    /// Handles one command line; true when message text follows.
    fn command(&mut self, line: &[u8]) -> bool {
        let read = Instant::now();
        let cmd = match command::parse(line) {
            Ok(c) => c,
            Err(reply) => {
                self.timed.push((Step::Other, read));
                self.reply(&reply);
                return false;
            }
        };
        let step = match cmd {
            Command::Ehlo(_) | Command::Helo(_) => Step::Helo,
            Command::Mail { .. } => Step::Mail,
            Command::Rcpt(_) => Step::Rcpt,
            Command::Data => Step::DataCommand,
            Command::Quit => Step::Quit,
            _ => Step::Other,
        };
        if step == Step::DataCommand {
            // Its text's clock starts when this reply is written (`flush`);
            // none is left over from an earlier DATA.
            self.text_since = None;
        }
        self.timed.push((step, read));
        let sh = self.sh.clone();
        let cfg = &sh.cfg;
        match cmd {
            Command::Ehlo(host) => {
                self.tx = None;
                self.helo = Some(host);
                self.esmtp = true;
                self.ehlo_reply();
            }
            Command::Helo(host) => {
                self.tx = None;
                self.helo = Some(host);
                self.esmtp = false;
                self.reply(&format!("250 {}", cfg.hostname));
            }
            Command::Mail { from, size, body_8bit } => {
                if self.helo.is_none() {
                    self.reply("503 5.5.1 Error: send HELO/EHLO first");
                } else if self.tx.is_some() {
                    self.reply("503 5.5.1 Error: nested MAIL command");
                } else if size.is_some_and(|s| s > cfg.max_message_bytes as u64) {
                    self.reply(&format!("552 5.3.4 Message size exceeds fixed limit of {} bytes", cfg.max_message_bytes));
                } else if body_8bit && !self.esmtp {
                    // RFC 6152: BODY= only after EHLO offered 8BITMIME.
                    self.reply("555 5.5.4 Unsupported option: BODY (send EHLO first)");
                } else {
                    self.tx = Some(Transaction { queue_id: new_queue_id(), from, body_8bit, rcpts: Vec::new() });
                    self.reply("250 2.1.0 Ok");
                }
            }
            Command::Rcpt(to) => self.rcpt(to),
            Command::Data => match &self.tx {
                None => self.reply("503 5.5.1 Error: need MAIL command"),
                Some(t) if t.rcpts.is_empty() => self.reply("554 5.5.1 Error: no valid recipients"),
                Some(_) => {
                    self.reply("354 End data with <CR><LF>.<CR><LF>");
                    return true;
                }
            },
            Command::Rset => {
                self.tx = None;
                self.reply("250 2.0.0 Ok");
            }
            Command::Noop => self.reply("250 2.0.0 Ok"),
            Command::Quit => {
                self.reply("221 2.0.0 Bye");
                self.quit = true;
            }
            Command::Vrfy => self.reply("252 2.0.0 Cannot VRFY user, but will accept message and attempt delivery"),
            Command::Help => self.reply("214 2.0.0 See RFC 5321"),
            Command::NotOffered(what) => self.reply(&format!("502 5.5.1 Error: {what} not implemented")),
        }
        false
    }

    fn rcpt(&mut self, to: ForwardPath) {
        let cfg = &self.sh.cfg;
        let Some(tx) = &self.tx else {
            self.reply("503 5.5.1 Error: need MAIL command");
            return;
        };
        if tx.rcpts.len() >= cfg.max_recipients {
            // RFC 5321 section 4.5.3.1.10: 452 for too many recipients.
            self.reply("452 4.5.3 Error: too many recipients");
            return;
        }
        if let Err(reply) = cfg.check_recipient(self.peer.ip(), &to) {
            self.log_reject("RCPT", &reply, Some(&to));
            self.reply(&reply);
            return;
        }
        if matches!(cfg.delivery, Delivery::Maildir(_)) && mailbox_name(&to).is_none() {
            let reply = format!("550 5.1.1 <{to}>: Recipient address rejected: not a local mailbox name");
            self.log_reject("RCPT", &reply, Some(&to));
            self.reply(&reply);
            return;
        }
        self.tx.as_mut().expect("checked above").rcpts.push(to);
        self.reply("250 2.1.5 Ok");
    }

    fn refuse_data(&mut self, line: &str) {
        Stats::add(&self.sh.stats.rejected, 1);
        self.log_reject("END-OF-MESSAGE", line, None);
        self.reply(line);
        self.tx = None;
    }

    /// The message text is complete: check it, store it durably, answer.
    async fn end_of_data(&mut self, reader: DataReader, spool: Spool, spool_error: Option<std::io::Error>) {
        let cfg = &self.sh.cfg;
        let refusal = match reader.fault {
            Some(TextFault::TooBig) => {
                Some(format!("552 5.3.4 Message size exceeds fixed limit of {} bytes", cfg.max_message_bytes))
            }
            Some(TextFault::LineTooLong) => Some(format!("552 5.6.0 Message has a line longer than {} bytes", cfg.max_line_bytes)),
            // RFC 5321 section 2.3.8; this is what stops SMTP smuggling
            // through `<CR>.<CR>` and `.<CR><CR><LF>` sequences.
            Some(TextFault::BareCr) => Some("550 5.6.0 Message contains a bare CR (RFC 5321 section 2.3.8)".into()),
            // Postfix's hopcount_limit: our own Received: would be one more.
            None if reader.received_headers >= cfg.hopcount_limit => {
                Some(format!("554 5.4.6 Too many hops ({} Received: headers): mail forwarding loop", reader.received_headers))
            }
            None => spool_error.map(|e| {
                tracing::warn!(target: "smtpd", "spool: {e}");
                "451 4.3.0 Error: queue file write error".to_string()
            }),
        };
        if let Some(line) = refusal {
            self.refuse_data(&line);
            return;
        }
        let started = Instant::now();
        let tx = self.tx.take().expect("DATA needs a transaction");
        let env = Envelope {
            from: tx.from.as_ref().map_or(String::new(), |m| m.to_string()),
            rcpts: tx.rcpts.iter().map(|r| r.to_string()).collect(),
            queue_id: tx.queue_id.clone(),
            arrival_ms: now_ms(),
            body_8bit: tx.body_8bit,
            ..Default::default()
        };
        // RFC 5321 section 4.4: the time stamp line, with our queue id (as
        // Postfix writes it) and, for one recipient, its address.
        let for_rcpt = match &tx.rcpts[..] {
            [one] => format!("\r\n\tfor <{one}>"),
            _ => String::new(),
        };
        let received = format!(
            "Received: from {} ([{}])\r\n\tby {} (iolab-mail) with {} id {}{};\r\n\t{}\r\n",
            self.helo.as_deref().unwrap_or("unknown"),
            self.peer.ip(),
            cfg.hostname,
            if self.esmtp { "ESMTP" } else { "SMTP" },
            tx.queue_id,
            for_rcpt,
            chrono::Utc::now().to_rfc2822(),
        );
        let size = received.len() + spool.len();
        // Room for the text is reserved by the spool once the memory
        // budget has it, not here.
        let mut head = env.encode_head(received.len());
        head.extend_from_slice(received.as_bytes());
        let (record, held) = match spool.finish(head, &self.sh.memory).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(target: "smtpd", "{}: spool: {e}", tx.queue_id);
                self.refuse_data("451 4.3.0 Error: queue file write error");
                return;
            }
        };
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
        drop(held);
        let resumed = Instant::now();
        let stored = stored.map(|(r, began, ended)| {
            let st = &self.sh.stats;
            st.commit_thread_wait.record(began - handed);
            st.commit_enqueue.record(ended - began);
            st.commit_resume.record(resumed - ended);
            r
        });
        match stored {
            Ok(Ok(_)) => {
                self.sh.stats.commit.record(started.elapsed());
                Stats::add(&self.sh.stats.accepted, 1);
                let qid = &tx.queue_id;
                info!(target: "smtpd", "{qid}: client={}", client_name(&self.peer));
                info!(
                    target: "qmgr",
                    "{qid}: from=<{}>, size={size}, nrcpt={} (queue active)",
                    env.from,
                    env.rcpts.len()
                );
                self.reply(&format!("250 2.0.0 Ok: queued as {qid}"));
            }
            Ok(Err(e)) => {
                tracing::warn!(target: "smtpd", "{}: queue: {e}", tx.queue_id);
                self.refuse_data("451 4.3.0 Error: queue file write error");
            }
            Err(()) => self.refuse_data("451 4.3.0 Error: internal error"),
        }
    }
}
