//! [`MessageBatch`]: messages read into one buffer that the consumer keeps
//! from one dequeue to the next.
//!
//! Why it exists: [`crate::FastQueue::dequeue_batch`] hands out each
//! payload as its own `Vec<u8>`. For large messages that is a fresh
//! allocation per message, and once a batch is dropped glibc may give the
//! memory back to the kernel (heap trim), so the next batch faults every
//! page in again: at 64 KiB the faults cost about as much as the read
//! itself (docs/fastqueue.md). A batch owns one contiguous buffer instead;
//! each dequeue into it overwrites the previous contents, the buffer only
//! ever grows, and after the first batch no page is allocated or faulted
//! in. Payloads are handed out as slices borrowed from the batch, so the
//! borrow checker guarantees that no slice outlives the next dequeue.
//!
//! [`crate::FastQueue::dequeue_batch_mapped`] fills the same batch without
//! a copy: its payloads are slices of the segments' shared mappings, and
//! the batch holds a clone of each mapping it borrows from (a *pin*), so
//! that the queue does not recycle those segments until the batch is
//! cleared, refilled or dropped. The borrow checker again ties every
//! slice to the batch, hence to its pins.

use std::sync::Arc;

use crate::format::QueueKind;
use crate::message::{Message, SegMap};

/// Messages of one dequeue, their bytes in one buffer reused by the next
/// dequeue into the same batch. See
/// [`crate::FastQueue::dequeue_batch_into`].
#[derive(Default)]
pub struct MessageBatch {
    /// Bytes as read: for FastQueue whole records (header, payload,
    /// padding), for the file-per-message queue whole files. Its length
    /// is the high-water mark and never shrinks: the part past `used` is
    /// stale bytes, kept so that no read has to zero-fill it again.
    buf: Vec<u8>,
    /// Bytes of `buf` that belong to this batch.
    used: usize,
    items: Vec<Item>,
    /// Mappings that payloads borrow from, one clone per segment (pins).
    pins: Vec<Arc<SegMap>>,
}

/// `Item::src` of a payload in the batch's own buffer.
const OWN: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Item {
    id: u64,
    attempts: u32,
    kind: QueueKind,
    enqueued_ns: u64,
    /// Where the payload is: `buf` ([`OWN`]) or `pins[src]`, at
    /// `start..start + len`.
    src: u32,
    start: usize,
    len: usize,
}

/// One message of a [`MessageBatch`]: the fields of [`Message`], its
/// payload borrowed from the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageRef<'a> {
    /// Id given by enqueue; kept when the message is retried.
    pub id: u64,
    /// The bytes enqueued.
    pub payload: &'a [u8],
    /// Failed deliveries so far (`nack` calls and visibility timeouts).
    pub attempts: u32,
    /// The logical queue it came from.
    pub kind: QueueKind,
    /// Time of the first enqueue, ns since the Unix epoch.
    pub enqueued_ns: u64,
}

impl MessageRef<'_> {
    /// An owned copy (for a message the consumer must keep past the next
    /// dequeue into its batch).
    pub fn to_message(&self) -> Message {
        Message {
            id: self.id,
            payload: self.payload.to_vec(),
            attempts: self.attempts,
            kind: self.kind,
            enqueued_ns: self.enqueued_ns,
        }
    }
}

impl MessageBatch {
    /// An empty batch; its buffer grows to the largest batch read into it.
    pub fn new() -> MessageBatch {
        MessageBatch::default()
    }

    /// An empty batch whose buffer already holds `bytes`, written now so
    /// that the first dequeue does not fault its pages in. Records take 64
    /// bytes of header and up to 7 of padding beyond the payload.
    pub fn with_capacity(bytes: usize) -> MessageBatch {
        // Not `vec![0; bytes]`: that is `calloc`, whose fresh pages are only
        // mapped, and faulted in by the first read into them. A fill with a
        // byte other than zero cannot be turned into `calloc` by the
        // compiler either; what the bytes hold does not matter (the part
        // past `used` is stale by design).
        let buf = vec![0xA5u8; bytes];
        MessageBatch { buf, used: 0, items: Vec::new(), pins: Vec::new() }
    }

    /// Messages in the batch.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the batch holds no message.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The `i`-th message, in delivery order.
    pub fn get(&self, i: usize) -> Option<MessageRef<'_>> {
        self.items.get(i).map(|it| self.view(it))
    }

    /// The messages in delivery order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = MessageRef<'_>> + '_ {
        self.items.iter().map(|it| self.view(it))
    }

    /// The ids in delivery order (for [`crate::FastQueue::ack_many`]).
    pub fn ids(&self) -> Vec<u64> {
        self.items.iter().map(|it| it.id).collect()
    }

    /// Bytes the buffer holds (its high-water mark).
    pub fn buffer_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Segments whose mappings this batch pins (holds payloads of, after
    /// [`crate::FastQueue::dequeue_batch_mapped`]); 0 after a copying
    /// dequeue or [`MessageBatch::clear`].
    pub fn pinned_segments(&self) -> usize {
        self.pins.len()
    }

    /// Forgets the messages and lets go of the pinned segments (the queue
    /// may recycle them now); the buffer is kept for the next dequeue.
    pub fn clear(&mut self) {
        self.used = 0;
        self.items.clear();
        self.pins.clear();
    }

    fn view(&self, it: &Item) -> MessageRef<'_> {
        let payload = match it.src {
            OWN => &self.buf[it.start..it.start + it.len],
            i => self.pins[i as usize].slice(it.start, it.len),
        };
        MessageRef {
            id: it.id,
            payload,
            attempts: it.attempts,
            kind: it.kind,
            enqueued_ns: it.enqueued_ns,
        }
    }

    /// Makes room for `n` more bytes and returns them with their offset in
    /// the buffer. The bytes are stale (from an earlier batch, or zeros):
    /// the caller overwrites them with a read and then adds the message
    /// with [`MessageBatch::push`] or gives bytes back with
    /// [`MessageBatch::truncate_to`].
    pub(crate) fn reserve(&mut self, n: usize) -> (usize, &mut [u8]) {
        let start = self.used;
        let end = start + n;
        if self.buf.len() < end {
            // Grows only past the high-water mark; zero-filled once.
            self.buf.resize(end, 0);
        }
        self.used = end;
        (start, &mut self.buf[start..end])
    }

    /// Gives back the bytes reserved past `used` (a read that failed or
    /// came up short).
    pub(crate) fn truncate_to(&mut self, used: usize) {
        debug_assert!(used <= self.used);
        self.used = used;
    }

    /// The bytes at `start..start + len` of the buffer (already read).
    pub(crate) fn bytes(&self, start: usize, len: usize) -> &[u8] {
        &self.buf[start..start + len]
    }

    /// Adds a message whose payload is at `start..start + len`.
    pub(crate) fn push(&mut self, id: u64, attempts: u32, kind: QueueKind, enqueued_ns: u64, start: usize, len: usize) {
        debug_assert!(start + len <= self.used);
        self.items.push(Item { id, attempts, kind, enqueued_ns, src: OWN, start, len });
    }

    /// Adds a message whose payload is at `payload` of `map` (already
    /// checked), pinning `map` if the batch does not yet.
    pub(crate) fn push_mapped(&mut self, id: u64, attempts: u32, kind: QueueKind, enqueued_ns: u64, map: &Arc<SegMap>, payload: std::ops::Range<usize>) {
        let (start, len) = (payload.start, payload.len());
        // A batch's messages mostly come from one or two segments: the last
        // pin is the one to compare with.
        let src = match self.pins.iter().rposition(|p| Arc::ptr_eq(p, map)) {
            Some(i) => i,
            None => {
                self.pins.push(map.clone());
                self.pins.len() - 1
            }
        };
        debug_assert!(start + len <= map.len());
        self.items.push(Item { id, attempts, kind, enqueued_ns, src: src as u32, start, len });
    }

    /// Used bytes so far (where the next reserve starts).
    pub(crate) fn used(&self) -> usize {
        self.used
    }
}

impl std::fmt::Debug for MessageBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageBatch")
            .field("messages", &self.items.len())
            .field("used", &self.used)
            .field("buffer_bytes", &self.buf.len())
            .field("pinned_segments", &self.pins.len())
            .finish()
    }
}
