//! Delivery over SMTP to one next hop. `mail-send` connects, reads replies
//! and says EHLO; the commands and the text are written here, so that:
//!
//! - addresses go out in their canonical RFC 5321 form (section 4.1.2:
//!   a local part that is no Dot-string stays quoted; `<postmaster>` stays
//!   `<postmaster>`), never as the parser left them (issue 26, defect 4);
//! - `BODY=8BITMIME` is passed on when the client declared it (RFC 6152);
//!   a next hop that does not offer 8BITMIME gets no 8-bit message (the
//!   recipients bounce with 5.6.3, as RFC 6152 section 3 allows);
//! - every recipient gets its own result from the reply to its `RCPT` and
//!   to the text (as Postfix's smtp(8)): a refused recipient does not fail
//!   the others;
//! - a next hop that greets with our own hostname is us: the message would
//!   loop, and bounces (Postfix: "mail for ... loops back to myself");
//! - the text is dot-stuffed here, the first line included.
//!
//! Each delivery task keeps its connection open across messages (as
//! Postfix's smtp(8) does with connection caching) and sends `RSET` after
//! a refused transaction. When the next hop offers `PIPELINING` (RFC
//! 2920), `MAIL`, every `RCPT` and `DATA` go out in one write and their
//! replies are read together.

use std::net::SocketAddr;
use std::time::Duration;

use mail_send::SmtpClient;
use smtp_proto::Response;
use tokio::io::{AsyncWriteExt, BufStream};
use tokio::net::TcpStream;

use crate::envelope::Envelope;
use crate::status::{dsn_of, Attempt, RcptResult};

/// Why a whole delivery failed (before any recipient had a result of its
/// own): a temporary failure is retried later, a permanent one goes to
/// the dead-letter queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Connection refused or broken, timeout, a task that panicked.
    Temporary(String),
    /// The record cannot be delivered at all.
    Permanent(String),
}

impl Failure {
    /// The text for the logs and the bounce record.
    pub fn reason(&self) -> &str {
        match self {
            Failure::Temporary(s) | Failure::Permanent(s) => s,
        }
    }
}

/// Connects with a buffered stream: the commands and the text are written
/// in pieces and flushed once, one write instead of several small packets.
pub(crate) async fn connect(addr: SocketAddr, timeout: Duration) -> mail_send::Result<SmtpClient<BufStream<TcpStream>>> {
    let tcp = tokio::time::timeout(timeout, TcpStream::connect(addr)).await.map_err(|_| mail_send::Error::Timeout)??;
    let _ = tcp.set_nodelay(true);
    Ok(SmtpClient { stream: BufStream::new(tcp), timeout })
}

type Client = SmtpClient<BufStream<TcpStream>>;

/// One cached connection to the next hop.
pub(crate) struct Relay {
    addr: SocketAddr,
    timeout: Duration,
    helo: String,
    client: Option<Client>,
    /// What the cached connection's EHLO reply offered.
    pipelining: bool,
    eight_bit: bool,
}

/// A connection-level failure: every recipient not yet decided is
/// deferred with this reason.
struct Broken(String);

impl From<mail_send::Error> for Broken {
    fn from(e: mail_send::Error) -> Broken {
        Broken(e.to_string())
    }
}

impl From<std::io::Error> for Broken {
    fn from(e: std::io::Error) -> Broken {
        Broken(e.to_string())
    }
}

/// `host[ip]:port` for the logs, as Postfix names a next hop.
pub(crate) fn relay_name(addr: SocketAddr) -> String {
    format!("{}[{}]:{}", addr.ip(), addr.ip(), addr.port())
}

/// The enhanced status code of a reply (RFC 3463): the one it gave,
/// which smtp-proto's parser keeps apart from the text, else the class's.
fn reply_dsn(r: &Response<String>) -> String {
    let [a, b, c] = r.esc;
    if a != 0 && u16::from(a) == r.code / 100 {
        format!("{a}.{b}.{c}")
    } else {
        dsn_of(r.code, &r.message)
    }
}

/// Postfix's "host X said: 550 5.1.1 ... (in reply to RCPT TO command)".
fn said(addr: SocketAddr, r: &Response<String>, after: &str) -> String {
    let esc = if r.esc[0] != 0 { format!("{} ", reply_dsn(r)) } else { String::new() };
    let text = r.message.replace(['\r', '\n'], " ");
    format!("host {} said: {} {esc}{text} (in reply to {after})", relay_name(addr), r.code)
}

impl Relay {
    pub(crate) fn new(addr: SocketAddr, timeout: Duration, helo: String) -> Relay {
        Relay { addr, timeout, helo, client: None, pipelining: false, eight_bit: false }
    }

    /// Connects and says EHLO. `Err` with a result for everyone when the
    /// next hop cannot take mail now (deferred) or is ourselves (bounced).
    async fn connect(&mut self, env: &Envelope) -> Result<Client, Attempt> {
        let name = relay_name(self.addr);
        let defer = |why: String| Attempt::all(&name, &env.rcpts, "4.4.1", &format!("connect to {name}: {why}"));
        let mut c = connect(self.addr, self.timeout).await.map_err(|e| defer(e.to_string()))?;
        let greeting = tokio::time::timeout(self.timeout, c.read())
            .await
            .map_err(|_| defer("timeout waiting for the greeting".into()))?
            .map_err(|e| defer(e.to_string()))?;
        if greeting.code != 220 {
            // Postfix's smtp_skip_5xx_greeting: a next hop that will not
            // talk now is tried again later, whatever the class.
            let why = format!("host {name} refused to talk to me: {} {}", greeting.code, greeting.message);
            return Err(Attempt::all(&name, &env.rcpts, "4.3.0", &why));
        }
        let ehlo = c.ehlo(&self.helo).await.map_err(|e| defer(e.to_string()))?;
        if ehlo.hostname.eq_ignore_ascii_case(&self.helo) {
            // RFC 5321 section 6.3 asks to detect loops; Postfix's smtp(8)
            // bounces mail whose next hop greets with its own name.
            let why = format!("mail for {name} loops back to myself");
            return Err(Attempt::all(&name, &env.rcpts, "5.4.6", &why));
        }
        self.pipelining = ehlo.has_capability(smtp_proto::EXT_PIPELINING);
        self.eight_bit = ehlo.has_capability(smtp_proto::EXT_8BIT_MIME);
        Ok(c)
    }

    /// Sends one message; one result per recipient.
    pub(crate) async fn send(&mut self, env: &Envelope, message: &[u8]) -> Attempt {
        let mut client = match self.client.take() {
            Some(c) => c,
            None => match self.connect(env).await {
                Ok(c) => c,
                Err(all) => return all,
            },
        };
        let name = relay_name(self.addr);
        if env.body_8bit && !self.eight_bit {
            self.client = Some(client);
            let why = format!("host {name} does not offer 8BITMIME and the message is 8-bit (RFC 6152)");
            return Attempt::all(&name, &env.rcpts, "5.6.3", &why);
        }
        let mut results: Vec<Option<RcptResult>> = vec![None; env.rcpts.len()];
        let outcome = tokio::time::timeout(self.timeout * (2 + env.rcpts.len() as u32), async {
            transaction(&mut client, self.addr, env, message, self.pipelining, &mut results).await
        })
        .await
        .unwrap_or_else(|_| Err(Broken("timeout".into())));
        let results = match outcome {
            Ok(reusable) => {
                if reusable {
                    self.client = Some(client);
                }
                results
            }
            Err(Broken(why)) => {
                // Recipients already refused keep their result; the rest
                // are tried again later.
                let why = format!("lost connection with {name}: {why}");
                results
                    .into_iter()
                    .zip(&env.rcpts)
                    .map(|(r, rcpt)| r.or_else(|| Some(RcptResult::new(rcpt, "4.4.2", why.clone()))))
                    .collect()
            }
        };
        Attempt {
            relay: name,
            results: results
                .into_iter()
                .zip(&env.rcpts)
                .map(|(r, rcpt)| r.unwrap_or_else(|| RcptResult::new(rcpt, "4.3.0", "no reply")))
                .collect(),
        }
    }
}

/// One transaction; fills `results` and says whether the connection can
/// carry the next message.
async fn transaction(
    client: &mut Client,
    addr: SocketAddr,
    env: &Envelope,
    message: &[u8],
    pipelining: bool,
    results: &mut [Option<RcptResult>],
) -> Result<bool, Broken> {
    let mail = format!("MAIL FROM:<{}>{}\r\n", env.from, if env.body_8bit { " BODY=8BITMIME" } else { "" });
    let rcpts: Vec<String> = env.rcpts.iter().map(|r| format!("RCPT TO:<{r}>\r\n")).collect();
    // The replies to MAIL, each RCPT and DATA.
    let (mail_r, rcpt_r, data_r) = if pipelining {
        let mut cmds = vec![mail];
        cmds.extend(rcpts);
        cmds.push("DATA\r\n".into());
        let mut replies = client.cmds(&cmds).await?;
        let data = replies.pop().ok_or(Broken("no reply to DATA".into()))?;
        let mail = replies.remove(0);
        (mail, replies, Some(data))
    } else {
        let mail_r = client.cmd(mail).await?;
        let mut rcpt_r = Vec::new();
        if mail_r.code / 100 == 2 {
            for c in &rcpts {
                rcpt_r.push(client.cmd(c).await?);
            }
        }
        let any = rcpt_r.iter().any(|r| r.code / 100 == 2);
        let data = if any { Some(client.cmd("DATA\r\n").await?) } else { None };
        (mail_r, rcpt_r, data)
    };
    let in_data = data_r.as_ref().is_some_and(|d| d.code == 354);
    if mail_r.code / 100 != 2 {
        let why = said(addr, &mail_r, "MAIL FROM command");
        let dsn = reply_dsn(&mail_r);
        for (slot, rcpt) in results.iter_mut().zip(&env.rcpts) {
            *slot = Some(RcptResult::new(rcpt, &dsn, why.clone()));
        }
        return finish_refused(client, in_data).await;
    }
    let mut accepted = Vec::new();
    for (i, r) in rcpt_r.iter().enumerate() {
        if r.code / 100 == 2 {
            accepted.push(i);
        } else {
            results[i] = Some(RcptResult::new(&env.rcpts[i], &reply_dsn(r), said(addr, r, "RCPT TO command")));
        }
    }
    if accepted.is_empty() {
        // Nothing to send. A next hop that answered DATA with 354 anyway
        // waits for text: drop the connection, which makes it discard the
        // transaction (RFC 5321 section 4.1.1.4).
        return finish_refused(client, in_data).await;
    }
    let data_r = data_r.ok_or(Broken("no reply to DATA".into()))?;
    let end = if in_data {
        write_text(client, message).await?;
        let end = client.read().await?;
        (end, "end of DATA command")
    } else {
        (data_r, "DATA command")
    };
    let (reply, after) = end;
    let dsn = reply_dsn(&reply);
    let why = said(addr, &reply, after);
    for i in accepted {
        results[i] = Some(RcptResult::new(&env.rcpts[i], &dsn, why.clone()));
    }
    if reply.code / 100 == 2 {
        Ok(true)
    } else {
        Ok(client.rset().await.is_ok())
    }
}

/// After a refused transaction: `RSET` and keep the connection, unless the
/// next hop waits for text.
async fn finish_refused(client: &mut Client, in_data: bool) -> Result<bool, Broken> {
    if in_data {
        return Ok(false);
    }
    Ok(client.rset().await.is_ok())
}

/// Writes the text dot-stuffed (RFC 5321 section 4.5.2: every line that
/// starts with a period gets one more, the first line too) and the end
/// `<CRLF>.<CRLF>`. The stored text has CRLF line ends throughout.
async fn write_text(client: &mut Client, message: &[u8]) -> std::io::Result<()> {
    let s = &mut client.stream;
    for line in message.split_inclusive(|&b| b == b'\n') {
        if line.first() == Some(&b'.') {
            s.write_all(b".").await?;
        }
        s.write_all(line).await?;
    }
    if !message.is_empty() && !message.ends_with(b"\r\n") {
        s.write_all(b"\r\n").await?;
    }
    s.write_all(b".\r\n").await?;
    s.flush().await
}
