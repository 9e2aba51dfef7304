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
}

/// Memory taken from the budget; given back when dropped.
pub(crate) struct Held(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

fn kib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

impl MemoryBudget {
    pub(crate) fn new(bytes: usize) -> MemoryBudget {
        MemoryBudget { sem: Arc::new(Semaphore::new(bytes / 1024)) }
    }

    /// `bytes` if the budget has them now.
    pub(crate) fn try_take(&self, bytes: usize) -> Option<Held> {
        self.sem.clone().try_acquire_many_owned(kib(bytes)).ok().map(|p| Held(Some(p)))
    }

    /// `bytes`, waiting until the budget has them (the configuration
    /// checks that the largest record fits in the whole budget).
    pub(crate) async fn take(&self, bytes: usize) -> Held {
        Held(self.sem.clone().acquire_many_owned(kib(bytes)).await.ok())
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

    /// The record: `head` (already holding the envelope and our header,
    /// with room reserved by the caller) followed by the text. The budget
    /// holds the record's memory until the returned [`Held`] is dropped.
    pub(crate) async fn finish(self, mut head: Vec<u8>, budget: &MemoryBudget) -> std::io::Result<(Vec<u8>, Held)> {
        let held = budget.take(head.len() + self.len).await;
        drop(self.mem_held);
        match self.file {
            None => head.extend_from_slice(&self.mem),
            Some(f) => {
                let mut f = f.into_inner().map_err(|e| e.into_error())?;
                f.seek(SeekFrom::Start(0))?;
                head.reserve_exact(self.len);
                f.read_to_end(&mut head)?;
            }
        }
        Ok((head, held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
