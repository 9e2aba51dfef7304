//! The control socket: how `iolab mail queue ...` reaches a running server,
//! whose queues it holds locked. Postfix's `postqueue` talks to its master
//! and queue manager the same way, over local sockets in its queue
//! directory (`public/pickup`, `public/qmgr`, `public/showq`).
//!
//! `QUEUE_DIR/control`, a Unix stream socket, mode 0600, owned by the
//! server's user; only that user and root are served (`SO_PEERCRED`,
//! besides the mode). The server refuses to start when the path exists
//! and is not a socket, or is one another process answers on; a socket
//! left by a server that was killed is replaced. It is made in a private
//! directory (mode 0700) and renamed into place, so that it is never
//! reachable with the mode `bind` gives it.
//!
//! Protocol: per connection one request, a JSON object on one line
//! ([`Request`]), and an answer of JSON lines ([`Line`]): records listed or
//! shown, then `done` or `error`; then the server closes. Every client is
//! bounded, so that none can hold anything the SMTP side or delivery
//! needs: at most [`MAX_CLIENTS`] at once (more get a `busy` error and are
//! closed at once), a request of at most [`MAX_REQUEST`] bytes within
//! [`REQUEST_TIMEOUT`], each answer line written within [`WRITE_TIMEOUT`]
//! (a client that stops reading is dropped, and the operation feeding it
//! stops), the whole exchange within [`CLIENT_DEADLINE`]. The operations
//! run on blocking threads through the queues' own calls, which take each
//! queue's lock briefly, as the server's own calls do; operations that
//! change the queue run one at a time.
//!
//! When no server answers (no socket, or a stale one), [`queue_command`]
//! opens the queues itself and says so.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream as StdStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, watch, Semaphore};
use tracing::warn;

use crate::admin::{no_queue, Client, Line, Queues, Request};
use crate::error::{MailError, Result};
use crate::operator::Operator;
use crate::shared::Shared;
use crate::store;

/// The socket's name in the queue directory.
pub const SOCKET: &str = "control";
/// Clients served at once.
pub const MAX_CLIENTS: usize = 8;
/// Longest request line.
pub const MAX_REQUEST: usize = 64 << 10;
/// Time to send the request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Time to take one line of the answer.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for a whole exchange.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(600);
/// Longest answer line the command reads (a shown message, base64).
const MAX_ANSWER_LINE: u64 = 64 << 20;
/// How long the command waits for the next answer line.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `f` with a path to `path` that fits in a socket address (108
/// bytes): `path` itself, or, when the queue directory's path is too
/// long, its name under `/proc/self/fd/N`, N an `O_PATH` descriptor of
/// the directory (Linux resolves it as the directory).
fn with_short_path<T>(path: &Path, f: impl FnOnce(&Path) -> std::io::Result<T>) -> std::io::Result<T> {
    if path.as_os_str().len() < 100 {
        return f(path);
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return f(path) };
    let d = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH | libc::O_DIRECTORY).open(dir)?;
    let short = PathBuf::from(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&d))).join(name);
    f(&short)
}

fn connect(path: &Path) -> std::io::Result<StdStream> {
    with_short_path(path, |p| StdStream::connect(p))
}

/// The socket a server made, to remove when it stops.
pub(crate) struct Bound {
    path: PathBuf,
    dev_ino: (u64, u64),
}

impl Bound {
    /// Removes the socket if it is still the one this server made.
    pub(crate) fn remove(&self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if (m.dev(), m.ino()) == self.dev_ino {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Makes the control socket of `queue_dir` (see the module documentation).
pub(crate) fn bind(queue_dir: &Path) -> Result<(std::os::unix::net::UnixListener, Bound)> {
    let path = queue_dir.join(SOCKET);
    let conf = |why: String| MailError::Config(format!("control socket {}: {why}", path.display()));
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(conf(e.to_string())),
        Ok(m) if m.file_type().is_socket() => match connect(&path) {
            // Left by a server that did not stop cleanly (SIGKILL).
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                std::fs::remove_file(&path).map_err(|e| conf(format!("cannot remove the stale socket: {e}")))?
            }
            Ok(_) => return Err(conf("another process answers on it".into())),
            Err(e) => return Err(conf(e.to_string())),
        },
        Ok(_) => return Err(conf("exists and is not a socket (remove it if nothing needs it)".into())),
    }
    // Private directories a server killed at this step left behind.
    if let Ok(entries) = std::fs::read_dir(queue_dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".control-") && name.ends_with(".tmp") && e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_file(e.path().join(SOCKET));
                let _ = std::fs::remove_dir(e.path());
            }
        }
    }
    let tmp = queue_dir.join(format!(".control-{}.tmp", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&tmp).map_err(|e| conf(format!("make {}: {e}", tmp.display())))?;
    let inner = tmp.join(SOCKET);
    let made = (|| {
        let listener = with_short_path(&inner, |p| std::os::unix::net::UnixListener::bind(p))?;
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o600))?;
        rename_noreplace(&inner, &path)?;
        Ok::<_, std::io::Error>(listener)
    })();
    let _ = std::fs::remove_file(&inner);
    let _ = std::fs::remove_dir(&tmp);
    let listener = made.map_err(|e| conf(e.to_string()))?;
    let m = std::fs::symlink_metadata(&path).map_err(|e| conf(e.to_string()))?;
    listener.set_nonblocking(true).map_err(|e| conf(e.to_string()))?;
    Ok((listener, Bound { path, dev_ino: (m.dev(), m.ino()) }))
}

/// `rename`, failing if `to` exists (something made it since we looked:
/// it is not ours to replace).
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| std::io::ErrorKind::InvalidInput);
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: two NUL-terminated paths that outlive the call.
    let r = unsafe { libc::renameat2(libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), libc::RENAME_NOREPLACE) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn line_bytes(line: &Line) -> Vec<u8> {
    let mut v = serde_json::to_vec(line).expect("answer lines serialise");
    v.push(b'\n');
    v
}

/// Serves the control socket until `stop` is set.
pub(crate) async fn serve(sh: Arc<Shared>, listener: UnixListener, mut stop: watch::Receiver<bool>) {
    let clients = Arc::new(Semaphore::new(MAX_CLIENTS));
    let changing = Arc::new(tokio::sync::Mutex::new(()));
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.changed() => break,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                // EMFILE and the like: back off instead of spinning.
                warn!(target: "master", "control: accept: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let Ok(permit) = clients.clone().try_acquire_owned() else {
            // No task, no wait: one try to say so, then closed.
            let busy = Line::Error(format!("busy: {MAX_CLIENTS} queue commands are running; try again"));
            let _ = stream.try_write(&line_bytes(&busy));
            continue;
        };
        let (sh, changing) = (sh.clone(), changing.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let _ = tokio::time::timeout(CLIENT_DEADLINE, client(sh, stream, changing)).await;
        });
    }
}

/// Refuses a client: the error line, then what it still sends is read and
/// dropped (at most 1 MiB, for at most a second) before the socket is
/// closed, since closing a Unix socket with unread input resets it and
/// the client would lose the line that says why.
async fn refuse(stream: &mut UnixStream, why: String) {
    if send(stream, &Line::Error(why)).await {
        let _ = stream.shutdown().await;
        let drain = async {
            let mut left = 1usize << 20;
            let mut chunk = [0u8; 8192];
            while left > 0 {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => left = left.saturating_sub(n),
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    }
}

/// Writes one line within [`WRITE_TIMEOUT`]; false if the client did not
/// take it.
async fn send(stream: &mut UnixStream, line: &Line) -> bool {
    matches!(tokio::time::timeout(WRITE_TIMEOUT, stream.write_all(&line_bytes(line))).await, Ok(Ok(())))
}

/// Reads the request line: at most [`MAX_REQUEST`] bytes up to a newline
/// or the end of the client's writing.
async fn read_request(stream: &mut UnixStream) -> std::result::Result<Request, String> {
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(nl) = buf.iter().position(|&b| b == b'\n') {
            buf.truncate(nl);
            break;
        }
        if buf.len() > MAX_REQUEST {
            return Err(format!("request longer than {MAX_REQUEST} bytes"));
        }
        match stream.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    if buf.len() > MAX_REQUEST {
        return Err(format!("request longer than {MAX_REQUEST} bytes"));
    }
    serde_json::from_slice(&buf).map_err(|e| format!("not a request: {e}"))
}

async fn client(sh: Arc<Shared>, mut stream: UnixStream, changing: Arc<tokio::sync::Mutex<()>>) {
    let (uid, pid) = match stream.peer_cred() {
        Ok(c) => (c.uid(), c.pid().unwrap_or(0)),
        Err(_) => (u32::MAX, 0),
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if uid != me && uid != 0 {
        warn!(target: "master", "control: refused a client with uid={uid} pid={pid} (only uid={me} and root)");
        refuse(&mut stream, "permission denied: only the server's user and root".into()).await;
        return;
    }
    let req = match tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut stream)).await {
        Ok(Ok(r)) => r,
        Ok(Err(why)) => return refuse(&mut stream, why).await,
        Err(_) => return refuse(&mut stream, format!("no request within {} s", REQUEST_TIMEOUT.as_secs())).await,
    };
    // One change at a time; held by the operation itself (on its blocking
    // thread), so that a client dropped at its deadline does not let the
    // next change start while its own still runs.
    let guard = if req.changes() { Some(changing.lock_owned().await) } else { None };
    let (tx, mut rx) = mpsc::channel::<Line>(64);
    let who = Client { via: "server", uid, pid };
    let work = tokio::task::spawn_blocking(move || {
        let _guard = guard;
        let queues = Queues { main: &*sh.queue, dead: Some(&*sh.dead), queue_dir: &sh.cfg.queue_dir, operator: &sh.operator };
        queues.run(&req, &who, &mut |line| tx.blocking_send(line).is_ok());
    });
    while let Some(line) = rx.recv().await {
        if !send(&mut stream, &line).await {
            break;
        }
    }
    // A client that stopped reading: the operation sees the channel closed
    // at its next line and stops.
    drop(rx);
    let _ = work.await;
}

/// How a queue command reached the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// Through the running server's control socket.
    Server,
    /// The command opened the queue itself (no server running).
    Direct,
}

/// A queue command's answer.
#[derive(Debug)]
pub struct Answer {
    /// How it reached the queue.
    pub via: Via,
    /// The lines: records, then `done` or `error`.
    pub lines: Vec<Line>,
}

/// Runs a queue command on the queue in `queue_dir`: through the server
/// when one runs there, else on the queue opened here (and closed again).
pub fn queue_command(queue_dir: &Path, req: &Request) -> Result<Answer> {
    req.check().map_err(MailError::Config)?;
    if !queue_dir.join("main").is_dir() {
        return Err(no_queue(queue_dir));
    }
    let path = queue_dir.join(SOCKET);
    match connect(&path) {
        Ok(stream) => ask(stream, req).map(|lines| Answer { via: Via::Server, lines }),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused) => {
            direct(queue_dir, req).map(|lines| Answer { via: Via::Direct, lines })
        }
        Err(e) => Err(MailError::io(format!("control socket {}", path.display()), e)),
    }
}

fn ask(mut stream: StdStream, req: &Request) -> Result<Vec<Line>> {
    let io = |what: &str, e: std::io::Error| MailError::io(format!("control socket: {what}"), e);
    stream.set_write_timeout(Some(WRITE_TIMEOUT)).map_err(|e| io("set up", e))?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).map_err(|e| io("set up", e))?;
    let mut text = serde_json::to_vec(req).expect("requests serialise");
    text.push(b'\n');
    stream.write_all(&text).map_err(|e| io("send", e))?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut reader = BufReader::new(stream);
    let mut lines = Vec::new();
    loop {
        let mut buf = Vec::new();
        let n = (&mut reader).take(MAX_ANSWER_LINE).read_until(b'\n', &mut buf).map_err(|e| io("read", e))?;
        if n == 0 {
            lines.push(Line::Error("the server closed the connection before its answer ended".into()));
            return Ok(lines);
        }
        let line: Line = serde_json::from_slice(&buf).map_err(|e| MailError::Config(format!("control socket: bad answer: {e}")))?;
        let last = matches!(line, Line::Done(_) | Line::Error(_));
        lines.push(line);
        if last {
            return Ok(lines);
        }
    }
}

fn direct(queue_dir: &Path, req: &Request) -> Result<Vec<Line>> {
    let locked = |e: MailError| match e {
        MailError::Queue(fastqueue::Error::Locked { .. }) => MailError::Config(format!(
            "{}: the queue is locked by another process, but no server answers on {}/{SOCKET} \
             (a server that is starting or stopping, or one without a control socket): try again",
            queue_dir.display(),
            queue_dir.display()
        )),
        e => e,
    };
    let (_, main) = store::open_existing(&queue_dir.join("main")).map_err(locked)?.ok_or_else(|| no_queue(queue_dir))?;
    let dead = store::open_existing(&queue_dir.join("dead")).map_err(locked)?.map(|(_, q)| q);
    let operator = Operator::default();
    // SAFETY: getters that cannot fail.
    let who = Client { via: "direct", uid: unsafe { libc::geteuid() }, pid: std::process::id() as i32 };
    let queues = Queues { main: &*main, dead: dead.as_deref(), queue_dir, operator: &operator };
    let mut lines = Vec::new();
    queues.run(req, &who, &mut |line| {
        lines.push(line);
        true
    });
    let closed = main.close().and(dead.as_ref().map_or(Ok(()), |d| d.close()));
    closed?;
    Ok(lines)
}
