//! A latency histogram that costs memory only for the values it has seen.
//!
//! Buckets are those of an HdrHistogram with 3 significant digits and a
//! lowest value of 1 (2,048 sub-buckets; every value below 2,048 exact,
//! above it buckets of 1/1024 of their power of two), so percentiles are
//! the same numbers an HdrHistogram gives, exact to 0.1%. But where an
//! HdrHistogram keeps a counter for every bucket up to its highest value
//! (about 170 KiB for latencies up to a second), this one keeps a sorted
//! list of the buckets in use: a process whose latencies fall in a few
//! hundred buckets costs a few KiB. With one histogram per process and per
//! class, that is what keeps 4,096 processes in tens of MiB instead of
//! more than a GiB, whatever the number of requests.
//!
//! A value whose bucket is not in the list yet is not inserted at once (an
//! insertion shifts the rest of both lists: about 300 instructions per
//! simulated request once a process has seen thousands of buckets); its
//! bucket waits in a short unsorted list and joins the sorted one in a
//! single merge when that list has grown by a fraction of the sorted one's
//! length, so the cost per value stays constant. Every reading merges first.
//!
//! Finding a value's bucket in the sorted list is a binary search over
//! thousands of entries once a process has run a while (about 95
//! instructions per value on the bench's closed load). So a list that is
//! dense enough also gets an index: one bit per possible bucket over the
//! blocks of 64 buckets the list spans, and per block the position in the
//! list of its first bucket; a value's bucket is then a bit test and a
//! popcount. It is kept only while the list has at least as many buckets
//! as the index has blocks, so it never costs more memory than the list.
//!
//! A list denser still, of at least [`DENSE_MIN`] buckets with at least one
//! slot in [`DENSE_SHARE`] of the blocks it spans in use, becomes a plain
//! array of counts over those blocks: recording a value is then an increment, with no list, no
//! pending merges and no index (on the bench's closed load the merges and
//! the index cost about 110 instructions per request at 2×10^5 requests).
//! The array costs at most 8·DENSE_SHARE = 32 bytes per bucket in use
//! against the list's 10; a value that widens it beyond that share turns
//! it back into the list. Every reading sees the same (bucket, count)
//! pairs either way.

/// Sub-buckets per power of two above the exact range (3 significant digits).
const SUB: u64 = 1024;
/// Values below this are their own bucket.
const EXACT: u64 = 2 * SUB;

/// Parts beyond which [`Histogram::sum`] counts into a dense array.
const DENSE_FROM: usize = 16;

/// The bucket of `v` (≥ 1). Fits in a u16: the largest is 56,319.
fn index_of(v: u64) -> u16 {
    if v < EXACT {
        return v as u16;
    }
    let shift = 63 - v.leading_zeros() as u64 - 10; // ≥ 1
    (EXACT + (shift - 1) * SUB + ((v >> shift) - SUB)) as u16
}

/// The lowest and highest value of bucket `i`.
fn range_of(i: u16) -> (u64, u64) {
    let i = i as u64;
    if i < EXACT {
        return (i, i);
    }
    let shift = (i - EXACT) / SUB + 1;
    let low = ((i - EXACT) % SUB + SUB) << shift;
    // the last bucket ends at u64::MAX: low + 2^shift itself would overflow
    (low, low + ((1u64 << shift) - 1))
}

/// New buckets wait until there are this many at least, or a quarter of
/// the sorted list's length (the merge then costs about 4 moves per value;
/// with an eighth, 8 moves cost about 20 instructions more per request on
/// the bench's closed load, and the pending list is at most a tenth of the
/// list's bytes, whose entries take 10 bytes to its 2).
const PENDING_MIN: usize = 16;

/// A histogram whose buckets in use fill at least one slot in this many
/// of the blocks they span keeps an array of counts (see the top)...
const DENSE_SHARE: usize = 4;
/// ...if it has at least this many buckets in use: a histogram of a few
/// hundred values (each of 4,096 processes at 10^6 requests has about 250)
/// keeps its list, where an array would cost up to three times its bytes
/// for nothing much. The bench's closed load, thousands of buckets per
/// histogram, is unaffected (a minimum of 512 cost noop 7 instructions
/// per request there, 1,024 cost it 51: its histograms fill up later).
const DENSE_MIN: usize = 256;

/// Counts per bucket, only for buckets in use.
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    /// Bucket indices, ascending.
    buckets: Vec<u16>,
    counts: Vec<u64>,
    /// One entry per value recorded into a bucket missing from `buckets`
    /// (unsorted, repeats allowed), merged in by [`Histogram::merge_pending`].
    pending: Vec<u16>,
    total: u64,
    /// The index (empty when the list is too sparse for it): bit `b` of
    /// `masks[k]` says whether bucket `64·(first_block + k) + b` is in
    /// `buckets`, and `ranks[k]` is where block `first_block + k`'s first
    /// bucket would sit in `buckets` (the buckets in the blocks before).
    masks: Vec<u64>,
    ranks: Vec<u16>,
    first_block: usize,
    /// The array of counts of a dense histogram (empty otherwise: then the
    /// list holds the counts; when it is not, the list, `pending` and the
    /// index are empty): `dense[k]` counts bucket `dense_base + k`, and
    /// `dense_base` is a multiple of 64, the array's length too.
    dense: Vec<u64>,
    dense_base: usize,
    /// Buckets of `dense` in use (non-zero).
    dense_used: usize,
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram::default()
    }

    /// Record one value (0 is recorded as 1, as a latency is never free).
    /// Inlined: once per request, and in a dense histogram a few
    /// instructions (the rare paths are calls of their own).
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index_of(v.max(1));
        self.total += 1;
        if !self.dense.is_empty() {
            // wrapping_sub sends a bucket below the array past its end too.
            match self.dense.get_mut((i as usize).wrapping_sub(self.dense_base)) {
                Some(c) => {
                    self.dense_used += (*c == 0) as usize;
                    *c += 1;
                }
                None => self.widen_dense(i),
            }
            return;
        }
        self.record_listed(i);
    }

    /// [`Histogram::record`] into the list (not dense), `total` counted.
    #[inline(never)]
    fn record_listed(&mut self, i: u16) {
        let found = if self.masks.is_empty() {
            self.buckets.binary_search(&i).ok()
        } else {
            // A block outside the index holds no bucket of the list (the
            // index spans all of them): wrapping_sub sends a block below
            // the first one past the end too.
            let k = (i as usize >> 6).wrapping_sub(self.first_block);
            match self.masks.get(k) {
                Some(&m) if m >> (i & 63) & 1 == 1 => {
                    let below = m & ((1u64 << (i & 63)) - 1);
                    Some(self.ranks[k] as usize + below.count_ones() as usize)
                }
                _ => None,
            }
        };
        match found {
            Some(k) => self.counts[k] += 1,
            None => {
                self.pending.push(i);
                if self.pending.len() >= PENDING_MIN.max(self.buckets.len() / 4) {
                    self.merge_pending();
                    self.densify();
                }
            }
        }
    }

    /// The first and last block (of 64 buckets) a span of buckets covers.
    fn blocks(lo: u16, hi: u16) -> (usize, usize) {
        (lo as usize >> 6, hi as usize >> 6)
    }

    /// Turns the list (merged, nothing pending) into the array of counts
    /// when it is dense enough.
    fn densify(&mut self) {
        let (Some(&lo), Some(&hi)) = (self.buckets.first(), self.buckets.last()) else {
            return;
        };
        let (lo, hi) = Histogram::blocks(lo, hi);
        let slots = (hi - lo + 1) * 64;
        if self.buckets.len() < DENSE_MIN || slots > DENSE_SHARE * self.buckets.len() {
            return;
        }
        let mut dense = vec![0u64; slots];
        for (&i, &c) in self.buckets.iter().zip(&self.counts) {
            dense[i as usize - lo * 64] = c;
        }
        self.dense = dense;
        self.dense_base = lo * 64;
        self.dense_used = self.buckets.len();
        self.masks = Vec::new();
        self.buckets = Vec::new();
        self.counts = Vec::new();
        self.pending = Vec::new();
        self.ranks = Vec::new();
    }

    /// The (bucket, count) pairs of the array in use, ascending.
    fn dense_pairs(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        let base = self.dense_base;
        self.dense.iter().enumerate().filter(|(_, &c)| c > 0).map(move |(k, &c)| ((base + k) as u16, c))
    }

    /// A value in bucket `i` outside the array (`total` counted): the array
    /// widens to the blocks up to `i` if it stays dense enough, else the
    /// counts go back to the list.
    #[cold]
    #[inline(never)]
    fn widen_dense(&mut self, i: u16) {
        let (lo, hi) = (self.dense_base >> 6, (self.dense_base + self.dense.len()) / 64 - 1);
        let (lo, hi) = (lo.min(i as usize >> 6), hi.max(i as usize >> 6));
        let slots = (hi - lo + 1) * 64;
        if slots <= DENSE_SHARE * (self.dense_used + 1) {
            let mut dense = Vec::with_capacity(slots);
            dense.resize(self.dense_base - lo * 64, 0);
            dense.extend_from_slice(&self.dense);
            dense.resize(slots, 0);
            self.dense = dense;
            self.dense_base = lo * 64;
            self.dense[i as usize - self.dense_base] = 1;
            self.dense_used += 1;
            return;
        }
        let (buckets, counts) = self.dense_pairs().unzip();
        (self.buckets, self.counts) = (buckets, counts);
        self.dense = Vec::new();
        self.dense_used = 0;
        self.reindex(&[]);
        self.record_listed(i);
    }

    /// Brings the index up to date with `buckets` after a merge that added
    /// `fresh` (ascending, all new): their bits set, the ranks counted
    /// again; the whole index rebuilt when the list's span of blocks
    /// changed, dropped when the list is sparser than one bucket per block.
    fn reindex(&mut self, fresh: &[(u16, u64)]) {
        let (Some(&lo), Some(&hi)) = (self.buckets.first(), self.buckets.last()) else {
            return;
        };
        let (lo, hi) = (lo as usize >> 6, hi as usize >> 6);
        let blocks = hi - lo + 1;
        if blocks > self.buckets.len() {
            self.masks = Vec::new();
            self.ranks = Vec::new();
            return;
        }
        if self.masks.is_empty() || self.first_block != lo || self.masks.len() != blocks {
            self.first_block = lo;
            self.masks.clear();
            self.masks.resize(blocks, 0);
            for &i in &self.buckets {
                self.masks[(i as usize >> 6) - lo] |= 1 << (i & 63);
            }
        } else {
            for &(i, _) in fresh {
                self.masks[(i as usize >> 6) - lo] |= 1 << (i & 63);
            }
        }
        self.ranks.clear();
        let mut before = 0u32;
        for &m in &self.masks {
            // At most 56,320 buckets exist (index_of's largest is 56,319):
            // a rank fits in a u16.
            self.ranks.push(before as u16);
            before += m.count_ones();
        }
    }

    /// The pending buckets sorted, counted and merged into the sorted list
    /// in one pass from the back (each entry moves once).
    fn merge_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.pending.sort_unstable();
        // Runs of the pending list: (bucket, count), ascending.
        let mut runs: Vec<(u16, u64)> = Vec::new();
        for &i in &self.pending {
            match runs.last_mut() {
                Some((j, c)) if *j == i => *c += 1,
                _ => runs.push((i, 1)),
            }
        }
        self.pending.clear();
        // Between merges the sorted list does not change, and a value goes
        // to `pending` only when its bucket is missing: every run is new.
        let fresh = runs.len();
        let old = self.buckets.len();
        self.buckets.resize(old + fresh, 0);
        self.counts.resize(old + fresh, 0);
        // Merge from the back, runs in descending order: `a` is one past the
        // old entry moved next, `w` one past the slot written next.
        let (mut a, mut w) = (old, old + fresh);
        for &(i, c) in runs.iter().rev() {
            while a > 0 && self.buckets[a - 1] > i {
                a -= 1;
                w -= 1;
                self.buckets[w] = self.buckets[a];
                self.counts[w] = self.counts[a];
            }
            w -= 1;
            self.buckets[w] = i;
            self.counts[w] = c;
        }
        self.reindex(&runs);
    }

    /// This histogram with every pending bucket merged (borrowed when there
    /// is none), for the readings below.
    fn merged_view(&self) -> std::borrow::Cow<'_, Histogram> {
        if !self.dense.is_empty() {
            let (buckets, counts) = self.dense_pairs().unzip();
            std::borrow::Cow::Owned(Histogram { buckets, counts, total: self.total, ..Histogram::default() })
        } else if self.pending.is_empty() {
            std::borrow::Cow::Borrowed(self)
        } else {
            let mut h = self.clone();
            h.merge_pending();
            std::borrow::Cow::Owned(h)
        }
    }

    /// Values recorded.
    pub fn len(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The value at quantile `q` (0..=1), as an HdrHistogram reports it:
    /// the highest value of the bucket holding the ceil(q·n)-th value
    /// (at least the first); 0 when empty.
    pub fn value_at_quantile(&self, q: f64) -> u64 {
        let view = self.merged_view();
        let this: &Histogram = &view;
        let q = q.min(1.0);
        let target = ((q * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (&i, &c) in this.buckets.iter().zip(&this.counts) {
            seen += c;
            if seen >= target {
                let (low, high) = range_of(i);
                return if q == 0.0 { low } else { high };
            }
        }
        0
    }

    /// The highest value of the bucket of the largest value recorded.
    pub fn max(&self) -> u64 {
        if let Some(k) = self.dense.iter().rposition(|&c| c > 0) {
            return range_of((self.dense_base + k) as u16).1;
        }
        let top = self.buckets.last().copied().max(self.pending.iter().copied().max());
        top.map_or(0, |i| range_of(i).1)
    }

    /// The histogram of all the values recorded in `parts`: bucket counts
    /// add up, so this is exactly the histogram one would have got by
    /// recording every value into one (the metrics record each completion
    /// once, per process and direction, and build the overall, per-class
    /// and read histograms from those at the end of a run).
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a Histogram>) -> Histogram {
        let views: Vec<_> = parts.into_iter().filter(|h| !h.is_empty()).map(Histogram::merged_view).collect();
        let parts: Vec<&Histogram> = views.iter().map(|v| &**v).collect();
        match parts.len() {
            0 => return Histogram::new(),
            1 => return parts[0].clone(),
            _ => {}
        }
        let total = parts.iter().map(|h| h.total).sum();
        if parts.len() <= DENSE_FROM {
            let mut acc = parts[0].clone();
            for h in &parts[1..] {
                acc = acc.merged(h);
            }
            return acc;
        }
        // Many parts: count into every bucket, then keep those in use
        // (one pass over the parts, instead of one merge per part).
        let mut dense = vec![0u64; index_of(u64::MAX) as usize + 1];
        for h in &parts {
            for (&i, &c) in h.buckets.iter().zip(&h.counts) {
                dense[i as usize] += c;
            }
        }
        let mut out = Histogram { total, ..Histogram::default() };
        for (i, &c) in dense.iter().enumerate().filter(|(_, &c)| c > 0) {
            out.buckets.push(i as u16);
            out.counts.push(c);
        }
        out
    }

    /// Two histograms' buckets merged (both lists are ascending).
    fn merged(&self, other: &Histogram) -> Histogram {
        let mut out = Histogram {
            buckets: Vec::with_capacity(self.buckets.len() + other.buckets.len()),
            counts: Vec::with_capacity(self.buckets.len() + other.buckets.len()),
            total: self.total + other.total,
            // No index: a sum is read, not recorded into (and a histogram
            // without one finds buckets by binary search).
            ..Histogram::default()
        };
        let (mut a, mut b) = (0, 0);
        while a < self.buckets.len() && b < other.buckets.len() {
            let (ia, ib) = (self.buckets[a], other.buckets[b]);
            let c = match ia.cmp(&ib) {
                std::cmp::Ordering::Less => {
                    a += 1;
                    self.counts[a - 1]
                }
                std::cmp::Ordering::Greater => {
                    b += 1;
                    other.counts[b - 1]
                }
                std::cmp::Ordering::Equal => {
                    a += 1;
                    b += 1;
                    self.counts[a - 1] + other.counts[b - 1]
                }
            };
            out.buckets.push(ia.min(ib));
            out.counts.push(c);
        }
        for (h, k) in [(self, a), (other, b)] {
            out.buckets.extend_from_slice(&h.buckets[k..]);
            out.counts.extend_from_slice(&h.counts[k..]);
        }
        out
    }

    /// Bytes this histogram holds on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * 2
            + self.counts.capacity() * 8
            + self.pending.capacity() * 2
            + self.masks.capacity() * 8
            + self.ranks.capacity() * 2
            + self.dense.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn buckets_tile_the_values() {
        assert_eq!(index_of(1), 1);
        assert_eq!(range_of(index_of(2047)), (2047, 2047));
        assert_eq!(range_of(index_of(2048)), (2048, 2049));
        assert_eq!(range_of(index_of(4095)), (4094, 4095));
        assert_eq!(range_of(index_of(4096)), (4096, 4099));
        assert_eq!(range_of(index_of(u64::MAX)).1, u64::MAX);
        let mut prev = 0;
        for i in 1..=index_of(u64::MAX) {
            let (low, high) = range_of(i);
            assert_eq!(low, prev + 1, "bucket {i} starts where {} ended", i - 1);
            assert_eq!(index_of(low), i);
            assert_eq!(index_of(high), i);
            prev = high;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The same percentiles and maximum as the hdrhistogram crate with
        /// 3 significant digits, the histogram the metrics used before, over
        /// every latency a run can have (up to 2^62 ns, beyond the horizon;
        /// in its very last bucket, at 2^64, hdrhistogram saturates one short).
        #[test]
        fn agrees_with_hdrhistogram(values in prop::collection::vec(
            prop_oneof![0u64..5000, 1_000u64..100_000_000, 0u64..(1 << 62)], 1..400)) {
            let mut ours = Histogram::new();
            let mut hdr = hdrhistogram::Histogram::<u64>::new(3).unwrap();
            for &v in &values {
                ours.record(v);
                hdr.record(v.max(1)).unwrap();
            }
            prop_assert_eq!(ours.len(), hdr.len());
            for q in [0.0, 0.01, 0.5, 0.95, 0.99, 0.999, 1.0] {
                prop_assert_eq!(ours.value_at_quantile(q), hdr.value_at_quantile(q), "q = {}", q);
            }
            prop_assert_eq!(ours.max(), hdr.max());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]
        /// Summing histograms gives the histogram of all their values,
        /// whether merged pairwise (few parts) or densely (many).
        #[test]
        fn sum_is_the_histogram_of_all_values(parts in prop::collection::vec(
            prop::collection::vec(prop_oneof![0u64..5000, 1_000u64..100_000_000, 0u64..(1 << 62)], 0..60), 0..40)) {
            let mut all = Histogram::new();
            let hs: Vec<Histogram> = parts.iter().map(|vs| {
                let mut h = Histogram::new();
                for &v in vs {
                    h.record(v);
                    all.record(v);
                }
                h
            }).collect();
            let sum = Histogram::sum(&hs);
            let all = all.merged_view();
            prop_assert_eq!(&sum.buckets, &all.buckets);
            prop_assert_eq!(&sum.counts, &all.counts);
            prop_assert_eq!(sum.len(), all.len());
        }
    }

    #[test]
    fn pending_buckets_merge_into_the_counts_a_map_would_keep() {
        // Many distinct buckets arriving in no order, with repeats: every
        // merge size from PENDING_MIN to a quarter of thousands of buckets.
        let mut h = Histogram::new();
        let mut want = std::collections::BTreeMap::new();
        let mut x: u64 = 12345;
        for _ in 0..200_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = (x >> 33) % 300_000_000;
            h.record(v);
            *want.entry(index_of(v.max(1))).or_insert(0u64) += 1;
        }
        let got = h.merged_view();
        assert_eq!(got.buckets, want.keys().copied().collect::<Vec<_>>());
        assert_eq!(got.counts, want.values().copied().collect::<Vec<_>>());
        assert_eq!(h.len(), 200_000);
        assert!(got.pending.is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]
        /// With the index or without it (values spread thinly or packed
        /// into a few blocks, in runs that widen the span later), the
        /// counts are those a map of bucket to count keeps, after every
        /// value; and the index, when there is one, agrees with the list.
        #[test]
        fn the_index_finds_the_buckets_a_map_would(values in prop::collection::vec(
            prop_oneof![2_000u64..40_000, 1_000_000u64..1_100_000, 0u64..(1 << 40)], 1..3_000)) {
            let mut h = Histogram::new();
            let mut want = std::collections::BTreeMap::new();
            for (n, &v) in values.iter().enumerate() {
                h.record(v);
                *want.entry(index_of(v.max(1))).or_insert(0u64) += 1;
                if n % 97 == 0 || n + 1 == values.len() {
                    let got = h.merged_view();
                    prop_assert_eq!(&got.buckets, &want.keys().copied().collect::<Vec<_>>());
                    prop_assert_eq!(&got.counts, &want.values().copied().collect::<Vec<_>>());
                }
                if !h.masks.is_empty() {
                    let lo = h.first_block;
                    prop_assert!(h.buckets.len() >= h.masks.len());
                    prop_assert_eq!(h.masks.len(), (*h.buckets.last().unwrap() as usize >> 6) - lo + 1);
                    for (k, &i) in h.buckets.iter().enumerate() {
                        let b = (i as usize >> 6) - lo;
                        prop_assert!(h.masks[b] >> (i & 63) & 1 == 1);
                        prop_assert_eq!(h.ranks[b] as usize + (h.masks[b] & ((1u64 << (i & 63)) - 1)).count_ones() as usize, k);
                    }
                    let bits: u32 = h.masks.iter().map(|m| m.count_ones()).sum();
                    prop_assert_eq!(bits as usize, h.buckets.len());
                }
                if !h.dense.is_empty() {
                    prop_assert!(h.buckets.is_empty() && h.pending.is_empty() && h.masks.is_empty());
                    prop_assert_eq!(h.dense_base % 64, 0);
                    prop_assert_eq!(h.dense.len() % 64, 0);
                    prop_assert_eq!(h.dense_used, h.dense.iter().filter(|&&c| c > 0).count());
                    prop_assert!(h.dense.len() <= DENSE_SHARE * h.dense_used);
                }
            }
        }
    }

    #[test]
    fn a_dense_list_is_indexed_and_a_sparse_one_is_not() {
        // Buckets of 64 values from 65,536 on: one bucket in eight in use,
        // dense enough for the index, not for the array of counts.
        let mut dense = Histogram::new();
        for v in 0..20_000u64 {
            dense.record(100_000 + (v * 7 % 98) * 512);
        }
        assert!(!dense.masks.is_empty());
        assert!(dense.dense.is_empty());
        assert!(dense.masks.capacity() * 8 + dense.ranks.capacity() * 2 <= dense.buckets.capacity() * 10);
        let mut sparse = Histogram::new();
        for k in 0..64u64 {
            sparse.record(1u64 << (k % 60 + 2));
        }
        assert!(sparse.masks.is_empty());
    }

    #[test]
    fn a_list_of_packed_buckets_becomes_an_array_and_back() {
        // Every bucket from 100,000 to 300,000 (1,658 of them, widths 64
        // to 256): the array; then values far above widen it past a
        // quarter in use, and the counts go back to the list. The readings
        // never change.
        let mut h = Histogram::new();
        let mut want = std::collections::BTreeMap::new();
        let mut check = |h: &mut Histogram, v: u64| {
            h.record(v);
            *want.entry(index_of(v.max(1))).or_insert(0u64) += 1;
            let got = h.merged_view();
            assert_eq!(got.buckets, want.keys().copied().collect::<Vec<_>>());
            assert_eq!(got.counts, want.values().copied().collect::<Vec<_>>());
            assert_eq!(h.max(), range_of(*want.keys().last().unwrap()).1);
        };
        for v in 0..40_000u64 {
            check(&mut h, 100_000 + v * 7 % 200_000);
        }
        assert!(!h.dense.is_empty() && h.buckets.is_empty());
        assert!(h.heap_bytes() <= 8 * DENSE_SHARE * h.dense_used);
        // Just below: the array widens by a block.
        check(&mut h, 99_000);
        assert!(!h.dense.is_empty());
        // Far above: back to the list.
        check(&mut h, 1 << 40);
        assert!(h.dense.is_empty() && !h.buckets.is_empty());
        check(&mut h, 123_456);
    }

    #[test]
    fn a_few_packed_buckets_keep_the_list() {
        // 200 consecutive buckets, all in use: dense, but fewer than
        // DENSE_MIN, so no array.
        let mut h = Histogram::new();
        for k in 0..20_000u64 {
            h.record(1_000 + k % 200);
        }
        assert!(h.dense.is_empty() && h.buckets.len() == 200);
    }

    #[test]
    fn memory_follows_the_buckets_in_use_not_the_range() {
        let mut h = Histogram::new();
        for k in 0..100_000u64 {
            // 20 distinct latencies from 1 ms to 1 s.
            h.record(1_000_000 * (1 + (k % 20) * 50));
        }
        assert!(h.heap_bytes() < 1024, "{} bytes", h.heap_bytes());
    }
}
