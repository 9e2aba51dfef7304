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
//! Addresses cannot hold CR or LF (the SMTP parser refuses them), so a line
//! per address is unambiguous. A bounce record in the dead-letter queue is
//! the same, with `B <reason>` and `A <attempts>` lines before the blank line.

const MAGIC: &[u8] = b"IOLAB-MAIL 1\n";

/// Sender, recipients and, for dead letters, why delivery failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Envelope {
    /// Reverse path (empty for the null sender `<>`).
    pub from: String,
    /// Forward paths.
    pub rcpts: Vec<String>,
    /// Why the message was given up (dead-letter records only).
    pub bounce: Option<String>,
    /// Delivery attempts made (dead-letter records only).
    pub attempts: u32,
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
        let mut out = Vec::with_capacity(len + 64 + 32 * self.rcpts.len());
        out.extend_from_slice(MAGIC);
        push_line(&mut out, b'F', &self.from);
        for r in &self.rcpts {
            push_line(&mut out, b'T', r);
        }
        if let Some(b) = &self.bounce {
            push_line(&mut out, b'B', b);
            push_line(&mut out, b'A', &self.attempts.to_string());
        }
        out.push(b'\n');
        for p in parts {
            out.extend_from_slice(p);
        }
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
    }

    #[test]
    fn rejects_garbage() {
        assert!(Envelope::decode(b"hello").is_err());
        assert!(Envelope::decode(b"IOLAB-MAIL 1\nF a\n\nmsg").is_err()); // no recipient
        assert!(Envelope::decode(b"IOLAB-MAIL 1\nF a\nT b").is_err()); // no end
    }
}
