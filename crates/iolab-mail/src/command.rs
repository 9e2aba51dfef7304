//! SMTP command lines (RFC 5321 section 4.1), parsed by our own code
//! rather than smtp-proto's: smtp-proto dropped the quotes of a quoted
//! local part, turned `<Postmaster>` into the null path, replaced non-UTF-8
//! bytes with U+FFFD and accepted parameters we never advertised (issue
//! 26, defects 4, 6 and 8). Here a line with a control character or an
//! 8-bit byte is refused before anything else (we offer no SMTPUTF8, RFC
//! 6531), addresses keep their exact meaning ([`crate::address`]), and
//! every parameter we did not advertise gets `555` (RFC 5321 section
//! 4.1.1.11, RFC 1869 section 6).

use crate::address::{split_path, ForwardPath, Mailbox};

/// A command the session acts on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// `EHLO domain` (the argument checked to be safe in a header).
    Ehlo(String),
    /// `HELO domain`.
    Helo(String),
    /// `MAIL FROM:<path>`; `None` is the null sender `<>`.
    Mail {
        /// The reverse path.
        from: Option<Mailbox>,
        /// `SIZE=` (RFC 1870), if given.
        size: Option<u64>,
        /// `BODY=8BITMIME` (RFC 6152), kept for the relay.
        body_8bit: bool,
    },
    /// `RCPT TO:<path>`.
    Rcpt(ForwardPath),
    /// `DATA`.
    Data,
    /// `RSET`.
    Rset,
    /// `NOOP [string]`.
    Noop,
    /// `QUIT`.
    Quit,
    /// `VRFY string`.
    Vrfy,
    /// `HELP [string]`.
    Help,
    /// A known command whose extension we do not offer (BDAT, STARTTLS,
    /// AUTH, ...) or one RFC 5321 leaves optional (EXPN, TURN, ...).
    NotOffered(&'static str),
}

/// A refused command line: the whole reply to send.
pub(crate) type Refusal = String;

fn syntax(usage: &str) -> Refusal {
    format!("501 5.5.4 Syntax: {usage}")
}

/// Parses one command line (without its CRLF).
pub(crate) fn parse(line: &[u8]) -> Result<Command, Refusal> {
    if line.iter().any(|&b| b >= 0x80) {
        // RFC 6531 section 3.4: without SMTPUTF8 the commands are ASCII;
        // a non-ASCII address is refused, never turned into U+FFFD.
        return Err("501 5.5.2 Syntax error: 8-bit characters in a command (SMTPUTF8 is not offered)".into());
    }
    if line.iter().any(|&b| b.is_ascii_control() && b != b'\t') {
        return Err("501 5.5.2 Syntax error: control characters in a command".into());
    }
    let text = std::str::from_utf8(line).expect("ASCII checked above");
    let (verb, arg) = match text.split_once(' ') {
        Some((v, a)) => (v, a.trim_matches(|c| c == ' ' || c == '\t')),
        None => (text.trim_end(), ""),
    };
    let verb = verb.to_ascii_uppercase();
    match verb.as_str() {
        "EHLO" | "HELO" => {
            let host = hello_argument(arg).ok_or_else(|| syntax(&format!("{verb} hostname")))?;
            Ok(if verb == "EHLO" { Command::Ehlo(host) } else { Command::Helo(host) })
        }
        "MAIL" => mail(arg),
        "RCPT" => rcpt(arg),
        "DATA" | "RSET" | "QUIT" => {
            if !arg.is_empty() {
                // RFC 5321 sections 4.1.1.4, 4.1.1.5, 4.1.1.10: no argument.
                return Err(syntax(&verb));
            }
            Ok(match verb.as_str() {
                "DATA" => Command::Data,
                "RSET" => Command::Rset,
                _ => Command::Quit,
            })
        }
        "NOOP" => Ok(Command::Noop),
        "HELP" => Ok(Command::Help),
        "VRFY" if !arg.is_empty() => Ok(Command::Vrfy),
        "VRFY" => Err(syntax("VRFY address")),
        "BDAT" => Ok(Command::NotOffered("BDAT (CHUNKING is not offered)")),
        "STARTTLS" => Ok(Command::NotOffered("STARTTLS")),
        "AUTH" => Ok(Command::NotOffered("AUTH")),
        "EXPN" | "ETRN" | "TURN" | "ATRN" | "BURL" | "LHLO" => Ok(Command::NotOffered("command")),
        _ => Err("500 5.5.2 Error: command not recognized".into()),
    }
}

/// The EHLO/HELO argument: a domain or address literal as RFC 5321
/// section 4.1.1.1 asks, loosened as Postfix is by default (underscores,
/// a trailing dot) but never with characters that could change the
/// meaning of the `Received:` header it is written into.
fn hello_argument(arg: &str) -> Option<String> {
    let ok = !arg.is_empty()
        && arg.len() <= crate::address::MAX_DOMAIN
        && arg.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._:[]".contains(&b));
    ok.then(|| arg.to_string())
}

/// `FROM:<path> [SIZE=n] [BODY=7BIT|8BITMIME]`.
fn mail(arg: &str) -> Result<Command, Refusal> {
    let usage = "MAIL FROM:<address>";
    let rest = strip_keyword(arg, "FROM:").ok_or_else(|| syntax(usage))?;
    let (path, params) = split_path(rest).map_err(|why| format!("501 5.1.7 Bad sender address syntax: {why}"))?;
    let from = if path.is_empty() {
        None
    } else {
        Some(Mailbox::parse(path).map_err(|why| format!("501 5.1.7 Bad sender address syntax: {why}"))?)
    };
    let (mut size, mut body) = (None, None);
    for p in params.split(' ').filter(|p| !p.is_empty()) {
        let (key, value) = p.split_once('=').unwrap_or((p, ""));
        match key.to_ascii_uppercase().as_str() {
            // RFC 1870 section 5: SIZE=1*20DIGIT.
            "SIZE" if size.is_none() => {
                let n = (!value.is_empty() && value.len() <= 20 && value.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| value.parse::<u64>().unwrap_or(u64::MAX))
                    .ok_or_else(|| syntax("SIZE=number"))?;
                size = Some(n);
            }
            // RFC 6152: BODY=8BITMIME is what we advertise; 7BIT is the
            // default. BINARYMIME (RFC 3030) needs CHUNKING: not offered.
            "BODY" if body.is_none() => match value.to_ascii_uppercase().as_str() {
                "7BIT" => body = Some(false),
                "8BITMIME" => body = Some(true),
                _ => return Err(format!("555 5.5.4 Unsupported option: BODY={value}")),
            },
            "SIZE" | "BODY" => return Err(format!("501 5.5.4 Duplicate option: {key}")),
            _ => return Err(format!("555 5.5.4 Unsupported option: {p}")),
        }
    }
    Ok(Command::Mail { from, size, body_8bit: body.unwrap_or(false) })
}

/// `TO:<path>`: no parameter is advertised (no DSN extension, RFC 3461),
/// so `NOTIFY=`, `ORCPT=` and the rest get 555.
fn rcpt(arg: &str) -> Result<Command, Refusal> {
    let rest = strip_keyword(arg, "TO:").ok_or_else(|| syntax("RCPT TO:<address>"))?;
    let (path, params) = split_path(rest).map_err(|why| format!("501 5.1.3 Bad recipient address syntax: {why}"))?;
    if let Some(p) = params.split(' ').find(|p| !p.is_empty()) {
        return Err(format!("555 5.5.4 Unsupported option: {p}"));
    }
    ForwardPath::parse(path)
        .map(Command::Rcpt)
        .map_err(|why| format!("501 5.1.3 Bad recipient address syntax: {why}"))
}

/// `FROM:` / `TO:` case-insensitively, then the path; spaces after the
/// colon are tolerated as Postfix does (`smtpd_strict_rfc821_envelopes = no`).
fn strip_keyword<'a>(arg: &'a str, keyword: &str) -> Option<&'a str> {
    let head = arg.get(..keyword.len())?;
    head.eq_ignore_ascii_case(keyword).then(|| arg[keyword.len()..].trim_start_matches(' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> Command {
        parse(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn refused(line: &[u8]) -> String {
        match parse(line) {
            Ok(c) => panic!("{:?}: accepted as {c:?}", String::from_utf8_lossy(line)),
            Err(r) => r,
        }
    }

    #[test]
    fn commands_parse() {
        assert_eq!(ok("ehlo client.example"), Command::Ehlo("client.example".into()));
        assert_eq!(ok("HELO [127.0.0.1]"), Command::Helo("[127.0.0.1]".into()));
        assert_eq!(
            ok("MAIL FROM:<a@b.example> SIZE=100 BODY=8BITMIME"),
            Command::Mail { from: Some(Mailbox::parse("a@b.example").unwrap()), size: Some(100), body_8bit: true }
        );
        assert_eq!(ok("mail from: <>"), Command::Mail { from: None, size: None, body_8bit: false });
        assert_eq!(ok("RCPT TO:<Postmaster>"), Command::Rcpt(ForwardPath::Postmaster));
        assert_eq!(ok("RCPT TO:<\"a b\"@c.example>"), Command::Rcpt(ForwardPath::parse("\"a b\"@c.example").unwrap()));
        assert_eq!(ok("DATA"), Command::Data);
        assert_eq!(ok("NOOP anything at all"), Command::Noop);
    }

    /// Issue 26, defect 6: what we did not advertise gets 555.
    #[test]
    fn unadvertised_parameters_get_555() {
        for line in [
            "MAIL FROM:<a@b.example> BODY=BINARYMIME",
            "MAIL FROM:<a@b.example> SMTPUTF8",
            "MAIL FROM:<a@b.example> RET=FULL",
            "MAIL FROM:<a@b.example> ENVID=x",
            "RCPT TO:<a@b.example> NOTIFY=NEVER",
            "RCPT TO:<a@b.example> ORCPT=rfc822;x@y.example",
        ] {
            assert!(refused(line.as_bytes()).starts_with("555 5.5.4"), "{line}");
        }
    }

    /// Issue 26, defect 8: no U+FFFD, no NUL into a header.
    #[test]
    fn eight_bit_and_control_characters_are_refused() {
        assert!(refused(b"MAIL FROM:<\xff\xfe@b.example>").starts_with("501 5.5.2"));
        assert!(refused(b"EHLO a\x00b").starts_with("501 5.5.2"));
        assert!(refused(b"EHLO a\rb").starts_with("501 5.5.2"));
        assert!(refused(b"EHLO a(b)").starts_with("501 5.5.4"));
        assert!(refused(b"RCPT TO:<>").starts_with("501 5.1.3"));
        assert!(refused(b"MAIL FROM:<a@b.example> SIZE=x").starts_with("501"));
        assert!(refused(b"DATA now").starts_with("501"));
        assert!(refused(b"FOO").starts_with("500"));
    }
}
