//! A small ext2-like file-system layout: where files, inodes and
//! directories live on the disk, so that file operations can be turned into
//! the block requests they cause.
//!
//! What it models (after ext2 in Linux 2.6: Card, Ts'o & Tweedie, "Design
//! and Implementation of the Second Extended Filesystem", 1994, and the
//! kernel's Documentation/filesystems/ext2.txt):
//! - 4 KiB blocks in block groups of `group_mb` (128 MiB = 32768 blocks,
//!   what mke2fs makes with 4 KiB blocks: one block bitmap block maps
//!   4096 × 8 blocks).
//! - Each group starts with its metadata: a superblock/descriptor block,
//!   the block bitmap, the inode bitmap and the inode table
//!   (`inodes_per_group` × `inode_bytes`), then its data blocks.
//! - Directories: a top-level directory goes to the group with the fewest
//!   directories (what the Orlov allocator does for them); a subdirectory
//!   stays in its parent's group while that group has at least 3/4 of the
//!   average free space (Orlov's rule for other directories, simplified).
//! - A file's inode goes to its directory's group (or the next with a free
//!   inode); its data blocks are taken first-fit in that group, spilling to
//!   the next group when it is full; an append continues right after the
//!   file's last block when that block is free.
//! - Directory entries fill the directory's blocks in order; a full
//!   directory gets one more block. Directories never shrink (as in ext2).
//!
//! Left out: the journal (ext3), indirect blocks (a file over 12 blocks
//! would need one), block reservation windows and pid colouring of goals,
//! superblock backups being sparse, the page cache, readahead windows,
//! delayed allocation, and any I/O for bitmaps or for making directories.
//! Which of the remaining updates reach the disk, and when, is decided by
//! the workload (see `fileops`), not here.

use crate::error::{Error, Result};
use crate::request::SECTOR_BYTES;
use serde::{Deserialize, Serialize};

/// File-system block size (ext2's default on disks over 512 MiB).
pub const BLOCK_BYTES: u64 = 4096;
/// Sectors per block.
pub const BLOCK_SECTORS: u64 = BLOCK_BYTES / SECTOR_BYTES;
/// Superblock/descriptors, block bitmap, inode bitmap.
const HEADER_BLOCKS: u64 = 3;
/// A last, partial group is kept only with at least this many data blocks.
const MIN_LAST_GROUP_DATA: u64 = 64;

/// The `fs` table of a workload: the file system's geometry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FsSpec {
    /// Block group size in MiB (mke2fs: 128 with 4 KiB blocks).
    pub group_mb: u32,
    /// mke2fs's default inode ratio of 16 KiB per inode gives 8192.
    pub inodes_per_group: u32,
    /// 128 bytes: ext2/ext3's inode size in the Linux 2.6.20 era.
    pub inode_bytes: u32,
    /// Bytes per directory entry (8-byte header + a name up to 16 bytes).
    pub dirent_bytes: u32,
    /// Largest request the block layer builds, KiB (the 2.6 kernels'
    /// `max_sectors_kb` of 128 and readahead window of 128 KiB).
    pub max_request_kb: u32,
}

impl Default for FsSpec {
    fn default() -> Self {
        FsSpec { group_mb: 128, inodes_per_group: 8192, inode_bytes: 128, dirent_bytes: 24, max_request_kb: 128 }
    }
}

/// The largest request the layout builds, in KiB: 1 GiB, far above any
/// block layer's `max_sectors_kb`, and in sectors well within a u32.
const MAX_REQUEST_KB: u32 = 1 << 20;

impl FsSpec {
    /// Largest request in sectors.
    pub fn max_request_sectors(&self) -> u32 {
        (self.max_request_kb as u64 * 1024 / SECTOR_BYTES) as u32
    }
}

/// Where groups, inode tables and data regions are.
#[derive(Clone, Debug)]
pub struct Geometry {
    pub group_blocks: u64,
    pub groups: u32,
    pub total_blocks: u64,
    pub inodes_per_group: u32,
    pub inodes_per_block: u32,
    pub itable_blocks: u64,
    pub dirents_per_block: u32,
}

impl Geometry {
    /// A file system over the whole disk; `field` names the `fs` table.
    pub fn new(spec: &FsSpec, capacity_sectors: u64, field: &str) -> Result<Geometry> {
        let bad = |f: &str, m: String| Err(Error::invalid(format!("{field}.{f}"), m));
        if spec.group_mb == 0 || spec.group_mb > 128 {
            return bad(
                "group_mb",
                format!("must be within [1, 128] (one bitmap block maps 128 MiB), got {}", spec.group_mb),
            );
        }
        if !spec.inode_bytes.is_power_of_two() || !(128..=4096).contains(&spec.inode_bytes) {
            return bad("inode_bytes", format!("must be a power of two within [128, 4096], got {}", spec.inode_bytes));
        }
        if !(12..=BLOCK_BYTES as u32).contains(&spec.dirent_bytes) {
            return bad("dirent_bytes", format!("must be within [12, 4096], got {}", spec.dirent_bytes));
        }
        if !(4..=MAX_REQUEST_KB).contains(&spec.max_request_kb) {
            return bad(
                "max_request_kb",
                format!("must be within [4, {MAX_REQUEST_KB}] (one block to 1 GiB), got {}", spec.max_request_kb),
            );
        }
        let group_blocks = spec.group_mb as u64 * 1024 * 1024 / BLOCK_BYTES;
        let inodes_per_block = (BLOCK_BYTES / spec.inode_bytes as u64) as u32;
        let itable_blocks = (spec.inodes_per_group as u64).div_ceil(inodes_per_block as u64);
        // Leave at least a quarter of each group for data.
        if spec.inodes_per_group == 0 || HEADER_BLOCKS + itable_blocks > group_blocks * 3 / 4 {
            return bad("inodes_per_group", "must be at least 1 and leave room for data in each group".into());
        }
        let total_blocks = capacity_sectors / BLOCK_SECTORS;
        let meta = HEADER_BLOCKS + itable_blocks;
        let full = total_blocks / group_blocks;
        let rest = total_blocks % group_blocks;
        let groups = full + u64::from(rest >= meta + MIN_LAST_GROUP_DATA);
        if groups == 0 {
            return bad(
                "group_mb",
                format!("the disk ({} MiB) is smaller than one block group", (capacity_sectors * SECTOR_BYTES) >> 20),
            );
        }
        Ok(Geometry {
            group_blocks,
            groups: groups.min(u32::MAX as u64) as u32,
            total_blocks,
            inodes_per_group: spec.inodes_per_group,
            inodes_per_block,
            itable_blocks,
            dirents_per_block: (BLOCK_BYTES / spec.dirent_bytes as u64) as u32,
        })
    }

    pub fn group_start(&self, g: u32) -> u64 {
        g as u64 * self.group_blocks
    }
    /// First block of the inode table of group `g`.
    pub fn itable_start(&self, g: u32) -> u64 {
        self.group_start(g) + HEADER_BLOCKS
    }
    /// First data block of group `g`.
    pub fn data_start(&self, g: u32) -> u64 {
        self.itable_start(g) + self.itable_blocks
    }
    /// Data blocks in group `g` (the last group may be short).
    pub fn data_blocks(&self, g: u32) -> u64 {
        let end = (self.group_start(g) + self.group_blocks).min(self.total_blocks);
        end - self.data_start(g)
    }
    /// The inode-table block that holds inode `ino` (numbered from 0).
    pub fn inode_block(&self, ino: u64) -> u64 {
        let g = (ino / self.inodes_per_group as u64) as u32;
        let idx = ino % self.inodes_per_group as u64;
        self.itable_start(g) + idx / self.inodes_per_block as u64
    }
}

/// A bitmap whose storage is made on first use, so a file system over a
/// large disk costs nothing for the groups a workload never touches.
#[derive(Clone, Debug)]
struct Bitmap {
    words: Vec<u64>,
    len: u64,
    used: u64,
}

impl Bitmap {
    fn new(len: u64) -> Bitmap {
        Bitmap { words: Vec::new(), len, used: 0 }
    }
    fn free(&self) -> u64 {
        self.len - self.used
    }
    fn get(&self, i: u64) -> bool {
        self.words.get((i / 64) as usize).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }
    fn set(&mut self, i: u64) {
        if self.words.is_empty() {
            self.words = vec![0; self.len.div_ceil(64) as usize];
        }
        debug_assert!(!self.get(i));
        self.words[(i / 64) as usize] |= 1 << (i % 64);
        self.used += 1;
    }
    fn clear(&mut self, i: u64) {
        debug_assert!(self.get(i));
        self.words[(i / 64) as usize] &= !(1 << (i % 64));
        self.used -= 1;
    }
    /// The first clear bit at or after `from`.
    fn find_free(&self, from: u64) -> Option<u64> {
        if from >= self.len || self.used == self.len {
            return None;
        }
        if self.words.is_empty() {
            return Some(from);
        }
        let mut w = (from / 64) as usize;
        let mut bits = !self.words[w] & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                let i = w as u64 * 64 + bits.trailing_zeros() as u64;
                return (i < self.len).then_some(i);
            }
            w += 1;
            if w >= self.words.len() {
                return None;
            }
            bits = !self.words[w];
        }
    }
}

/// A run of consecutive blocks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    pub block: u64,
    pub count: u32,
}

/// One file slot of the layout.
#[derive(Clone, Debug, Default)]
pub struct File {
    pub live: bool,
    pub dir: u32,
    pub ino: u64,
    pub size_bytes: u64,
    /// The directory block holding its entry.
    pub dirent_block: u64,
    dirent_index: u32,
    pub extents: Vec<Extent>,
}

#[derive(Clone, Debug)]
struct Directory {
    group: u32,
    ino: u64,
    blocks: Vec<u64>,
    /// Entries in each block.
    used: Vec<u32>,
}

/// The file system ran out of blocks or inodes in the groups it owns.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NoSpace;

/// What a create touched.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Created {
    pub file: u32,
    /// The directory needed a new block (its inode changes too).
    pub dir_grew: bool,
}

/// The allocation state of the groups `first .. first + count`: one
/// workload's share of the file system.
#[derive(Clone, Debug)]
pub struct FsLayout {
    geo: Geometry,
    first: u32,
    data: Vec<Bitmap>,
    inodes: Vec<Bitmap>,
    dirs_in_group: Vec<u32>,
    dirs: Vec<Directory>,
    files: Vec<File>,
    free_slots: Vec<u32>,
    /// Sums over `data` and `inodes`, kept so a create need not add them up.
    free_blocks: u64,
    free_inodes: u64,
}

impl FsLayout {
    pub fn new(geo: Geometry, first: u32, count: u32) -> FsLayout {
        assert!(count > 0 && first + count <= geo.groups, "groups out of range");
        let data: Vec<Bitmap> = (first..first + count).map(|g| Bitmap::new(geo.data_blocks(g))).collect();
        let inodes = (0..count).map(|_| Bitmap::new(geo.inodes_per_group as u64)).collect();
        FsLayout {
            free_blocks: data.iter().map(Bitmap::free).sum(),
            free_inodes: count as u64 * geo.inodes_per_group as u64,
            geo,
            first,
            data,
            inodes,
            dirs_in_group: vec![0; count as usize],
            dirs: Vec::new(),
            files: Vec::new(),
            free_slots: Vec::new(),
        }
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }
    fn count(&self) -> usize {
        self.data.len()
    }
    pub fn free_blocks(&self) -> u64 {
        self.free_blocks
    }
    pub fn free_inodes(&self) -> u64 {
        self.free_inodes
    }
    /// Every file slot, live or not, by id.
    pub fn files(&self) -> &[File] {
        &self.files
    }
    pub fn file(&self, id: u32) -> &File {
        &self.files[id as usize]
    }
    /// First sector of the inode-table block holding `ino`.
    pub fn inode_sector(&self, ino: u64) -> u64 {
        self.geo.inode_block(ino) * BLOCK_SECTORS
    }
    /// First sector of the inode-table block of directory `dir`'s inode.
    pub fn dir_inode_sector(&self, dir: u32) -> u64 {
        self.inode_sector(self.dirs[dir as usize].ino)
    }

    /// Make a directory: top-level (`parent = None`) or inside `parent`.
    pub fn mkdir(&mut self, parent: Option<u32>) -> Result<u32, NoSpace> {
        let n = self.count();
        let home = match parent {
            None => (0..n).min_by_key(|&i| self.dirs_in_group[i]).unwrap_or(0),
            Some(p) => {
                let pg = (self.dirs[p as usize].group - self.first) as usize;
                let avg = self.free_blocks() / n as u64;
                (0..n).map(|s| (pg + s) % n).find(|&i| self.data[i].free() >= avg * 3 / 4).unwrap_or(pg)
            }
        };
        if self.free_blocks() == 0 {
            return Err(NoSpace);
        }
        let ino = self.alloc_inode(home)?;
        let group = (ino / self.geo.inodes_per_group as u64) as u32;
        let gi = (group - self.first) as usize;
        let mut ext = Vec::with_capacity(1);
        self.alloc_blocks(gi, None, 1, &mut ext);
        self.dirs_in_group[gi] += 1;
        // The first block holds "." and "..".
        self.dirs.push(Directory { group, ino, blocks: vec![ext[0].block], used: vec![2] });
        Ok(self.dirs.len() as u32 - 1)
    }

    /// Create a file of `size_bytes` in directory `dir`.
    pub fn create(&mut self, dir: u32, size_bytes: u64) -> Result<Created, NoSpace> {
        self.create_near(dir, size_bytes, None)
    }

    /// Create a file whose data starts from block `goal` if that is free
    /// and in the file's group (ext3's `ext3_find_goal`), else first fit.
    pub fn create_near(&mut self, dir: u32, size_bytes: u64, goal: Option<u64>) -> Result<Created, NoSpace> {
        let need = size_bytes.div_ceil(BLOCK_BYTES);
        let d = &self.dirs[dir as usize];
        let per = self.geo.dirents_per_block;
        let slot_in = d.used.iter().position(|&u| u < per);
        let dir_blocks = u64::from(slot_in.is_none());
        if self.free_blocks() < need + dir_blocks || self.free_inodes() == 0 {
            return Err(NoSpace);
        }
        let home = (d.group - self.first) as usize;
        let ino = self.alloc_inode(home)?;
        let dirent_index = match slot_in {
            Some(i) => i,
            None => {
                let last = *self.dirs[dir as usize].blocks.last().expect("a directory has a block");
                let mut ext = Vec::with_capacity(1);
                self.alloc_blocks(home, Some(last + 1), 1, &mut ext);
                let d = &mut self.dirs[dir as usize];
                d.blocks.push(ext[0].block);
                d.used.push(0);
                d.blocks.len() - 1
            }
        };
        let d = &mut self.dirs[dir as usize];
        d.used[dirent_index] += 1;
        let dirent_block = d.blocks[dirent_index];
        let id = match self.free_slots.pop() {
            Some(id) => id,
            None => {
                self.files.push(File::default());
                self.files.len() as u32 - 1
            }
        };
        // Reuse the slot's extent list: no allocation once slots recycle.
        let mut extents = std::mem::take(&mut self.files[id as usize].extents);
        extents.clear();
        let ig = ((ino / self.geo.inodes_per_group as u64) as u32 - self.first) as usize;
        self.alloc_blocks(ig, goal, need, &mut extents);
        self.files[id as usize] =
            File { live: true, dir, ino, size_bytes, dirent_block, dirent_index: dirent_index as u32, extents };
        Ok(Created { file: id, dir_grew: slot_in.is_none() })
    }

    /// Grow file `id` by `bytes`, allocating the blocks it needs.
    pub fn append(&mut self, id: u32, bytes: u64) -> Result<(), NoSpace> {
        let f = &self.files[id as usize];
        debug_assert!(f.live);
        let have = f.size_bytes.div_ceil(BLOCK_BYTES);
        let need = (f.size_bytes + bytes).div_ceil(BLOCK_BYTES) - have;
        if self.free_blocks() < need {
            return Err(NoSpace);
        }
        let goal = f.extents.last().map(|e| e.block + e.count as u64);
        let home = self.group_index_of_ino(f.ino);
        let mut extents = std::mem::take(&mut self.files[id as usize].extents);
        self.alloc_blocks(home, goal, need, &mut extents);
        let f = &mut self.files[id as usize];
        f.extents = extents;
        f.size_bytes += bytes;
        Ok(())
    }

    /// Remove file `id`: free its blocks, inode and directory entry.
    pub fn delete(&mut self, id: u32) {
        let f = &mut self.files[id as usize];
        assert!(f.live, "file {id} deleted twice");
        f.live = false;
        let (ino, dir, idx) = (f.ino, f.dir, f.dirent_index);
        let extents = std::mem::take(&mut f.extents);
        for e in &extents {
            for b in e.block..e.block + e.count as u64 {
                let (gi, rel) = self.locate_block(b);
                self.data[gi].clear(rel);
            }
            self.free_blocks += e.count as u64;
        }
        self.files[id as usize].extents = extents;
        let gi = self.group_index_of_ino(ino);
        self.inodes[gi].clear(ino % self.geo.inodes_per_group as u64);
        self.free_inodes += 1;
        self.dirs[dir as usize].used[idx as usize] -= 1;
        self.free_slots.push(id);
    }

    /// Call `emit(sector, nr_sectors)` for the disk runs holding bytes
    /// `start .. end` of file `id` (rounded out to whole sectors), each run
    /// at most `max_sectors` long and within one extent.
    pub fn map(&self, id: u32, start: u64, end: u64, max_sectors: u32, mut emit: impl FnMut(u64, u32)) {
        let (s0, s1) = (start / SECTOR_BYTES, end.div_ceil(SECTOR_BYTES));
        let max = max_sectors.max(1) as u64;
        let mut file_sector = 0u64;
        for e in &self.files[id as usize].extents {
            let len = e.count as u64 * BLOCK_SECTORS;
            let (lo, hi) = (s0.max(file_sector), s1.min(file_sector + len));
            let mut s = lo;
            while s < hi {
                let n = (hi - s).min(max);
                emit(e.block * BLOCK_SECTORS + (s - file_sector), n as u32);
                s += n;
            }
            file_sector += len;
            if file_sector >= s1 {
                break;
            }
        }
    }

    fn group_index_of_ino(&self, ino: u64) -> usize {
        ((ino / self.geo.inodes_per_group as u64) as u32 - self.first) as usize
    }

    /// (owned group index, data-block index within it) of block `b`.
    fn locate_block(&self, b: u64) -> (usize, u64) {
        let g = (b / self.geo.group_blocks) as u32;
        ((g - self.first) as usize, b - self.geo.data_start(g))
    }

    /// First free inode in group `home`, else in the groups after it.
    fn alloc_inode(&mut self, home: usize) -> Result<u64, NoSpace> {
        let n = self.count();
        for s in 0..n {
            let gi = (home + s) % n;
            if let Some(i) = self.inodes[gi].find_free(0) {
                self.inodes[gi].set(i);
                self.free_inodes -= 1;
                let g = self.first + gi as u32;
                return Ok(g as u64 * self.geo.inodes_per_group as u64 + i);
            }
        }
        Err(NoSpace)
    }

    /// Allocate `need` blocks, from `goal` (or the start of group `home`)
    /// onwards, wrapping within the group, then in the following groups.
    /// The caller has checked that enough blocks are free.
    fn alloc_blocks(&mut self, home: usize, goal: Option<u64>, need: u64, out: &mut Vec<Extent>) {
        let n = self.count();
        let mut left = need;
        let goal = goal.filter(|&b| b / self.geo.group_blocks == (self.first as usize + home) as u64);
        for s in 0..n {
            if left == 0 {
                return;
            }
            let gi = (home + s) % n;
            let base = self.geo.data_start(self.first + gi as u32);
            let start = match goal {
                Some(b) if s == 0 => b.saturating_sub(base),
                _ => 0,
            };
            // From the goal to the end of the group, then from its start.
            for (from, wrap_at) in [(start, u64::MAX), (0, start)] {
                let mut pos = from;
                while left > 0 {
                    let Some(i) = self.data[gi].find_free(pos).filter(|&i| i < wrap_at) else { break };
                    self.data[gi].set(i);
                    self.free_blocks -= 1;
                    push_block(out, base + i);
                    left -= 1;
                    pos = i + 1;
                }
            }
        }
        assert_eq!(left, 0, "alloc_blocks called without enough free blocks");
    }

    /// Check the layout's invariants (tests): every block in one owner,
    /// inside a data region; dirent counts add up.
    #[cfg(test)]
    pub(crate) fn check(&self) {
        let mut owner = std::collections::BTreeMap::new();
        let mut claim = |b: u64, who: String| {
            let g = (b / self.geo.group_blocks) as u32;
            assert!(
                g >= self.first && g < self.first + self.count() as u32,
                "{who}: block {b} outside the owned groups"
            );
            assert!(b >= self.geo.data_start(g), "{who}: block {b} in group {g}'s metadata");
            assert!(b < self.geo.data_start(g) + self.geo.data_blocks(g), "{who}: block {b} past group {g}");
            let (gi, rel) = self.locate_block(b);
            assert!(self.data[gi].get(rel), "{who}: block {b} not marked used");
            if let Some(prev) = owner.insert(b, who.clone()) {
                panic!("block {b} owned by {prev} and {who}");
            }
        };
        for (i, d) in self.dirs.iter().enumerate() {
            d.blocks.iter().for_each(|&b| claim(b, format!("dir {i}")));
        }
        let mut entries = vec![0u32; self.dirs.len()];
        for (i, f) in self.files.iter().enumerate().filter(|(_, f)| f.live) {
            let blocks: u64 = f.extents.iter().map(|e| e.count as u64).sum();
            assert_eq!(blocks, f.size_bytes.div_ceil(BLOCK_BYTES), "file {i}: blocks for its size");
            f.extents.iter().for_each(|e| (0..e.count as u64).for_each(|k| claim(e.block + k, format!("file {i}"))));
            entries[f.dir as usize] += 1;
        }
        let used: u64 = self.data.iter().map(|b| b.used).sum();
        assert_eq!(used as usize, owner.len(), "bitmap and owners disagree");
        assert_eq!(self.free_blocks, self.data.iter().map(Bitmap::free).sum::<u64>());
        assert_eq!(self.free_inodes, self.inodes.iter().map(Bitmap::free).sum::<u64>());
        for (i, d) in self.dirs.iter().enumerate() {
            assert_eq!(d.used.iter().sum::<u32>(), entries[i] + 2, "dir {i}: entry count");
        }
    }
}

/// Start sectors for files of `sizes` sectors created one after the
/// other in one new top-level directory of an empty file system over the
/// disk (`Placement::Directory`); with `colour`, each file's blocks start
/// from ext3's goal for the process writing it (process `i` of the
/// workload: group start + `(i % 16)` sixteenths of a group,
/// `ext3_find_near`). Every file must come out contiguous (a workload
/// process reads and writes one contiguous region).
pub fn place_in_directory(sizes: &[u64], capacity: u64, colour: bool, field: &str) -> Result<Vec<u64>> {
    let geo = Geometry::new(&FsSpec::default(), capacity, &format!("{field}.placement"))?;
    let mut fs = FsLayout::new(geo.clone(), 0, geo.groups);
    let dir = fs
        .mkdir(None)
        .map_err(|_| Error::invalid(format!("{field}.placement"), "the file system has no room for a directory"))?;
    let group = fs.dirs[dir as usize].group as u64;
    let mut starts = Vec::with_capacity(sizes.len());
    for (i, &sectors) in sizes.iter().enumerate() {
        let goal = colour.then(|| {
            let g = geo.group_start(group as u32) + (i as u64 % 16) * (geo.group_blocks / 16);
            g.max(geo.data_start(group as u32))
        });
        let c = fs.create_near(dir, sectors * SECTOR_BYTES, goal).map_err(|_| {
            Error::invalid(
                format!("{field}.placement"),
                format!("file {i} of {} MiB does not fit the file system", (sectors * SECTOR_BYTES) >> 20),
            )
        })?;
        let f = fs.file(c.file);
        if f.extents.len() != 1 {
            return Err(Error::invalid(
                format!("{field}.placement"),
                format!(
                    "file {i} ({} MiB) is not contiguous in the file-system layout (it crosses a block group's \
                     metadata); use placement = \"packed\" for files this large",
                    (sectors * SECTOR_BYTES) >> 20
                ),
            ));
        }
        starts.push(f.extents[0].block * BLOCK_SECTORS);
    }
    Ok(starts)
}

fn push_block(out: &mut Vec<Extent>, block: u64) {
    match out.last_mut() {
        Some(e) if e.block + e.count as u64 == block && e.count < u32::MAX => e.count += 1,
        _ => out.push(Extent { block, count: 1 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> FsSpec {
        // 1 MiB groups: 256 blocks, 64 inodes in 2 inode blocks.
        FsSpec { group_mb: 1, inodes_per_group: 64, ..FsSpec::default() }
    }

    #[test]
    fn geometry_puts_metadata_first() {
        let geo = Geometry::new(&FsSpec::default(), 1 << 22, "fs").unwrap();
        assert_eq!(geo.group_blocks, 32768);
        assert_eq!(geo.groups, 16);
        assert_eq!(geo.itable_blocks, 256);
        assert_eq!(geo.data_start(1), 32768 + 3 + 256);
        assert_eq!(geo.inode_block(8192 + 33), geo.itable_start(1) + 1);
        let err = Geometry::new(&FsSpec { group_mb: 0, ..FsSpec::default() }, 1 << 22, "workload.fs").unwrap_err();
        assert!(err.to_string().starts_with("workload.fs.group_mb"), "{err}");
        assert!(Geometry::new(&FsSpec::default(), 1000, "fs").is_err());
    }

    #[test]
    fn files_live_in_their_directory_group_without_overlap() {
        let geo = Geometry::new(&small(), 8 * 2048, "fs").unwrap();
        let mut fs = FsLayout::new(geo.clone(), 2, 4);
        let top = fs.mkdir(None).unwrap();
        let sub = fs.mkdir(Some(top)).unwrap();
        let mut ids = Vec::new();
        for i in 0..40u64 {
            let c = fs.create(if i % 2 == 0 { top } else { sub }, 500 + i * 300).unwrap();
            ids.push(c.file);
        }
        fs.check();
        for &id in &ids[..10] {
            let f = fs.file(id);
            let g = (f.ino / geo.inodes_per_group as u64) as u32;
            assert_eq!(g, 2, "inode in the directory's group");
            for e in &f.extents {
                assert_eq!(e.block / geo.group_blocks, 2, "data in the directory's group");
            }
        }
        // Delete every other file, create again: holes are reused first-fit.
        for &id in ids.iter().step_by(2) {
            fs.delete(id);
        }
        fs.check();
        let c = fs.create(top, 4096).unwrap();
        assert_eq!(c.file, ids[38], "slots are recycled");
        fs.check();
        fs.append(ids[1], 9000).unwrap();
        fs.check();
    }

    #[test]
    fn full_groups_spill_and_full_fs_says_so() {
        let geo = Geometry::new(&small(), 8 * 1024, "fs").unwrap();
        let mut fs = FsLayout::new(geo.clone(), 0, 2);
        let d = fs.mkdir(None).unwrap();
        let mut n = 0;
        while fs.create(d, 40_000).is_ok() {
            n += 1;
        }
        fs.check();
        assert!(n > 20, "only {n} files fit");
        let groups: std::collections::BTreeSet<u64> =
            fs.files().iter().flat_map(|f| f.extents.iter().map(|e| e.block / geo.group_blocks)).collect();
        assert_eq!(groups.len(), 2, "spilled into the second group");
        assert!(fs.free_blocks() < 10 || fs.free_inodes() == 0);
    }

    #[test]
    fn directories_spread_and_grow() {
        let geo = Geometry::new(&small(), 8 * 2048, "fs").unwrap();
        let mut fs = FsLayout::new(geo.clone(), 0, 8);
        let a = fs.mkdir(None).unwrap();
        let b = fs.mkdir(None).unwrap();
        assert_ne!(fs.dir_inode_sector(a) / (geo.group_blocks * 8), fs.dir_inode_sector(b) / (geo.group_blocks * 8));
        let per = geo.dirents_per_block as usize;
        let grew: Vec<bool> = (0..per).map(|_| fs.create(a, 1).unwrap().dir_grew).collect();
        assert_eq!(grew.iter().filter(|g| **g).count(), 1, "one new block after {} entries", per - 2);
        assert!(grew[per - 2]);
        fs.check();
    }

    #[test]
    fn map_splits_at_extents_and_max_size() {
        let geo = Geometry::new(&small(), 8 * 2048, "fs").unwrap();
        let mut fs = FsLayout::new(geo, 0, 4);
        let d = fs.mkdir(None).unwrap();
        let a = fs.create(d, 4096).unwrap().file;
        let b = fs.create(d, 4096).unwrap().file;
        fs.append(a, 3 * 4096).unwrap(); // b sits right after a: a fragments
        fs.check();
        assert_eq!(fs.file(a).extents.len(), 2);
        let mut runs = Vec::new();
        fs.map(a, 0, 4 * 4096, 16, |s, n| runs.push((s, n)));
        let first = fs.file(a).extents[0].block * 8;
        let second = fs.file(a).extents[1].block * 8;
        assert_eq!(runs, [(first, 8), (second, 16), (second + 16, 8)]);
        runs.clear();
        fs.map(b, 600, 1100, 256, |s, n| runs.push((s, n)));
        assert_eq!(runs, [(fs.file(b).extents[0].block * 8 + 1, 2)]);
    }
}
