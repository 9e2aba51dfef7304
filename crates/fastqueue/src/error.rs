//! The library's error type. Every message starts with "fastqueue: " and
//! names the queue directory or segment file, and the byte offset where
//! that matters, so the `iolab` command can print it as one line.

use std::path::PathBuf;

/// Errors of FastQueue and of the file-per-message baseline.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system call failed.
    #[error("fastqueue: {path}: {op}: {source}")]
    Io {
        /// File or directory concerned.
        path: PathBuf,
        /// What was being done ("write", "fdatasync", ...).
        op: &'static str,
        /// The system's error.
        source: std::io::Error,
    },
    /// Stored bytes fail their checks before the end of the log: a bad
    /// checksum, a bad header. Nothing is skipped silently; `check`
    /// reports it and `repair` can salvage around it.
    #[error("fastqueue: {segment}: offset {offset}: {reason}")]
    Corrupt {
        /// The segment file.
        segment: PathBuf,
        /// Byte offset of the damaged record (or header) in that file.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// Another process (or another open handle) holds the queue.
    #[error("fastqueue: {path}: queue is locked by another process (lock file {path}/LOCK)")]
    Locked {
        /// The queue directory.
        path: PathBuf,
    },
    /// The queue is already open in this process (another `FastQueue`
    /// holds it): share that one, or close it first.
    #[error("fastqueue: {path}: the queue is already open in this process; use that FastQueue (threads may share it), or close it (and drop the batches of dequeue_batch_mapped, which keep its lock) first")]
    AlreadyOpen {
        /// The queue directory.
        path: PathBuf,
    },
    /// `requeue_dead` of a message that is not a dead letter waiting in
    /// the dead-letter queue.
    #[error("fastqueue: message {id} is not a dead letter waiting in the dead-letter queue (not dead, or taken by dequeue_dead)")]
    NotDead {
        /// The id given.
        id: u64,
    },
    /// A configuration value is out of range.
    #[error("fastqueue: {field}: {message}")]
    Invalid {
        /// The parameter.
        field: &'static str,
        /// What was expected.
        message: String,
    },
    /// A payload does not fit in a segment.
    #[error("fastqueue: payload of {len} bytes is larger than the maximum {max} for this segment size")]
    TooLarge {
        /// Size asked for.
        len: usize,
        /// Largest payload a segment holds.
        max: usize,
    },
    /// `ack`/`nack` of an id that is not a live message of this queue.
    #[error("fastqueue: message {id} is not in the queue (already acknowledged, or never enqueued)")]
    UnknownId {
        /// The id given.
        id: u64,
    },
    /// `ack`/`nack` of a message that was never handed out by a dequeue
    /// (since the queue was opened, or since its last `nack`).
    #[error("fastqueue: message {id} was not delivered: dequeue it before acknowledging it or giving it back")]
    NotDelivered {
        /// The id given.
        id: u64,
    },
    /// `extend_visibility` of a message that is not in flight.
    #[error("fastqueue: message {id} is not in flight (not dequeued, or its visibility timeout already ran out)")]
    NotInFlight {
        /// The id given.
        id: u64,
    },
    /// A call in a `fork()` child on a queue its parent opened: the queue's
    /// threads and lock belong to the parent.
    #[error("fastqueue: {dir}: the queue was opened by process {owner} and this is process {pid} (a fork() child): open the queue in the child itself, after the parent has closed it")]
    Forked {
        /// The queue directory.
        dir: PathBuf,
        /// The process that opened it.
        owner: u32,
        /// This process.
        pid: u32,
    },
    /// An earlier write or sync failed, or a thread of the queue died; the
    /// queue stops accepting work because the state of the disk is
    /// unknown. Reopen it to recover.
    #[error("fastqueue: {dir}: queue stopped ({cause}); reopen it to recover")]
    Failed {
        /// The queue directory.
        dir: PathBuf,
        /// The first error.
        cause: String,
    },
    /// The queue was closed.
    #[error("fastqueue: queue is closed")]
    Closed,
}

impl Error {
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        op: &'static str,
        source: std::io::Error,
    ) -> Error {
        Error::Io { path: path.into(), op, source }
    }

    pub(crate) fn corrupt(
        segment: impl Into<PathBuf>,
        offset: u64,
        reason: impl Into<String>,
    ) -> Error {
        Error::Corrupt {
            segment: segment.into(),
            offset,
            reason: reason.into(),
        }
    }

    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> Error {
        Error::Invalid { field, message: message.into() }
    }

    /// Whether the error is about stored data (as opposed to the system or
    /// the caller): the bindings raise these as `ValueError`.
    pub fn is_data_error(&self) -> bool {
        matches!(self, Error::Corrupt { .. })
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
