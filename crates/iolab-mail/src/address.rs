//! Mail addresses (RFC 5321 section 4.1.2): the vocabulary that sessions,
//! delivery, Maildir and bounces share, beneath all of them.
//!
//! A [`Mailbox`] keeps its local part *decoded* (the quotes and backslashes
//! of a Quoted-string removed) and writes itself back in the one canonical
//! form RFC 5321 allows: a Dot-string when the local part is one, else a
//! Quoted-string with `"` and `\` escaped. That canonical text is what the
//! queue stores and what the relay writes between `<` and `>`, so a local
//! part such as `x> NOTIFY=NEVER` stays inside its quotes on the way out
//! (issue 26, defect 4).

use std::fmt;

/// RFC 5321 section 4.5.3.1.1: the longest local part.
pub const MAX_LOCAL_PART: usize = 64;
/// RFC 5321 section 4.5.3.1.2: the longest domain.
pub const MAX_DOMAIN: usize = 255;
/// RFC 5321 section 4.5.3.1.3: the longest path, `<` and `>` included.
pub const MAX_PATH: usize = 256;

/// `atext` of RFC 5322 section 3.2.3, which RFC 5321's Atom is made of.
fn is_atext(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~".contains(&b)
}

/// Whether `s` is an RFC 5321 Dot-string (`Atom *("." Atom)`).
fn is_dot_string(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(|atom| !atom.is_empty() && atom.bytes().all(is_atext))
}

/// Whether `s` is an RFC 5321 `Domain` (sub-domains of letters, digits and
/// inner hyphens) or an address literal in brackets.
pub fn is_domain(s: &str) -> bool {
    if s.is_empty() || s.len() > MAX_DOMAIN {
        return false;
    }
    if let Some(lit) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return address_literal(lit);
    }
    s.split('.').all(|sub| {
        let b = sub.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-')
    })
}

/// The inside of an address literal (RFC 5321 section 4.1.3): an IPv4
/// address, or `IPv6:` and an IPv6 address. General literals (`tag:...`)
/// name no standardised address type and are refused.
fn address_literal(lit: &str) -> bool {
    match lit.get(..5) {
        Some(tag) if tag.eq_ignore_ascii_case("IPv6:") => lit[5..].parse::<std::net::Ipv6Addr>().is_ok(),
        _ => lit.parse::<std::net::Ipv4Addr>().is_ok(),
    }
}

/// A mailbox `local@domain`, local part decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mailbox {
    /// The local part without its quoting (printable ASCII and space).
    pub local: String,
    /// The domain or address literal, as given.
    pub domain: String,
}

impl Mailbox {
    /// Parses the text of a mailbox (no angle brackets): a Dot-string or
    /// Quoted-string, `@`, a domain. The reason is for a `501` reply.
    pub fn parse(text: &str) -> Result<Mailbox, &'static str> {
        let b = text.as_bytes();
        let (local, rest) = if b.first() == Some(&b'"') {
            // Quoted-string: qtextSMTP and quoted-pairSMTP up to the
            // closing quote (RFC 5321 section 4.1.2).
            let mut local = String::new();
            let mut i = 1;
            loop {
                match b.get(i) {
                    None => return Err("unterminated quoted local part"),
                    Some(b'"') => break,
                    Some(b'\\') => match b.get(i + 1) {
                        Some(&c) if (32..=126).contains(&c) => {
                            local.push(c as char);
                            i += 2;
                        }
                        _ => return Err("bad quoted pair in the local part"),
                    },
                    Some(&c) if (32..=126).contains(&c) => {
                        local.push(c as char);
                        i += 1;
                    }
                    Some(_) => return Err("control or 8-bit character in the local part"),
                }
            }
            (local, &text[i + 1..])
        } else {
            let at = text.rfind('@').ok_or("no @ in the address")?;
            let local = &text[..at];
            if !is_dot_string(local) {
                return Err("local part is not a dot-string");
            }
            (local.to_string(), &text[at..])
        };
        let domain = rest.strip_prefix('@').ok_or("no @ after the local part")?;
        if local.is_empty() {
            return Err("empty local part");
        }
        if local.len() > MAX_LOCAL_PART {
            return Err("local part longer than 64 octets");
        }
        if !is_domain(domain) {
            return Err("bad domain");
        }
        let m = Mailbox { local, domain: domain.to_string() };
        if m.to_string().len() + 2 > MAX_PATH {
            return Err("path longer than 256 octets");
        }
        Ok(m)
    }

    /// The domain in lower case, for comparisons (domains are not case
    /// sensitive, RFC 5321 section 2.4).
    pub fn domain_lower(&self) -> String {
        self.domain.to_ascii_lowercase()
    }
}

impl fmt::Display for Mailbox {
    /// The canonical RFC 5321 text: the local part as a Dot-string when it
    /// is one, else quoted with `"` and `\` escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if is_dot_string(&self.local) {
            f.write_str(&self.local)?;
        } else {
            f.write_str("\"")?;
            for c in self.local.chars() {
                if c == '"' || c == '\\' {
                    f.write_str("\\")?;
                }
                write!(f, "{c}")?;
            }
            f.write_str("\"")?;
        }
        write!(f, "@{}", self.domain)
    }
}

/// A recipient: a mailbox, or the bare `<Postmaster>` that RFC 5321
/// section 4.5.1 says every server MUST accept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForwardPath {
    /// `<Postmaster>` without a domain.
    Postmaster,
    /// Any other recipient.
    Mailbox(Mailbox),
}

impl ForwardPath {
    /// Parses the stored (canonical) text back.
    pub fn parse(text: &str) -> Result<ForwardPath, &'static str> {
        if text.eq_ignore_ascii_case("postmaster") {
            return Ok(ForwardPath::Postmaster);
        }
        Mailbox::parse(text).map(ForwardPath::Mailbox)
    }
}

impl fmt::Display for ForwardPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // RFC 5321 section 4.1.1.3: "Postmaster" is case insensitive;
            // it is written the way the RFC spells it.
            ForwardPath::Postmaster => f.write_str("postmaster"),
            ForwardPath::Mailbox(m) => m.fmt(f),
        }
    }
}

/// Splits `<path> params` (what follows `MAIL FROM:` or `RCPT TO:`): the
/// text between the brackets, with a source route (`@a,@b:`) dropped as
/// RFC 5321 section 4.1.1.3 allows, and the parameters after it. A `>`
/// inside a quoted local part does not end the path.
pub fn split_path(arg: &str) -> Result<(&str, &str), &'static str> {
    let inner = arg.strip_prefix('<').ok_or("the path must start with <")?;
    let b = inner.as_bytes();
    let (mut i, mut quoted) = (0, false);
    let end = loop {
        match b.get(i) {
            None => return Err("the path has no closing >"),
            Some(b'\\') if quoted => i += 2,
            Some(b'"') => {
                quoted = !quoted;
                i += 1;
            }
            Some(b'>') if !quoted => break i,
            Some(_) => i += 1,
        }
    };
    let mut path = &inner[..end];
    if path.starts_with('@') {
        // A-d-l ":" Mailbox: the route is obsolete and ignored.
        path = path.split_once(':').ok_or("bad source route")?.1;
    }
    let rest = &inner[end + 1..];
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return Err("text after the path's >");
    }
    Ok((path, rest.trim_start_matches(' ')))
}

/// Whether `host` may stand in the greeting, the EHLO reply and the
/// `Received:` header as our own name: a domain (RFC 5321 section 2.3.5),
/// not an address literal.
pub fn is_hostname(host: &str) -> bool {
    is_domain(host) && !host.starts_with('[')
}

/// A local part that can name a Maildir folder safely: lower case
/// letters, digits and `._+-`, not starting with a dot. The postmaster's
/// folder is `postmaster`.
pub(crate) fn mailbox_name(rcpt: &ForwardPath) -> Option<String> {
    let local = match rcpt {
        ForwardPath::Postmaster => return Some("postmaster".into()),
        ForwardPath::Mailbox(m) => m.local.to_ascii_lowercase(),
    };
    let ok = !local.is_empty()
        && local.len() <= MAX_LOCAL_PART
        && !local.starts_with('.')
        && local.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    ok.then_some(local)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Option<String> {
        mailbox_name(&ForwardPath::parse(s).ok()?)
    }

    #[test]
    fn mailbox_names_are_safe_path_components() {
        assert_eq!(name("Alice@example.org").as_deref(), Some("alice"));
        assert_eq!(name("bob+tag@x").as_deref(), Some("bob+tag"));
        assert_eq!(name("Postmaster").as_deref(), Some("postmaster"));
        for bad in ["\"../etc\"@x", "a/b@x", "\".hidden\"@x", "\"a b\"@x"] {
            assert_eq!(name(bad), None, "{bad}");
        }
    }

    /// Issue 26, defect 4: what the relay writes is the canonical form,
    /// quotes kept where the local part needs them.
    #[test]
    fn quoted_local_parts_are_written_back_quoted() {
        for (given, canonical) in [
            ("a@b.example", "a@b.example"),
            ("\"a\"@b.example", "a@b.example"),
            ("\"a b\"@c.example", "\"a b\"@c.example"),
            ("\"x> NOTIFY=NEVER ORCPT=rfc822;y@evil.example\"@c.example", "\"x> NOTIFY=NEVER ORCPT=rfc822;y@evil.example\"@c.example"),
            ("\"q\\\"uote\\\\\"@c.example", "\"q\\\"uote\\\\\"@c.example"),
            ("a@[127.0.0.1]", "a@[127.0.0.1]"),
            ("a@[IPv6:::1]", "a@[IPv6:::1]"),
        ] {
            assert_eq!(Mailbox::parse(given).unwrap().to_string(), canonical, "{given}");
            // Canonical text parses back to the same mailbox.
            assert_eq!(Mailbox::parse(canonical).unwrap(), Mailbox::parse(given).unwrap());
        }
        assert_eq!(ForwardPath::parse("POSTMASTER").unwrap().to_string(), "postmaster");
    }

    #[test]
    fn bad_addresses_are_refused() {
        for bad in [
            "", "a", "@b.example", "a@", "a@b..example", "a@-b.example", "a..b@c.example", ".a@c.example",
            "a b@c.example", "\"a\u{1}\"@c.example", "a@[1.2.3]", "a@[tag:x]", "a@b_c.example", "\"open@c.example",
        ] {
            assert!(Mailbox::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Mailbox::parse(&format!("{}@c.example", "a".repeat(65))).is_err());
        assert!(Mailbox::parse(&format!("a@{}.example", "b".repeat(64))).is_err());
    }

    #[test]
    fn own_hostname_must_be_a_domain() {
        assert!(is_hostname("mail.example.org"));
        assert!(!is_hostname(&"a".repeat(300)));
        assert!(!is_hostname("bad host"));
        assert!(!is_hostname("[127.0.0.1]"));
    }

    #[test]
    fn paths_split_at_the_closing_bracket_outside_quotes() {
        assert_eq!(split_path("<a@b> SIZE=10").unwrap(), ("a@b", "SIZE=10"));
        assert_eq!(split_path("<\"x> y\"@b>").unwrap(), ("\"x> y\"@b", ""));
        assert_eq!(split_path("<@r1,@r2:a@b>").unwrap(), ("a@b", ""));
        assert_eq!(split_path("<>").unwrap(), ("", ""));
        for bad in ["a@b", "<a@b", "<a@b>x", "<\"a@b>"] {
            assert!(split_path(bad).is_err(), "{bad}");
        }
    }

    use proptest::prelude::*;

    proptest! {
        /// Any local part of printable ASCII and spaces comes back the same
        /// through its canonical text, and that text never lets a `>` or a
        /// space stand outside quotes.
        #[test]
        fn canonical_text_round_trips(local in "[ -~]{1,64}", domain in "[a-z][a-z0-9-]{0,10}[a-z0-9]\\.example") {
            let m = Mailbox { local, domain };
            let text = m.to_string();
            prop_assert_eq!(Mailbox::parse(&text).unwrap(), m.clone());
            let arg = format!("<{text}> SIZE=1");
            let (path, rest) = split_path(&arg).unwrap();
            prop_assert_eq!(path, text.as_str());
            prop_assert_eq!(rest, "SIZE=1");
        }
    }
}
