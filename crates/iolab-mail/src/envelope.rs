//! The record a queue holds for one accepted message: the SMTP envelope
//! (`MAIL FROM`, `RCPT TO`s) then the message as received (with our
//! `Received:` header on top). Text, so that `iolab queue` tools show it:
//!
//! ```text
//! IOLAB-MAIL 1\n
//! F <sender>\n
//! T <recipient>\n      (one line per recipient)
//! \n
//! <message bytes, CRLF line ends, not dot-stuffed>
//! ```
//! Addresses are stored in their canonical RFC 5321 form
//! (`address.rs`: quoted where the local part needs it) and cannot hold
//! CR or LF (the command parser refuses control characters), so a line per
//! address is unambiguous. Optional lines before the blank line:
//!
//! - `I <queue id>`: the id the logs, the `Received:` header and the `250`
//!   reply name (made at `MAIL`, before the queue's own numeric id exists);
//! - `S <unix ms>`: when the message was accepted (log `delay=`, DSN
//!   `Arrival-Date`);
//! - `M 8BITMIME`: the client declared `BODY=8BITMIME` (RFC 6152), kept
//!   when relaying;
//! - `N <unix ms>`: not to be delivered before then (a record rewritten
//!   for the recipients still deferred, `deliver.rs`);
//! - `A <attempts>`: delivery attempts already made;
//! - `B <reason>`: why it was given up (dead-letter records).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const MAGIC: &[u8] = b"IOLAB-MAIL 1\n";

/// Milliseconds since the epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// How long since `ms` (ms since the epoch), for the logs' `delay=`.
pub fn since_ms(ms: u64) -> Duration {
    Duration::from_millis(now_ms().saturating_sub(ms))
}

/// A new queue id: the microseconds since the epoch and a counter, in
/// upper-case hex, as Postfix's queue ids (unique within one host while
/// fewer than 256 messages begin in the same microsecond).
pub fn new_queue_id() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
    format!("{us:X}{:02X}", SEQ.fetch_add(1, Ordering::Relaxed) & 0xff)
}

/// Sender, recipients and, for dead letters, why delivery failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Envelope {
    /// Reverse path (empty for the null sender `<>`).
    pub from: String,
    /// Forward paths.
    pub rcpts: Vec<String>,
    /// Why the message was given up (dead-letter records only).
    pub bounce: Option<String>,
    /// Delivery attempts made before this record was written (dead
    /// letters, and records rewritten for deferred recipients).
    pub attempts: u32,
    /// The queue id (empty in records written before it existed).
    pub queue_id: String,
    /// When the message was accepted, ms since the epoch (0: unknown).
    pub arrival_ms: u64,
    /// `BODY=8BITMIME` was declared.
    pub body_8bit: bool,
    /// Not to be delivered before this time, ms since the epoch (0: now).
    pub not_before_ms: u64,
}

impl Envelope {
    /// Encodes the envelope followed by `message`.
    pub fn encode(&self, message: &[u8]) -> Vec<u8> {
        self.encode_parts(&[message])
    }

    /// [`Envelope::encode`] of a message given in parts (the session's
    /// `Received:` header and the text it received): one buffer, no copy
    /// of the joined message first.
    pub fn encode_parts(&self, parts: &[&[u8]]) -> Vec<u8> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut out = self.encode_head(len);
        for p in parts {
            out.extend_from_slice(p);
        }
        out
    }

    /// The envelope and its blank line, in a buffer with room for `more`
    /// bytes of message after it.
    pub fn encode_head(&self, more: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(more + 128 + 32 * self.rcpts.len());
        out.extend_from_slice(MAGIC);
        push_line(&mut out, b'F', &self.from);
        for r in &self.rcpts {
            push_line(&mut out, b'T', r);
        }
        if !self.queue_id.is_empty() {
            push_line(&mut out, b'I', &self.queue_id);
        }
        if self.arrival_ms != 0 {
            push_line(&mut out, b'S', &self.arrival_ms.to_string());
        }
        if self.body_8bit {
            push_line(&mut out, b'M', "8BITMIME");
        }
        if self.not_before_ms != 0 {
            push_line(&mut out, b'N', &self.not_before_ms.to_string());
        }
        if let Some(b) = &self.bounce {
            push_line(&mut out, b'B', b);
        }
        if self.attempts != 0 || self.bounce.is_some() {
            push_line(&mut out, b'A', &self.attempts.to_string());
        }
        out.push(b'\n');
        out
    }

    /// Splits a record into its envelope and message.
    pub fn decode(record: &[u8]) -> Result<(Envelope, &[u8]), String> {
        let mut rest = record.strip_prefix(MAGIC).ok_or("not a mail record (no IOLAB-MAIL 1 line)")?;
        let mut env = Envelope::default();
        loop {
            let nl = rest.iter().position(|&b| b == b'\n').ok_or("envelope has no end")?;
            let (line, tail) = (&rest[..nl], &rest[nl + 1..]);
            rest = tail;
            if line.is_empty() {
                break;
            }
            let text = std::str::from_utf8(&line[1..]).map_err(|_| "envelope line is not UTF-8")?;
            let value = text.strip_prefix(' ').ok_or("envelope line lacks its space")?.to_string();
            match line[0] {
                b'F' => env.from = value,
                b'T' => env.rcpts.push(value),
                b'B' => env.bounce = Some(value),
                b'A' => env.attempts = value.parse().map_err(|_| "bad attempts line")?,
                b'I' => env.queue_id = value,
                b'S' => env.arrival_ms = value.parse().map_err(|_| "bad arrival line")?,
                b'M' => env.body_8bit = value == "8BITMIME",
                b'N' => env.not_before_ms = value.parse().map_err(|_| "bad not-before line")?,
                _ => return Err(format!("unknown envelope line {:?}", line[0] as char)),
            }
        }
        if env.rcpts.is_empty() {
            return Err("envelope has no recipient".into());
        }
        Ok((env, rest))
    }
}

fn push_line(out: &mut Vec<u8>, tag: u8, value: &str) {
    out.push(tag);
    out.push(b' ');
    // The parser refuses CR/LF in addresses; a bounce reason from a remote
    // reply may hold them, so they are flattened.
    out.extend(value.bytes().map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }));
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let env = Envelope { from: "a@b".into(), rcpts: vec!["c@d".into(), "e@f".into()], ..Default::default() };
        let rec = env.encode(b"Subject: x\r\n\r\nbody\r\n");
        let (back, msg) = Envelope::decode(&rec).unwrap();
        assert_eq!(back, env);
        assert_eq!(msg, b"Subject: x\r\n\r\nbody\r\n");
        assert_eq!(env.encode_parts(&[b"Subject: x\r\n", b"", b"\r\nbody\r\n"]), rec);
        let dead = Envelope { bounce: Some("550 no\r\nsuch".into()), attempts: 3, ..env };
        let (back, _) = Envelope::decode(&dead.encode(b"m")).unwrap();
        assert_eq!(back.bounce.as_deref(), Some("550 no  such"));
        assert_eq!(back.attempts, 3);
        let full = Envelope {
            from: String::new(),
            rcpts: vec!["\"a b\"@c.example".into(), "postmaster".into()],
            queue_id: "0123ABCDEF".into(),
            arrival_ms: 1_700_000_000_123,
            body_8bit: true,
            not_before_ms: 1_700_000_060_000,
            attempts: 2,
            bounce: None,
        };
        let rec = full.encode(b"m");
        let (back, msg) = Envelope::decode(&rec).unwrap();
        assert_eq!((back, msg), (full, &b"m"[..]));
    }

    #[test]
    fn rejects_garbage() {
        assert!(Envelope::decode(b"hello").is_err());
        assert!(Envelope::decode(b"IOLAB-MAIL 1\nF a\n\nmsg").is_err()); // no recipient
        assert!(Envelope::decode(b"IOLAB-MAIL 1\nF a\nT b").is_err()); // no end
    }
}
