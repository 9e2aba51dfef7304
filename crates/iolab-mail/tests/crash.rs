//! Crash safety of the whole server: SIGKILL `iolab-mail serve` under load
//! many times, restart it on the same queue, and check at the sink, by
//! Message-ID, that every message that got `250` was delivered at least
//! once, that no copy is corrupted, and that duplicates stay within the
//! documented bound (at most `max_in_flight` per crash: docs/mail.md).
//!
//! Load: Postfix's `smtp-source` (background load whose outcomes are not
//! recorded) plus our own client (`loadgen`), which records which of its
//! messages got `250`. Sink: Postfix's `smtp-sink`, dumping every message
//! to a file. Loopback only. Needs the Debian package `postfix` (`make
//! deps`); without it the test is skipped, except under `CI=true`, where it
//! fails.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolab_mail::loadgen::{self, LoadSpec, Outcome};
use rand::{Rng, SeedableRng};

const SEPARATOR: &str = "=====IOLAB-SINK-MESSAGE=====";
const MAX_IN_FLIGHT: usize = 64;

fn tool(name: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].iter().map(|d| Path::new(d).join(name)).find(|p| p.exists())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

struct Sink {
    child: Child,
    port: u16,
    dump: PathBuf,
}

/// Per (tag, message number): (copies, corrupted copies).
type Census = HashMap<(String, u64), (u32, u32)>;

impl Sink {
    fn start(smtp_sink: &Path, dir: &Path) -> Sink {
        let port = free_port();
        let dump = dir.join("sink.dump");
        let mut cmd = Command::new(smtp_sink);
        if is_root() {
            cmd.args(["-u", "postfix"]);
        }
        let child = cmd
            .arg("-D")
            .arg(&dump)
            .arg("-S")
            .arg(format!("{SEPARATOR}\n"))
            .arg(format!("127.0.0.1:{port}"))
            .arg("512")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start smtp-sink");
        wait_listening(port);
        Sink { child, port, dump }
    }

    /// (our tag, number) -> (copies, corrupted copies); also counts copies
    /// of messages that are not ours (smtp-source's).
    fn census(&self) -> (Census, u64) {
        let data = std::fs::read(&self.dump).unwrap_or_default();
        let text = String::from_utf8_lossy(&data).replace('\r', "");
        let mut ours: HashMap<(String, u64), (u32, u32)> = HashMap::new();
        let mut theirs = 0;
        for msg in text.split(&format!("{SEPARATOR}\n")).filter(|m| !m.trim().is_empty()) {
            let Some((head, body)) = msg.split_once("\n\n") else { continue };
            let id = head.lines().find_map(|l| l.strip_prefix("Message-ID: "));
            let parsed = id.and_then(|id| {
                let tag = id.trim().strip_prefix('<')?.split('.').next()?.to_string();
                loadgen::parse_message_id(&tag, id).map(|(n, size)| (tag, n, size))
            });
            let Some((tag, n, size)) = parsed else {
                theirs += 1;
                continue;
            };
            let want = String::from_utf8(loadgen::expected_body(&tag, n, size)).unwrap().replace('\r', "");
            // The dump ends each message with a newline of its own.
            let ok = body.trim_end_matches('\n') == want.trim_end_matches('\n');
            let e = ours.entry((tag, n)).or_default();
            e.0 += 1;
            e.1 += u32::from(!ok);
        }
        (ours, theirs)
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nothing listens on port {port}");
}

fn start_server(queue: &str, queue_dir: &Path, port: u16, sink_port: u16) -> Child {
    // The server's log (a line per event, docs/mail.md "Logs") goes to a
    // file beside the queue, appended across rounds, not to the test output.
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(queue_dir.with_extension("log"))
        .expect("open the server log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab-mail"))
        .args(["serve", "--queue", queue, "--listen", &format!("127.0.0.1:{port}")])
        .arg("--queue-dir")
        .arg(queue_dir)
        .args(["--relay", &format!("127.0.0.1:{sink_port}")])
        .args(["--segment-mib", "4", "--retry-base-ms", "50", "--delivery-concurrency", "8"])
        .args(["--max-in-flight", &MAX_IN_FLIGHT.to_string()])
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("start iolab-mail serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("listening on"), "server did not start: {line:?}");
    child
}

struct Outcomes {
    acknowledged: Vec<(String, u64)>,
    unknown: u64,
}

fn crash_rounds(queue: &str, rounds: usize, seed: u64) {
    let (Some(smtp_sink), Some(smtp_source)) = (tool("smtp-sink"), tool("smtp-source")) else {
        assert!(
            std::env::var("CI").is_err(),
            "smtp-sink/smtp-source missing: `make deps` installs Debian's postfix package"
        );
        eprintln!("SKIPPED: smtp-sink/smtp-source not installed (make deps)");
        return;
    };
    iolab_mail::raise_nofile_limit();
    let tmp = tempfile::tempdir().unwrap();
    let sink_dir = tmp.path().join("sink");
    std::fs::create_dir(&sink_dir).unwrap();
    // smtp-sink drops to user postfix when started as root.
    std::fs::set_permissions(&sink_dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let sink = Sink::start(&smtp_sink, &sink_dir);
    let queue_dir = tmp.path().join("queue");
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = Outcomes { acknowledged: Vec::new(), unknown: 0 };
    let started = Instant::now();
    for round in 0..rounds {
        let mut server = start_server(queue, &queue_dir, port, sink.port);
        let mut source = Command::new(&smtp_source)
            .args(["-s", "10", "-m", "100000", "-l", "700", "-d"])
            .arg(format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start smtp-source");
        let tag = format!("crash{round}");
        let spec = LoadSpec {
            addr,
            sessions: 12,
            messages: u64::MAX,
            sizes: vec![(300, 2.0), (1024, 2.0), (6000, 1.0)],
            per_connection: 4,
            tag: tag.clone(),
            pause: Duration::ZERO,
            timeout: Duration::from_secs(10),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let client = {
            let stop = stop.clone();
            std::thread::spawn(move || loadgen::run_blocking(spec, stop).unwrap())
        };
        std::thread::sleep(Duration::from_millis(rng.gen_range(40..250)));
        server.kill().unwrap(); // SIGKILL
        server.wait().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let report = client.join().unwrap();
        let _ = source.kill();
        let _ = source.wait();
        for s in &report.sent {
            match s.outcome {
                Outcome::Accepted => out.acknowledged.push((tag.clone(), s.n)),
                Outcome::Unknown => out.unknown += 1,
                Outcome::Refused(_) => {}
            }
        }
    }
    // Restart once more and let it deliver everything.
    let mut server = start_server(queue, &queue_dir, port, sink.port);
    let deadline = Instant::now() + Duration::from_secs(60);
    let (census, theirs) = loop {
        let (census, theirs) = sink.census();
        let missing = out.acknowledged.iter().filter(|k| !census.contains_key(*k)).count();
        if missing == 0 || Instant::now() > deadline {
            break (census, theirs);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // SAFETY: sending SIGTERM to our own child.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let status = server.wait().unwrap();
    let lost: Vec<_> = out.acknowledged.iter().filter(|k| !census.contains_key(*k)).collect();
    let corrupted: u32 = census.values().map(|c| c.1).sum();
    let extra: u64 = census.values().map(|c| u64::from(c.0 - 1)).sum();
    let unacked_delivered = (census.len() as u64).saturating_sub(out.acknowledged.len() as u64);
    eprintln!(
        "crash test ({queue}): {rounds} SIGKILL rounds in {:.1} s; {} messages got 250, {} lost, {} corrupted, \
         {} duplicate copies (bound {} = rounds x max_in_flight), {} ended without a reply of which {} were \
         delivered anyway; {} smtp-source messages at the sink",
        started.elapsed().as_secs_f64(),
        out.acknowledged.len(),
        lost.len(),
        corrupted,
        extra,
        rounds * MAX_IN_FLIGHT,
        out.unknown,
        unacked_delivered,
        theirs,
    );
    assert!(status.success(), "server did not drain cleanly after SIGTERM: {status:?}");
    assert!(out.acknowledged.len() > rounds * 10, "too little load to mean anything: {}", out.acknowledged.len());
    assert!(lost.is_empty(), "{} acknowledged messages never reached the sink, e.g. {:?}", lost.len(), &lost[..lost.len().min(5)]);
    assert_eq!(corrupted, 0, "corrupted copies at the sink");
    assert!(extra <= (rounds * MAX_IN_FLIGHT) as u64, "{extra} duplicates exceed the documented bound");
}

#[test]
fn fastqueue_server_loses_no_acknowledged_message_over_50_sigkills() {
    crash_rounds("fastqueue", 50, 11);
}

#[test]
fn filedir_server_loses_no_acknowledged_message_over_10_sigkills() {
    crash_rounds("filedir", 10, 12);
}
