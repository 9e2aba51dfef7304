//! [`ServerConfig`]: everything `iolab mail serve` can be told, with the
//! limits a real MTA has and where each default comes from.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{MailError, Result};

/// Which disk queue holds accepted mail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueChoice {
    /// FastQueue: segment files, group commit, grouped prefetch.
    Fast,
    /// The paper's baseline: one file per message, `fsync`'ed, hashed
    /// into [`ServerConfig::filedir_split`] directories.
    FileDir,
}

impl QueueChoice {
    /// Parses `fastqueue` / `filedir`.
    pub fn parse(s: &str) -> Result<QueueChoice> {
        match s {
            "fastqueue" | "fast" => Ok(QueueChoice::Fast),
            "filedir" => Ok(QueueChoice::FileDir),
            _ => Err(MailError::Config(format!("queue: {s:?} is not fastqueue or filedir"))),
        }
    }

    /// The name `parse` takes.
    pub fn name(self) -> &'static str {
        match self {
            QueueChoice::Fast => "fastqueue",
            QueueChoice::FileDir => "filedir",
        }
    }
}

/// Where delivery workers send mail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Local Maildir folders, one per recipient's local part, under this
    /// directory.
    Maildir(PathBuf),
    /// SMTP to one next hop (a smart host), as Postfix's `relayhost`.
    Relay(SocketAddr),
}

/// The server's settings. [`ServerConfig::validate`] names the field that
/// is out of range.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Name in the greeting, EHLO reply and `Received:` header.
    pub hostname: String,
    /// Which queue.
    pub queue: QueueChoice,
    /// Queue directory (the dead-letter queue is its `dead/` subdirectory).
    pub queue_dir: PathBuf,
    /// Where mail goes.
    pub delivery: Delivery,
    /// Largest message accepted, in bytes, announced as `SIZE` (RFC 1870).
    /// Default 10,240,000: Postfix's `message_size_limit`.
    pub max_message_bytes: usize,
    /// Recipients per message. Default 100: RFC 5321 section 4.5.3.1.8
    /// ("the minimum total number of recipients that MUST be buffered is
    /// 100"); Postfix's `smtpd_recipient_limit` is 1000.
    pub max_recipients: usize,
    /// Longest line of message text, CRLF included. Default 1000: RFC
    /// 5321 section 4.5.3.1.6.
    pub max_line_bytes: usize,
    /// Open SMTP sessions; one more is answered `421` and closed (as
    /// Postfix's `smtpd_client_connection_count_limit`). Default 10,000.
    pub max_connections: usize,
    /// How long a session may wait for a command. Default 300 s: RFC 5321
    /// section 4.5.3.2.7 (server timeout, 5 minutes).
    pub command_timeout: Duration,
    /// How long a session may wait for the next block of `DATA`. Default
    /// 180 s: RFC 5321 section 4.5.3.2.6 (data block, 3 minutes).
    pub data_timeout: Duration,
    /// After `SIGTERM`, how long open sessions may take to finish their
    /// transaction before they are cut. Default 30 s.
    pub drain_timeout: Duration,
    /// Concurrent deliveries (SMTP connections to the next hop, or Maildir
    /// writers). Default 32 (Postfix's `default_destination_concurrency_limit`
    /// is 20; MAIL.md's relay setting is 50).
    pub delivery_concurrency: usize,
    /// Messages taken from the queue at once (one grouped prefetch).
    /// Default 128.
    pub delivery_batch: usize,
    /// Messages taken from the queue and not yet acknowledged, at most.
    /// This bounds the duplicates a crash can cause (docs/mail.md).
    /// Default 256.
    pub max_in_flight: usize,
    /// First retry delay; each later one doubles, up to `retry_max`.
    /// Default 60 s (Postfix's `minimal_backoff_time` is 300 s).
    pub retry_base: Duration,
    /// Longest retry delay. Default 4000 s (Postfix's `maximal_backoff_time`).
    pub retry_max: Duration,
    /// Attempts before a message goes to the dead-letter queue. Default 10.
    pub max_attempts: u32,
    /// Time allowed for one outbound SMTP command. Default 60 s.
    pub relay_timeout: Duration,
    /// A message taken for delivery and neither acknowledged nor given
    /// back within this time is handed out again (both queues). A live
    /// delivery renews it every third of it (`deliver.rs`), so only a
    /// delivery whose task is gone or never runs lets it run out.
    /// Default 120 s: two relay timeouts; renewals every 40 s.
    pub visibility_timeout: Duration,
    /// Longest one delivery may take (connect, every SMTP command, or the
    /// Maildir write); then it is cut and retried like a temporary failure.
    /// Default 600 s: ten relay timeouts, enough for a message to 100
    /// recipients on a slow but live next hop.
    pub delivery_timeout: Duration,
    /// FastQueue segment size. Default 64 MiB.
    pub segment_size: u64,
    /// FastQueue batch timer. Default 1 ms.
    pub batch_delay: Duration,
    /// Hashed directories of the file-per-message queue. Default 10: FSmail's,
    /// FastQueue paper section 3.
    pub filedir_split: u64,
}

impl ServerConfig {
    /// A configuration with every default, listening on `listen`.
    pub fn new(listen: SocketAddr, queue: QueueChoice, queue_dir: PathBuf, delivery: Delivery) -> ServerConfig {
        ServerConfig {
            listen,
            hostname: "iolab-mail.localdomain".into(),
            queue,
            queue_dir,
            delivery,
            max_message_bytes: 10_240_000,
            max_recipients: 100,
            max_line_bytes: 1000,
            max_connections: 10_000,
            command_timeout: Duration::from_secs(300),
            data_timeout: Duration::from_secs(180),
            drain_timeout: Duration::from_secs(30),
            delivery_concurrency: 32,
            delivery_batch: 128,
            max_in_flight: 256,
            retry_base: Duration::from_secs(60),
            retry_max: Duration::from_secs(4000),
            max_attempts: 10,
            relay_timeout: Duration::from_secs(60),
            visibility_timeout: Duration::from_secs(120),
            delivery_timeout: Duration::from_secs(600),
            segment_size: 64 << 20,
            batch_delay: Duration::from_millis(1),
            filedir_split: 10,
        }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, why: &str| Err(MailError::Config(format!("{field}: {why}")));
        if self.hostname.is_empty() || self.hostname.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return bad("hostname", "must be one word without spaces");
        }
        if self.max_message_bytes < 1024 || self.max_message_bytes > 1 << 30 {
            return bad("max_message_bytes", "must be between 1024 and 1 GiB");
        }
        if self.max_recipients == 0 || self.max_recipients > 100_000 {
            return bad("max_recipients", "must be between 1 and 100000");
        }
        if self.max_line_bytes < 80 || self.max_line_bytes > 1 << 20 {
            return bad("max_line_bytes", "must be between 80 and 1 MiB");
        }
        if self.max_connections == 0 || self.max_connections > 1_000_000 {
            return bad("max_connections", "must be between 1 and 1000000");
        }
        if self.delivery_concurrency == 0 || self.delivery_concurrency > 10_000 {
            return bad("delivery_concurrency", "must be between 1 and 10000");
        }
        if self.delivery_batch == 0 || self.delivery_batch > 100_000 {
            return bad("delivery_batch", "must be between 1 and 100000");
        }
        if self.max_in_flight < self.delivery_concurrency || self.max_in_flight > 1_000_000 {
            return bad("max_in_flight", "must be between delivery_concurrency and 1000000");
        }
        if self.max_attempts == 0 || self.max_attempts > 1000 {
            return bad("max_attempts", "must be between 1 and 1000");
        }
        if self.retry_base.is_zero() || self.retry_max < self.retry_base {
            return bad("retry_base", "must be above 0 and at most retry_max");
        }
        for (field, d) in [
            ("command_timeout", self.command_timeout),
            ("data_timeout", self.data_timeout),
            ("relay_timeout", self.relay_timeout),
            ("visibility_timeout", self.visibility_timeout),
            ("delivery_timeout", self.delivery_timeout),
        ] {
            if d.is_zero() || d > Duration::from_secs(86_400) {
                return bad(field, "must be above 0 and at most one day");
            }
        }
        // Renewed every third of it: below 30 ms the renewals would be
        // most of the delivery tasks' work.
        if self.visibility_timeout < Duration::from_millis(30) {
            return bad("visibility_timeout", "must be at least 30 ms");
        }
        if self.filedir_split == 0 || self.filedir_split > 256 {
            return bad("filedir_split", "must be between 1 and 256");
        }
        if self.max_message_bytes as u64 + 64 * 1024 > self.segment_size {
            return bad("segment_size", "must hold the largest message (max_message_bytes + 64 KiB)");
        }
        Ok(())
    }

    /// The delay before retry number `attempts` (1 = first retry):
    /// `retry_base * 2^(attempts-1)`, at most `retry_max`.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(40);
        self.retry_base.saturating_mul(1u32 << doublings.min(31)).min(self.retry_max)
    }
}
