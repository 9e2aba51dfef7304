//! A process's `read(2)` or `write(2)` of a file, as the page cache takes
//! it: whole pages of one of its files. The workloads make these calls,
//! the engine carries them, the page cache serves them; the vocabulary
//! lives beneath all three.

use crate::request::{Dir, SECTOR_BYTES};

/// Page size (`PAGE_CACHE_SIZE`).
pub const PAGE_BYTES: u64 = 4096;
/// Sectors per page.
pub const PAGE_SECTORS: u64 = PAGE_BYTES / SECTOR_BYTES;

/// A buffered operation on pages `page .. page + pages` of the process's
/// file `file` (`read(2)` / `write(2)` of whole pages).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FileOp {
    pub file: u32,
    pub page: u64,
    pub pages: u32,
    pub dir: Dir,
    /// For a write: the first and last pages are partly written (their old
    /// content must be in the cache first).
    pub partial: bool,
    /// The call's length in 512-byte sectors (its pages may cover more).
    /// In sectors, a u32 as a record's length is everywhere, so that a
    /// `FileOp` (and the process's `Step`) stays 24 bytes.
    pub sectors: u32,
}
