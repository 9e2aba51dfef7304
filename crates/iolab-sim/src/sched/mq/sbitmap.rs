//! The scalable bitmap that blk-mq draws its tags from and Kyber its
//! domain tokens (lib/sbitmap.c, include/linux/sbitmap.h, 6.1).
//!
//! Bits are split into words of `1 << shift` bits. An allocation starts
//! at the word holding the allocation hint and takes the lowest free bit
//! of the first word that has one; a *shallow* allocation (what an
//! elevator's `limit_depth` asks for) may use only the first
//! `shallow_depth` bits of each word. Linux keeps a hint per CPU, started
//! at a random bit; the simulator has one CPU and starts it at bit 0.

/// `sbitmap` with one CPU's allocation hint.
#[derive(Clone, Debug)]
pub struct Sbitmap {
    depth: u32,
    shift: u32,
    words: Vec<u64>,
    hint: u32,
}

/// `sbitmap_calculate_shift`: 64-bit words, made smaller so that a small
/// map still spreads over at least 4 words; maps under 4 bits keep 64.
pub fn calculate_shift(depth: u32) -> u32 {
    let mut shift = 6; // ilog2(BITS_PER_LONG)
    if depth >= 4 {
        while (4u32 << shift) > depth {
            shift -= 1;
        }
    }
    shift
}

/// Bits `0..n` of a word (n <= 64).
fn low_bits(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// The lowest clear bit of `word` in `from..depth` (`find_next_zero_bit`),
/// by a mask and a count of trailing zeros rather than bit by bit.
fn lowest_clear(word: u64, from: u32, depth: u32) -> Option<u32> {
    if from >= depth {
        return None;
    }
    let free = !word & low_bits(depth) & !low_bits(from);
    (free != 0).then(|| free.trailing_zeros())
}

impl Sbitmap {
    /// `sbitmap_init_node` with `shift = -1` (computed from the depth).
    pub fn new(depth: u32) -> Sbitmap {
        let shift = calculate_shift(depth);
        let words = (depth as usize).div_ceil(1 << shift).max(1);
        Sbitmap { depth, shift, words: vec![0; words], hint: 0 }
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Bits per word (`1 << sb->shift`).
    pub fn bits_per_word(&self) -> u32 {
        1 << self.shift
    }

    fn map_nr(&self) -> usize {
        (self.depth as usize).div_ceil(1 << self.shift).max(1)
    }

    /// `__map_depth`: bits of word `index` inside the depth.
    fn map_depth(&self, index: usize) -> u32 {
        if index == self.map_nr() - 1 {
            self.depth - ((index as u32) << self.shift)
        } else {
            1 << self.shift
        }
    }

    /// `__sbitmap_get_word`: the lowest clear bit below `depth` from
    /// `hint`, wrapping to 0 once when `wrap` and the hint is not 0.
    fn get_word(word: &mut u64, depth: u32, hint: u32, wrap: bool) -> Option<u32> {
        let nr = lowest_clear(*word, hint, depth).or_else(|| if wrap && hint > 0 { lowest_clear(*word, 0, depth) } else { None })?;
        *word |= 1u64 << nr;
        Some(nr)
    }

    /// No bit inside the depth is free: every allocation, shallow or not,
    /// fails until a bit is cleared or the map grows.
    pub fn is_full(&self) -> bool {
        (0..self.map_nr()).all(|i| {
            let mask = low_bits(self.map_depth(i));
            self.words[i] & mask == mask
        })
    }

    /// What a failed [`Sbitmap::get`] leaves behind
    /// (`update_alloc_hint_after_get` with no bit: the hint restarts at 0),
    /// for a caller that skips gets known to fail.
    pub fn note_failed_get(&mut self) {
        self.hint = 0;
    }

    /// `sbitmap_get` (`shallow` = None) or `sbitmap_get_shallow`.
    pub fn get(&mut self, shallow: Option<u32>) -> Option<u32> {
        if self.depth == 0 {
            return None;
        }
        // update_alloc_hint_before_get: a hint past the depth restarts.
        if self.hint >= self.depth {
            self.hint = 0;
        }
        let hint = self.hint;
        let mut index = (hint >> self.shift) as usize;
        // Plain gets start each word at bit 0 (not round robin);
        // shallow gets start the first word at the hint's bit.
        let mut bit = if shallow.is_some() { hint & ((1 << self.shift) - 1) } else { 0 };
        let wrap = true;
        let mut got = None;
        for _ in 0..self.map_nr() {
            let depth = match shallow {
                Some(s) => self.map_depth(index).min(s),
                None => self.map_depth(index),
            };
            if let Some(nr) = Self::get_word(&mut self.words[index], depth, bit, wrap) {
                got = Some(nr + ((index as u32) << self.shift));
                break;
            }
            bit = 0;
            index += 1;
            if index >= self.map_nr() {
                index = 0;
            }
        }
        // update_alloc_hint_after_get.
        match got {
            None => self.hint = 0,
            Some(nr) if nr == hint => {
                self.hint = nr + 1;
                if self.hint >= self.depth.saturating_sub(1) {
                    self.hint = 0;
                }
            }
            Some(_) => {}
        }
        got
    }

    /// `sbitmap_queue_clear`: free `nr`; it becomes the hint
    /// (`sbitmap_update_cpu_hint`) if inside the depth.
    pub fn clear(&mut self, nr: u32) {
        let index = (nr >> self.shift) as usize;
        if let Some(w) = self.words.get_mut(index) {
            *w &= !(1u64 << (nr & ((1 << self.shift) - 1)));
        }
        if nr < self.depth {
            self.hint = nr;
        }
    }

    /// `sbitmap_resize` (what `sbitmap_queue_resize` does to the map):
    /// bits in use above the new depth stay set until cleared.
    pub fn resize(&mut self, depth: u32) {
        let need = (depth as usize).div_ceil(1 << self.shift).max(1);
        if need > self.words.len() {
            self.words.resize(need, 0);
        }
        self.depth = depth;
    }

    /// Bits set (in use), inside or outside the depth.
    pub fn weight(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// `sbq_calc_wake_batch`'s usable depth for allocations limited to
    /// `shallow` bits per word: what a shallow allocator can hold at most.
    pub fn shallow_capacity(&self, shallow: u32) -> u32 {
        let bpw = 1u32 << self.shift;
        let s = shallow.min(bpw);
        (self.depth >> self.shift) * s + (self.depth & (bpw - 1)).min(s)
    }
}

/// `SBQ_WAIT_QUEUES`: the wait queues a sleeper is spread over.
pub const SBQ_WAIT_QUEUES: usize = 8;
/// `SBQ_WAKE_BATCH`: the largest wake batch.
pub const SBQ_WAKE_BATCH: u32 = 8;

/// `struct sbitmap_queue` (6.1.192, lib/sbitmap.c): the bitmap and the
/// tasks asleep waiting for one of its bits.
///
/// A task that finds no bit sleeps on one of [`SBQ_WAIT_QUEUES`] wait
/// queues, taken round robin (`sbq_wait_ptr` with the hardware queue's
/// `wait_index`), at its tail (`prepare_to_wait_exclusive`), and counts in
/// `ws_active` until it runs again (`sbitmap_finish_wait`). While anyone
/// sleeps, every freed bit counts a completion; each `wake_batch`
/// completions wake `wake_batch` tasks from the first non-empty wait queue
/// at or after `wake_index`, which then moves on (`sbitmap_queue_wake_up`,
/// `__sbitmap_queue_wake_up`). A woken task is not handed the bit: it runs
/// and tries again, and whoever asks first gets it.
#[derive(Clone, Debug)]
pub struct SbitmapQueue {
    pub sb: Sbitmap,
    min_shallow_depth: u32,
    wake_batch: u32,
    ws: [std::collections::VecDeque<u32>; SBQ_WAIT_QUEUES],
    /// `hctx->wait_index` (one hardware queue).
    wait_index: usize,
    wake_index: usize,
    ws_active: u32,
    completion_cnt: u32,
    wakeup_cnt: u32,
}

impl SbitmapQueue {
    /// `sbitmap_queue_init_node`: no shallow limit (`min_shallow_depth` =
    /// `UINT_MAX`) until an elevator sets one.
    pub fn new(depth: u32) -> SbitmapQueue {
        let sb = Sbitmap::new(depth);
        let mut q = SbitmapQueue {
            sb,
            min_shallow_depth: u32::MAX,
            wake_batch: 1,
            ws: Default::default(),
            wait_index: 0,
            wake_index: 0,
            ws_active: 0,
            completion_cnt: 0,
            wakeup_cnt: 0,
        };
        q.wake_batch = q.calc_wake_batch(depth);
        q
    }

    /// `sbq_calc_wake_batch`: an eighth of the depth usable by the
    /// shallowest allocator, within [1, `SBQ_WAKE_BATCH`].
    fn calc_wake_batch(&self, depth: u32) -> u32 {
        let shift = self.sb.bits_per_word().trailing_zeros();
        let shallow = (1u32 << shift).min(self.min_shallow_depth);
        let usable = (depth >> shift) * shallow + (depth & ((1 << shift) - 1)).min(shallow);
        (usable / SBQ_WAIT_QUEUES as u32).clamp(1, SBQ_WAKE_BATCH)
    }

    /// `sbitmap_queue_min_shallow_depth`, as an elevator's `depth_updated`
    /// calls it (mq-deadline and BFQ with 1, Kyber with its async depth).
    pub fn set_min_shallow_depth(&mut self, min_shallow_depth: u32) {
        self.min_shallow_depth = min_shallow_depth;
        self.wake_batch = self.calc_wake_batch(self.sb.depth());
    }

    pub fn wake_batch(&self) -> u32 {
        self.wake_batch
    }

    /// `sbitmap_queue_resize`: a new wake batch for the new depth.
    pub fn resize(&mut self, depth: u32) {
        self.wake_batch = self.calc_wake_batch(depth);
        self.sb.resize(depth);
    }

    /// Tasks asleep or woken and not yet running again (`ws_active`).
    pub fn ws_active(&self) -> u32 {
        self.ws_active
    }

    /// Tasks still on a wait queue (not yet woken).
    pub fn sleeping(&self) -> usize {
        self.ws.iter().map(|w| w.len()).sum()
    }

    /// `sbitmap_prepare_to_wait` on the next wait queue (`bt_wait_ptr`):
    /// `task` sleeps at its tail.
    pub fn prepare_to_wait(&mut self, task: u32) {
        let ws = self.wait_index;
        self.wait_index = (self.wait_index + 1) % SBQ_WAIT_QUEUES;
        self.ws[ws].push_back(task);
        self.ws_active += 1;
    }

    /// `sbitmap_finish_wait`: `task` runs again (woken, or it found a bit
    /// before sleeping): off its wait queue if still on one.
    pub fn finish_wait(&mut self, task: u32) {
        for ws in &mut self.ws {
            if let Some(i) = ws.iter().position(|&t| t == task) {
                ws.remove(i);
                break;
            }
        }
        self.ws_active = self.ws_active.saturating_sub(1);
    }

    /// `sbitmap_queue_clear`: free `nr`, then count it towards the next
    /// wake; the tasks woken go to `woken`, in wake order.
    pub fn clear(&mut self, nr: u32, woken: &mut Vec<u32>) {
        self.sb.clear(nr);
        self.wake_up(1, woken);
    }

    /// `sbitmap_queue_wake_up`: with sleepers, count `nr` completions; a
    /// whole batch of them wakes a batch of tasks.
    fn wake_up(&mut self, nr: u32, woken: &mut Vec<u32>) {
        if self.ws_active == 0 {
            return;
        }
        self.completion_cnt = self.completion_cnt.wrapping_add(nr);
        if self.completion_cnt.wrapping_sub(self.wakeup_cnt) < self.wake_batch {
            return;
        }
        self.wakeup_cnt = self.wakeup_cnt.wrapping_add(self.wake_batch);
        // __sbitmap_queue_wake_up: the first wait queue with a sleeper,
        // from wake_index on; the index moves past each queue looked at.
        let mut index = self.wake_index;
        for _ in 0..SBQ_WAIT_QUEUES {
            let ws = index;
            index = (index + 1) % SBQ_WAIT_QUEUES;
            if !self.ws[ws].is_empty() {
                let n = (self.wake_batch as usize).min(self.ws[ws].len());
                woken.extend(self.ws[ws].drain(..n));
                break;
            }
        }
        self.wake_index = index;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_clear_agrees_with_a_bit_by_bit_search() {
        let words = [0u64, u64::MAX, 0x5555_5555_5555_5555, 0x8000_0000_0000_0001, 0x7fff_ffff_ffff_fffe, 0xf0f0];
        for &w in &words {
            for depth in 0..=64u32 {
                for from in 0..=64u32 {
                    let slow = (from..depth).find(|&b| w & (1u64 << b) == 0);
                    assert_eq!(lowest_clear(w, from, depth), slow, "word {w:#x} from {from} depth {depth}");
                }
            }
        }
    }

    #[test]
    fn full_means_every_get_fails() {
        for depth in [1u32, 3, 4, 8, 13, 64, 100, 256] {
            let mut sb = Sbitmap::new(depth);
            for _ in 0..depth {
                assert!(!sb.is_full());
                sb.get(None).unwrap();
            }
            assert!(sb.is_full(), "depth {depth}");
            assert_eq!(sb.get(Some(1)), None);
            assert_eq!(sb.get(None), None);
            sb.resize(depth + 1);
            assert!(!sb.is_full(), "a grown map has a free bit");
            assert!(sb.get(None).is_some());
            assert!(sb.is_full());
            sb.clear(depth / 2);
            assert!(!sb.is_full());
        }
    }

    #[test]
    fn shift_spreads_small_maps_over_four_words() {
        assert_eq!(calculate_shift(2), 6, "under 4 bits: one 64-bit word");
        assert_eq!(calculate_shift(4), 0);
        assert_eq!(calculate_shift(64), 4);
        assert_eq!(calculate_shift(128), 5);
        assert_eq!(calculate_shift(256), 6);
        assert_eq!(calculate_shift(2048), 6);
    }

    #[test]
    fn gets_lowest_free_bits_and_fails_when_full() {
        let mut sb = Sbitmap::new(8); // shift 1: 4 words of 2 bits
        let got: Vec<_> = (0..8).map(|_| sb.get(None).unwrap()).collect();
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>());
        assert_eq!(sb.get(None), None);
        assert_eq!(sb.weight(), 8);
        sb.clear(5);
        assert_eq!(sb.get(None), Some(5), "the freed bit is the hint");
    }

    #[test]
    fn shallow_gets_use_only_the_low_bits_of_each_word() {
        // 16 bits: shift 2, 4 words of 4; shallow 3 → 12 usable bits.
        let mut sb = Sbitmap::new(16);
        assert_eq!(sb.shallow_capacity(3), 12);
        let mut n = 0;
        while let Some(b) = sb.get(Some(3)) {
            assert_ne!(b & 3, 3, "bit {b} is the 4th of its word");
            n += 1;
        }
        assert_eq!(n, 12);
        // The 4th bit of each word is left for unlimited allocations.
        for _ in 0..4 {
            assert_eq!(sb.get(None).map(|b| b & 3), Some(3));
        }
        assert_eq!(sb.get(None), None);
    }

    #[test]
    fn resize_down_keeps_bits_in_use_until_cleared() {
        let mut sb = Sbitmap::new(16);
        for _ in 0..16 {
            sb.get(None).unwrap();
        }
        sb.resize(4);
        for b in 4..16 {
            sb.clear(b);
        }
        assert_eq!(sb.get(None), None, "bits 0..4 are still in use");
        sb.clear(2);
        assert_eq!(sb.get(None), Some(2));
        sb.resize(16);
        assert_eq!(sb.weight(), 4);
        assert!(sb.get(None).is_some());
    }
}
