//! [`MailServer`]: opens the queues, listens, runs sessions and delivery on
//! a tokio runtime of its own thread, and drains on [`MailServer::shutdown`]
//! (what `SIGTERM` triggers): no new connections; sessions between
//! transactions get `421`; a transaction under way may finish (up to
//! `drain_timeout`); messages already taken for delivery are delivered and
//! acknowledged; then the queues are closed. Whatever is still queued
//! stays on disk for the next start.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{watch, Notify};

use crate::config::{Delivery, QueueChoice, ServerConfig};
use crate::error::{MailError, Result};
use crate::commit::Committer;
use crate::shared::Shared;
use crate::spool::MemoryBudget;
use crate::stats::{Stats, StatsSnapshot};
use crate::store::{self, MailQueue, QueueIo};

/// The file every FastQueue directory holds (crates/fastqueue/src/manifest.rs).
const FASTQUEUE_MANIFEST: &str = "MANIFEST";

/// Listen backlog: many clients connect at once (the paper's 5,000 users);
/// the kernel caps it at `net.core.somaxconn`.
const BACKLOG: u32 = 4096;

#[derive(Default)]
struct Finish {
    done: Mutex<Option<std::result::Result<(), String>>>,
    cv: Condvar,
}

/// A running server.
pub struct MailServer {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    finish: Arc<Finish>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Raises the soft open-files limit to the hard one: each session is a
/// descriptor, and the paper's load is 5,000 users.
pub fn raise_nofile_limit() -> u64 {
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 0;
        }
        if r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur as u64
    }
}

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

impl MailServer {
    /// Opens the queues (recovering what a crash left), binds the port and
    /// starts serving. Errors here (bad setting, port in use, queue locked)
    /// come back before anything runs.
    pub fn start(cfg: ServerConfig) -> Result<MailServer> {
        cfg.validate()?;
        check_paths(&cfg)?;
        raise_nofile_limit();
        let queue: Arc<dyn MailQueue> = store::open(&cfg, &cfg.queue_dir.join("main"), true)?.into();
        let dead: Arc<dyn MailQueue> = store::open(&cfg, &cfg.queue_dir.join("dead"), false)?.into();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("iolab-mail")
            // With the file-per-message queue every session waiting for its
            // commit holds a blocking thread (its enqueue blocks on fsync).
            .max_blocking_threads(1024)
            .build()
            .map_err(|e| MailError::io("start the runtime", e))?;
        let listener = rt
            .block_on(async { bind(cfg.listen) })
            .map_err(|e| MailError::io(format!("listen on {}", cfg.listen), e))?;
        let local_addr = listener.local_addr().map_err(|e| MailError::io("listen", e))?;
        let committer = match queue.group_commit() {
            Some(fq) => Some(Committer::start(fq).map_err(|e| MailError::io("spawn the committer threads", e))?),
            None => None,
        };
        // Last of the checks that can fail: the socket is removed again
        // if the server does not start.
        let (control_std, control) = crate::control::bind(&cfg.queue_dir)?;
        let control_listener = match rt.block_on(async { tokio::net::UnixListener::from_std(control_std) }) {
            Ok(l) => l,
            Err(e) => {
                control.remove();
                return Err(MailError::io("control socket", e));
            }
        };
        let spool_dir = cfg.queue_dir.join("spool");
        let memory = MemoryBudget::new(cfg.message_memory);
        tracing::info!(target: "master", "daemon started -- listening on {local_addr}, {}", describe(&cfg));
        let operator = Arc::default();
        let shared =
            Arc::new(Shared { cfg, queue, dead, stats: Arc::new(Stats::default()), committer, memory, spool_dir, operator });
        let (stop, stop_rx) = watch::channel(false);
        let finish = Arc::new(Finish::default());
        let (sh, fin) = (shared.clone(), finish.clone());
        let control = Arc::new(control);
        let ctl = control.clone();
        let thread = std::thread::Builder::new()
            .name("iolab-mail-main".into())
            .spawn(move || {
                let result = rt.block_on(serve(sh.clone(), listener, control_listener, stop_rx));
                ctl.remove();
                rt.shutdown_timeout(Duration::from_secs(5));
                let closed = sh.queue.close().and(sh.dead.close()).map_err(|e| e.to_string());
                *fin.done.lock().unwrap() = Some(result.and(closed));
                fin.cv.notify_all();
            })
            .map_err(|e| {
                control.remove();
                MailError::io("spawn the server thread", e)
            })?;
        Ok(MailServer { shared, local_addr, stop, finish, thread: Mutex::new(Some(thread)) })
    }

    /// The address the server listens on (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Starts the drain described in the module documentation.
    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
    }

    /// Waits until the server has stopped, at most `timeout` (forever with
    /// `None`); true once it has.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut done = self.finish.done.lock().unwrap();
        while done.is_none() {
            match deadline {
                None => done = self.finish.cv.wait(done).unwrap(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    done = self.finish.cv.wait_timeout(done, d - now).unwrap().0;
                }
            }
        }
        true
    }

    /// Waits for the end and returns how it ended.
    pub fn join(&self) -> Result<StatsSnapshot> {
        self.wait(None);
        if let Some(t) = self.thread.lock().unwrap().take() {
            let _ = t.join();
        }
        let result = self.finish.done.lock().unwrap().clone().unwrap_or(Ok(()));
        result.map_err(MailError::Config)?;
        Ok(self.stats())
    }

    /// Counters now.
    pub fn stats(&self) -> StatsSnapshot {
        let sh = &self.shared;
        // After close the queue still answers from memory.
        let (queued, io): (u64, QueueIo) = (sh.queue.len() as u64, sh.queue.io());
        sh.stats.snapshot(queued, io)
    }
}

impl Drop for MailServer {
    fn drop(&mut self) {
        self.shutdown();
        if let Some(t) = self.thread.lock().unwrap().take() {
            let _ = t.join();
        }
    }
}

/// Sessions open per client address (the per-client limit).
type PerClient = Arc<std::sync::Mutex<HashMap<IpAddr, usize>>>;

/// Decrements the open-session counts when a session ends.
struct SessionGuard(Arc<Shared>, Arc<Notify>, PerClient, IpAddr);

impl Drop for SessionGuard {
    fn drop(&mut self) {
        {
            let mut per = self.2.lock().unwrap();
            if let Some(n) = per.get_mut(&self.3) {
                *n -= 1;
                if *n == 0 {
                    per.remove(&self.3);
                }
            }
        }
        self.0.stats.sessions_open.fetch_sub(1, Ordering::AcqRel);
        self.1.notify_waiters();
    }
}

/// Who may relay, for the start line.
fn describe(cfg: &ServerConfig) -> String {
    match &cfg.delivery {
        Delivery::Maildir(root) => {
            let mut local = vec![cfg.hostname.clone(), "localhost".into()];
            local.extend(cfg.local_domains.iter().cloned());
            format!("delivering to Maildir {} for domains {}", root.display(), local.join(", "))
        }
        Delivery::Relay(next) => {
            let nets: Vec<String> = cfg.mynetworks.iter().map(|n| n.to_string()).collect();
            let domains = if cfg.relay_domains.is_empty() { "none".to_string() } else { cfg.relay_domains.join(", ") };
            format!(
                "relaying to {next} for clients in {} and, from anyone, to domains: {domains}{}",
                nets.join(", "),
                if cfg.open_relay { " (OPEN RELAY: --open-relay)" } else { "" }
            )
        }
    }
}

/// Checks at start what `validate` cannot see without the file system:
/// that the Maildir root is a directory we can write in (not a regular
/// file, not under /proc or /sys: mail would be answered 250 and then
/// retried forever), and that the queue directory does not hold the other
/// kind of queue (its mail would be stranded silently). Makes the queue's
/// spool directory and empties it.
fn check_paths(cfg: &ServerConfig) -> Result<()> {
    let conf = |m: String| MailError::Config(m);
    let main = cfg.queue_dir.join("main");
    let holds_fastqueue = main.join(FASTQUEUE_MANIFEST).exists();
    let holds_filedir = main.join("msg").is_dir();
    match cfg.queue {
        QueueChoice::FileDir if holds_fastqueue => {
            return Err(conf(format!(
                "queue {}: holds a FastQueue queue; --queue filedir would leave its mail undelivered (use --queue fastqueue)",
                main.display()
            )))
        }
        QueueChoice::Fast if holds_filedir => {
            return Err(conf(format!(
                "queue {}: holds a file-per-message queue; --queue fastqueue would leave its mail undelivered (use --queue filedir)",
                main.display()
            )))
        }
        _ => {}
    }
    std::fs::create_dir_all(&cfg.queue_dir).map_err(|e| MailError::io(format!("queue {}", cfg.queue_dir.display()), e))?;
    let spool = cfg.queue_dir.join("spool");
    std::fs::create_dir_all(&spool).map_err(|e| MailError::io(format!("spool {}", spool.display()), e))?;
    if let Ok(entries) = std::fs::read_dir(&spool) {
        for e in entries.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
    if let Delivery::Maildir(root) = &cfg.delivery {
        check_maildir(root).map_err(|why| conf(format!("maildir {}: {why}", root.display())))?;
    }
    Ok(())
}

fn check_maildir(root: &Path) -> std::result::Result<(), String> {
    let abs = std::path::absolute(root).map_err(|e| e.to_string())?;
    for pseudo in ["/proc", "/sys", "/dev"] {
        if abs.starts_with(pseudo) {
            return Err(format!("is under {pseudo}, which holds no files for mail"));
        }
    }
    if abs.exists() && !abs.is_dir() {
        return Err("exists and is not a directory".into());
    }
    // Make the missing directories one by one, each made durable (fsync
    // of its parent), as Maildir folders are.
    let missing: Vec<&Path> = abs.ancestors().take_while(|p| !p.exists()).collect();
    for dir in missing.into_iter().rev() {
        crate::maildir::make_dir_durable(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    }
    let probe = abs.join(format!(".iolab-mail-probe-{}", std::process::id()));
    let written = std::fs::File::create(&probe).and_then(|f| f.sync_all());
    let _ = std::fs::remove_file(&probe);
    written.map_err(|e| format!("cannot write there: {e}"))
}

async fn serve(
    sh: Arc<Shared>,
    listener: TcpListener,
    control: tokio::net::UnixListener,
    mut stop: watch::Receiver<bool>,
) -> std::result::Result<(), String> {
    // Delivery stops after the sessions are drained, not at once.
    let (delivery_stop, delivery_rx) = watch::channel(false);
    let delivery = tokio::spawn(crate::deliver::run(sh.clone(), delivery_rx));
    // The queue commands' socket stops taking clients with the listener.
    tokio::spawn(crate::control::serve(sh.clone(), control, stop.clone()));
    let ended = Arc::new(Notify::new());
    let per_client: PerClient = Arc::default();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and the like: back off instead of spinning.
                tracing::warn!(target: "master", "accept: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        Stats::add(&sh.stats.sessions, 1);
        let open = sh.stats.sessions_open.fetch_add(1, Ordering::AcqRel) + 1;
        let ip = peer.ip();
        let from_client = {
            let mut per = per_client.lock().unwrap();
            let n = per.entry(ip).or_insert(0);
            *n += 1;
            *n
        };
        let guard = SessionGuard(sh.clone(), ended.clone(), per_client.clone(), ip);
        let refusal: Option<&'static [u8]> = if open as usize > sh.cfg.max_connections {
            Stats::add(&sh.stats.refused_connections, 1);
            Some(b"421 4.7.0 Error: too many connections\r\n")
        } else if from_client > sh.cfg.max_connections_per_client && !sh.cfg.in_mynetworks(ip) {
            // Postfix's smtpd_client_connection_count_limit (mynetworks
            // exempt, as its smtpd_client_event_limit_exceptions).
            Stats::add(&sh.stats.refused_client_connections, 1);
            tracing::warn!(
                target: "smtpd",
                "warning: Connection concurrency limit exceeded: {} from unknown[{ip}] for service smtp",
                from_client
            );
            Some(b"421 4.7.0 Error: too many connections from your address\r\n")
        } else {
            None
        };
        if let Some(line) = refusal {
            tokio::spawn(async move {
                let _guard = guard;
                let mut stream = stream;
                let _ = tokio::io::AsyncWriteExt::write_all(&mut stream, line).await;
            });
            continue;
        }
        let (sh2, stop2) = (sh.clone(), stop.clone());
        tokio::spawn(async move {
            let _guard = guard;
            crate::session::run(stream, peer, sh2, stop2).await;
        });
    }
    drop(listener);
    // Drain: sessions finish their transaction, up to drain_timeout.
    let deadline = tokio::time::Instant::now() + sh.cfg.drain_timeout;
    while sh.stats.sessions_open.load(Ordering::Acquire) > 0 {
        let wait = ended.notified();
        if sh.stats.sessions_open.load(Ordering::Acquire) == 0 {
            break;
        }
        if tokio::time::timeout_at(deadline, wait).await.is_err() {
            tracing::warn!(
                target: "master",
                "drain timeout: cutting {} session(s)",
                sh.stats.sessions_open.load(Ordering::Acquire)
            );
            break;
        }
    }
    let _ = delivery_stop.send(true);
    delivery.await.map_err(|e| format!("delivery: {e}"))
}
