//! The on-drive buffer: segments, what each holds, and the rules that
//! pick a segment for a request.
//!
//! Modelled on DiskSim 4.0's disk cache as its manual describes it (the
//! parameter names are quoted): the buffer is "Number of buffer segments"
//! segments of "Segment size" sectors, each holding one run of
//! consecutive sectors. A read is a whole hit, a partial hit (its first
//! sectors are buffered) or a miss; writes may append to the dirty data of
//! a segment being written back ("Combine seq writes"). Segments are kept
//! in least-recently-used order; a segment may be set aside for writes
//! ("Use separate write segment"), and at most "Maximum number of write
//! segments" hold dirty data. Read hits on data written by earlier writes
//! are allowed or not ("Allow read hits on write data").
//!
//! Which segment a request takes, when several fit, follows DiskSim's
//! preference order (documented at [`SegmentTable::select_read`] and
//! [`SegmentTable::select_write`]). This file keeps the state and its
//! rules; when the media actually reaches a sector is worked out in
//! `hdd.rs` and `media.rs`.

/// How far the drive reads ahead after a read ("Buffer continuous read").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReadAhead {
    /// 0: no read-ahead.
    Off,
    /// 1: up to the end of the track holding the request's last sector.
    TrackEnd,
    /// 2: up to the end of its cylinder.
    CylinderEnd,
    /// 3: until the segment is full ("Maximum read-ahead" sectors past the
    /// request).
    SegmentFull,
    /// 4: to the end of the track after the request's last sector, and one
    /// track further when the segment already spans a track boundary (a
    /// sequential stream): DEC's scheme, one track ahead of a stream.
    DecTrackAhead,
}

/// Write-back caching ("Fast write level").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FastWrite {
    /// 0: a write completes when its data is on the media.
    Off,
    /// 1: completes once its data is in the buffer, for sequential streams.
    Limited,
    /// 2: completes once its data is in the buffer; dirty data is written
    /// before any other request is served.
    Full,
}

/// What "Read-ahead over requested" allows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OverRequested {
    /// 1: prefetched data may replace what the last read returned.
    Replace,
    /// 0: the last read's data is kept; read-ahead stops when the segment
    /// is full (only matters with no "Maximum read-ahead").
    Keep,
    /// -1: the last read's data is dropped from the segment as soon as it
    /// has been sent.
    Drop,
}

/// Cache parameters (sectors are 512 bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct CacheParams {
    /// Whether the buffer caches at all ("Enable caching in buffer"); when
    /// off, segments only match bus and media speeds.
    pub enabled: bool,
    pub segments: u32,
    pub segment_sectors: u32,
    /// Segments that may hold dirty data at once.
    pub write_segments: u32,
    /// One segment is reserved for writes.
    pub dedicated_write_segment: bool,
    pub read_ahead: ReadAhead,
    pub min_read_ahead: u32,
    /// Sectors read ahead beyond the end of a read (0 = up to the segment
    /// size, see `over_requested`).
    pub max_read_ahead: u32,
    pub over_requested: OverRequested,
    /// A whole read hit restarts a stopped read-ahead ("Read-ahead on idle
    /// hit").
    pub read_ahead_on_idle_hit: bool,
    /// Sectors passing under the head before the requested ones are
    /// buffered too ("Read any free blocks").
    pub read_any_free: bool,
    /// Reads may hit data that writes left in the buffer.
    pub read_hits_on_write_data: bool,
    pub fast_write: FastWrite,
    /// Sequential writes share a segment ("Combine seq writes").
    pub combine_writes: bool,
    /// A read whose first sector is being prefetched counts as a partial
    /// hit ("Allow almost read hits").
    pub almost_read_hits: bool,
    /// A prefetch may stop in the middle of a sector ("Stop prefetch in
    /// sector"); if not, it stops at the end of the sector (or of the
    /// positioning) it is in.
    pub stop_prefetch_in_sector: bool,
    /// A write overlapping the prefetching segment stops the prefetch
    /// ("Write hit stop prefetch").
    pub write_hit_stops_prefetch: bool,
    /// Reads that hit partially start sending at once ("Immed transfer
    /// partial hit"); if not, only once the read watermark is buffered.
    pub immediate_partial_transfer: bool,
    /// Zero-latency access ("Immediate buffer read/write"): sectors are
    /// transferred in the order they pass under the head.
    pub immediate_read: bool,
    pub immediate_write: bool,
}

impl CacheParams {
    /// One read segment with read-ahead, as Ruemmler & Wilkes describe the
    /// HP 97560's cache; no write-back.
    pub fn single_segment(segment_sectors: u32, max_read_ahead: u32, write_back: bool) -> CacheParams {
        CacheParams {
            enabled: true,
            segments: 1,
            segment_sectors,
            write_segments: 1,
            dedicated_write_segment: false,
            read_ahead: ReadAhead::SegmentFull,
            min_read_ahead: 0,
            max_read_ahead,
            over_requested: OverRequested::Replace,
            read_ahead_on_idle_hit: true,
            read_any_free: false,
            read_hits_on_write_data: true,
            fast_write: if write_back { FastWrite::Full } else { FastWrite::Off },
            combine_writes: true,
            // A read of the sector the read-ahead is about to reach joins
            // it: back-to-back sequential reads stream rather than lose a
            // revolution each (with this off, as in DiskSim's validated
            // drives, such a read is a miss and waits for the sector to
            // come round again).
            almost_read_hits: true,
            stop_prefetch_in_sector: true,
            write_hit_stops_prefetch: true,
            immediate_partial_transfer: true,
            immediate_read: false,
            immediate_write: false,
        }
    }

    /// The read watermark in sectors for a request of `n` sectors ("High
    /// (read) water mark", by request or by segment size).
    pub fn watermark(fraction: f64, by_request: bool, segment: u32, n: u64) -> u64 {
        if by_request {
            ((segment as u64).min(n) as f64 * fraction).floor().max(1.0) as u64
        } else {
            (segment as f64 * fraction + 0.9999999999) as u64
        }
    }
}

/// What a segment holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SegState {
    Empty,
    /// Valid data, nothing pending.
    Clean,
    /// Data written by the host, not yet on the media, not being written.
    Dirty,
    /// The media is reading into it (a request or a prefetch).
    Reading,
    /// The media is writing from it.
    Writing,
}

/// One buffer segment: sectors `start..end` (while reading, `end` is the
/// frontier as of the last time the drive looked).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Segment {
    pub start: u64,
    pub end: u64,
    pub state: SegState,
    /// The last request to use it was a write.
    pub last_write: bool,
    /// The read-ahead limits set by the last reads: at least up to
    /// `min_ra`, at most up to `max_ra` (exclusive LBNs).
    pub min_ra: u64,
    pub max_ra: u64,
}

impl Segment {
    fn empty() -> Segment {
        Segment { start: 0, end: 0, state: SegState::Empty, last_write: false, min_ra: 0, max_ra: 0 }
    }
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        self.state != SegState::Empty && start < self.end && self.start < end
    }
    pub fn contains(&self, lbn: u64) -> bool {
        self.start <= lbn && lbn < self.end
    }
}

/// How a request matches the buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Hit {
    /// Reads: all of it is buffered.
    Whole,
    /// Reads: its first sectors are buffered.
    Partial,
    /// Writes: it continues the dirty data of the segment.
    Append,
    /// Writes: it ends where the segment's dirty data begins.
    Prepend,
    Miss,
    /// Reads: it overlaps dirty data it may not hit; it must wait until
    /// that data is on the media.
    Collision,
}

/// The segments, in least-recently-used order (index 0 of `order` is the
/// least recently used).
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentTable {
    pub params: CacheParams,
    pub segs: Vec<Segment>,
    order: Vec<usize>,
    /// The segment reserved for writes, if any.
    write_seg: Option<usize>,
}

impl SegmentTable {
    pub fn new(params: CacheParams) -> SegmentTable {
        let n = params.segments.max(1) as usize;
        let write_seg = (params.dedicated_write_segment && n > 1).then_some(0);
        SegmentTable { segs: vec![Segment::empty(); n], order: (0..n).collect(), write_seg, params }
    }

    /// Segments holding dirty data (being written or waiting to be).
    pub fn dirty(&self) -> usize {
        self.segs.iter().filter(|s| matches!(s.state, SegState::Dirty | SegState::Writing)).count()
    }

    /// Marks `i` most recently used.
    pub fn touch(&mut self, i: usize) {
        if let Some(p) = self.order.iter().position(|&s| s == i) {
            // Already the most recent (always, with one segment): nothing
            // to move, and `remove` would call memmove to move nothing.
            if p + 1 != self.order.len() {
                self.order.remove(p);
                self.order.push(i);
            }
        }
    }

    /// Whether `i` is the most recently used segment.
    pub fn is_mru(&self, i: usize) -> bool {
        self.order.last() == Some(&i)
    }

    /// The segment and hit type for a read of `start..end`. `busy` is the
    /// segment the media is reading into for a prefetch that may be
    /// stopped, if any (it is taken only when nothing else fits).
    ///
    /// Preference (DiskSim's, highest first): a whole hit in dirty, then
    /// writing, reading, clean data; a partial hit in the same order; an
    /// empty segment; the least recently used clean one; a prefetching
    /// one. Ties go to the least recently used. The write segment is never
    /// used for reads. Dirty data overlapping the read that it may not hit
    /// is a collision.
    #[inline(always)]
    pub fn select_read(&self, start: u64, end: u64, busy: Option<usize>) -> (Option<usize>, Hit) {
        let p = &self.params;
        let mut best: Option<(i32, usize, Hit)> = None;
        for &i in &self.order {
            let s = &self.segs[i];
            let dirty = matches!(s.state, SegState::Dirty | SegState::Writing);
            if Some(i) == self.write_seg {
                // Reads never use the write segment; they wait while it
                // holds dirty data they overlap.
                if dirty && s.overlaps(start, end) {
                    return (None, Hit::Collision);
                }
                continue;
            }
            let (value, hit) = if s.state == SegState::Empty {
                (3, Hit::Miss)
            } else if !s.contains(start) {
                match s.state {
                    SegState::Reading if p.almost_read_hits && p.enabled && s.end == start => (5, Hit::Partial),
                    SegState::Reading if busy == Some(i) => (1, Hit::Miss),
                    SegState::Clean => (2, Hit::Miss),
                    _ if dirty && start < s.start && s.overlaps(start, end) => return (None, Hit::Collision),
                    _ => (-1, Hit::Miss),
                }
            } else {
                let v = match s.state {
                    SegState::Dirty | SegState::Writing if !p.enabled => -1,
                    SegState::Dirty | SegState::Writing if !p.read_hits_on_write_data => {
                        return (None, Hit::Collision);
                    }
                    SegState::Dirty => 11,
                    SegState::Writing => 10,
                    SegState::Reading if p.enabled => 9,
                    SegState::Clean if p.read_hits_on_write_data || !s.last_write => 8,
                    _ => -1,
                };
                if s.end >= end {
                    (v, Hit::Whole)
                } else {
                    (v - 4, Hit::Partial)
                }
            };
            if value > 0 && best.is_none_or(|b| value > b.0) {
                best = Some((value, i, hit));
            }
        }
        match best {
            Some((_, i, hit)) => (Some(i), hit),
            None => (None, Hit::Miss),
        }
    }

    /// The segment and hit type for a write of `start..end`. `owner_in`
    /// is, for a segment being written back, the first sector not yet on
    /// the media. `busy` as for [`SegmentTable::select_read`].
    ///
    /// Preference (DiskSim's): append to a segment being written, then to
    /// a dirty one; prepend to a dirty one; a clean segment overlapping the
    /// write; an empty one; the least recently used clean one; a
    /// prefetching one. Only the write segment, when there is one. A new
    /// dirty segment needs fewer than "Maximum number of write segments"
    /// dirty ones.
    pub fn select_write(&self, start: u64, end: u64, owner_in: u64, busy: Option<usize>) -> (Option<usize>, Hit) {
        let p = &self.params;
        let room = self.dirty() < p.write_segments as usize;
        let size = p.segment_sectors as u64;
        let mut best: Option<(i32, usize, Hit)> = None;
        for &i in &self.order {
            if self.write_seg.is_some_and(|w| w != i) {
                continue;
            }
            let s = &self.segs[i];
            let (value, hit) = match s.state {
                SegState::Empty => (if room { 3 } else { -1 }, Hit::Miss),
                SegState::Reading => (if room && busy == Some(i) { 1 } else { -1 }, Hit::Miss),
                SegState::Clean => (if !room { -1 } else if s.overlaps(start, end) { 4 } else { 2 }, Hit::Miss),
                SegState::Dirty | SegState::Writing if p.combine_writes => {
                    if start == s.end && start - owner_in < size {
                        (if s.state == SegState::Writing { 7 } else { 6 }, Hit::Append)
                    } else if s.state == SegState::Dirty && end == s.start && size >= s.end - s.start + (end - start) {
                        (5, Hit::Prepend)
                    } else {
                        (-1, Hit::Miss)
                    }
                }
                _ => (-1, Hit::Miss),
            };
            if value > 0 && best.is_none_or(|b| value > b.0) {
                best = Some((value, i, hit));
            }
        }
        match best {
            Some((_, i, hit)) => (Some(i), hit),
            None => (None, Hit::Miss),
        }
    }

    /// A write of `start..end` goes into segment `i`: other clean
    /// segments holding any of those sectors are emptied (their data is
    /// stale).
    pub fn drop_stale(&mut self, keep: usize, start: u64, end: u64) {
        for (j, s) in self.segs.iter_mut().enumerate() {
            if j != keep && s.state == SegState::Clean && s.overlaps(start, end) {
                s.state = SegState::Empty;
            }
        }
    }

    /// Keeps at most the segment size of data, dropping the oldest.
    pub fn wrap(&mut self, i: usize) {
        let size = self.params.segment_sectors as u64;
        let s = &mut self.segs[i];
        s.start = s.start.max(s.end.saturating_sub(size));
    }

    /// The read-ahead limit for a read of `start..end` into segment `i`:
    /// the policy's end ("Buffer continuous read", "Maximum read-ahead"),
    /// never past `capacity`. `track(lbn)` gives the first LBN of the track
    /// holding `lbn`, the first LBN after it, and its sectors per track.
    pub fn read_ahead_limit(
        &self,
        i: usize,
        start: u64,
        end: u64,
        capacity: u64,
        track: impl Fn(u64) -> (u64, u64, u64),
    ) -> u64 {
        let p = &self.params;
        let size = p.segment_sectors as u64;
        let limit = match p.read_ahead {
            ReadAhead::Off => end,
            ReadAhead::DecTrackAhead => {
                let (first, after, _) = track(end.min(capacity.saturating_sub(1)));
                if self.segs[i].start < first {
                    // The segment reaches back before that track: a
                    // sequential stream; stay one more track ahead.
                    after + track(start).2
                } else {
                    after
                }
            }
            _ if p.max_read_ahead > 0 => end + p.max_read_ahead as u64,
            _ if p.over_requested == OverRequested::Keep => {
                let n = end - start;
                if n >= size || size - n < p.min_read_ahead as u64 {
                    end + p.min_read_ahead as u64
                } else {
                    start + size
                }
            }
            _ => end + size,
        };
        limit.min(capacity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> CacheParams {
        CacheParams { segments: 3, ..CacheParams::single_segment(100, 50, false) }
    }

    fn seg(start: u64, end: u64, state: SegState) -> Segment {
        Segment { start, end, state, last_write: false, min_ra: 0, max_ra: 0 }
    }

    #[test]
    fn read_selection_prefers_hits_then_empty_then_lru_clean() {
        let mut t = SegmentTable::new(params());
        assert_eq!(t.select_read(10, 20, None), (Some(0), Hit::Miss), "first empty segment");
        t.segs[0] = seg(0, 30, SegState::Clean);
        t.segs[1] = seg(100, 110, SegState::Clean);
        assert_eq!(t.select_read(10, 20, None), (Some(0), Hit::Whole));
        assert_eq!(t.select_read(20, 40, None), (Some(0), Hit::Partial));
        assert_eq!(t.select_read(500, 510, None), (Some(2), Hit::Miss), "an empty segment before a clean one");
        t.segs[2] = seg(200, 210, SegState::Clean);
        t.touch(0);
        assert_eq!(t.select_read(500, 510, None), (Some(1), Hit::Miss), "least recently used clean");
        // A segment being read ahead is a hit if it holds the start, and
        // otherwise taken only when it is the stoppable prefetch.
        t.segs[1] = seg(100, 110, SegState::Reading);
        t.segs[2].state = SegState::Reading;
        t.segs[0].state = SegState::Reading;
        assert_eq!(t.select_read(105, 108, Some(1)), (Some(1), Hit::Whole));
        assert_eq!(t.select_read(500, 510, Some(1)), (Some(1), Hit::Miss));
        assert_eq!(t.select_read(500, 510, None), (None, Hit::Miss));
        // Almost read hits: the sector being prefetched is the first.
        t.params.almost_read_hits = true;
        assert_eq!(t.select_read(110, 115, Some(1)), (Some(1), Hit::Partial));
    }

    #[test]
    fn read_hits_on_write_data_and_collisions() {
        let mut t = SegmentTable::new(params());
        t.segs[0] = Segment { last_write: true, ..seg(50, 60, SegState::Clean) };
        assert_eq!(t.select_read(52, 55, None), (Some(0), Hit::Whole), "hits data a write left");
        t.params.read_hits_on_write_data = false;
        assert_eq!(t.select_read(52, 55, None), (Some(1), Hit::Miss), "not allowed: a miss elsewhere");
        t.segs[0].state = SegState::Writing;
        assert_eq!(t.select_read(45, 55, None), (None, Hit::Collision), "must wait for the dirty data");
        // The separate write segment (the HP C2247A's) never serves reads.
        let mut p = params();
        p.dedicated_write_segment = true;
        let mut t = SegmentTable::new(p);
        t.segs[0] = Segment { last_write: true, ..seg(50, 60, SegState::Clean) };
        assert_eq!(t.select_read(52, 55, None), (Some(1), Hit::Miss));
        t.segs[0].state = SegState::Writing;
        assert_eq!(t.select_read(52, 55, None), (None, Hit::Collision));
    }

    #[test]
    fn write_selection_appends_and_limits_dirty_segments() {
        let mut t = SegmentTable::new(params());
        t.segs[0] = seg(0, 16, SegState::Writing);
        assert_eq!(t.select_write(16, 24, 4, None), (Some(0), Hit::Append));
        assert_eq!(t.select_write(18, 24, 4, None).1, Hit::Miss, "a gap: no append");
        assert_eq!(t.select_write(16, 24, 4, None).0, Some(0));
        // One write segment allowed and it is dirty: no new dirty segment.
        assert_eq!(t.select_write(500, 508, 0, None), (None, Hit::Miss));
        t.params.write_segments = 2;
        assert_eq!(t.select_write(500, 508, 0, None), (Some(1), Hit::Miss));
        t.segs[0] = seg(40, 50, SegState::Dirty);
        assert_eq!(t.select_write(30, 40, 0, None), (Some(0), Hit::Prepend));
        t.params.combine_writes = false;
        assert_eq!(t.select_write(50, 60, 45, None).1, Hit::Miss);
        // A clean segment holding stale copies is emptied.
        t.segs[2] = seg(100, 120, SegState::Clean);
        t.drop_stale(1, 110, 130);
        assert_eq!(t.segs[2].state, SegState::Empty);
    }

    #[test]
    fn read_ahead_limits_by_policy() {
        let mut t = SegmentTable::new(params());
        // 100-sector tracks.
        let tracks = |lbn: u64| (lbn / 100 * 100, (lbn / 100 + 1) * 100, 100);
        t.segs[0] = seg(110, 120, SegState::Reading);
        assert_eq!(t.read_ahead_limit(0, 110, 120, 1 << 30, tracks), 170, "50 past the request");
        assert_eq!(t.read_ahead_limit(0, 110, 120, 150, tracks), 150, "never past the disk");
        t.params.read_ahead = ReadAhead::DecTrackAhead;
        assert_eq!(t.read_ahead_limit(0, 110, 120, 1 << 30, tracks), 200, "to the track's end");
        t.segs[0].start = 90;
        assert_eq!(t.read_ahead_limit(0, 110, 120, 1 << 30, tracks), 300, "a stream: one track more");
        t.params.read_ahead = ReadAhead::SegmentFull;
        t.params.max_read_ahead = 0;
        t.params.over_requested = OverRequested::Keep;
        assert_eq!(t.read_ahead_limit(0, 110, 120, 1 << 30, tracks), 210, "fill the segment, keep the request");
        t.params.over_requested = OverRequested::Replace;
        assert_eq!(t.read_ahead_limit(0, 110, 120, 1 << 30, tracks), 220);
        assert_eq!(CacheParams::watermark(0.75, true, 256, 10), 7);
        assert_eq!(CacheParams::watermark(0.0, true, 256, 10), 1);
        assert_eq!(CacheParams::watermark(0.5, false, 256, 10), 128);
    }
}
