//! Delivery over SMTP to one next hop, with `mail-send`. Each delivery
//! task keeps its connection open across messages (as Postfix's smtp(8)
//! does with connection caching) and sends `RSET` after a refused
//! transaction.

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
}

impl Relay {
    pub(crate) fn new(addr: SocketAddr, timeout: Duration, helo: String) -> Relay {
        Relay { addr, timeout, helo, client: None }
    }

    async fn connect(&self) -> Result<SmtpClient<BufStream<TcpStream>>, Failure> {
        let mut c = connect(self.addr, self.timeout).await.map_err(classify)?;
        let greeting = tokio::time::timeout(self.timeout, c.read())
            .await
            .map_err(|_| Failure::Temporary("timeout waiting for the greeting".into()))?
            .map_err(classify)?;
        if !(200..300).contains(&greeting.code()) {
            return Err(classify(mail_send::Error::UnexpectedReply(greeting)));
        }
        c.ehlo(&self.helo).await.map_err(classify)?;
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
        let none = Parameters::default();
        let result = async {
            client.mail_from(&env.from, &none).await?;
            for r in &env.rcpts {
                client.rcpt_to(r, &none).await?;
            }
            client.data(text).await
        }
        .await;
        match result {
            Ok(_) => {
                self.client = Some(client);
                Ok(())
            }
            Err(e) => {
                let keep = matches!(e, mail_send::Error::UnexpectedReply(_));
                if keep && client.rset().await.is_ok() {
                    self.client = Some(client);
                }
                Err(classify(e))
            }
        }
    }
}
