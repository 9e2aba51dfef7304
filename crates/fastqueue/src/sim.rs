//! A crashable, in-memory [`Storage`] for tests: deterministic fault
//! injection.
//!
//! Every mutating call (write, `fdatasync`, create, rename, remove,
//! directory `fsync`) is one *step*. Writes and directory changes that no
//! sync has covered yet are kept apart from the durable state. With
//! [`SimStorage::crash_after`] the storage "loses power" right after the
//! chosen step: every later call fails, as if the process had died. Then
//! [`SimStorage::crash_image`] builds what a restarted machine would find:
//! the durable state plus, for each unsynced write, a choice made by the
//! [`CrashMode`]: dropped, kept, torn at a byte, or kept sector by sector
//! in any order; and a prefix of the unsynced directory changes.
//!
//! This is the storage counterpart of fio's `null` engine: it does no real
//! I/O and exists to test FastQueue.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::storage::{Storage, StorageFile};

/// What happens to unsynced writes at a simulated crash.
#[derive(Clone, Copy, Debug)]
pub enum CrashMode {
    /// Power loss with nothing unsynced reaching the disk.
    DropUnsynced,
    /// A killed process: the kernel keeps everything written.
    KeepUnsynced,
    /// Power loss, each unsynced write dropped, kept, torn at a random
    /// byte, or kept in random 512-byte sectors, from this seed.
    Random(u64),
}

#[derive(Clone, Default)]
struct Inode {
    data: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<(u64, Vec<u8>)>,
}

#[derive(Clone, Debug)]
enum DirOp {
    Link(String, usize),
    Rename(String, String),
    Remove(String),
}

#[derive(Default)]
struct SimState {
    inodes: Vec<Inode>,
    dir: BTreeMap<String, usize>,
    durable_dir: BTreeMap<String, usize>,
    pending_dir: Vec<DirOp>,
    steps: u64,
    crash_at: Option<u64>,
    crashed: bool,
    locked: bool,
    available: Option<u64>,
    sync_delay: std::time::Duration,
    /// `fdatasync` calls wait while this is set ([`SimStorage::hold_syncs`]).
    syncs_held: bool,
    /// Calls waiting at that gate.
    syncs_waiting: usize,
    /// The next `fdatasync` panics ([`SimStorage::panic_at_next_sync`]).
    panic_at_sync: bool,
}

fn crashed() -> io::Error {
    io::Error::other("simulated crash")
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{name}: no such file"))
}

impl SimState {
    /// Counts one mutating step; fails if the crash already happened.
    fn step(&mut self) -> io::Result<()> {
        if self.crashed {
            return Err(crashed());
        }
        self.steps += 1;
        Ok(())
    }

    /// Called after a step's effect: crash now if this was the chosen step.
    fn after_step(&mut self) {
        if self.crash_at == Some(self.steps) {
            self.crashed = true;
        }
    }

    fn apply_dir(dir: &mut BTreeMap<String, usize>, op: &DirOp) {
        match op {
            DirOp::Link(name, ino) => {
                dir.insert(name.clone(), *ino);
            }
            DirOp::Rename(from, to) => {
                if let Some(ino) = dir.remove(from) {
                    dir.insert(to.clone(), ino);
                }
            }
            DirOp::Remove(name) => {
                dir.remove(name);
            }
        }
    }
}

fn write_into(data: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let end = offset as usize + bytes.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[offset as usize..end].copy_from_slice(bytes);
}

/// Small deterministic generator (xorshift64*), so crash images depend only
/// on the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// The crashable in-memory storage. Clones share the same files.
#[derive(Clone, Default)]
pub struct SimStorage {
    state: Arc<Mutex<SimState>>,
    /// Signalled when the sync gate opens or a call arrives at it.
    gate: Arc<Condvar>,
}

impl SimStorage {
    /// An empty directory.
    pub fn new() -> SimStorage {
        SimStorage::default()
    }

    /// Crash right after step `step` (1-based) completes.
    pub fn crash_after(&self, step: u64) {
        self.state.lock().unwrap().crash_at = Some(step);
    }

    /// Mutating steps done so far.
    pub fn steps(&self) -> u64 {
        self.state.lock().unwrap().steps
    }

    /// Whether the simulated crash has happened.
    pub fn has_crashed(&self) -> bool {
        self.state.lock().unwrap().crashed
    }

    /// What a machine restarted after the crash (or now, if there was no
    /// crash) would find on disk.
    pub fn crash_image(&self, mode: CrashMode) -> SimStorage {
        let st = self.state.lock().unwrap();
        let mut rng = Rng(match mode {
            CrashMode::Random(seed) => seed.wrapping_mul(2).wrapping_add(1) | 1,
            _ => 1,
        });
        let mut inodes = Vec::with_capacity(st.inodes.len());
        for inode in &st.inodes {
            let mut data = inode.durable.clone();
            for (offset, bytes) in &inode.pending {
                match mode {
                    CrashMode::DropUnsynced => {}
                    CrashMode::KeepUnsynced => write_into(&mut data, *offset, bytes),
                    CrashMode::Random(_) => match rng.below(10) {
                        0..=3 => {}
                        4..=7 => write_into(&mut data, *offset, bytes),
                        8 => {
                            let cut = rng.below(bytes.len() as u64 + 1) as usize;
                            write_into(&mut data, *offset, &bytes[..cut]);
                        }
                        _ => {
                            // Sectors of one write reach the disk in any order.
                            let mut at = 0usize;
                            while at < bytes.len() {
                                let sector_end =
                                    ((*offset as usize + at) / 512 + 1) * 512;
                                let end = (sector_end - *offset as usize).min(bytes.len());
                                if rng.below(2) == 0 {
                                    write_into(&mut data, *offset + at as u64, &bytes[at..end]);
                                }
                                at = end;
                            }
                        }
                    },
                }
            }
            inodes.push(Inode { data: data.clone(), durable: data, pending: Vec::new() });
        }
        let keep_dir_ops = match mode {
            CrashMode::DropUnsynced => 0,
            CrashMode::KeepUnsynced => st.pending_dir.len(),
            CrashMode::Random(_) => rng.below(st.pending_dir.len() as u64 + 1) as usize,
        };
        let mut dir = st.durable_dir.clone();
        for op in &st.pending_dir[..keep_dir_ops] {
            SimState::apply_dir(&mut dir, op);
        }
        SimStorage {
            state: Arc::new(Mutex::new(SimState {
                inodes,
                durable_dir: dir.clone(),
                dir,
                ..SimState::default()
            })),
            gate: Arc::default(),
        }
    }

    /// The current bytes of a file (for tests that damage files).
    pub fn read_file(&self, name: &str) -> Option<Vec<u8>> {
        let st = self.state.lock().unwrap();
        st.dir.get(name).map(|&ino| st.inodes[ino].data.clone())
    }

    /// Makes every `fdatasync` take `delay` (slept outside the storage's
    /// lock, as a real sync lets other calls proceed), so that the writer's
    /// pipeline overlaps rounds in tests. Not carried to crash images.
    pub fn set_sync_delay(&self, delay: std::time::Duration) {
        self.state.lock().unwrap().sync_delay = delay;
    }

    /// Holds every `fdatasync` (of files, not of the directory) at a gate
    /// until `hold_syncs(false)`: the call waits there before it does
    /// anything. A test uses it to keep rounds in flight exactly as long as
    /// it wants (see [`SimStorage::wait_for_held_syncs`]). Not carried to
    /// crash images.
    pub fn hold_syncs(&self, hold: bool) {
        self.state.lock().unwrap().syncs_held = hold;
        self.gate.notify_all();
    }

    /// Waits until at least `n` `fdatasync` calls wait at the gate of
    /// [`SimStorage::hold_syncs`]; `false` if they did not within `limit`
    /// (a test's guard against a hang, not a measure of speed).
    pub fn wait_for_held_syncs(&self, n: usize, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        let mut st = self.state.lock().unwrap();
        while st.syncs_waiting < n {
            let now = Instant::now();
            if now >= end {
                return false;
            }
            st = self.gate.wait_timeout(st, end - now).unwrap().0;
        }
        true
    }

    /// Makes the next `fdatasync` panic, as a bug in the thread that calls
    /// it would: for tests of what the queue's callers see when one of its
    /// threads dies.
    pub fn panic_at_next_sync(&self) {
        self.state.lock().unwrap().panic_at_sync = true;
    }

    /// Sets the free space [`Storage::available_bytes`] reports (default:
    /// unknown, no limit).
    pub fn set_available(&self, bytes: Option<u64>) {
        self.state.lock().unwrap().available = bytes;
    }

    /// Removes a file at once, durably (a test's hostile user).
    pub fn delete_file(&self, name: &str) {
        let mut st = self.state.lock().unwrap();
        st.dir.remove(name);
        st.durable_dir.remove(name);
    }

    /// Renames a file at once, durably (a test's hostile user).
    pub fn rename_file(&self, from: &str, to: &str) {
        let mut st = self.state.lock().unwrap();
        let op = DirOp::Rename(from.to_string(), to.to_string());
        SimState::apply_dir(&mut st.dir, &op);
        SimState::apply_dir(&mut st.durable_dir, &op);
    }

    /// Replaces the bytes of a file, durably (a test's bit flip).
    pub fn write_file(&self, name: &str, bytes: Vec<u8>) {
        let mut st = self.state.lock().unwrap();
        let ino = st.dir[name];
        let inode = &mut st.inodes[ino];
        inode.data = bytes.clone();
        inode.durable = bytes;
        inode.pending.clear();
    }
}

struct SimFile {
    state: Arc<Mutex<SimState>>,
    gate: Arc<Condvar>,
    ino: usize,
}

impl StorageFile for SimFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let st = self.state.lock().unwrap();
        if st.crashed {
            return Err(crashed());
        }
        let data = &st.inodes[self.ino].data;
        let start = (offset as usize).min(data.len());
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut st = self.state.lock().unwrap();
        st.step()?;
        let inode = &mut st.inodes[self.ino];
        write_into(&mut inode.data, offset, buf);
        inode.pending.push((offset, buf.to_vec()));
        st.after_step();
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut st = self.state.lock().unwrap();
        if std::mem::take(&mut st.panic_at_sync) {
            drop(st);
            panic!("sim: fdatasync panicked (SimStorage::panic_at_next_sync)");
        }
        if st.syncs_held {
            st.syncs_waiting += 1;
            self.gate.notify_all();
            while st.syncs_held {
                st = self.gate.wait(st).unwrap();
            }
            st.syncs_waiting -= 1;
        }
        let delay = st.sync_delay;
        drop(st);
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let mut st = self.state.lock().unwrap();
        st.step()?;
        let inode = &mut st.inodes[self.ino];
        for (offset, bytes) in std::mem::take(&mut inode.pending) {
            write_into(&mut inode.durable, offset, &bytes);
        }
        st.after_step();
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let st = self.state.lock().unwrap();
        if st.crashed {
            return Err(crashed());
        }
        Ok(st.inodes[self.ino].data.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        // Taken as durable at once (like a write followed by its sync):
        // only `repair` calls it, and syncs afterwards anyway.
        let mut st = self.state.lock().unwrap();
        st.step()?;
        let inode = &mut st.inodes[self.ino];
        inode.data.resize(len as usize, 0);
        inode.durable.resize(len as usize, 0);
        inode.pending.retain(|(off, _)| *off < len);
        st.after_step();
        Ok(())
    }

    fn is_linked(&self) -> io::Result<bool> {
        let st = self.state.lock().unwrap();
        Ok(st.dir.values().any(|&ino| ino == self.ino))
    }
}

impl Storage for SimStorage {
    fn path(&self, name: &str) -> PathBuf {
        PathBuf::from("sim:").join(name)
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let st = self.state.lock().unwrap();
        if st.crashed {
            return Err(crashed());
        }
        Ok(st.dir.keys().cloned().collect())
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        let st = self.state.lock().unwrap();
        if st.crashed {
            return Err(crashed());
        }
        let ino = *st.dir.get(name).ok_or_else(|| not_found(name))?;
        Ok(Arc::new(SimFile { state: self.state.clone(), gate: self.gate.clone(), ino }))
    }

    fn create(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        let mut st = self.state.lock().unwrap();
        st.step()?;
        let ino = st.inodes.len();
        st.inodes.push(Inode::default());
        let op = DirOp::Link(name.to_string(), ino);
        SimState::apply_dir(&mut st.dir, &op);
        st.pending_dir.push(op);
        st.after_step();
        Ok(Arc::new(SimFile { state: self.state.clone(), gate: self.gate.clone(), ino }))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut st = self.state.lock().unwrap();
        st.step()?;
        if !st.dir.contains_key(from) {
            return Err(not_found(from));
        }
        let op = DirOp::Rename(from.to_string(), to.to_string());
        SimState::apply_dir(&mut st.dir, &op);
        st.pending_dir.push(op);
        st.after_step();
        Ok(())
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        let mut st = self.state.lock().unwrap();
        st.step()?;
        if !st.dir.contains_key(name) {
            return Err(not_found(name));
        }
        let op = DirOp::Remove(name.to_string());
        SimState::apply_dir(&mut st.dir, &op);
        st.pending_dir.push(op);
        st.after_step();
        Ok(())
    }

    fn sync_dir(&self) -> io::Result<()> {
        let mut st = self.state.lock().unwrap();
        st.step()?;
        st.durable_dir = st.dir.clone();
        st.pending_dir.clear();
        st.after_step();
        Ok(())
    }

    fn try_lock(&self) -> io::Result<bool> {
        let mut st = self.state.lock().unwrap();
        if st.crashed {
            return Err(crashed());
        }
        Ok(!std::mem::replace(&mut st.locked, true))
    }

    fn unlock(&self) {
        self.state.lock().unwrap().locked = false;
    }

    fn available_bytes(&self) -> io::Result<Option<u64>> {
        Ok(self.state.lock().unwrap().available)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsynced_writes_are_dropped_and_synced_ones_kept() {
        let s = SimStorage::new();
        let f = s.create("a").unwrap();
        s.sync_dir().unwrap();
        f.write_at(b"one", 0).unwrap();
        f.sync_data().unwrap();
        f.write_at(b"two", 3).unwrap();
        let img = s.crash_image(CrashMode::DropUnsynced);
        assert_eq!(img.read_file("a").unwrap(), b"one");
        let img = s.crash_image(CrashMode::KeepUnsynced);
        assert_eq!(img.read_file("a").unwrap(), b"onetwo");
    }

    #[test]
    fn calls_fail_after_the_crash_step() {
        let s = SimStorage::new();
        s.crash_after(2);
        let f = s.create("a").unwrap();
        f.write_at(b"x", 0).unwrap();
        assert!(s.has_crashed());
        assert!(f.sync_data().is_err());
        assert!(s.crash_image(CrashMode::DropUnsynced).read_file("a").is_none());
    }
}
