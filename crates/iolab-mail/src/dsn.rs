//! Bounces: the delivery status notification (RFC 3464, in a
//! `multipart/report` of RFC 6522) that RFC 5321 section 6.1 says a server
//! MUST send to the envelope sender when it accepted a message and cannot
//! deliver it (issue 26, defect 5). It goes out from the null sender `<>`
//! and, as section 4.5.5 requires, a message from `<>` never gets one
//! (no bounce of a bounce). The original's header section is returned
//! (`text/rfc822-headers`), not its body: never 8-bit, never large.

use crate::envelope::{new_queue_id, now_ms, Envelope};
use crate::status::{RcptResult, Status};

/// A DSN to the sender of `env` for the `failed` recipients: its envelope
/// (from `<>`, a new queue id) and its text; `None` when the sender is `<>`.
pub(crate) fn bounce(
    hostname: &str,
    env: &Envelope,
    message: &[u8],
    failed: &[&RcptResult],
    remote: Option<&str>,
) -> Option<(Envelope, Vec<u8>)> {
    if env.from.is_empty() || failed.is_empty() {
        return None;
    }
    let dsn_env = Envelope { from: String::new(), rcpts: vec![env.from.clone()], queue_id: new_queue_id(), arrival_ms: now_ms(), ..Default::default() };
    let text = report(hostname, env, message, failed, remote, &dsn_env.queue_id);
    Some((dsn_env, text))
}

/// The header section of a stored message (up to its blank line), with
/// CRLF line ends; at most 64 kB of it.
fn header_section(message: &[u8]) -> &[u8] {
    let end = message.windows(4).position(|w| w == b"\r\n\r\n").map_or(message.len(), |i| i + 2);
    &message[..end.min(64 * 1024)]
}

fn rfc2822(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64).unwrap_or_default().to_rfc2822()
}

/// The DSN's text: the human part, the `message/delivery-status` part and
/// the original's headers.
fn report(hostname: &str, env: &Envelope, message: &[u8], failed: &[&RcptResult], remote: Option<&str>, dsn_id: &str) -> Vec<u8> {
    let boundary = format!("{dsn_id}.{}/{hostname}", now_ms());
    let mut t = String::new();
    let mut line = |s: &str| {
        t.push_str(s);
        t.push_str("\r\n");
    };
    line(&format!("From: MAILER-DAEMON@{hostname} (Mail Delivery System)"));
    line(&format!("To: <{}>", env.from));
    line("Subject: Undelivered Mail Returned to Sender");
    line(&format!("Date: {}", rfc2822(now_ms())));
    line(&format!("Message-ID: <{dsn_id}@{hostname}>"));
    // RFC 3834 section 5: a notification is auto-replied; no one answers it.
    line("Auto-Submitted: auto-replied");
    line("MIME-Version: 1.0");
    line(&format!("Content-Type: multipart/report; report-type=delivery-status;\r\n\tboundary=\"{boundary}\""));
    line("");
    line("This is a MIME-encapsulated message.");
    line("");
    line(&format!("--{boundary}"));
    line("Content-Description: Notification");
    line("Content-Type: text/plain; charset=us-ascii");
    line("");
    line(&format!("This is the mail system at host {hostname}."));
    line("");
    line("I'm sorry to have to inform you that your message could not");
    line("be delivered to one or more recipients. It's attached below.");
    line("");
    for f in failed {
        line(&format!("<{}>: {}", f.rcpt, ascii(&f.reason)));
    }
    line("");
    line(&format!("--{boundary}"));
    line("Content-Description: Delivery report");
    line("Content-Type: message/delivery-status");
    line("");
    // RFC 3464 section 2.2: the per-message fields.
    line(&format!("Reporting-MTA: dns; {hostname}"));
    if !env.queue_id.is_empty() {
        line(&format!("X-Iolab-Queue-ID: {}", env.queue_id));
    }
    line(&format!("X-Iolab-Sender: rfc822; {}", env.from));
    if env.arrival_ms != 0 {
        line(&format!("Arrival-Date: {}", rfc2822(env.arrival_ms)));
    }
    // Section 2.3: one group per recipient.
    for f in failed {
        line("");
        line(&format!("Final-Recipient: rfc822; {}", f.rcpt));
        line(match f.status {
            Status::Bounced | Status::Deferred => "Action: failed",
            Status::Sent => "Action: delivered",
        });
        line(&format!("Status: {}", f.dsn));
        if let Some(r) = remote {
            line(&format!("Remote-MTA: dns; {r}"));
        }
        line(&format!("Diagnostic-Code: smtp; {}", ascii(&f.reason)));
    }
    line("");
    line(&format!("--{boundary}"));
    line("Content-Description: Undelivered Message Headers");
    line("Content-Type: text/rfc822-headers");
    line("");
    let mut out = t.into_bytes();
    out.extend(header_section(message).iter().map(|&b| if b >= 0x80 { b'?' } else { b }));
    out.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    out
}

/// Printable ASCII only (a reason quoting a remote reply goes into a
/// header-like field and a `us-ascii` part).
fn ascii(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed() -> RcptResult {
        RcptResult::new("victim@y.example", "5.1.1", "host 127.0.0.1[127.0.0.1]:25 said: 550 5.1.1 no such user (in reply to RCPT TO command)")
    }

    #[test]
    fn a_dsn_is_a_multipart_report_to_the_sender() {
        let env = Envelope { from: "bob@x.example".into(), rcpts: vec!["victim@y.example".into()], queue_id: "ABC".into(), arrival_ms: 1_700_000_000_000, ..Default::default() };
        let msg = b"Received: x\r\nSubject: hello\r\n\r\nsecret body\r\n";
        let f = failed();
        let (dsn, text) = bounce("mx.example", &env, msg, &[&f], Some("127.0.0.1")).unwrap();
        assert_eq!((dsn.from.as_str(), dsn.rcpts.clone()), ("", vec!["bob@x.example".to_string()]));
        let text = String::from_utf8(text).unwrap();
        for want in [
            "Content-Type: multipart/report; report-type=delivery-status;",
            "Content-Type: message/delivery-status",
            "Reporting-MTA: dns; mx.example",
            "Final-Recipient: rfc822; victim@y.example",
            "Action: failed",
            "Status: 5.1.1",
            "Diagnostic-Code: smtp; host 127.0.0.1[127.0.0.1]:25 said: 550 5.1.1 no such user",
            "Subject: hello",
            "Auto-Submitted: auto-replied",
        ] {
            assert!(text.contains(want), "{want} not in:\n{text}");
        }
        assert!(!text.contains("secret body"), "only the headers are returned");
        assert!(text.split("\r\n").all(|l| !l.contains('\n')), "CRLF only");
    }

    #[test]
    fn never_a_bounce_for_the_null_sender() {
        let env = Envelope { from: String::new(), rcpts: vec!["a@b.example".into()], ..Default::default() };
        let f = failed();
        assert!(bounce("mx.example", &env, b"", &[&f], None).is_none());
    }
}
