//! On-demand read-ahead as Linux 2.6.20 does it (mm/readahead.c:
//! `page_cache_readahead`, `make_ahead_window`, `get_init_ra_size`,
//! `get_next_ra_size`, `blockable_page_cache_readahead`,
//! `check_ra_success`, `handle_ra_miss`), per open file (`struct
//! file_ra_state`). Units are pages (4 KiB).
//!
//! Two windows: the "current" window (`start`, `size`) the reader is
//! walking, and the "ahead" window (`ahead_start`, `ahead_size`) whose I/O
//! is in flight meanwhile. When the reader crosses into the ahead window
//! it becomes current and a new ahead window is read.
//! - The first sequential read (the first read of a file, at page 0, is
//!   taken as sequential) opens a current window of `get_init_ra_size`:
//!   the request rounded up to a power of two, times 4 if that is at most
//!   max/32, times 2 if at most max/4, else max (for a 128 KiB max and a
//!   16 KiB read: 8 pages). It is read at once, blocking; a request of at
//!   least the max also gets its ahead window at once.
//! - Each later ahead window is `get_next_ra_size` of the current one:
//!   ×4 while below max/16, else ×2, capped at max (so 8, 16, 32, 32 ..
//!   for 128 KiB); after a miss (a read-ahead page evicted before use) it
//!   shrinks by 2 pages instead, not below the min (16 KiB).
//! - A read that is not the page after the previous one is random:
//!   read-ahead goes off and only the pages asked for are read.
//! - An ahead window is read without blocking: if the queue is read-
//!   congested it is dropped and tried again at the next read.
//! - A window whose pages are all cached already counts cache hits; after
//!   `VM_MAX_CACHE_HIT` (256) such pages in a row read-ahead goes off for
//!   the file until a miss.

/// `VM_MIN_READAHEAD`, KiB.
pub const VM_MIN_READAHEAD_KB: u32 = 16;
/// `VM_MAX_CACHE_HIT`, pages.
pub const VM_MAX_CACHE_HIT: u64 = 256;
/// Page size (`PAGE_CACHE_SIZE`).
pub const PAGE_KB: u32 = 4;

/// `RA_FLAG_MISS`.
const FLAG_MISS: u8 = 1;
/// `RA_FLAG_INCACHE`.
const FLAG_INCACHE: u8 = 2;

/// What read-ahead asks of the page cache and the queue.
pub trait RaIo {
    /// `__do_page_cache_readahead`: start reads of the pages of
    /// `offset .. offset + nr` that are not in the cache, stopping at the
    /// end of the file; returns how many were started.
    fn read_pages(&mut self, offset: u64, nr: u64) -> u64;
    /// `bdi_read_congested`.
    fn read_congested(&self) -> bool;
}

/// `struct file_ra_state`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RaState {
    pub start: u64,
    pub size: u64,
    flags: u8,
    cache_hit: u64,
    /// The page read-ahead last looked at (`u64::MAX` = -1 before any).
    pub prev_page: u64,
    pub ahead_start: u64,
    pub ahead_size: u64,
    /// `ra_pages`: the most read ahead (the queue's `read_ahead_kb`).
    pub ra_pages: u64,
}

impl RaState {
    /// `file_ra_state_init`: off, with `ra_pages` from the queue.
    pub fn new(read_ahead_kb: u32) -> RaState {
        RaState {
            start: 0,
            size: 0,
            flags: 0,
            cache_hit: 0,
            prev_page: u64::MAX,
            ahead_start: 0,
            ahead_size: 0,
            ra_pages: (read_ahead_kb / PAGE_KB) as u64,
        }
    }

    fn min_pages(&self) -> u64 {
        (VM_MIN_READAHEAD_KB / PAGE_KB) as u64
    }

    /// `reset_ahead_window`: keeps `ahead_start + ahead_size` in
    /// `ahead_size` (see the `recheck` case).
    fn reset_ahead_window(&mut self) {
        self.ahead_size = self.ahead_size.wrapping_add(self.ahead_start);
        self.ahead_start = 0;
    }

    /// `ra_off`.
    fn off(&mut self) {
        self.start = 0;
        self.flags = 0;
        self.size = 0;
        self.reset_ahead_window();
    }

    /// `get_next_ra_size`.
    fn next_size(&mut self) -> u64 {
        let (max, min, cur) = (self.ra_pages, self.min_pages(), self.size);
        let new = if self.flags & FLAG_MISS != 0 {
            self.flags &= !FLAG_MISS;
            cur.saturating_sub(2).max(min)
        } else if cur < max / 16 {
            4 * cur
        } else {
            2 * cur
        };
        new.min(max)
    }

    /// `check_ra_success`: nothing started means the pages were cached.
    fn check_success(&mut self, nr: u64, actual: u64) -> bool {
        if actual == 0 {
            self.cache_hit += nr;
            if self.cache_hit >= VM_MAX_CACHE_HIT {
                self.off();
                self.flags |= FLAG_INCACHE;
                return false;
            }
        } else {
            self.cache_hit = 0;
        }
        true
    }

    /// `blockable_page_cache_readahead`.
    fn blockable(&mut self, io: &mut dyn RaIo, offset: u64, nr: u64, block: bool) -> bool {
        if !block && io.read_congested() {
            return false;
        }
        let actual = io.read_pages(offset, nr);
        self.check_success(nr, actual)
    }

    /// `make_ahead_window`.
    fn make_ahead_window(&mut self, io: &mut dyn RaIo, force: bool) -> bool {
        self.ahead_size = self.next_size();
        self.ahead_start = self.start + self.size;
        let block = force || self.prev_page >= self.ahead_start;
        let ok = self.blockable(io, self.ahead_start, self.ahead_size, block);
        if !ok && !force {
            self.reset_ahead_window();
        }
        ok
    }

    /// `handle_ra_miss`: a page read-ahead should have brought was not in
    /// the cache.
    pub fn miss(&mut self) {
        self.flags |= FLAG_MISS;
        self.flags &= !FLAG_INCACHE;
        self.cache_hit = 0;
    }

    /// `page_cache_readahead`: the reader wants `req_size` pages from
    /// `offset`. Starts whatever read-ahead is due and returns the page
    /// at which the reader should call again (`prev_page + 1`).
    pub fn readahead(&mut self, io: &mut dyn RaIo, mut offset: u64, mut req_size: u64) -> u64 {
        if offset == self.prev_page && {
            req_size -= 1;
            req_size != 0
        } {
            offset += 1;
        }
        let sequential = offset == self.prev_page.wrapping_add(1);
        self.prev_page = offset;
        let max = self.ra_pages;
        let newsize = req_size.min(max);
        if newsize == 0 || self.flags & FLAG_INCACHE != 0 {
            return self.prev_page.wrapping_add(1);
        }
        self.prev_page += newsize - 1;
        if sequential && self.size == 0 {
            // The first sequential read: open a window at once.
            self.size = init_size(newsize, max);
            self.start = offset;
            if self.blockable(io, offset, self.size, true) && req_size >= max {
                self.make_ahead_window(io, true);
            }
            return self.prev_page + 1;
        }
        if !sequential {
            // Random: read-ahead off, read just what was asked.
            self.off();
            self.blockable(io, offset, newsize, true);
            return self.prev_page + 1;
        }
        let mut recheck = false;
        if self.ahead_start == 0 && !self.make_ahead_window(io, false) {
            recheck = true;
        }
        if !recheck && self.prev_page >= self.ahead_start {
            // Crossed into the ahead window: it becomes current.
            self.start = self.ahead_start;
            self.size = self.ahead_size;
            self.make_ahead_window(io, false);
            recheck = true;
        }
        if recheck {
            // prev_page shouldn't overrun the ahead window.
            self.prev_page = self.prev_page.min(self.ahead_start.wrapping_add(self.ahead_size).wrapping_sub(1));
        }
        self.prev_page + 1
    }
}

/// `get_init_ra_size`: the first window for a read of `size` pages.
pub fn init_size(size: u64, max: u64) -> u64 {
    let new = size.next_power_of_two();
    if new <= max / 32 {
        new * 4
    } else if new <= max / 4 {
        new * 2
    } else {
        max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blk::VM_MAX_READAHEAD_KB;

    /// A file of `pages` pages, none cached; records every read started.
    struct Io {
        pages: u64,
        cached: Vec<bool>,
        reads: Vec<(u64, u64)>,
        congested: bool,
    }

    impl Io {
        fn new(pages: u64) -> Io {
            Io { pages, cached: vec![false; pages as usize], reads: Vec::new(), congested: false }
        }
    }

    impl RaIo for Io {
        fn read_pages(&mut self, offset: u64, nr: u64) -> u64 {
            let end = (offset + nr).min(self.pages);
            let mut n = 0;
            for p in offset..end {
                if !self.cached[p as usize] {
                    self.cached[p as usize] = true;
                    n += 1;
                }
            }
            if n > 0 {
                self.reads.push((offset, end - offset));
            }
            n
        }
        fn read_congested(&self) -> bool {
            self.congested
        }
    }

    /// A sequential reader of `req` pages per read; the reads it starts.
    fn sequential(req: u64, reads: u64) -> Vec<(u64, u64)> {
        let mut ra = RaState::new(VM_MAX_READAHEAD_KB);
        let mut io = Io::new(1 << 20);
        let mut next = 0;
        for k in 0..reads {
            let off = k * req;
            // do_generic_mapping_read calls in when it reaches next_index.
            if off >= next || k == 0 {
                next = ra.readahead(&mut io, off, req);
            }
            for p in off..off + req {
                assert!(io.cached[p as usize], "page {p} read before it was asked for");
            }
        }
        io.reads
    }

    #[test]
    fn initial_window_sizes_of_2_6_20() {
        // 128 KiB max = 32 pages: a read of 1-2 pages opens 16 KiB, 3-4
        // pages 32 KiB, 5-8 pages 64 KiB, more 128 KiB. (The comment in
        // mm/readahead.c, "1-8 page = 32k initial", is older than the code.)
        assert_eq!(init_size(1, 32), 4);
        assert_eq!(init_size(2, 32), 4);
        assert_eq!(init_size(3, 32), 8);
        assert_eq!(init_size(4, 32), 8);
        assert_eq!(init_size(8, 32), 16);
        assert_eq!(init_size(9, 32), 32);
        assert_eq!(init_size(64, 32), 32);
    }

    /// Issue 9: the windows a 16 KiB sequential reader gets: 32 KiB first,
    /// then ahead windows of 64 and 128 KiB, then 128 KiB each.
    #[test]
    fn sixteen_kib_reads_ramp_to_128_kib() {
        let r = sequential(4, 40);
        assert_eq!(r[..5], [(0, 8), (8, 16), (24, 32), (56, 32), (88, 32)]);
        assert!(r[2..].iter().all(|&(_, n)| n == 32));
    }

    #[test]
    fn four_kib_reads_start_at_16_kib_and_double() {
        let r = sequential(1, 200);
        assert_eq!(r[..5], [(0, 4), (4, 8), (12, 16), (28, 32), (60, 32)]);
    }

    #[test]
    fn a_read_as_large_as_the_max_gets_both_windows_at_once() {
        let r = sequential(32, 3);
        assert_eq!(r[..3], [(0, 32), (32, 32), (64, 32)]);
    }

    #[test]
    fn random_reads_turn_read_ahead_off_and_read_only_the_request() {
        let mut ra = RaState::new(VM_MAX_READAHEAD_KB);
        let mut io = Io::new(4096);
        ra.readahead(&mut io, 1000, 4);
        ra.readahead(&mut io, 17, 4);
        ra.readahead(&mut io, 3000, 2);
        assert_eq!(io.reads, [(1000, 4), (17, 4), (3000, 2)]);
        assert_eq!(ra.size, 0, "off");
        // A sequential read after a random one opens a window again.
        ra.readahead(&mut io, 3002, 2);
        assert_eq!(io.reads.last(), Some(&(3002, 4)));
    }

    #[test]
    fn the_ahead_window_waits_out_congestion() {
        let mut ra = RaState::new(VM_MAX_READAHEAD_KB);
        let mut io = Io::new(4096);
        ra.readahead(&mut io, 0, 4); // current window 0..8
        io.congested = true;
        ra.readahead(&mut io, 4, 4); // the ahead window would start: skipped
        assert_eq!(io.reads, [(0, 8)]);
        assert_eq!(ra.ahead_start, 0);
        io.congested = false;
        ra.readahead(&mut io, 8, 4); // crossed: read blocking now
        assert_eq!(io.reads[1], (8, 16));
    }

    #[test]
    fn a_miss_shrinks_the_next_window() {
        let mut ra = RaState::new(VM_MAX_READAHEAD_KB);
        ra.size = 32;
        ra.miss();
        assert_eq!(ra.next_size(), 30);
        assert_eq!(ra.next_size(), 32, "the flag is spent");
        ra.size = 5;
        ra.miss();
        assert_eq!(ra.next_size(), 4, "not below VM_MIN_READAHEAD");
    }

    #[test]
    fn a_cached_file_turns_read_ahead_off_after_256_hit_pages() {
        let mut ra = RaState::new(VM_MAX_READAHEAD_KB);
        let mut io = Io::new(4096);
        io.cached.iter_mut().for_each(|c| *c = true);
        let mut next = 0;
        let mut k = 0;
        while ra.flags & FLAG_INCACHE == 0 {
            if k * 4 >= next {
                next = ra.readahead(&mut io, k * 4, 4);
            }
            k += 1;
            assert!(k < 1000);
        }
        assert!(io.reads.is_empty());
        // Off now: further reads do nothing until a miss.
        let before = ra;
        ra.readahead(&mut io, k * 4, 4);
        assert_eq!((ra.start, ra.size), (before.start, before.size));
    }
}
