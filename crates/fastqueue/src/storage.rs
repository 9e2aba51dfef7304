//! The storage layer: every byte FastQueue reads or writes goes through the
//! [`Storage`] and [`StorageFile`] traits. [`DirStorage`] is the real one (a
//! directory of files, `pwrite`/`pread`/`fdatasync`); the crash simulator
//! in [`crate::sim`] is the other, used by the tests.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A directory of named files. Names are plain file names (no `/`).
pub trait Storage: Send + Sync {
    /// The path shown in messages for `name` (the directory itself for "").
    fn path(&self, name: &str) -> PathBuf;
    /// Names of the files in the directory.
    fn list(&self) -> io::Result<Vec<String>>;
    /// Opens an existing file for reading and writing.
    fn open(&self, name: &str) -> io::Result<Arc<dyn StorageFile>>;
    /// Opens an existing file for reading only (what `check` uses, so that
    /// it works on a read-only file system).
    fn open_read(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        self.open(name)
    }
    /// Creates an empty file (truncating one that exists).
    fn create(&self, name: &str) -> io::Result<Arc<dyn StorageFile>>;
    /// Renames `from` to `to`, replacing `to`. Durable after
    /// [`Storage::sync_dir`].
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Removes a file. Durable after [`Storage::sync_dir`].
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Makes creations, renames and removals durable (`fsync` of the
    /// directory).
    fn sync_dir(&self) -> io::Result<()>;
    /// Takes the exclusive lock of the directory; `false` if another
    /// holder has it. Held until [`Storage::unlock`] or until the storage
    /// is dropped.
    fn try_lock(&self) -> io::Result<bool>;
    /// Takes a shared lock for a reader that changes nothing (`check`):
    /// `false` if a writer holds the exclusive lock. Needs no write
    /// permission: where the lock file cannot be created (a read-only file
    /// system) no writer can exist and it succeeds without a lock.
    fn try_lock_shared(&self) -> io::Result<bool> {
        self.try_lock()
    }
    /// Releases the lock taken by [`Storage::try_lock`].
    fn unlock(&self);
    /// Bytes free for new files (`None`: unknown, no limit checked).
    fn available_bytes(&self) -> io::Result<Option<u64>> {
        Ok(None)
    }
}

/// One open file.
#[allow(clippy::len_without_is_empty)]
pub trait StorageFile: Send + Sync {
    /// Reads at `offset`; returns fewer bytes only at the end of the file.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Writes all of `buf` at `offset`.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Makes written data durable (`fdatasync`).
    fn sync_data(&self) -> io::Result<()>;
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Truncates or extends the file (`repair` of a segment file of the
    /// wrong size).
    fn set_len(&self, _len: u64) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "set_len not supported by this storage"))
    }
    /// Whether the file still has a name in the directory: a file deleted
    /// while open takes writes and syncs that no later open can find.
    fn is_linked(&self) -> io::Result<bool> {
        Ok(true)
    }
}

/// Reads as much of `buf` as the file has from `offset`.
pub fn read_full(
    file: &dyn StorageFile,
    buf: &mut [u8],
    offset: u64,
) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// The real storage: a directory on a file system.
pub struct DirStorage {
    dir: PathBuf,
    lock: std::sync::Mutex<Option<File>>,
}

impl DirStorage {
    /// Uses `dir`, creating it (and making its creation durable) if it
    /// does not exist.
    pub fn new(dir: &Path) -> io::Result<DirStorage> {
        if !dir.is_dir() {
            std::fs::create_dir_all(dir)?;
            if let Some(parent) = dir.parent() {
                let parent = if parent.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    parent
                };
                File::open(parent)?.sync_all()?;
            }
        }
        Ok(DirStorage { dir: dir.to_path_buf(), lock: Default::default() })
    }
}

fn is_read_only(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM))
}

impl DirStorage {
    /// Takes `flock(kind)` on `f` without waiting and keeps `f` open.
    fn flock(&self, f: File, kind: libc::c_int) -> io::Result<bool> {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(f.as_raw_fd(), kind | libc::LOCK_NB) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                Ok(false)
            } else {
                Err(e)
            };
        }
        *self.lock.lock().unwrap() = Some(f);
        Ok(true)
    }
}

struct RealFile(File);

impl StorageFile for RealFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn is_linked(&self) -> io::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        Ok(self.0.metadata()?.nlink() > 0)
    }
}

impl Storage for DirStorage {
    fn path(&self, name: &str) -> PathBuf {
        if name.is_empty() {
            self.dir.clone()
        } else {
            self.dir.join(name)
        }
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        let f = OpenOptions::new().read(true).write(true).open(self.path(name))?;
        Ok(Arc::new(RealFile(f)))
    }

    fn open_read(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        let f = File::open(self.path(name))?;
        Ok(Arc::new(RealFile(f)))
    }

    fn create(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(self.path(name))?;
        Ok(Arc::new(RealFile(f)))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.path(from), self.path(to))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        std::fs::remove_file(self.path(name))
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }

    fn try_lock(&self) -> io::Result<bool> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.path("LOCK"))?;
        self.flock(f, libc::LOCK_EX)
    }

    fn try_lock_shared(&self) -> io::Result<bool> {
        let lock = self.path("LOCK");
        let f = match File::open(&lock) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock) {
                    Ok(f) => f,
                    // Read-only: no writer can take the lock either.
                    Err(e) if is_read_only(&e) => return Ok(true),
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        self.flock(f, libc::LOCK_SH)
    }

    fn available_bytes(&self) -> io::Result<Option<u64>> {
        let path = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
        // SAFETY: statvfs writes into the struct we pass; the path is a
        // valid C string.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(path.as_ptr(), &mut s) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Some((s.f_bavail as u64).saturating_mul(s.f_frsize as u64)))
    }

    fn unlock(&self) {
        // Closing the descriptor releases the flock.
        self.lock.lock().unwrap().take();
    }
}
