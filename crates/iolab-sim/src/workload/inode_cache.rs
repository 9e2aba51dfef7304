//! A small in-memory inode cache: whether opening a file costs an inode
//! read. Linux keeps inodes in an LRU-ordered cache; this one uses CLOCK
//! (second chance), the usual cheap approximation of LRU, with a fixed
//! number of slots so a lookup never allocates.

use std::collections::HashMap;

const EMPTY: u64 = u64::MAX;

#[derive(Clone, Debug)]
pub struct InodeCache {
    /// (inode, referenced since the hand last passed).
    slots: Vec<(u64, bool)>,
    index: HashMap<u64, u32>,
    free: Vec<u32>,
    hand: usize,
    capacity: usize,
}

impl InodeCache {
    /// A cache of `capacity` inodes (0: every lookup misses).
    pub fn new(capacity: u32) -> InodeCache {
        let capacity = capacity as usize;
        // Slots are made as inodes come in; only a small start is reserved,
        // so a large `inode_cache` costs memory only when it fills.
        let reserve = capacity.min(4096);
        InodeCache {
            slots: Vec::with_capacity(reserve),
            index: HashMap::with_capacity(reserve),
            free: Vec::new(),
            hand: 0,
            capacity,
        }
    }

    /// True if `ino` is cached (and marks it recently used).
    pub fn lookup(&mut self, ino: u64) -> bool {
        match self.index.get(&ino) {
            Some(&s) => {
                self.slots[s as usize].1 = true;
                true
            }
            None => false,
        }
    }

    /// Cache `ino`, evicting the first unreferenced entry if full.
    pub fn insert(&mut self, ino: u64) {
        if self.capacity == 0 || self.lookup(ino) {
            return;
        }
        let slot = if let Some(s) = self.free.pop() {
            s as usize
        } else if self.slots.len() < self.capacity {
            self.slots.push((EMPTY, false));
            self.slots.len() - 1
        } else {
            loop {
                let h = self.hand;
                self.hand = (self.hand + 1) % self.capacity;
                if self.slots[h].1 {
                    self.slots[h].1 = false;
                } else {
                    self.index.remove(&self.slots[h].0);
                    break h;
                }
            }
        };
        self.slots[slot] = (ino, false);
        self.index.insert(ino, slot as u32);
    }

    /// Forget `ino` (the file was deleted).
    pub fn remove(&mut self, ino: u64) {
        if let Some(s) = self.index.remove(&ino) {
            self.slots[s as usize] = (EMPTY, false);
            self.free.push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_keeps_referenced_entries() {
        let mut c = InodeCache::new(3);
        c.insert(1);
        c.insert(2);
        c.insert(3);
        assert!(c.lookup(1));
        c.insert(4); // 1 was referenced: 2 goes
        assert!(c.lookup(1) && !c.lookup(2) && c.lookup(3) && c.lookup(4));
        c.remove(3);
        c.insert(5); // takes the freed slot
        assert!(c.lookup(1) && c.lookup(4) && c.lookup(5));
        let mut none = InodeCache::new(0);
        none.insert(1);
        assert!(!none.lookup(1));
    }
}
