//! FastQueue: a durable disk message queue.
//!
//! Brief overview. A queue is a directory of preallocated segment files
//! (`format`). [`FastQueue::enqueue`] gathers the records of concurrent
//! producers into one write and one `fdatasync` (Lazy Gathering Write,
//! group commit) and returns once the message is durable. Consumers take
//! messages with [`FastQueue::dequeue_batch`], served from one large
//! read-ahead buffer (Sequential Grouping Prefetch), or without a copy with
//! [`FastQueue::dequeue_batch_mapped`] (payloads borrowed from the
//! segments' shared mappings, the segments pinned against recycling while
//! a [`MessageBatch`] holds them), and acknowledge them
//! with [`FastQueue::ack`] (a 1-byte delete-flag write) or give them back
//! with [`FastQueue::nack`] (retry queue, then dead-letter queue). The
//! Message Index Node table lives in memory and is rebuilt on open by a
//! scan that drops a torn tail and reports damage in the middle
//! ([`check`], [`repair`]). Segments whose records are all deleted are
//! recycled.
//!
//! All I/O goes through the [`Storage`] trait; [`sim::SimStorage`] is a
//! crashable implementation for tests. [`FilePerMessageQueue`] is the
//! traditional queue (one file per message) the paper compares with.
//!
//! ```
//! use fastqueue::{Config, FastQueue};
//! let dir = std::env::temp_dir().join(format!("fq-doc-{}", std::process::id()));
//! let cfg = Config { segment_size: 1 << 20, ..Config::default() };
//! let q = FastQueue::open(&dir, cfg).unwrap();
//! let id = q.enqueue(b"hello").unwrap(); // durable when this returns
//! let m = q.dequeue().unwrap().unwrap();
//! assert_eq!((m.id, &m.payload[..]), (id, &b"hello"[..]));
//! q.ack(m.id).unwrap();
//! # drop(q); std::fs::remove_dir_all(&dir).unwrap();
//! ```
#![deny(missing_docs)]

mod baseline;
mod batch;
#[cfg(feature = "bench")]
pub mod bench;
pub mod clock;
mod error;
pub mod format;
pub mod manifest;
mod message;
mod queue;
mod repair;
mod scan;
pub mod sim;
mod storage;
mod sync;

pub use baseline::FilePerMessageQueue;
pub use batch::{MessageBatch, MessageRef};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{Error, Result};
pub use format::QueueKind;
pub use queue::{
    Config, Durability, FastQueue, Message, MessageInfo, MessageState, Messages, OpenReport, RoundTicket, Stats, MAX_SPARE_SEGMENTS,
    MAX_VISIBILITY,
};
pub use repair::{CheckReport, RepairReport};
pub use scan::{Problem, ProblemKind, TornTail};
pub use storage::{read_full, DirStorage, FileMap, Storage, StorageFile};

use std::path::Path;

/// Reads the whole queue in `dir` and reports its state and every
/// problem, changing nothing: files are opened read-only and the lock is
/// taken shared, so it works on a read-only file system. Fails with
/// [`Error::Locked`] if the queue is open.
pub fn check(dir: &Path) -> Result<CheckReport> {
    let storage = locked(dir, true)?;
    repair::check(&storage)
}

/// Mends what [`check()`] reports, keeping every valid record (see
/// [`RepairReport`] and `repair_storage`). Run it only with the user's
/// consent: damaged bytes are moved aside into `quarantine-*.bin` files.
pub fn repair(dir: &Path) -> Result<RepairReport> {
    let storage = locked(dir, false)?;
    repair::repair(&storage)
}

/// [`check()`] on any storage (the queue must not be open on it).
pub fn check_storage(storage: &dyn Storage) -> Result<CheckReport> {
    repair::check(storage)
}

/// [`repair()`] on any storage (the queue must not be open on it).
pub fn repair_storage(storage: &dyn Storage) -> Result<RepairReport> {
    repair::repair(storage)
}

fn locked(dir: &Path, shared: bool) -> Result<DirStorage> {
    if dir.as_os_str().is_empty() {
        return Err(Error::invalid("path", "the queue directory is an empty path"));
    }
    if !dir.is_dir() {
        return Err(Error::io(
            dir,
            "open",
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such queue directory"),
        ));
    }
    let storage = DirStorage::new(dir).map_err(|e| Error::io(dir, "open", e))?;
    if storage.open_here() {
        return Err(Error::AlreadyOpen { path: dir.to_path_buf() });
    }
    let locked = if shared { storage.try_lock_shared() } else { storage.try_lock() };
    match locked {
        Ok(true) => Ok(storage),
        Ok(false) if storage.open_here() => Err(Error::AlreadyOpen { path: dir.to_path_buf() }),
        Ok(false) => Err(Error::Locked { path: dir.to_path_buf() }),
        Err(e) => Err(Error::io(dir.join("LOCK"), "lock", e)),
    }
}

/// The library version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
