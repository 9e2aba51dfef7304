//! [`FilePerMessageQueue`]: the traditional disk queue the paper starts
//! from, as qmail and Postfix store mail: one file per message in hashed
//! directories. Enqueue writes a temporary file, `fsync`s it, renames it
//! into place and `fsync`s the directory; ack deletes the file.

use std::collections::{HashMap, VecDeque};
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::batch::MessageBatch;
use crate::error::{Error, Result};
use crate::clock::{Clock, SystemClock};
use crate::message::Message;
use crate::queue::{MessageInfo, MessageState};
use crate::QueueKind;

/// Hashed directories under `msg/` by default (qmail's `conf-split` is
/// 23; the FastQueue paper's FSmail used 10, see
/// [`FilePerMessageQueue::open_split`]).
const SPLIT: u64 = 64;

/// One file per message, with the same calls as [`crate::FastQueue`].
pub struct FilePerMessageQueue {
    root: PathBuf,
    split: u64,
    next_id: AtomicU64,
    state: Mutex<State>,
    _lock: File,
}

#[derive(Default)]
struct State {
    ready: VecDeque<u64>,
    attempts: HashMap<u64, u32>,
}

fn io<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |e| Error::io(path, op, e)
}

fn sync_dir(path: &Path) -> Result<()> {
    File::open(path).and_then(|d| d.sync_all()).map_err(io(path, "fsync"))
}

impl FilePerMessageQueue {
    /// Opens (or creates) the queue in `dir`, finding the stored messages.
    pub fn open(dir: impl AsRef<Path>) -> Result<FilePerMessageQueue> {
        FilePerMessageQueue::open_split(dir, SPLIT)
    }

    /// Opens the queue with `split` hashed directories (open a queue with
    /// the same `split` each time: a message is looked for in directory
    /// `id % split`).
    pub fn open_split(dir: impl AsRef<Path>, split: u64) -> Result<FilePerMessageQueue> {
        if split == 0 || split > 256 {
            return Err(Error::invalid("split", "must be between 1 and 256"));
        }
        let root = dir.as_ref().to_path_buf();
        let tmp = root.join("tmp");
        fs::create_dir_all(&tmp).map_err(io(&root, "create"))?;
        let lock = File::create(root.join("LOCK")).map_err(io(&root, "create LOCK"))?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(Error::Locked { path: root });
        }
        for entry in fs::read_dir(&tmp).map_err(io(&tmp, "list"))? {
            let path = entry.map_err(io(&tmp, "list"))?.path();
            fs::remove_file(&path).map_err(io(&path, "remove"))?;
        }
        let mut ids = Vec::new();
        for h in 0..split {
            let sub = root.join("msg").join(format!("{h:02x}"));
            if !sub.is_dir() {
                fs::create_dir_all(&sub).map_err(io(&sub, "create"))?;
                continue;
            }
            for entry in fs::read_dir(&sub).map_err(io(&sub, "list"))? {
                let name = entry.map_err(io(&sub, "list"))?.file_name();
                if let Some(id) = name.to_str().and_then(|n| u64::from_str_radix(n, 16).ok()) {
                    ids.push(id);
                }
            }
        }
        sync_dir(&root.join("msg"))?;
        sync_dir(&root)?;
        ids.sort_unstable();
        let next = ids.last().map_or(1, |m| m + 1);
        Ok(FilePerMessageQueue {
            root,
            split,
            next_id: AtomicU64::new(next),
            state: Mutex::new(State { ready: ids.into(), attempts: HashMap::new() }),
            _lock: lock,
        })
    }

    fn path_of(&self, id: u64) -> PathBuf {
        self.root.join("msg").join(format!("{:02x}", id % self.split)).join(format!("{id:016x}"))
    }

    /// Stores `payload` durably and returns its id.
    pub fn enqueue(&self, payload: &[u8]) -> Result<u64> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let tmp = self.root.join("tmp").join(format!("{id:016x}"));
        let mut f = File::create(&tmp).map_err(io(&tmp, "create"))?;
        f.write_all(payload).map_err(io(&tmp, "write"))?;
        f.sync_all().map_err(io(&tmp, "fsync"))?;
        drop(f);
        let dest = self.path_of(id);
        fs::rename(&tmp, &dest).map_err(io(&dest, "rename"))?;
        sync_dir(dest.parent().unwrap())?;
        self.state.lock().unwrap().ready.push_back(id);
        Ok(id)
    }

    /// Takes the oldest message, if any.
    pub fn dequeue(&self) -> Result<Option<Message>> {
        Ok(self.dequeue_batch(1)?.pop())
    }

    /// Takes the ids of up to `max` ready messages, oldest first, with
    /// their delivery attempts so far.
    fn take_ready(&self, max: usize) -> Vec<(u64, u32)> {
        let mut st = self.state.lock().unwrap();
        let n = max.min(st.ready.len());
        let ids: Vec<u64> = st.ready.drain(..n).collect();
        ids.into_iter().map(|id| (id, st.attempts.get(&id).copied().unwrap_or(0))).collect()
    }

    /// Takes up to `max` messages in arrival order (one file read each).
    pub fn dequeue_batch(&self, max: usize) -> Result<Vec<Message>> {
        let taken = self.take_ready(max);
        let mut out = Vec::with_capacity(taken.len());
        for (id, attempts) in taken {
            let path = self.path_of(id);
            let payload = fs::read(&path).map_err(io(&path, "read"))?;
            out.push(Message { id, payload, attempts, kind: QueueKind::Main, enqueued_ns: SystemClock.now_ns() });
        }
        Ok(out)
    }

    /// [`FilePerMessageQueue::dequeue_batch`] into a batch whose buffer is
    /// reused from call to call (what [`crate::FastQueue::dequeue_batch_into`]
    /// does), so that a comparison of the two gives both the same memory
    /// reuse: each file is opened, read straight into the batch's buffer
    /// and closed. Returns how many messages it took; on error the batch is
    /// left empty.
    pub fn dequeue_batch_into(&self, max: usize, batch: &mut MessageBatch) -> Result<usize> {
        batch.clear();
        let taken = self.take_ready(max);
        for (id, attempts) in taken {
            let path = self.path_of(id);
            if let Err(e) = read_file_into(&path, batch, id, attempts) {
                batch.clear();
                return Err(e);
            }
        }
        Ok(batch.len())
    }

    /// Deletes a delivered message's file.
    pub fn ack(&self, id: u64) -> Result<()> {
        let path = self.path_of(id);
        fs::remove_file(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::UnknownId { id },
            _ => Error::io(&path, "remove", e),
        })?;
        self.state.lock().unwrap().attempts.remove(&id);
        Ok(())
    }

    /// Gives a delivered message back for another attempt (the count is
    /// kept in memory only).
    pub fn nack(&self, id: u64) -> Result<()> {
        if !self.path_of(id).exists() {
            return Err(Error::UnknownId { id });
        }
        let mut st = self.state.lock().unwrap();
        *st.attempts.entry(id).or_default() += 1;
        st.ready.push_back(id);
        Ok(())
    }

    /// Every stored message, without taking any (what
    /// [`crate::FastQueue::browse`] gives): one directory listing and one
    /// `stat` per file. A message is `Ready` while it waits in the list,
    /// `InFlight` once taken (the baseline has no delayed state: its
    /// callers keep their own). The time is the file's modification time.
    /// Ordered by id; a file deleted during the listing is left out.
    pub fn browse(&self) -> Result<Vec<MessageInfo>> {
        let mut ids = Vec::new();
        for h in 0..self.split {
            let sub = self.root.join("msg").join(format!("{h:02x}"));
            let entries = match fs::read_dir(&sub) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&sub, "list", e)),
            };
            for entry in entries {
                let name = entry.map_err(io(&sub, "list"))?.file_name();
                if let Some(id) = name.to_str().and_then(|n| u64::from_str_radix(n, 16).ok()) {
                    ids.push(id);
                }
            }
        }
        ids.sort_unstable();
        let (ready, attempts): (std::collections::HashSet<u64>, HashMap<u64, u32>) = {
            let st = self.state.lock().unwrap();
            (st.ready.iter().copied().collect(), st.attempts.clone())
        };
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let Ok(meta) = fs::metadata(self.path_of(id)) else { continue };
            let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            out.push(MessageInfo {
                id,
                size: meta.len().min(u32::MAX as u64) as u32,
                attempts: attempts.get(&id).copied().unwrap_or(0),
                kind: QueueKind::Main,
                state: if ready.contains(&id) { MessageState::Ready } else { MessageState::InFlight },
                enqueued_ns: mtime.map_or(0, |d| d.as_nanos() as u64),
                not_before_ns: 0,
            });
        }
        Ok(out)
    }

    /// Reads a stored message without taking it ([`Error::UnknownId`] if
    /// its file is gone).
    pub fn peek(&self, id: u64) -> Result<Vec<u8>> {
        let path = self.path_of(id);
        fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::UnknownId { id },
            _ => Error::io(&path, "read", e),
        })
    }

    /// Deletes messages in any state, as an administrator does
    /// (`postsuper -d`): each leaves the ready list and its file is
    /// unlinked, without a directory `fsync`, as an acknowledgement is (and
    /// as Postfix deletes queue files). A message taken meanwhile is
    /// deleted all the same; its consumer's `ack` or `nack` then gets
    /// [`Error::UnknownId`]. Refused, deleting none, if one id has no file.
    pub fn delete(&self, ids: &[u64]) -> Result<()> {
        if let Some(&id) = ids.iter().find(|&&id| !self.path_of(id).exists()) {
            return Err(Error::UnknownId { id });
        }
        {
            let mut st = self.state.lock().unwrap();
            st.ready.retain(|id| !ids.contains(id));
            for id in ids {
                st.attempts.remove(id);
            }
        }
        for &id in ids {
            let path = self.path_of(id);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&path, "remove", e)),
            }
        }
        Ok(())
    }

    /// Replaces a stored message's payload, keeping its id and place in
    /// the list: a new file written and `fsync`ed, exchanged with the old
    /// one (`renameat2(RENAME_EXCHANGE)`: a plain rename would bring back a
    /// file deleted meanwhile), the directory `fsync`ed, the old file
    /// unlinked. A crash leaves the old payload or the new one, never a
    /// mix. [`Error::UnknownId`] if there is no such message.
    pub fn replace(&self, id: u64, payload: &[u8]) -> Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let dest = self.path_of(id);
        let tmp = self.root.join("tmp").join(format!("{id:016x}.new"));
        let mut f = File::create(&tmp).map_err(io(&tmp, "create"))?;
        f.write_all(payload).map_err(io(&tmp, "write"))?;
        f.sync_all().map_err(io(&tmp, "fsync"))?;
        drop(f);
        let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).expect("queue paths hold no NUL");
        let (from, to) = (c(&tmp), c(&dest));
        // SAFETY: two NUL-terminated paths that outlive the call.
        let r = unsafe { libc::renameat2(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::RENAME_EXCHANGE) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            let _ = fs::remove_file(&tmp);
            return Err(match e.kind() {
                std::io::ErrorKind::NotFound => Error::UnknownId { id },
                _ => Error::io(&dest, "exchange", e),
            });
        }
        sync_dir(dest.parent().unwrap())?;
        fs::remove_file(&tmp).map_err(io(&tmp, "remove"))
    }

    /// Messages waiting for delivery.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap().ready.len()
    }

    /// Whether no message waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Reads the whole file at `path` into `batch` as one message: its size
/// from `fstat` (as `std::fs::read` does), then reads until the end of the
/// file (a file that grew meanwhile is read to its new end).
fn read_file_into(path: &Path, batch: &mut MessageBatch, id: u64, attempts: u32) -> Result<()> {
    use std::io::Read;
    let mut f = File::open(path).map_err(io(path, "read"))?;
    let size = f.metadata().map_err(io(path, "read"))?.len() as usize;
    let start = batch.used();
    let mut len = 0;
    loop {
        // Room for the expected size, or 4 KiB more once past it; one
        // extra read call sees the end of the file.
        let want = if len < size { size - len } else { 4096 };
        let (at, dst) = batch.reserve(want);
        match f.read(dst) {
            Ok(0) => {
                batch.truncate_to(at);
                break;
            }
            Ok(n) => {
                batch.truncate_to(at + n);
                len += n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => batch.truncate_to(at),
            Err(e) => return Err(Error::io(path, "read", e)),
        }
    }
    batch.push(id, attempts, QueueKind::Main, SystemClock.now_ns(), start, len);
    Ok(())
}
