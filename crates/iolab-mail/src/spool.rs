//! Where a message's text goes while it arrives (issue 26, defect 7: the
//! whole text was held in RAM, up to 10,000 sessions × 10 MB).
//!
//! Every byte of message text the sessions hold in memory is counted
//! against one [`MemoryBudget`] (`ServerConfig::message_memory`). A
//! session keeps a message's first [`SPOOL_THRESHOLD`] bytes in RAM when
//! the budget has room for them; past that, or when it has none, the text
//! goes to an unlinked temporary file under `QUEUE_DIR/spool` as it
//! arrives (page cache, no `fsync`: the durable copy is the queue's). The
//! queue takes a record as one buffer (`FastQueue::enqueue` has no
//! streaming form; noted for its owner), so at the end of `DATA` the
//! session waits until the budget can hold the whole record, reads the
//! file into it, commits, and gives the memory back: sessions beyond the
//! budget wait for their `250` instead of growing the process.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of a message kept in RAM before the rest goes to a file: the
/// paper's FSmail saw 85% of messages under 8 kB, so nearly all stay in RAM.
pub const SPOOL_THRESHOLD: usize = 64 * 1024;

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Memory for message text, in KiB permits.
#[derive(Clone)]
pub(crate) struct MemoryBudget {
    sem: Arc<Semaphore>,
    /// The whole budget, KiB: no request waits for more than this (a
    /// record with a very long envelope would otherwise wait forever).
    total_kib: u32,
}

/// Memory taken from the budget; given back when dropped.
pub(crate) struct Held(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

fn kib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

impl MemoryBudget {
    pub(crate) fn new(bytes: usize) -> MemoryBudget {
        let total_kib = kib(bytes.saturating_sub(1023));
        MemoryBudget { sem: Arc::new(Semaphore::new(total_kib as usize)), total_kib }
    }

    /// `bytes` if the budget has them now.
    pub(crate) fn try_take(&self, bytes: usize) -> Option<Held> {
        self.sem.clone().try_acquire_many_owned(kib(bytes)).ok().map(|p| Held(Some(p)))
    }

    /// `bytes`, waiting until the budget has them (the configuration
    /// checks that the largest record fits in the whole budget).
    pub(crate) async fn take(&self, bytes: usize) -> Held {
        Held(self.sem.clone().acquire_many_owned(kib(bytes).min(self.total_kib)).await.ok())
    }

    /// KiB free now.
    #[cfg(test)]
    pub(crate) fn available_kib(&self) -> usize {
        self.sem.available_permits()
    }
}

/// One message's text while it arrives.
pub(crate) struct Spool {
    mem: Vec<u8>,
    /// The first SPOOL_THRESHOLD bytes' memory, if the budget had it.
    mem_held: Option<Held>,
    file: Option<BufWriter<File>>,
    dir: PathBuf,
    len: usize,
}

impl Spool {
    /// A spool writing its overflow under `dir`.
    pub(crate) fn new(dir: &Path, budget: &MemoryBudget) -> Spool {
        let mem_held = budget.try_take(SPOOL_THRESHOLD);
        // Most mail is a few kB: one allocation instead of a doubling
        // series from 8 bytes up (docs/mail.md, "Where the CPU goes").
        let mem = if mem_held.is_some() { Vec::with_capacity(4096) } else { Vec::new() };
        Spool { mem, mem_held, file: None, dir: dir.to_path_buf(), len: 0 }
    }

    /// Bytes stored.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the text went to a file.
    #[cfg(test)]
    pub(crate) fn spilled(&self) -> bool {
        self.file.is_some()
    }

    /// Appends one line of text and its CRLF.
    pub(crate) fn push_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.len += line.len() + 2;
        if self.file.is_none() && self.mem_held.is_some() && self.len <= SPOOL_THRESHOLD {
            self.mem.extend_from_slice(line);
            self.mem.extend_from_slice(b"\r\n");
            return Ok(());
        }
        if self.file.is_none() {
            let mut f = BufWriter::with_capacity(64 * 1024, self.open_file()?);
            f.write_all(&self.mem)?;
            self.mem = Vec::new();
            self.mem_held = None;
            self.file = Some(f);
        }
        let f = self.file.as_mut().expect("opened above");
        f.write_all(line)?;
        f.write_all(b"\r\n")
    }

    /// A new temporary file, unlinked at once: nothing is left behind
    /// whatever the process dies of.
    fn open_file(&self) -> std::io::Result<File> {
        let name = format!("t{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let path = self.dir.join(name);
        let f = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
        std::fs::remove_file(&path)?;
        Ok(f)
    }

    /// The record: `head` (the envelope and our header) followed by the
    /// text. The budget holds the record's memory until the returned
    /// [`Held`] is dropped. A session that must wait for memory first moves
    /// what it holds in RAM to its file and gives that memory back, so that
    /// waiting sessions hold none (else sessions each holding a part and
    /// waiting for the rest could wait for each other forever).
    pub(crate) async fn finish(mut self, mut head: Vec<u8>, budget: &MemoryBudget) -> std::io::Result<(Vec<u8>, Held)> {
        let need = head.len() + self.len;
        let held = match budget.try_take(need) {
            Some(h) => h,
            None => {
                if self.file.is_none() {
                    let mut f = BufWriter::new(self.open_file()?);
                    f.write_all(&self.mem)?;
                    self.file = Some(f);
                }
                self.mem = Vec::new();
                self.mem_held = None;
                budget.take(need).await
            }
        };
        drop(self.mem_held);
        head.reserve_exact(self.len);
        match self.file {
            None => head.extend_from_slice(&self.mem),
            Some(f) => {
                let mut f = f.into_inner().map_err(|e| e.into_error())?;
                f.seek(SeekFrom::Start(0))?;
                f.read_to_end(&mut head)?;
            }
        }
        Ok((head, held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn large_text_goes_to_a_file_and_comes_back_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let budget = MemoryBudget::new(1 << 20);
        let mut s = Spool::new(tmp.path(), &budget);
        assert_eq!(budget.available_kib(), 1024 - 64);
        let line = vec![b'x'; 998];
        for _ in 0..200 {
            s.push_line(&line).unwrap();
        }
        assert!(s.spilled());
        assert_eq!(budget.available_kib(), 1024, "the RAM part was given back");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "the file is unlinked");
        let (rec, held) = s.finish(b"HEAD".to_vec(), &budget).await.unwrap();
        assert_eq!(rec.len(), 4 + 200 * 1000);
        assert!(rec.starts_with(b"HEADxx") && rec.ends_with(b"x\r\n"));
        assert!(budget.available_kib() < 1024 - 195);
        drop(held);
        assert_eq!(budget.available_kib(), 1024);
        // More than the whole budget is granted as the whole budget.
        let all = budget.take(10 << 20).await;
        assert_eq!(budget.available_kib(), 0);
        drop(all);
    }

    /// Two sessions that each hold their first part in RAM and both need
    /// more than is left: the first to wait gives its part back, so both
    /// finish (one after the other) instead of waiting for each other.
    #[tokio::test]
    async fn waiting_sessions_hold_no_memory() {
        let tmp = tempfile::tempdir().unwrap();
        let budget = MemoryBudget::new(192 * 1024);
        let mut a = Spool::new(tmp.path(), &budget);
        let mut b = Spool::new(tmp.path(), &budget);
        assert_eq!(budget.available_kib(), 64);
        a.push_line(&[b'a'; 60_000]).unwrap();
        b.push_line(&[b'b'; 60_000]).unwrap();
        // Each record needs 100 KiB more than its text: more than is free.
        let head = vec![b'h'; 100 * 1024];
        let b_done = {
            let budget = budget.clone();
            let head = head.clone();
            tokio::spawn(async move { b.finish(head, &budget).await.unwrap() })
        };
        let (rec_a, held_a) = tokio::time::timeout(Duration::from_secs(10), a.finish(head, &budget)).await.expect("a waits forever").unwrap();
        assert!(rec_a.ends_with(b"aa\r\n"));
        drop(held_a);
        let (rec_b, _held_b) = tokio::time::timeout(Duration::from_secs(10), b_done).await.expect("b waits forever").unwrap();
        assert!(rec_b.ends_with(b"bb\r\n"));
    }

    #[tokio::test]
    async fn without_budget_a_session_spools_from_the_first_byte() {
        let tmp = tempfile::tempdir().unwrap();
        let budget = MemoryBudget::new(32 * 1024);
        let mut s = Spool::new(tmp.path(), &budget);
        s.push_line(b"small").unwrap();
        assert!(s.spilled());
        let (rec, _held) = s.finish(Vec::new(), &budget).await.unwrap();
        assert_eq!(rec, b"small\r\n");
    }
}
