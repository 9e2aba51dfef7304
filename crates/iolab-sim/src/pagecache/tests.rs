//! The page cache against the block layer, without an engine: the bios a
//! buffered read builds, read-ahead through the cache, the write path and
//! the dirty limits, eviction.

use super::*;
use crate::blk::QueueSpec;

/// File 0 of process 0 is 64 MiB from sector 1000, contiguous.
struct Contiguous;

impl FileMap for Contiguous {
    fn sector(&self, _pid: ProcessId, _file: u32, page: u64) -> u64 {
        1000 + page * PAGE_SECTORS
    }
    fn pages(&self, _pid: ProcessId, _file: u32) -> u64 {
        64 * 256
    }
}

fn cache(memory_mb: u32) -> (PageCache, BlockLayer) {
    let vm = VmSpec { memory_mb, ..VmSpec::default() };
    let q = QueueSpec::default();
    (PageCache::new(&vm, q.read_ahead_kb, q.max_sectors(), 99).unwrap(), BlockLayer::new(&q).unwrap())
}

fn read(page: u64, pages: u32) -> FileOp {
    FileOp { file: 0, page, pages, dir: Dir::Read, partial: false, sectors: pages * PAGE_SECTORS as u32 }
}

/// Complete every bio in `out` at once; returns (first page, pages) of each.
fn complete_all(c: &mut PageCache, blk: &mut BlockLayer) -> Vec<(u32, u32)> {
    let bios: Vec<Bio> = c.out.drain(..).collect();
    bios.iter()
        .map(|b| {
            let Origin::Cache { file, page, pages } = b.origin else { panic!("a cache bio") };
            c.io_done(file, page, pages, b.dir, blk);
            (page, pages)
        })
        .collect()
}

#[test]
fn a_sequential_reader_reads_the_read_ahead_windows_and_waits_only_for_the_first() {
    let (mut c, mut blk) = cache(512);
    let t = SimTime::ZERO;
    c.start(0, read(0, 4), &Contiguous);
    assert_eq!(c.step(0, &Contiguous, &mut blk, t), Step::WaitPage);
    assert_eq!(c.out[0].sector, 1000);
    assert_eq!(complete_all(&mut c, &mut blk), [(0, 8)], "the first window: 32 KiB");
    assert_eq!(blk.fx.wake, [(0, Wake::Page)]);
    assert_eq!(c.step(0, &Contiguous, &mut blk, t), Step::Done);
    // The next read starts the ahead window and finds its pages cached.
    c.start(0, read(4, 4), &Contiguous);
    assert_eq!(c.step(0, &Contiguous, &mut blk, t), Step::Done);
    assert_eq!(complete_all(&mut c, &mut blk), [(8, 16)], "ahead: 64 KiB, not waited for");
    for k in 2..20 {
        c.start(0, read(4 * k, 4), &Contiguous);
        assert_eq!(c.step(0, &Contiguous, &mut blk, t), Step::Done, "read {k}");
        complete_all(&mut c, &mut blk);
    }
    assert_eq!(c.stats.readpage_pages, 0);
    assert!(c.stats.hits >= 76);
}

#[test]
fn a_page_read_in_flight_is_waited_for_and_the_waiter_woken_once() {
    let (mut c, mut blk) = cache(512);
    let t = SimTime::ZERO;
    c.start(0, read(0, 1), &Contiguous);
    assert_eq!(c.step(0, &Contiguous, &mut blk, t), Step::WaitPage);
    // Stepping again before the read completes: still waiting, one waiter.
    assert_eq!(c.step(0, &Contiguous, &mut blk, t), Step::WaitPage);
    complete_all(&mut c, &mut blk);
    assert_eq!(blk.fx.wake.len(), 1);
}

#[test]
fn a_random_reader_reads_only_what_it_asks_for() {
    let (mut c, mut blk) = cache(512);
    let t = SimTime::ZERO;
    for page in [5000u64, 17, 9000, 300] {
        c.start(0, read(page, 2), &Contiguous);
        assert_eq!(c.step(0, &Contiguous, &mut blk, t), Step::WaitPage);
        let r = complete_all(&mut c, &mut blk);
        assert_eq!(c.step(0, &Contiguous, &mut blk, t), Step::Done);
        if page != 5000 {
            assert_eq!(r, [(page as u32, 2)], "page {page}");
        }
    }
}

fn write(page: u64, pages: u32) -> FileOp {
    FileOp { file: 0, page, pages, dir: Dir::Write, partial: false, sectors: pages * PAGE_SECTORS as u32 }
}

#[test]
fn writes_dirty_pages_without_io_below_the_limits() {
    let (mut c, mut blk) = cache(512);
    for p in 0..100 {
        c.start(0, write(p, 1), &Contiguous);
        assert_eq!(c.step(0, &Contiguous, &mut blk, SimTime::ZERO), Step::Done);
    }
    assert!(c.out.is_empty());
    assert_eq!(c.counts(), (100, 100, 0));
    assert_eq!(c.page_state(0, 0, 7) & (DIRTY | UPTODATE), DIRTY | UPTODATE);
}

#[test]
fn the_dirty_limits_of_2_6_20() {
    let (c, _) = cache(512);
    let r = c.report();
    // 512 MiB = 131072 pages: 10% and 40%.
    assert_eq!((r.background_limit_pages, r.dirty_limit_pages), (13107, 52428));
    assert_eq!(c.limits.ratelimit_pages, 1024, "memory/32, capped at 4 MiB of pages");
    assert_eq!(c.limits.ratelimit(true), 8);
}

#[test]
fn above_the_dirty_limit_a_writer_writes_back_itself_then_sleeps() {
    let (mut c, mut blk) = cache(16); // 4096 pages: dirty limit 1638, ratelimit 128
    let t = SimTime::ZERO;
    let mut dirtied = 0;
    let mut submitted = 0;
    let mut first_balance = None;
    'writing: for p in 0..4000 {
        c.start(0, write(p, 1), &Contiguous);
        dirtied += 1;
        loop {
            match c.step(0, &Contiguous, &mut blk, t) {
                Step::Done => break,
                Step::Submit => {
                    first_balance.get_or_insert(dirtied);
                    for b in c.out.drain(..) {
                        assert_eq!((b.pid, b.dir, b.sync), (0, Dir::Write, false), "the writer's own write-back");
                        submitted += b.nr_sectors as u64 / PAGE_SECTORS;
                    }
                }
                // Nothing completes here, so the pages stay under
                // write-back: once nothing is left dirty to write, the
                // writer sleeps in congestion_wait.
                Step::Sleep => break 'writing,
                Step::WaitPage => panic!("full-page writes read nothing"),
            }
        }
    }
    assert_eq!(first_balance, Some(13 * 128), "the first look past 1638 dirty pages, every 128 pages");
    assert_eq!(c.nr_dirty, 0);
    assert_eq!(submitted, dirtied, "48 pages a look, a look every 8 pages while the limit is exceeded");
    assert_eq!(c.stats.throttled, 1);
    assert!(blk.fx.timers.iter().any(|(at, t)| *at == SimTime(100_000_000) && matches!(t, KernelTimer::Sleep { .. })));
    // Background write-back was started on the way (above 10%).
    assert!(c.flusher.busy());
}

#[test]
fn the_flusher_writes_back_in_max_sized_bios_until_below_the_background_mark() {
    let (mut c, mut blk) = cache(64); // background 1638 pages
    let t = SimTime::ZERO;
    for p in 0..3000 {
        c.start(0, write(p, 1), &Contiguous);
        while c.step(0, &Contiguous, &mut blk, t) == Step::Submit {}
    }
    assert!(c.flusher.busy(), "woken above the background mark");
    let mut pages = 0;
    loop {
        match c.step(99, &Contiguous, &mut blk, t) {
            Step::Submit => {
                for b in c.out.drain(..) {
                    assert_eq!(b.pid, 99, "charged to pdflush");
                    assert!(b.nr_sectors <= 1024);
                    pages += b.nr_sectors as u64 / PAGE_SECTORS;
                }
            }
            Step::Done => break,
            Step::Sleep => {
                // congestion_wait after a short pass: wake it.
                let Some((_, KernelTimer::Sleep { pid, token })) = blk.fx.timers.pop() else { panic!("a sleep timer") };
                c.sleep_timer(pid, token, &mut blk);
            }
            Step::WaitPage => unreachable!(),
        }
    }
    assert!(!c.flusher.busy());
    let (_, dirty, writeback) = c.counts();
    assert!(dirty < 1638 && dirty + pages == 3000, "dirty {dirty}, written {pages}");
    assert_eq!(writeback, pages);
}

#[test]
fn a_full_cache_evicts_clean_pages_not_dirty_ones() {
    let (mut c, mut blk) = cache(16); // capacity 3584 pages
    let t = SimTime::ZERO;
    for p in 0..100 {
        c.start(0, write(p, 1), &Contiguous);
        c.step(0, &Contiguous, &mut blk, t);
    }
    // Read 5000 pages further on: the cache fills and evicts clean pages.
    for k in 0..5000 {
        c.start(0, read(1000 + k, 1), &Contiguous);
        while c.step(0, &Contiguous, &mut blk, t) == Step::WaitPage {
            complete_all(&mut c, &mut blk);
        }
    }
    assert!(c.stats.evicted > 1000);
    assert!(c.nr_pages <= c.capacity + 1);
    for p in 0..100 {
        assert_ne!(c.page_state(0, 0, p) & DIRTY, 0, "dirty page {p} kept");
    }
}
