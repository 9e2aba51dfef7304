//! The manifest (`MANIFEST`, documented in `docs/fastqueue-format.md`): the
//! list of segments in use, and where the log ended when the queue was
//! last closed cleanly.
//!
//! Why it exists. Segment files whose records are all acknowledged are
//! recycled, so a gap in the sequence numbers is normal, and a deleted
//! segment looked exactly like a recycled one; a zeroed or cut tail looked
//! like the unwritten end of the log. The manifest makes both provable:
//! `check` reports a listed segment that is gone, and a log that ends
//! before the point recorded at the last clean close.
//!
//! How it is kept. It is rewritten whole (a temporary file, `fdatasync`,
//! `rename`, directory `fsync`), never in place, so a crash leaves the old
//! or the new one. Orders that keep every crash state explicable:
//! - a new segment is set up (header, sync, rename, directory sync) before
//!   the manifest lists it: a segment newer than every listed one is
//!   accepted as the newest;
//! - a recycled segment is renamed to `free-*` (directory synced) before
//!   the manifest drops it: a listed segment that is missing while a free
//!   file's header carries its number (and no live record) was recycled;
//! - the open writes it with the "closed cleanly" flag off before any
//!   write; `close` sets it after everything is durable.

use crate::storage::{read_full, Storage};

/// File name of the manifest.
pub const MANIFEST: &str = "MANIFEST";
/// Temporary name while it is rewritten.
pub const MANIFEST_TMP: &str = "MANIFEST.tmp";

const MAGIC: [u8; 8] = *b"FQMANIFS";
const VERSION: u32 = 1;
const FLAG_CLEAN: u32 = 1;
const FIXED: usize = 64;
/// Refuse to read absurd lengths (2^24 segments is 1 PiB of 64 MiB ones).
const MAX_SEGMENTS: usize = 1 << 24;

/// Where the log ended at a clean close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tail {
    /// The newest segment.
    pub seq: u64,
    /// End of the records in it.
    pub end: u64,
}

/// The manifest's contents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Grows by one at each rewrite.
    pub generation: u64,
    /// Set by a clean close, cleared by the next open.
    pub clean: Option<Tail>,
    /// Sequence numbers of the segments in use, ascending.
    pub segments: Vec<u64>,
}

impl Manifest {
    /// The bytes of the file.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(FIXED + 8 * self.segments.len() + 4);
        b.extend_from_slice(&MAGIC);
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&(if self.clean.is_some() { FLAG_CLEAN } else { 0 }).to_le_bytes());
        let t = self.clean.unwrap_or(Tail { seq: 0, end: 0 });
        for v in [self.generation, t.seq, t.end, 0] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&(self.segments.len() as u64).to_le_bytes());
        b.resize(FIXED, 0);
        for s in &self.segments {
            b.extend_from_slice(&s.to_le_bytes());
        }
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses the file, or says what is wrong with it.
    pub fn decode(b: &[u8]) -> Result<Manifest, String> {
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        if b.len() < FIXED + 4 || b[..8] != MAGIC {
            return Err("not a FastQueue manifest (bad magic or too short)".into());
        }
        if u32_at(8) != VERSION {
            return Err(format!("unsupported manifest version {}", u32_at(8)));
        }
        let n = u64_at(48) as usize;
        if n > MAX_SEGMENTS || b.len() != FIXED + 8 * n + 4 {
            return Err(format!("manifest length {} does not match its {n} segments", b.len()));
        }
        let body = b.len() - 4;
        if crc32c::crc32c(&b[..body]) != u32_at(body) {
            return Err("manifest checksum mismatch".into());
        }
        let segments: Vec<u64> = (0..n).map(|i| u64_at(FIXED + 8 * i)).collect();
        if segments.windows(2).any(|w| w[0] >= w[1]) {
            return Err("manifest segment list is not in ascending order".into());
        }
        let clean = (u32_at(12) & FLAG_CLEAN != 0).then(|| Tail {
            seq: u64_at(24),
            end: u64_at(32),
        });
        Ok(Manifest { generation: u64_at(16), clean, segments })
    }
}

/// Reads the manifest: `Ok(None)` if there is none (a queue made by a
/// version without one), `Err(reason)` if it is damaged.
pub(crate) fn read(storage: &dyn Storage, readonly: bool) -> std::io::Result<Result<Option<Manifest>, String>> {
    let file = match if readonly { storage.open_read(MANIFEST) } else { storage.open(MANIFEST) } {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ok(None)),
        Err(e) => return Err(e),
    };
    let len = file.len()?;
    if len > (FIXED + 8 * MAX_SEGMENTS + 4) as u64 {
        return Ok(Err(format!("manifest of {len} bytes is too large")));
    }
    let mut buf = vec![0u8; len as usize];
    let n = read_full(&*file, &mut buf, 0)?;
    buf.truncate(n);
    Ok(Manifest::decode(&buf).map(Some))
}

/// Replaces the manifest durably: temporary file, sync, rename, directory
/// sync.
pub(crate) fn write(storage: &dyn Storage, m: &Manifest) -> std::io::Result<()> {
    let f = storage.create(MANIFEST_TMP)?;
    f.write_at(&m.encode(), 0)?;
    f.sync_data()?;
    storage.rename(MANIFEST_TMP, MANIFEST)?;
    storage.sync_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let m = Manifest {
            generation: 7,
            clean: Some(Tail { seq: 9, end: 12345 }),
            segments: vec![3, 4, 9],
        };
        let b = m.encode();
        assert_eq!(Manifest::decode(&b), Ok(m.clone()));
        let dirty = Manifest { clean: None, ..m };
        assert_eq!(Manifest::decode(&dirty.encode()).unwrap().clean, None);
        for i in 0..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 0x20;
            assert!(Manifest::decode(&bad).is_err(), "flip at byte {i} not caught");
        }
        assert!(Manifest::decode(&b[..b.len() - 8]).is_err());
    }
}
