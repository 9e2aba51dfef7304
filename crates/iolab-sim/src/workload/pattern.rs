//! Access patterns over a process's file region.

use crate::rng::SimRng;
use serde::{Deserialize, Serialize};

/// The order in which a process visits the records of its file.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Record 0, 1, 2, ... (IOzone -i 0 / -i 1).
    Sequential,
    /// Uniformly random records (IOzone -i 2).
    Random,
    /// Every `stride`-th record, wrapping with a shift so every record is
    /// visited once per pass (IOzone's stride read).
    Strided,
    /// Last record first (IOzone's backward read).
    Backward,
}

/// Record index for the `k`-th operation of a pass over `n` records.
/// `stride` is in records and only used by [`Pattern::Strided`].
pub fn record_index(pattern: Pattern, k: u64, n: u64, stride: u64, rng: &mut SimRng) -> u64 {
    debug_assert!(n > 0);
    // (`k % n` only where `k` is used: a random pattern's every request
    // would pay a division for nothing.)
    match pattern {
        Pattern::Sequential => k % n,
        Pattern::Backward => n - 1 - k % n,
        Pattern::Random => rng.below(n),
        Pattern::Strided => {
            let k = k % n;
            let stride = stride.clamp(1, n);
            // Columns of a (stride × ceil(n/stride)) grid: 0, s, 2s, ..., then 1, 1+s, ...
            let per_col = n.div_ceil(stride);
            let (col, row) = (k / per_col, k % per_col);
            let idx = row * stride + col;
            if idx < n {
                idx
            } else {
                // The last column is short when stride does not divide n.
                (idx + k) % n
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_backward_and_strided() {
        let mut rng = SimRng::new(0);
        let seq: Vec<u64> = (0..4).map(|k| record_index(Pattern::Sequential, k, 4, 1, &mut rng)).collect();
        assert_eq!(seq, [0, 1, 2, 3]);
        let back: Vec<u64> = (0..4).map(|k| record_index(Pattern::Backward, k, 4, 1, &mut rng)).collect();
        assert_eq!(back, [3, 2, 1, 0]);
        let s: Vec<u64> = (0..6).map(|k| record_index(Pattern::Strided, k, 6, 3, &mut rng)).collect();
        assert_eq!(s, [0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn random_stays_in_range() {
        let mut rng = SimRng::new(5);
        assert!((0..1000).all(|k| record_index(Pattern::Random, k, 7, 1, &mut rng) < 7));
    }
}
