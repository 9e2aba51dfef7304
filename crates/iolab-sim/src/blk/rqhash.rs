//! The merge hash (`elv_rqhash`): queued requests by end sector, one
//! request per key (a newer one replaces an older with the same end, as
//! the head of Linux's hash chain hides the rest).
//!
//! Every request passes through it three times (added on insert, looked up
//! by the next bio's back-merge check, removed on dispatch), so it is a
//! small open-addressing table of its own rather than a `HashMap`: linear
//! probing over a power-of-two array, removal by backward shift (no
//! tombstones), no iteration. With a handful of queued requests a lookup is
//! one or two probes, where the general map's SIMD groups, control bytes
//! and `entry`'s reservation cost several times that. It behaves as a map:
//! only `get`, `insert` and `remove_if` exist, and nothing depends on where
//! a key sits.

use crate::request::RequestId;

/// An empty slot's key: no request ends at sector `u64::MAX`.
const EMPTY: u64 = u64::MAX;
/// Slots to start with; the table doubles when a quarter full (short
/// probe runs: a miss, the usual lookup, ends at the first empty slot).
const MIN_SLOTS: usize = 64;

#[derive(Debug)]
pub(super) struct RqHash {
    keys: Vec<u64>,
    ids: Vec<RequestId>,
    len: usize,
    /// `64 - log2(slots)`: the home slot is the top bits of the product.
    shift: u32,
}

impl Default for RqHash {
    fn default() -> Self {
        RqHash::with_slots(MIN_SLOTS)
    }
}

impl RqHash {
    fn with_slots(n: usize) -> RqHash {
        debug_assert!(n.is_power_of_two());
        RqHash { keys: vec![EMPTY; n], ids: vec![0; n], len: 0, shift: 64 - n.trailing_zeros() }
    }

    #[inline]
    fn mask(&self) -> usize {
        self.keys.len() - 1
    }

    /// Fibonacci hashing: end sectors are often multiples of 8, which the
    /// multiply spreads over the top bits.
    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The slot holding `key`, or the empty slot that ends its probe.
    #[inline]
    fn find(&self, key: u64) -> (usize, bool) {
        let mask = self.mask();
        let mut i = self.home(key);
        loop {
            let k = self.keys[i];
            if k == key {
                return (i, true);
            }
            if k == EMPTY {
                return (i, false);
            }
            i = (i + 1) & mask;
        }
    }

    /// The request ending at `key`.
    #[inline]
    pub(super) fn get(&self, key: u64) -> Option<RequestId> {
        match self.find(key) {
            (i, true) => Some(self.ids[i]),
            _ => None,
        }
    }

    /// `key` now maps to `id` (replacing what it mapped to).
    #[inline]
    pub(super) fn insert(&mut self, key: u64, id: RequestId) {
        debug_assert_ne!(key, EMPTY, "end sector out of range");
        let (i, found) = self.find(key);
        self.ids[i] = id;
        if found {
            return;
        }
        self.keys[i] = key;
        self.len += 1;
        if 4 * self.len > self.keys.len() {
            self.grow();
        }
    }

    /// Removes `key` if it maps to `id` (`elv_rqhash_del` of a request
    /// another with the same end has replaced does nothing).
    #[inline]
    pub(super) fn remove_if(&mut self, key: u64, id: RequestId) {
        let (mut hole, found) = self.find(key);
        if !found || self.ids[hole] != id {
            return;
        }
        // Backward shift: move up each later key of the run whose home is
        // not cyclically within (hole, j], so that every key stays
        // reachable from its home without gaps.
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let k = self.keys[j];
            if k == EMPTY {
                break;
            }
            let h = self.home(k);
            let stays = if hole <= j { hole < h && h <= j } else { hole < h || h <= j };
            if !stays {
                self.keys[hole] = k;
                self.ids[hole] = self.ids[j];
                hole = j;
            }
        }
        self.keys[hole] = EMPTY;
        self.len -= 1;
    }

    #[cold]
    fn grow(&mut self) {
        let mut bigger = RqHash::with_slots(self.keys.len() * 2);
        for (&k, &id) in self.keys.iter().zip(&self.ids) {
            if k != EMPTY {
                bigger.insert(k, id);
            }
        }
        *self = bigger;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, RequestId),
        Remove(u64, RequestId),
        Get(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few keys and ids, so that replacements, mismatched removals and
        // long probe runs (colliding homes) all happen.
        let key = prop_oneof![0u64..64, (0u64..64).prop_map(|k| k * 8), (0u64..8).prop_map(|k| k << 40)];
        prop_oneof![
            (key.clone(), 0u32..16).prop_map(|(k, id)| Op::Insert(k, id)),
            (key.clone(), 0u32..16).prop_map(|(k, id)| Op::Remove(k, id)),
            key.prop_map(Op::Get),
        ]
    }

    proptest! {
        /// Behaves as the `HashMap` it replaced, through growth too.
        #[test]
        fn agrees_with_a_map(ops in proptest::collection::vec(op(), 0..400)) {
            let mut t = RqHash::default();
            let mut m: HashMap<u64, RequestId> = HashMap::new();
            for o in ops {
                match o {
                    Op::Insert(k, id) => {
                        t.insert(k, id);
                        m.insert(k, id);
                    }
                    Op::Remove(k, id) => {
                        t.remove_if(k, id);
                        if m.get(&k) == Some(&id) {
                            m.remove(&k);
                        }
                    }
                    Op::Get(k) => prop_assert_eq!(t.get(k), m.get(&k).copied()),
                }
                prop_assert_eq!(t.len, m.len());
            }
            for (&k, &id) in &m {
                prop_assert_eq!(t.get(k), Some(id));
            }
        }
    }
}
