//! [`ServerConfig`]: everything `iolab mail serve` can be told, with the
//! limits a real MTA has and where each default comes from.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::address::{is_domain, is_hostname, ForwardPath};
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

/// A client network, `address/prefix` (as a line of Postfix's `mynetworks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    /// Parses `192.0.2.0/24`, `2001:db8::/32` or a lone address (a host).
    pub fn parse(s: &str) -> Result<Network> {
        let bad = || MailError::Config(format!("mynetworks: {s:?} is not a network like 127.0.0.0/8 or ::1/128"));
        let (a, p) = s.split_once('/').unwrap_or((s, ""));
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = if p.is_empty() { max } else { p.parse::<u8>().map_err(|_| bad())? };
        if prefix > max {
            return Err(bad());
        }
        Ok(Network { addr, prefix })
    }

    /// Whether `ip` is inside (an IPv4 client seen as `::ffff:a.b.c.d` counts
    /// as its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }

    /// Whether it holds every address (`0.0.0.0/0`, `::/0`).
    pub fn is_everything(&self) -> bool {
        self.prefix == 0
    }
}

impl std::fmt::Display for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Why a recipient is refused by the relay policy: the whole reply.
pub type PolicyRefusal = String;

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
    /// Clients that may relay to any domain, as Postfix's `mynetworks`.
    /// Default: loopback only (`127.0.0.0/8`, `::1/128`: Postfix's
    /// `mynetworks_style = host` on a machine whose only address is its
    /// loopback). A network holding every address makes an open relay,
    /// refused at start unless `open_relay` is set.
    pub mynetworks: Vec<Network>,
    /// Domains any client may send to through the relay, as Postfix's
    /// `relay_domains` (default empty, Postfix 3.0 and later).
    pub relay_domains: Vec<String>,
    /// Domains delivered into the Maildir, as Postfix's `mydestination`;
    /// `hostname` and `localhost` are always local. Maildir delivery
    /// refuses other domains (it has no way to send mail on).
    pub local_domains: Vec<String>,
    /// Start even when `mynetworks` holds every address (an open relay).
    pub open_relay: bool,
    /// Sessions one client address may hold at once; one more gets `421`
    /// (Postfix's `smtpd_client_connection_count_limit`, default 50).
    /// Clients in `mynetworks` are exempt, as Postfix's
    /// `smtpd_client_event_limit_exceptions` defaults to `$mynetworks`.
    pub max_connections_per_client: usize,
    /// Most `Received:` headers a message may carry; one more is a mail
    /// loop and the message is refused (Postfix's `hopcount_limit`, 50).
    pub hopcount_limit: usize,
    /// Bytes of message text all sessions together may hold in memory
    /// (`spool.rs`); the rest of a large message waits in a temporary
    /// file. Default 256 MiB.
    pub message_memory: usize,
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
            mynetworks: vec![Network::parse("127.0.0.0/8").expect("valid"), Network::parse("::1/128").expect("valid")],
            relay_domains: Vec::new(),
            local_domains: Vec::new(),
            open_relay: false,
            max_connections_per_client: 50,
            hopcount_limit: 50,
            message_memory: 256 << 20,
            segment_size: 64 << 20,
            batch_delay: Duration::from_millis(1),
            filedir_split: 10,
        }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, why: &str| Err(MailError::Config(format!("{field}: {why}")));
        if !is_hostname(&self.hostname) {
            return bad("hostname", "must be a domain name (letters, digits, hyphens and dots; at most 255 bytes)");
        }
        for d in self.relay_domains.iter().chain(&self.local_domains) {
            if !is_domain(d) || d.starts_with('[') {
                return Err(MailError::Config(format!("domain {d:?}: not a domain name")));
            }
        }
        if let Some(n) = self.mynetworks.iter().find(|n| n.is_everything()) {
            if !self.open_relay {
                return Err(MailError::Config(format!(
                    "mynetworks {n} lets every client relay mail to any domain (an open relay); \
                     give --open-relay if that is what you want"
                )));
            }
        }
        if let Delivery::Relay(next) = self.delivery {
            if relays_to_itself(self.listen, next) {
                return Err(MailError::Config(format!(
                    "relay {next}: that is this server's own listen address {}: every message would loop",
                    self.listen
                )));
            }
        }
        if self.max_connections_per_client == 0 || self.max_connections_per_client > 1_000_000 {
            return bad("max_connections_per_client", "must be between 1 and 1000000");
        }
        if self.hopcount_limit == 0 || self.hopcount_limit > 1000 {
            return bad("hopcount_limit", "must be between 1 and 1000");
        }
        if self.message_memory < self.max_message_bytes + 128 * 1024 || self.message_memory > 64 << 30 {
            return bad("message_memory", "must hold the largest message (max_message_bytes + 128 KiB) and be at most 64 GiB");
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
            // RFC 5321 section 4.5.3.2 asks for minutes; below a second
            // no real client or next hop could keep up.
            if field != "visibility_timeout" && d < Duration::from_secs(1) {
                return bad(field, "must be at least 1 s");
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

    /// Whether `domain` is delivered here (Maildir): `local_domains`,
    /// `hostname` or `localhost`.
    pub fn is_local_domain(&self, domain: &str) -> bool {
        let d = domain.to_ascii_lowercase();
        d == "localhost" || d == self.hostname.to_ascii_lowercase() || self.local_domains.iter().any(|l| l.eq_ignore_ascii_case(&d))
    }

    /// Postfix's default relay restrictions for one recipient
    /// (`smtpd_relay_restrictions = permit_mynetworks, ...,
    /// reject_unauth_destination`): the bare `<postmaster>` always (RFC 5321
    /// section 4.5.1 MUST); a local domain (Maildir); with a relay, any
    /// domain for a client in `mynetworks` and the `relay_domains` for
    /// everyone else. Maildir delivery has nowhere to send other domains.
    pub fn check_recipient(&self, client: IpAddr, rcpt: &ForwardPath) -> std::result::Result<(), PolicyRefusal> {
        let m = match rcpt {
            ForwardPath::Postmaster => return Ok(()),
            ForwardPath::Mailbox(m) => m,
        };
        match self.delivery {
            Delivery::Maildir(_) if self.is_local_domain(&m.domain) => Ok(()),
            Delivery::Maildir(_) => Err(format!("550 5.1.2 <{m}>: Recipient address rejected: domain {} is not delivered here", m.domain)),
            Delivery::Relay(_) => {
                let domain = m.domain_lower();
                if self.mynetworks.iter().any(|n| n.contains(client))
                    || self.relay_domains.iter().any(|d| d.eq_ignore_ascii_case(&domain))
                {
                    Ok(())
                } else {
                    Err(format!("554 5.7.1 <{m}>: Relay access denied"))
                }
            }
        }
    }

    /// Whether a client is exempt from the per-client connection limit.
    pub fn in_mynetworks(&self, client: IpAddr) -> bool {
        self.mynetworks.iter().any(|n| n.contains(client))
    }

    /// The delay before retry number `attempts` (1 = first retry):
    /// `retry_base * 2^(attempts-1)`, at most `retry_max`.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(40);
        self.retry_base.saturating_mul(1u32 << doublings.min(31)).min(self.retry_max)
    }
}

/// Whether relaying to `next` would reach the server listening on
/// `listen`: the same port, and the same address, or `listen` on every
/// address (`0.0.0.0`, `::`) and `next` one of this machine's addresses,
/// or both on loopback. The run-time check (the next hop greeting with our
/// own name, `relay.rs`) catches loops this one cannot see.
pub fn relays_to_itself(listen: SocketAddr, next: SocketAddr) -> bool {
    if listen.port() != next.port() || listen.port() == 0 {
        return false;
    }
    let (l, n) = (listen.ip(), next.ip());
    l == n
        || n.is_unspecified()
        || (n.is_loopback() && (l.is_loopback() || l.is_unspecified()))
        || (l.is_unspecified() && local_addresses().contains(&n))
}

/// This machine's interface addresses (`getifaddrs(3)`).
fn local_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    // SAFETY: getifaddrs fills a list that we only read and then free;
    // each sockaddr is read as the family it declares.
    unsafe {
        let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut list) != 0 {
            return out;
        }
        let mut p = list;
        while !p.is_null() {
            let a = (*p).ifa_addr;
            if !a.is_null() {
                match i32::from((*a).sa_family) {
                    libc::AF_INET => {
                        let sin = &*(a as *const libc::sockaddr_in);
                        out.push(IpAddr::from(u32::from_be(sin.sin_addr.s_addr).to_be_bytes()));
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*(a as *const libc::sockaddr_in6);
                        out.push(IpAddr::from(sin6.sin6_addr.s6_addr));
                    }
                    _ => {}
                }
            }
            p = (*p).ifa_next;
        }
        libc::freeifaddrs(list);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Mailbox;

    #[test]
    fn networks_match_by_prefix() {
        let n = Network::parse("10.1.0.0/16").unwrap();
        assert!(n.contains("10.1.200.3".parse().unwrap()));
        assert!(!n.contains("10.2.0.1".parse().unwrap()));
        assert!(n.contains("::ffff:10.1.0.9".parse().unwrap()));
        assert!(Network::parse("::1").unwrap().contains("::1".parse().unwrap()));
        assert!(Network::parse("0.0.0.0/0").unwrap().contains("192.0.2.1".parse().unwrap()));
        for bad in ["10.0.0.0/33", "nonsense", "::/129", "1.2.3.4/x"] {
            assert!(Network::parse(bad).is_err(), "{bad}");
        }
    }

    fn rcpt(s: &str) -> ForwardPath {
        ForwardPath::Mailbox(Mailbox::parse(s).unwrap())
    }

    /// Issue 26, defect 2: the relay is not open.
    #[test]
    fn relay_only_for_mynetworks_or_relay_domains() {
        let mut c = ServerConfig::new("0.0.0.0:25".parse().unwrap(), QueueChoice::Fast, "/q".into(), Delivery::Relay("192.0.2.9:25".parse().unwrap()));
        c.relay_domains = vec!["example.org".into()];
        let outside: IpAddr = "198.51.100.7".parse().unwrap();
        let inside: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(c.check_recipient(outside, &rcpt("victim@gmail.example")).unwrap_err().starts_with("554 5.7.1"));
        assert!(c.check_recipient(outside, &rcpt("alice@Example.ORG")).is_ok());
        assert!(c.check_recipient(outside, &ForwardPath::Postmaster).is_ok());
        assert!(c.check_recipient(inside, &rcpt("victim@gmail.example")).is_ok());
        c.validate().unwrap();
        c.mynetworks.push(Network::parse("0.0.0.0/0").unwrap());
        assert!(c.validate().unwrap_err().to_string().contains("open relay"));
        c.open_relay = true;
        c.validate().unwrap();
    }

    #[test]
    fn configurations_that_cannot_work_are_refused() {
        let base = || ServerConfig::new("127.0.0.1:2525".parse().unwrap(), QueueChoice::Fast, "/q".into(), Delivery::Maildir("/m".into()));
        let mut c = base();
        c.hostname = "a".repeat(10_000);
        assert!(c.validate().unwrap_err().to_string().starts_with("hostname"));
        let mut c = base();
        c.command_timeout = Duration::from_nanos(1);
        assert!(c.validate().unwrap_err().to_string().starts_with("command_timeout"));
        for next in ["127.0.0.1:2525", "127.0.0.2:2525"] {
            let mut c = base();
            c.delivery = Delivery::Relay(next.parse().unwrap());
            assert!(c.validate().unwrap_err().to_string().contains("loop"), "{next}");
        }
        let mut c = base();
        c.listen = "0.0.0.0:2525".parse().unwrap();
        c.delivery = Delivery::Relay("127.0.0.1:2525".parse().unwrap());
        assert!(c.validate().unwrap_err().to_string().contains("loop"));
        // Another machine on the same port is a next hop like any other.
        c.delivery = Delivery::Relay("192.0.2.1:2525".parse().unwrap());
        c.validate().unwrap();
    }
}
