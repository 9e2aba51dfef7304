//! The on-drive cache: what the buffer holds, and the read-ahead stream.
//!
//! Modelled on the HP C2247A's buffer as DiskSim describes it (two
//! segments, one kept for writes; "Read-ahead over requested", "Read-ahead
//! on idle hit", "Allow read hits on write data", "Write hit stop
//! prefetch"): after a read miss the drive keeps reading the following
//! sectors into the read segment while it is otherwise idle, up to a
//! read-ahead limit beyond the last request, so a later sequential read
//! finds its data already there. A read hit moves the limit on; a write or
//! a read miss needs the mechanism and stops the read-ahead. The write
//! segment holds the last write's data, which a later read may hit.
//!
//! This file keeps only the state and its rules; when the read-ahead
//! actually reaches a sector depends on the mechanism and is worked out in
//! `hdd.rs`.

/// Cache parameters (sectors are 512 bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct CacheParams {
    /// Whether the buffer caches at all ("Enable caching in buffer").
    pub enabled: bool,
    /// Size of the read segment.
    pub segment_sectors: u32,
    /// Sectors read ahead beyond the end of the last read.
    pub max_read_ahead: u32,
    /// Whether reads may hit data the last write left in the buffer.
    pub read_hits_on_write_data: bool,
    /// Write-back ("fast writes"): a write completes once its data is in
    /// the buffer and the media write follows in the background.
    pub write_back: bool,
}

/// A half-open range of sectors [start, end).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    pub start: u64,
    pub end: u64,
}

impl Extent {
    pub fn contains(&self, start: u64, end: u64) -> bool {
        self.start <= start && end <= self.end
    }
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        start < self.end && self.start < end
    }
}

/// A read-ahead in progress: from `from_ns` (absolute, ns) the mechanism,
/// standing at `pos` (cylinder, head), reads sectors `next..limit` in turn.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ReadAhead {
    pub next: u64,
    pub limit: u64,
    pub from_ns: f64,
    pub pos: (u32, u32),
}

/// What the buffer holds. `read.end` is the read-ahead frontier as of the
/// last time the drive looked; sectors up to the stream's progress at a
/// later instant count as held too (see `Hdd`).
#[derive(Clone, Debug, PartialEq)]
pub struct Cache {
    pub params: CacheParams,
    pub read: Option<Extent>,
    pub write: Option<Extent>,
    pub ahead: Option<ReadAhead>,
}

impl Cache {
    pub fn new(params: CacheParams) -> Cache {
        Cache { params, read: None, write: None, ahead: None }
    }

    /// Whether [start, end) is entirely in the buffer, given the read
    /// segment's frontier `read_end` at the time of asking.
    pub fn holds(&self, start: u64, end: u64, read_end: u64) -> bool {
        if !self.params.enabled {
            return false;
        }
        let in_read = self.read.is_some_and(|r| Extent { start: r.start, end: read_end }.contains(start, end));
        let in_write = self.params.read_hits_on_write_data
            && self.write.is_some_and(|w| w.contains(start, end));
        in_read || in_write
    }

    /// Whether a read starting at `start` continues the stream being read
    /// ahead: it begins inside the read segment or exactly at its frontier.
    pub fn continues_stream(&self, start: u64, read_end: u64) -> bool {
        self.params.enabled
            && self.ahead.is_some()
            && self.read.is_some_and(|r| r.start <= start && start <= read_end)
    }

    /// Moves the read segment's frontier to `end`, dropping the oldest
    /// sectors so the segment never exceeds its size.
    pub fn advance(&mut self, end: u64) {
        if let Some(r) = &mut self.read {
            r.end = r.end.max(end);
            let keep = self.params.segment_sectors as u64;
            r.start = r.start.max(r.end.saturating_sub(keep));
        }
    }

    /// After the media read of a miss: the segment holds [start, end) and
    /// the read-ahead continues from `end`, the mechanism at `pos` at
    /// `at_ns`. `capacity` bounds the read-ahead.
    pub fn after_miss(&mut self, start: u64, end: u64, at_ns: f64, pos: (u32, u32), capacity: u64) {
        if !self.params.enabled {
            return;
        }
        self.read = Some(Extent { start, end });
        self.advance(end);
        let limit = (end + self.params.max_read_ahead as u64).min(capacity);
        self.ahead = (limit > end).then_some(ReadAhead { next: end, limit, from_ns: at_ns, pos });
    }

    /// After a read hit ending at `end`: read ahead further ("Read-ahead on
    /// idle hit"); a stopped stream restarts from the frontier at `at_ns`.
    pub fn after_hit(&mut self, end: u64, at_ns: f64, pos: (u32, u32), capacity: u64) {
        let Some(r) = self.read else { return };
        // The limit counts from the end of this request, not from the
        // frontier: reading further would push out data not yet asked for.
        let limit = (end + self.params.max_read_ahead as u64).min(capacity);
        match &mut self.ahead {
            Some(a) => a.limit = a.limit.max(limit),
            None if limit > r.end => {
                self.ahead = Some(ReadAhead { next: r.end, limit, from_ns: at_ns, pos })
            }
            None => {}
        }
    }

    /// A write of [start, end): read-ahead stops ("Write hit stop
    /// prefetch"), stale read data goes, the write segment takes the data.
    pub fn on_write(&mut self, start: u64, end: u64) {
        self.ahead = None;
        if self.read.is_some_and(|r| r.overlaps(start, end)) {
            self.read = None;
        }
        if self.params.enabled {
            self.write = Some(Extent { start, end });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> Cache {
        Cache::new(CacheParams {
            enabled: true,
            segment_sectors: 256,
            max_read_ahead: 128,
            read_hits_on_write_data: true,
            write_back: false,
        })
    }

    #[test]
    fn miss_then_stream_then_write() {
        let mut c = cache();
        c.after_miss(1000, 1008, 5.0, (3, 1), 1 << 30);
        let a = c.ahead.unwrap();
        assert_eq!((a.next, a.limit), (1008, 1136));
        assert!(c.holds(1000, 1008, 1008));
        assert!(!c.holds(1000, 1009, 1008));
        assert!(c.holds(1008, 1016, 1016), "read-ahead progress counts");
        assert!(c.continues_stream(1008, 1008));
        assert!(!c.continues_stream(1009, 1008));
        c.after_hit(1100, 9.0, (3, 1), 1 << 30);
        assert_eq!(c.ahead.unwrap().limit, 1228);
        c.after_hit(1010, 9.0, (3, 1), 1 << 30);
        assert_eq!(c.ahead.unwrap().limit, 1228, "a hit never pulls the limit back");
        c.advance(1300);
        assert_eq!(c.read.unwrap().start, 1300 - 256, "segment size bounds what is kept");
        c.on_write(1290, 1292);
        assert!(c.ahead.is_none() && c.read.is_none());
        assert!(c.holds(1290, 1292, 0), "reads hit the write segment");
    }

    #[test]
    fn disabled_cache_never_hits() {
        let mut c = cache();
        c.params.enabled = false;
        c.after_miss(0, 8, 0.0, (0, 0), 100);
        assert!(!c.holds(0, 8, 8));
        c.on_write(0, 8);
        assert!(!c.holds(0, 8, 8));
    }
}
