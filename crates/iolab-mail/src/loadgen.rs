//! A small SMTP load client (over `mail-send`). Postfix's `smtp-source`
//! makes the load in the benchmark but says nothing per message; this
//! client records, for every message, its Message-ID, whether it got `250`
//! and how long `DATA` took (from sending `DATA` to the final reply). The
//! crash test uses it to know which messages were acknowledged, and the
//! benchmark runs it beside `smtp-source` to measure `DATA` latency.
//!
//! Message text is a pure function of (tag, number, size), so whoever finds
//! a message at the sink can check that it arrived whole ([`expected_body`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mail_send::smtp::message::Parameters;
use mail_send::SmtpClient;
use tokio::io::BufStream;
use tokio::net::TcpStream;

/// What to send.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// Server address.
    pub addr: SocketAddr,
    /// Concurrent sessions.
    pub sessions: usize,
    /// Messages to send in all (the run also ends when `stop` is set).
    pub messages: u64,
    /// Body sizes and their weights; message `n` gets a size chosen by `n`
    /// (a fixed rule, so reruns send the same sizes).
    pub sizes: Vec<(usize, f64)>,
    /// Messages per connection before `QUIT` (1: a connection per message,
    /// as `smtp-source` without `-d`).
    pub per_connection: u64,
    /// Message-IDs are `<tag.n.size@iolab-load>`.
    pub tag: String,
    /// Pause between a session's messages (to probe at a low rate).
    pub pause: Duration,
    /// Time allowed for each command.
    pub timeout: Duration,
}

/// What happened to one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `250` after `DATA`: the server has it.
    Accepted,
    /// A 4xx/5xx reply (the code).
    Refused(u16),
    /// The connection failed before a reply: the server may or may not
    /// have it.
    Unknown,
}

/// One message sent.
#[derive(Clone, Debug)]
pub struct Sent {
    /// Its number in the run.
    pub n: u64,
    /// Body size.
    pub size: usize,
    /// How it ended.
    pub outcome: Outcome,
    /// `DATA` to final reply, µs (0 unless accepted).
    pub data_us: u64,
}

/// The run's record.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    /// Every message tried.
    pub sent: Vec<Sent>,
    /// Wall time.
    pub elapsed: Duration,
    /// Connections that could not be made.
    pub connect_failures: u64,
}

impl LoadReport {
    /// Messages that got `250`.
    pub fn accepted(&self) -> impl Iterator<Item = &Sent> {
        self.sent.iter().filter(|s| s.outcome == Outcome::Accepted)
    }
}

/// The Message-ID of message `n`.
pub fn message_id(tag: &str, n: u64, size: usize) -> String {
    format!("<{tag}.{n}.{size}@iolab-load>")
}

/// Parses a Message-ID made by [`message_id`] with this `tag`.
pub fn parse_message_id(tag: &str, id: &str) -> Option<(u64, usize)> {
    let inner = id.trim().strip_prefix('<')?.strip_suffix("@iolab-load>")?;
    let rest = inner.strip_prefix(tag)?.strip_prefix('.')?;
    let (n, size) = rest.split_once('.')?;
    Some((n.parse().ok()?, size.parse().ok()?))
}

/// The body of message `n` (lines of at most 78 characters and CRLF).
pub fn expected_body(tag: &str, n: u64, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 80);
    let mut line = 0u64;
    while out.len() < size {
        let head = format!("{tag} {n} {line} ");
        out.extend_from_slice(head.as_bytes());
        let fill = 76usize.saturating_sub(head.len()).min(size.saturating_sub(out.len()).max(1));
        out.extend((0..fill).map(|i| b'a' + ((n as usize * 7 + line as usize * 3 + i) % 26) as u8));
        out.extend_from_slice(b"\r\n");
        line += 1;
    }
    out
}

/// The whole message `n`: headers, blank line, body.
pub fn message(tag: &str, n: u64, size: usize) -> Vec<u8> {
    let mut m = format!(
        "From: <load@iolab.test>\r\nTo: <sink@iolab.test>\r\nSubject: load {n}\r\nMessage-ID: {}\r\n\r\n",
        message_id(tag, n, size)
    )
    .into_bytes();
    m.extend_from_slice(&expected_body(tag, n, size));
    m
}

/// The size of message `n` under a weighted mix (a golden-ratio sequence
/// spreads the choices evenly and needs no random state).
pub fn size_of(sizes: &[(usize, f64)], n: u64) -> usize {
    let total: f64 = sizes.iter().map(|s| s.1).sum();
    let u = ((n as f64) * 0.618_033_988_749_895).fract() * total;
    let mut acc = 0.0;
    for &(size, w) in sizes {
        acc += w;
        if u < acc {
            return size;
        }
    }
    sizes.last().map_or(1024, |s| s.0)
}

struct Shared {
    spec: LoadSpec,
    next: AtomicU64,
    stop: Arc<AtomicBool>,
    sent: Mutex<Vec<Sent>>,
    connect_failures: AtomicU64,
}

/// Runs the load until `spec.messages` are tried or `stop` is set, on a
/// runtime of its own (call it from a plain thread).
pub fn run_blocking(spec: LoadSpec, stop: Arc<AtomicBool>) -> std::io::Result<LoadReport> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    Ok(rt.block_on(run(spec, stop)))
}

/// Async form of [`run_blocking`].
pub async fn run(spec: LoadSpec, stop: Arc<AtomicBool>) -> LoadReport {
    let started = Instant::now();
    let sh = Arc::new(Shared {
        spec: spec.clone(),
        next: AtomicU64::new(0),
        stop,
        sent: Mutex::new(Vec::new()),
        connect_failures: AtomicU64::new(0),
    });
    let tasks: Vec<_> = (0..spec.sessions.max(1)).map(|_| tokio::spawn(session(sh.clone()))).collect();
    for t in tasks {
        let _ = t.await;
    }
    let mut sent = std::mem::take(&mut *sh.sent.lock().unwrap());
    sent.sort_by_key(|s| s.n);
    LoadReport { sent, elapsed: started.elapsed(), connect_failures: sh.connect_failures.load(Ordering::Relaxed) }
}

async fn connect(sh: &Shared) -> Option<SmtpClient<BufStream<TcpStream>>> {
    let spec = &sh.spec;
    let mut c = crate::relay::connect(spec.addr, spec.timeout).await.ok()?;
    let greeting = tokio::time::timeout(spec.timeout, c.read()).await.ok()?.ok()?;
    if greeting.code() != 220 {
        return None;
    }
    c.ehlo("iolab-load").await.ok()?;
    Some(c)
}

async fn session(sh: Arc<Shared>) {
    let spec = sh.spec.clone();
    let none = Parameters::default();
    'conn: while !sh.stop.load(Ordering::Relaxed) {
        let Some(mut client) = connect(&sh).await else {
            sh.connect_failures.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        for _ in 0..spec.per_connection.max(1) {
            if sh.stop.load(Ordering::Relaxed) {
                break 'conn;
            }
            let n = sh.next.fetch_add(1, Ordering::Relaxed);
            if n >= spec.messages {
                let _ = client.quit().await;
                return;
            }
            let size = size_of(&spec.sizes, n);
            let msg = message(&spec.tag, n, size);
            let text = msg.strip_suffix(b"\r\n").unwrap_or(&msg);
            let mut data_us = 0;
            let result = async {
                client.mail_from("load@iolab.test", &none).await?;
                client.rcpt_to("sink@iolab.test", &none).await?;
                let t = Instant::now();
                let r = client.data(text).await;
                data_us = t.elapsed().as_micros() as u64;
                r
            }
            .await;
            let outcome = match &result {
                Ok(r) if r.code() == 250 => Outcome::Accepted,
                Ok(r) => Outcome::Refused(r.code()),
                Err(mail_send::Error::UnexpectedReply(r)) => Outcome::Refused(r.code()),
                Err(_) => Outcome::Unknown,
            };
            if outcome != Outcome::Accepted {
                data_us = 0;
            }
            sh.sent.lock().unwrap().push(Sent { n, size, outcome, data_us });
            if outcome == Outcome::Unknown {
                continue 'conn;
            }
            if matches!(outcome, Outcome::Refused(_)) && client.rset().await.is_err() {
                continue 'conn;
            }
            if !spec.pause.is_zero() {
                tokio::time::sleep(spec.pause).await;
            }
        }
        let _ = client.quit().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_bodies_round_trip() {
        let id = message_id("run1", 42, 1024);
        assert_eq!(parse_message_id("run1", &id), Some((42, 1024)));
        assert_eq!(parse_message_id("run2", &id), None);
        let b = expected_body("run1", 42, 1024);
        assert!(b.len() >= 1024 && b.len() < 1024 + 80, "{}", b.len());
        assert!(b.split(|&c| c == b'\n').all(|l| l.len() <= 79));
        assert_ne!(b, expected_body("run1", 43, 1024));
    }

    #[test]
    fn size_mix_follows_weights() {
        let mix = [(1000, 0.75), (8000, 0.25)];
        let big = (0..10_000).filter(|&n| size_of(&mix, n) == 8000).count();
        assert!((2400..2600).contains(&big), "{big}");
    }
}
