//! `iolab-mail serve`: the server as a stand-alone binary, for the crash
//! test (which must SIGKILL and restart it quickly) and for users of the
//! Rust crate. Python users run the same server as `iolab mail serve`.
//! Prints `listening on ADDR` once it accepts connections; on SIGTERM or
//! SIGINT it drains (see `MailServer::shutdown`) and prints its counters
//! as one JSON line. `iolab-mail queue --queue-dir DIR REQUEST` runs one
//! queue command (a JSON request, `{"op": "list"}`; docs/mail.md, "Queue
//! commands") and prints the answer's JSON lines.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use iolab_mail::{init_logging, Delivery, MailServer, Network, QueueChoice, ServerConfig};

#[derive(Parser)]
#[command(name = "iolab-mail", about = "SMTP server whose queue is FastQueue (or one file per message)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve SMTP until SIGTERM.
    Serve(Box<ServeArgs>),
    /// One queue command, through the running server or on the queue
    /// itself: prints the answer as JSON lines.
    Queue {
        #[arg(long)]
        queue_dir: PathBuf,
        /// The request, e.g. '{"op": "delete", "ids": ["6614E72CEC3FA01"]}'.
        request: String,
    },
}

/// `iolab-mail queue`: exit 0 when the answer ends with `done`.
fn queue(queue_dir: PathBuf, request: &str) -> ExitCode {
    let req: iolab_mail::Request = match serde_json::from_str(request) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("iolab-mail: error: request: {e}");
            return ExitCode::from(2);
        }
    };
    match iolab_mail::queue_command(&queue_dir, &req) {
        Ok(answer) => {
            let mut out = std::io::stdout().lock();
            for line in &answer.lines {
                let _ = writeln!(out, "{}", serde_json::to_string(line).unwrap_or_default());
            }
            match answer.lines.last() {
                Some(iolab_mail::Line::Done(_)) => ExitCode::SUCCESS,
                _ => ExitCode::from(1),
            }
        }
        Err(e) => {
            eprintln!("iolab-mail: error: {e}");
            ExitCode::from(2)
        }
    }
}

#[derive(clap::Args)]
struct ServeArgs {
    #[arg(long, default_value = "127.0.0.1:2525")]
    listen: SocketAddr,
    /// fastqueue or filedir.
    #[arg(long, default_value = "fastqueue")]
    queue: String,
    #[arg(long)]
    queue_dir: PathBuf,
    /// Deliver into Maildir folders under this directory.
    #[arg(long, conflicts_with = "relay")]
    maildir: Option<PathBuf>,
    /// Deliver over SMTP to this next hop.
    #[arg(long)]
    relay: Option<SocketAddr>,
    #[arg(long)]
    delivery_concurrency: Option<usize>,
    #[arg(long)]
    max_in_flight: Option<usize>,
    #[arg(long)]
    retry_base_ms: Option<u64>,
    #[arg(long)]
    max_attempts: Option<u32>,
    #[arg(long)]
    segment_mib: Option<u64>,
    /// A taken message not finished or renewed in this time is handed out
    /// again (ServerConfig::visibility_timeout).
    #[arg(long)]
    visibility_timeout_ms: Option<u64>,
    /// Longest one delivery may take before it is cut and retried.
    #[arg(long)]
    delivery_timeout_ms: Option<u64>,
    /// Our name in the greeting, EHLO reply and Received: header.
    #[arg(long)]
    hostname: Option<String>,
    /// Clients that may relay anywhere (repeat; default loopback), as
    /// Postfix's mynetworks.
    #[arg(long = "mynetworks", value_name = "NET")]
    mynetworks: Vec<String>,
    /// Domains anyone may relay to (repeat), as Postfix's relay_domains.
    #[arg(long = "relay-domain", value_name = "DOMAIN")]
    relay_domains: Vec<String>,
    /// Domains delivered into the Maildir besides the hostname and localhost.
    #[arg(long = "local-domain", value_name = "DOMAIN")]
    local_domains: Vec<String>,
    /// Allow mynetworks to hold every address (an open relay).
    #[arg(long)]
    open_relay: bool,
    /// Sessions per client address (clients in mynetworks are exempt).
    #[arg(long)]
    max_connections_per_client: Option<usize>,
}

fn config(a: ServeArgs) -> Result<ServerConfig, String> {
    let delivery = match (a.maildir, a.relay) {
        (Some(m), None) => Delivery::Maildir(m),
        (None, Some(r)) => Delivery::Relay(r),
        _ => return Err("give --maildir DIR or --relay HOST:PORT".into()),
    };
    let queue = QueueChoice::parse(&a.queue).map_err(|e| e.to_string())?;
    let mut c = ServerConfig::new(a.listen, queue, a.queue_dir, delivery);
    if let Some(v) = a.delivery_concurrency {
        c.delivery_concurrency = v;
    }
    if let Some(v) = a.max_in_flight {
        c.max_in_flight = v;
    }
    if let Some(v) = a.retry_base_ms {
        c.retry_base = Duration::from_millis(v);
        c.retry_max = c.retry_max.max(c.retry_base);
    }
    if let Some(v) = a.max_attempts {
        c.max_attempts = v;
    }
    if let Some(v) = a.visibility_timeout_ms {
        c.visibility_timeout = Duration::from_millis(v);
    }
    if let Some(v) = a.delivery_timeout_ms {
        c.delivery_timeout = Duration::from_millis(v);
    }
    if let Some(v) = a.hostname {
        c.hostname = v;
    }
    if !a.mynetworks.is_empty() {
        c.mynetworks = a.mynetworks.iter().map(|n| Network::parse(n)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    }
    c.relay_domains = a.relay_domains;
    c.local_domains = a.local_domains;
    c.open_relay = a.open_relay;
    if let Some(v) = a.max_connections_per_client {
        c.max_connections_per_client = v;
    }
    if let Some(v) = a.segment_mib {
        c.segment_size = v << 20;
        c.max_message_bytes = c.max_message_bytes.min((c.segment_size as usize).saturating_sub(64 * 1024));
    }
    Ok(c)
}

fn main() -> ExitCode {
    let args = match Cli::parse().cmd {
        Cmd::Serve(args) => *args,
        Cmd::Queue { queue_dir, request } => {
            init_logging();
            return queue(queue_dir, &request);
        }
    };
    init_logging();
    let cfg = match config(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("iolab-mail: error: {e}");
            return ExitCode::from(2);
        }
    };
    let server = match MailServer::start(cfg) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("iolab-mail: error: {e}");
            return ExitCode::from(2);
        }
    };
    // Whoever started us may have stopped reading stdout: no panic then.
    let _ = writeln!(std::io::stdout(), "listening on {}", server.local_addr());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let interrupted = rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = term.recv() => false,
            _ = tokio::signal::ctrl_c() => true,
        }
    });
    server.shutdown();
    match server.join() {
        Ok(stats) => {
            let _ = writeln!(std::io::stdout(), "{}", serde_json::to_string(&stats).unwrap_or_default());
            if interrupted {
                ExitCode::from(130)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("iolab-mail: error: {e}");
            ExitCode::FAILURE
        }
    }
}
