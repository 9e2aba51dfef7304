//! Delivery over SMTP to one next hop, with `mail-send`. Each delivery
//! task keeps its connection open across messages (as Postfix's smtp(8)
//! does with connection caching) and sends `RSET` after a refused
//! transaction. When the next hop offers `PIPELINING` (RFC 2920), `MAIL`,
//! every `RCPT` and `DATA` go out in one write and their replies are read
//! together, as Postfix's smtp(8) does: one round trip instead of
//! 2 + recipients, and fewer wake-ups on both sides.

use std::net::SocketAddr;
use std::time::Duration;

use mail_send::smtp::message::Parameters;
use mail_send::SmtpClient;
use tokio::io::BufStream;
use tokio::net::TcpStream;

use crate::envelope::Envelope;

/// Why a delivery failed: a temporary failure is retried later, a
/// permanent one goes to the dead-letter queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// 4xx reply, connection refused or broken, timeout.
    Temporary(String),
    /// 5xx reply.
    Permanent(String),
}

impl Failure {
    /// The text for the bounce record.
    pub fn reason(&self) -> &str {
        match self {
            Failure::Temporary(s) | Failure::Permanent(s) => s,
        }
    }
}

/// Classifies a `mail-send` error by RFC 5321 section 4.2.1: 5yz replies
/// are permanent, everything else (4yz, I/O, timeouts) is worth a retry.
pub fn classify(e: mail_send::Error) -> Failure {
    match e {
        mail_send::Error::UnexpectedReply(r) => {
            let text = format!("{} {}", r.code(), r.message());
            if (500..600).contains(&r.code()) {
                Failure::Permanent(text)
            } else {
                Failure::Temporary(text)
            }
        }
        other => Failure::Temporary(other.to_string()),
    }
}

/// Connects with a buffered stream: mail-send writes the message text in
/// pieces (between dot-stuffing points) and flushes once at the end, so the
/// buffer turns a message into one write instead of several small packets.
pub(crate) async fn connect(addr: SocketAddr, timeout: Duration) -> mail_send::Result<SmtpClient<BufStream<TcpStream>>> {
    let tcp = tokio::time::timeout(timeout, TcpStream::connect(addr)).await.map_err(|_| mail_send::Error::Timeout)??;
    let _ = tcp.set_nodelay(true);
    Ok(SmtpClient { stream: BufStream::new(tcp), timeout })
}

/// One cached connection to the next hop.
pub(crate) struct Relay {
    addr: SocketAddr,
    timeout: Duration,
    helo: String,
    client: Option<SmtpClient<BufStream<TcpStream>>>,
    /// Whether the cached connection's EHLO reply offered PIPELINING.
    pipelining: bool,
}

/// A refused transaction, and whether its connection can be reused (not
/// after a `354`: the server then waits for message text).
struct Refused(mail_send::Error, bool);

impl From<mail_send::Error> for Refused {
    fn from(e: mail_send::Error) -> Refused {
        let reusable = matches!(e, mail_send::Error::UnexpectedReply(_));
        Refused(e, reusable)
    }
}

impl Relay {
    pub(crate) fn new(addr: SocketAddr, timeout: Duration, helo: String) -> Relay {
        Relay { addr, timeout, helo, client: None, pipelining: false }
    }

    async fn connect(&mut self) -> Result<SmtpClient<BufStream<TcpStream>>, Failure> {
        let mut c = connect(self.addr, self.timeout).await.map_err(classify)?;
        let greeting = tokio::time::timeout(self.timeout, c.read())
            .await
            .map_err(|_| Failure::Temporary("timeout waiting for the greeting".into()))?
            .map_err(classify)?;
        if !(200..300).contains(&greeting.code()) {
            return Err(classify(mail_send::Error::UnexpectedReply(greeting)));
        }
        let ehlo = c.ehlo(&self.helo).await.map_err(classify)?;
        self.pipelining = ehlo.has_capability(smtp_proto::EXT_PIPELINING);
        Ok(c)
    }

    /// Sends one message to all its recipients; any refused recipient
    /// fails the whole message (one next hop: it would refuse it again).
    pub(crate) async fn send(&mut self, env: &Envelope, message: &[u8]) -> Result<(), Failure> {
        let mut client = match self.client.take() {
            Some(c) => c,
            None => self.connect().await?,
        };
        // mail-send ends the text with CRLF.CRLF itself.
        let text = message.strip_suffix(b"\r\n").unwrap_or(message);
        let result = if self.pipelining {
            pipelined(&mut client, env, text, self.timeout).await
        } else {
            one_by_one(&mut client, env, text).await
        };
        match result {
            Ok(()) => {
                self.client = Some(client);
                Ok(())
            }
            Err(Refused(e, reusable)) => {
                if reusable && client.rset().await.is_ok() {
                    self.client = Some(client);
                }
                Err(classify(e))
            }
        }
    }
}

async fn one_by_one(client: &mut SmtpClient<BufStream<TcpStream>>, env: &Envelope, text: &[u8]) -> Result<(), Refused> {
    let none = Parameters::default();
    client.mail_from(&env.from, &none).await?;
    for r in &env.rcpts {
        client.rcpt_to(r, &none).await?;
    }
    client.data(text).await?;
    Ok(())
}

/// RFC 2920: MAIL, the RCPTs and DATA in one write. Any refusal fails the
/// message (as [`Relay::send`] says); if `DATA` was answered `354` all the
/// same, the connection is dropped without sending the text, which the
/// server must then discard (RFC 5321 section 4.1.1.4).
async fn pipelined(client: &mut SmtpClient<BufStream<TcpStream>>, env: &Envelope, text: &[u8], timeout: Duration) -> Result<(), Refused> {
    let mut cmds = Vec::with_capacity(env.rcpts.len() + 2);
    cmds.push(format!("MAIL FROM:<{}>\r\n", env.from));
    cmds.extend(env.rcpts.iter().map(|r| format!("RCPT TO:<{r}>\r\n")));
    cmds.push("DATA\r\n".to_string());
    let mut replies = client.cmds(&cmds).await?;
    let data = replies.pop().ok_or(mail_send::Error::UnparseableReply)?;
    let in_data = data.code() == 354;
    if let Some(bad) = replies.into_iter().find(|r| !(200..300).contains(&r.code())) {
        return Err(Refused(mail_send::Error::UnexpectedReply(bad), !in_data));
    }
    if !in_data {
        return Err(Refused(mail_send::Error::UnexpectedReply(data), true));
    }
    let end = tokio::time::timeout(timeout, async {
        client.write_message(text).await?;
        client.read().await
    })
    .await
    .map_err(|_| Refused(mail_send::Error::Timeout, false))?
    .map_err(|e| Refused(e, false))?;
    if !(200..300).contains(&end.code()) {
        return Err(Refused(mail_send::Error::UnexpectedReply(end), true));
    }
    Ok(())
}
