//! The vocabulary that the queue and its batches share, beneath both
//! (`queue.rs` fills batches, `batch.rs` hands out what the queue read):
//! [`Message`], what a dequeue returns, and [`SegMap`], a segment's
//! mapping that mapped batches pin, with the queue's lock ([`Unlock`]) it
//! keeps while they do.

use std::sync::Arc;

use crate::format::QueueKind;
use crate::storage::{FileMap, Storage};

/// A message handed to a consumer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Id given by enqueue; kept when the message is retried.
    pub id: u64,
    /// The bytes enqueued.
    pub payload: Vec<u8>,
    /// Failed deliveries so far (`nack` calls and visibility timeouts).
    pub attempts: u32,
    /// The logical queue it came from.
    pub kind: QueueKind,
    /// Time of the first enqueue, ns since the Unix epoch.
    pub enqueued_ns: u64,
}

/// A segment's read-only mapping, shared by the queue and the batches that
/// borrow payloads from it (their *pins*).
pub(crate) struct SegMap {
    pub(crate) map: FileMap,
    /// The queue's lock, kept while any pin exists: otherwise a consumer
    /// holding a batch past the queue's close could see a later open
    /// recycle the segment and rewrite the bytes it borrows.
    pub(crate) _lock: Arc<Unlock>,
}

impl SegMap {
    /// Bytes mapped.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The mapped bytes `start..start + len`. Only for bytes that nobody
    /// writes while the slice lives: payloads of published records (the
    /// queue never rewrites them while the segment is in use, and does not
    /// recycle a pinned segment); anyone else writing the file breaks that
    /// (docs/fastqueue.md). Panics out of bounds.
    pub(crate) fn slice(&self, start: usize, len: usize) -> &[u8] {
        assert!(start <= self.map.len() && len <= self.map.len() - start);
        // SAFETY: in bounds (checked); the mapping lives as long as `self`;
        // the bytes are not written while borrowed (above).
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(start), len) }
    }

    /// Copies the mapped bytes at `start` into `dst` with volatile reads:
    /// for record headers, whose delete flag the writer may be changing
    /// at that moment (the header checksum leaves it out, so a flag
    /// changing under the copy cannot make a header look valid or not).
    pub(crate) fn copy_to(&self, start: usize, dst: &mut [u8]) {
        assert!(start <= self.map.len() && dst.len() <= self.map.len() - start);
        for (i, d) in dst.iter_mut().enumerate() {
            // SAFETY: in bounds (checked); a byte read has no alignment need.
            *d = unsafe { std::ptr::read_volatile(self.map.as_ptr().add(start + i)) };
        }
    }
}

/// Releases the queue lock when dropped.
pub(crate) struct Unlock(Arc<dyn Storage>);

impl Unlock {
    /// Releases `storage`'s lock (already taken) when the last holder goes.
    pub(crate) fn new(storage: Arc<dyn Storage>) -> Unlock {
        Unlock(storage)
    }
}

impl Drop for Unlock {
    fn drop(&mut self) {
        self.0.unlock();
    }
}
