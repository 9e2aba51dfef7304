//! What one delivery attempt did for each recipient, as Postfix's delivery
//! agents report it to its queue manager: sent, deferred (try again) or
//! bounced (give up, tell the sender). The class of the next hop's reply
//! decides (RFC 5321 section 4.2.1: 4yz transient, 5yz permanent). Shared
//! by Maildir and relay delivery, the queue manager (`deliver.rs`) and the
//! bounces (`dsn.rs`), beneath all of them.

/// A recipient's state after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Delivered (the next hop took responsibility, or it is in the Maildir).
    Sent,
    /// A temporary failure: retried later.
    Deferred,
    /// A permanent failure: a DSN goes to the sender.
    Bounced,
}

impl Status {
    /// The word Postfix's logs use.
    pub fn word(self) -> &'static str {
        match self {
            Status::Sent => "sent",
            Status::Deferred => "deferred",
            Status::Bounced => "bounced",
        }
    }
}

/// One recipient's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RcptResult {
    /// The recipient (canonical text, as in the envelope).
    pub rcpt: String,
    /// What happened.
    pub status: Status,
    /// The enhanced status code (RFC 3463), `x.y.z`.
    pub dsn: String,
    /// The reply or reason, for the log and the DSN.
    pub reason: String,
}

impl RcptResult {
    /// A result with the status taken from the first digit of `dsn`.
    pub fn new(rcpt: &str, dsn: &str, reason: impl Into<String>) -> RcptResult {
        let status = match dsn.as_bytes().first() {
            Some(b'2') => Status::Sent,
            Some(b'5') => Status::Bounced,
            _ => Status::Deferred,
        };
        RcptResult { rcpt: rcpt.to_string(), status, dsn: dsn.to_string(), reason: reason.into() }
    }
}

/// Every recipient's result of one attempt, and where it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// `local`, or the next hop as `host[ip]:port`.
    pub relay: String,
    /// One per recipient, in envelope order.
    pub results: Vec<RcptResult>,
}

impl Attempt {
    /// The same result for every recipient.
    pub fn all(relay: &str, rcpts: &[String], dsn: &str, reason: &str) -> Attempt {
        Attempt { relay: relay.to_string(), results: rcpts.iter().map(|r| RcptResult::new(r, dsn, reason)).collect() }
    }

    /// The recipients with `status`.
    pub fn with(&self, status: Status) -> impl Iterator<Item = &RcptResult> {
        self.results.iter().filter(move |r| r.status == status)
    }
}

/// The enhanced status code of an SMTP reply: the one it gives (`550
/// 5.1.1 ...`), else the class's generic one (`x.0.0`).
pub fn dsn_of(code: u16, text: &str) -> String {
    let class = code / 100;
    let given = text.split_whitespace().next().filter(|w| {
        let parts: Vec<&str> = w.split('.').collect();
        parts.len() == 3
            && parts[0] == class.to_string()
            && parts[1..].iter().all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
    });
    given.map_or_else(|| format!("{}.0.0", class.clamp(2, 5)), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_classes_decide() {
        assert_eq!(dsn_of(550, "5.1.1 no such user"), "5.1.1");
        assert_eq!(dsn_of(451, "try later"), "4.0.0");
        assert_eq!(dsn_of(250, "2.0.0 Ok"), "2.0.0");
        // A code whose class does not match the reply's is not trusted.
        assert_eq!(dsn_of(550, "4.1.1 odd"), "5.0.0");
        assert_eq!(RcptResult::new("a@b", "4.4.1", "x").status, Status::Deferred);
        assert_eq!(RcptResult::new("a@b", "5.4.6", "x").status, Status::Bounced);
        assert_eq!(RcptResult::new("a@b", "2.0.0", "x").status, Status::Sent);
    }
}
