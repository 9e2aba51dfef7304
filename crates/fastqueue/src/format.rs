//! The on-disk format, version 1 (documented in `docs/fastqueue-format.md`).
//!
//! A segment file starts with a 4 KiB area holding the [`SegmentHeader`];
//! records follow back to back, each a 64-byte [`RecordHeader`], the
//! payload, and zero padding up to a multiple of 8 bytes. All integers are
//! little-endian. Checksums are CRC32C.

/// Format version written in every segment header and record header.
pub const FORMAT_VERSION: u8 = 1;
/// Bytes reserved at the start of a segment for its header.
pub const SEGMENT_HEADER_LEN: u64 = 4096;
/// Length of a record header.
pub const RECORD_HEADER_LEN: usize = 64;
/// Records start at multiples of this.
pub const RECORD_ALIGN: usize = 8;
/// Most batches the writer has written and not yet synced at any time
/// (it writes a batch while the previous one's sync runs). After a crash
/// the last this-many batches of the newest segment may be incomplete.
pub const PIPELINE_DEPTH: usize = 2;
/// First bytes of a record.
pub const RECORD_MAGIC: [u8; 4] = *b"FQRC";
/// First bytes of a segment.
pub const SEGMENT_MAGIC: [u8; 8] = *b"FQSEGMNT";
/// Offset of the delete-flag byte inside a record header. It is the only
/// byte changed in place after a record is written, so the header checksum
/// leaves it out; its value is checked instead ([`LIVE`] or [`DELETED`]).
pub const DELETE_FLAG_OFFSET: u64 = 6;
/// Delete flag of a live record.
pub const LIVE: u8 = 0x00;
/// Delete flag of an acknowledged (or superseded) record. Four bits apart
/// from [`LIVE`], so a single bit flip gives neither value and is reported.
pub const DELETED: u8 = 0xA5;

/// Record flag: last record of a batch written by one write call.
pub const FLAG_BATCH_END: u8 = 0x01;
/// Record flag: padding written by `repair` over damaged bytes; never a
/// message.
pub const FLAG_PAD: u8 = 0x02;
/// Record flag: the seal that closes a full segment (with [`FLAG_PAD`]);
/// every segment but the newest ends with one, unless fewer than
/// [`RECORD_HEADER_LEN`] bytes were left.
pub const FLAG_SEAL: u8 = 0x04;
const KNOWN_FLAGS: u8 = FLAG_BATCH_END | FLAG_PAD | FLAG_SEAL;

/// Which logical queue a record belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueKind {
    /// Messages as enqueued, delivered in arrival order.
    Main = 0,
    /// Messages given back with `nack`, delivered again after their delay.
    Retry = 1,
    /// Messages that failed `max_attempts` times.
    Dead = 2,
}

impl QueueKind {
    fn from_byte(b: u8) -> Option<QueueKind> {
        match b {
            0 => Some(QueueKind::Main),
            1 => Some(QueueKind::Retry),
            2 => Some(QueueKind::Dead),
            _ => None,
        }
    }

    /// Lower-case name, as used in stats and by the command.
    pub fn name(self) -> &'static str {
        match self {
            QueueKind::Main => "main",
            QueueKind::Retry => "retry",
            QueueKind::Dead => "dead",
        }
    }
}

/// Bytes a record with `payload_len` bytes of payload takes on disk.
pub fn record_len(payload_len: usize) -> usize {
    RECORD_HEADER_LEN + payload_len.next_multiple_of(RECORD_ALIGN)
}

/// The fixed-size part of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// [`FLAG_BATCH_END`], [`FLAG_PAD`].
    pub flags: u8,
    /// [`LIVE`] or [`DELETED`].
    pub delete_flag: u8,
    /// Logical queue.
    pub kind: QueueKind,
    /// Payload bytes that follow the header.
    pub payload_len: u32,
    /// Failed deliveries so far (`nack` calls).
    pub attempts: u32,
    /// Message id, unique in the queue; a retried message keeps its id.
    pub id: u64,
    /// Wall-clock time of the first enqueue, ns since the Unix epoch.
    pub enqueued_ns: u64,
    /// Not to be delivered before this time (ns since the Unix epoch).
    pub not_before_ns: u64,
    /// Sequence number of the segment the record was written into; a
    /// record left over from a recycled segment has an older one.
    pub segment_seq: u64,
    /// Number of the write batch (one write call) the record belongs to.
    pub batch_seq: u64,
    /// CRC32C of the payload.
    pub payload_crc: u32,
}

/// What the bytes at a record position are.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderCheck {
    /// All 64 bytes are zero: never written (the end of the data).
    Zero,
    /// A well-formed header whose own checksum is right. The payload has
    /// not been checked yet.
    Valid(RecordHeader),
    /// Anything else, with the reason.
    Bad(&'static str),
}

fn header_crc(h: &[u8]) -> u32 {
    let mut copy = [0u8; RECORD_HEADER_LEN - 4];
    copy.copy_from_slice(&h[..RECORD_HEADER_LEN - 4]);
    copy[DELETE_FLAG_OFFSET as usize] = 0;
    crc32c::crc32c(&copy)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

impl RecordHeader {
    /// A padding record (never a message, deleted): the seal of a segment,
    /// or what `repair` writes over damaged bytes. `flags` are added to
    /// [`FLAG_PAD`].
    pub fn padding(flags: u8, segment_seq: u64, batch_seq: u64) -> RecordHeader {
        RecordHeader {
            flags: FLAG_PAD | flags,
            delete_flag: DELETED,
            kind: QueueKind::Main,
            payload_len: 0,
            attempts: 0,
            id: 0,
            enqueued_ns: 0,
            not_before_ns: 0,
            segment_seq,
            batch_seq,
            payload_crc: 0,
        }
    }

    /// Appends header, payload and padding to `out`, computing both
    /// checksums. `self.payload_len` and `self.payload_crc` are taken from
    /// `payload`.
    pub fn encode(&self, payload: &[u8], out: &mut Vec<u8>) {
        let h = RecordHeader { payload_crc: crc32c::crc32c(payload), ..self.clone() };
        h.encode_with_crc(payload, out);
    }

    /// [`RecordHeader::encode`] with `self.payload_crc` already computed
    /// (outside a lock, say).
    pub fn encode_with_crc(&self, payload: &[u8], out: &mut Vec<u8>) {
        let payload_crc = self.payload_crc;
        let start = out.len();
        out.extend_from_slice(&RECORD_MAGIC);
        out.push(FORMAT_VERSION);
        out.push(self.flags);
        out.push(self.delete_flag);
        out.push(self.kind as u8);
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.attempts.to_le_bytes());
        for v in [
            self.id,
            self.enqueued_ns,
            self.not_before_ns,
            self.segment_seq,
            self.batch_seq,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&payload_crc.to_le_bytes());
        let crc = header_crc(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(payload);
        out.resize(start + record_len(payload.len()), 0);
    }

    /// Sets `flags |= flag` in an encoded record and fixes its checksum.
    pub fn add_flag(record: &mut [u8], flag: u8) {
        record[5] |= flag;
        let crc = header_crc(record);
        record[RECORD_HEADER_LEN - 4..RECORD_HEADER_LEN]
            .copy_from_slice(&crc.to_le_bytes());
    }

    /// Checks the first [`RECORD_HEADER_LEN`] bytes of `b`.
    pub fn decode(b: &[u8]) -> HeaderCheck {
        let Some(b) = b.get(..RECORD_HEADER_LEN) else {
            return HeaderCheck::Bad("record header cut short");
        };
        if b.iter().all(|&x| x == 0) {
            return HeaderCheck::Zero;
        }
        if b[..4] != RECORD_MAGIC {
            return HeaderCheck::Bad("bad record magic");
        }
        if header_crc(b) != u32_at(b, 60) {
            return HeaderCheck::Bad("record header checksum mismatch");
        }
        if b[4] != FORMAT_VERSION {
            return HeaderCheck::Bad("unsupported record format version");
        }
        if b[5] & !KNOWN_FLAGS != 0 {
            return HeaderCheck::Bad("unknown record flags");
        }
        let delete_flag = b[6];
        if delete_flag != LIVE && delete_flag != DELETED {
            return HeaderCheck::Bad("delete flag is neither live nor deleted");
        }
        let Some(kind) = QueueKind::from_byte(b[7]) else {
            return HeaderCheck::Bad("unknown queue kind");
        };
        HeaderCheck::Valid(RecordHeader {
            flags: b[5],
            delete_flag,
            kind,
            payload_len: u32_at(b, 8),
            attempts: u32_at(b, 12),
            id: u64_at(b, 16),
            enqueued_ns: u64_at(b, 24),
            not_before_ns: u64_at(b, 32),
            segment_seq: u64_at(b, 40),
            batch_seq: u64_at(b, 48),
            payload_crc: u32_at(b, 56),
        })
    }

    /// Bytes the whole record takes on disk.
    pub fn record_len(&self) -> usize {
        record_len(self.payload_len as usize)
    }

    /// Whether `payload` matches the checksum in the header.
    pub fn payload_ok(&self, payload: &[u8]) -> bool {
        payload.len() == self.payload_len as usize
            && crc32c::crc32c(payload) == self.payload_crc
    }

    /// Whether this record is a message (not padding).
    pub fn is_message(&self) -> bool {
        self.flags & FLAG_PAD == 0
    }
}

/// The header at the start of every segment file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    /// Size of the segment file in bytes.
    pub segment_size: u64,
    /// Sequence number; segments are read in this order.
    pub seq: u64,
    /// Above every message id issued before the segment was set up (the
    /// next open never issues a lower id, even when older segments were
    /// recycled).
    pub id_floor: u64,
    /// When the segment was (re)initialised, ns since the Unix epoch.
    pub created_ns: u64,
}

/// Bytes of the segment header that are used (the rest of the 4 KiB is
/// zero).
pub const SEGMENT_HEADER_USED: usize = 64;

impl SegmentHeader {
    /// The 64 bytes of the header.
    pub fn encode(&self) -> [u8; SEGMENT_HEADER_USED] {
        let mut b = [0u8; SEGMENT_HEADER_USED];
        b[..8].copy_from_slice(&SEGMENT_MAGIC);
        b[8..12].copy_from_slice(&(FORMAT_VERSION as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.segment_size.to_le_bytes());
        b[24..32].copy_from_slice(&self.seq.to_le_bytes());
        b[32..40].copy_from_slice(&self.id_floor.to_le_bytes());
        b[40..48].copy_from_slice(&self.created_ns.to_le_bytes());
        let crc = crc32c::crc32c(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses a header, or says what is wrong with it.
    pub fn decode(b: &[u8]) -> Result<SegmentHeader, &'static str> {
        if b.len() < SEGMENT_HEADER_USED {
            return Err("segment shorter than its header");
        }
        if b[..8] != SEGMENT_MAGIC {
            return Err("bad segment magic");
        }
        if crc32c::crc32c(&b[..60]) != u32_at(b, 60) {
            return Err("segment header checksum mismatch");
        }
        if u32_at(b, 8) != FORMAT_VERSION as u32 {
            return Err("unsupported segment format version");
        }
        Ok(SegmentHeader {
            segment_size: u64_at(b, 16),
            seq: u64_at(b, 24),
            id_floor: u64_at(b, 32),
            created_ns: u64_at(b, 40),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> RecordHeader {
        RecordHeader {
            flags: 0,
            delete_flag: LIVE,
            kind: QueueKind::Retry,
            payload_len: 0,
            attempts: 2,
            id: 77,
            enqueued_ns: 5,
            not_before_ns: 9,
            segment_seq: 3,
            batch_seq: 11,
            payload_crc: 0,
        }
    }

    #[test]
    fn record_round_trip_and_padding() {
        let mut out = Vec::new();
        header().encode(b"hello", &mut out);
        assert_eq!(out.len(), 64 + 8);
        let HeaderCheck::Valid(h) = RecordHeader::decode(&out) else {
            panic!("not valid")
        };
        assert_eq!(h.id, 77);
        assert_eq!(h.kind, QueueKind::Retry);
        assert!(h.payload_ok(&out[64..69]));
    }

    #[test]
    fn delete_flag_is_outside_the_checksum_but_checked() {
        let mut out = Vec::new();
        header().encode(b"x", &mut out);
        out[6] = DELETED;
        assert!(matches!(RecordHeader::decode(&out), HeaderCheck::Valid(_)));
        out[6] = LIVE ^ 0x04;
        assert!(matches!(RecordHeader::decode(&out), HeaderCheck::Bad(_)));
    }

    #[test]
    fn every_single_bit_flip_in_a_header_is_caught() {
        let mut out = Vec::new();
        header().encode(b"payload", &mut out);
        for bit in 0..RECORD_HEADER_LEN * 8 {
            let mut b = out.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let ok = match RecordHeader::decode(&b) {
                HeaderCheck::Valid(h) => h.payload_ok(&b[64..64 + 7]),
                _ => false,
            };
            assert!(!ok, "flip of bit {bit} not caught");
        }
    }

    #[test]
    fn segment_header_round_trip() {
        let h = SegmentHeader {
            segment_size: 1 << 20,
            seq: 4,
            id_floor: 100,
            created_ns: 1,
        };
        assert_eq!(SegmentHeader::decode(&h.encode()), Ok(h));
    }
}
