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
    /// Creates a file that must not exist yet (`O_EXCL`): for files whose
    /// names another may have taken (`repair`'s quarantine files), so that
    /// nothing already there is overwritten.
    fn create_new(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        if self.list()?.iter().any(|n| n == name) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{name}: already exists")));
        }
        self.create(name)
    }
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
    /// Whether this process already holds the exclusive lock of this
    /// directory through another handle (a second open of the queue in the
    /// same process, which `flock` alone reports as another process).
    fn open_here(&self) -> bool {
        false
    }
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
    /// Reads consecutive bytes from `offset` into several buffers at once
    /// (a scatter read, `preadv`): `lens[i]` bytes are appended to
    /// `bufs[i]`. Returns the bytes read; fewer only at the end of the
    /// file (the buffers then hold what was read).
    fn read_parts_at(&self, bufs: &mut [Vec<u8>], lens: &[usize], offset: u64) -> io::Result<usize> {
        let mut at = offset;
        for (buf, &len) in bufs.iter_mut().zip(lens) {
            let start = buf.len();
            buf.resize(start + len, 0);
            let mut n = 0;
            while n < len {
                match self.read_at(&mut buf[start + n..], at + n as u64) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            buf.truncate(start + n);
            at += n as u64;
            if n < len {
                break;
            }
        }
        Ok((at - offset) as usize)
    }
    /// Makes written data durable (`fdatasync`).
    fn sync_data(&self) -> io::Result<()>;
    /// Starts writing `len` bytes from `offset` back to the device without
    /// waiting (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so that the
    /// device works while more is written; durability still comes only
    /// from [`StorageFile::sync_data`]. A hint: errors are ignored.
    fn start_writeback(&self, _offset: u64, _len: u64) {}
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Truncates or extends the file (`repair` of a segment file of the
    /// wrong size).
    fn set_len(&self, _len: u64) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "set_len not supported by this storage"))
    }
    /// Where the next bytes that may be non-zero are, at or after
    /// `offset` (`lseek(SEEK_DATA)`): holes of a sparse file are skipped
    /// instead of read. `None`: nothing but holes to the end. The default
    /// knows no holes.
    fn next_data(&self, offset: u64) -> io::Result<Option<u64>> {
        Ok((offset < self.len()?).then_some(offset))
    }
    /// Whether the file still has a name in the directory: a file deleted
    /// while open takes writes and syncs that no later open can find.
    fn is_linked(&self) -> io::Result<bool> {
        Ok(true)
    }
    /// A read-only shared mapping of the whole file as it is now
    /// (`mmap(PROT_READ, MAP_SHARED)`), for reads without a copy; `None`
    /// where the storage has no such thing (the crash simulator): the
    /// queue then reads with copies.
    fn map(&self) -> io::Result<Option<FileMap>> {
        Ok(None)
    }
}

/// A read-only shared mapping of a file, from [`StorageFile::map`].
///
/// It shows the file's page cache: writes to the file by anyone show
/// through, and touching a page past the end of a file someone cut
/// *after* the mapping was made raises `SIGBUS` (see docs/fastqueue.md,
/// "Reading without a copy"). The queue only reads through it bytes it
/// never rewrites while a batch holds them, and checks the file's length
/// before each run of records.
pub struct FileMap {
    map: memmap2::Mmap,
}

impl FileMap {
    /// Bytes mapped (the file's length when it was mapped).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is mapped (an empty file).
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The mapping's first byte. Raw on purpose: the queue makes slices
    /// only of bytes nobody writes while they are borrowed (payloads of
    /// published records), and copies the rest (record headers, whose
    /// delete flag `ack` changes in place) with volatile reads.
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.map.as_ptr()
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
    /// The directory's (device, inode) while this handle holds its
    /// exclusive lock, registered in [`OPEN_HERE`].
    held: std::sync::Mutex<Option<(u64, u64)>>,
}

/// Queue directories (device, inode) whose exclusive lock this process
/// holds: `flock` cannot tell a second handle of this process from another
/// process, and the error should say which it is.
static OPEN_HERE: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());

fn dir_key(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).ok().map(|m| (m.dev(), m.ino()))
}

impl Drop for DirStorage {
    fn drop(&mut self) {
        self.unlock();
    }
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
        Ok(DirStorage { dir: dir.to_path_buf(), lock: Default::default(), held: Default::default() })
    }
}

/// Linux's limit on buffers per `preadv` call (`IOV_MAX`).
const IOV_MAX: usize = 1024;

/// [`StorageFile::read_parts_at`] with `preadv(2)`, reading straight into
/// the buffers' spare capacity (no zero-filling, no second copy).
fn preadv_parts(file: &File, bufs: &mut [Vec<u8>], lens: &[usize], offset: u64) -> io::Result<usize> {
    assert_eq!(bufs.len(), lens.len());
    for (buf, &len) in bufs.iter_mut().zip(lens) {
        buf.reserve(len);
    }
    // (buffer, bytes still wanted) from `first` on.
    let mut first = 0;
    let mut done_in_first = 0usize;
    let mut total = 0usize;
    while first < bufs.len() {
        let end = (first + IOV_MAX).min(bufs.len());
        let iov: Vec<libc::iovec> = (first..end)
            .map(|i| {
                let skip = if i == first { done_in_first } else { 0 };
                let buf = &mut bufs[i];
                // SAFETY: the pointer is into the capacity reserved above,
                // past the initialised part; no reference to uninitialised
                // bytes is made.
                let base = unsafe { buf.as_mut_ptr().add(buf.len()) };
                libc::iovec { iov_base: base.cast(), iov_len: lens[i] - skip }
            })
            .collect();
        // SAFETY: every iovec points into memory owned by `bufs`, valid for
        // its length; the file descriptor is open.
        let n = unsafe {
            libc::preadv(file.as_raw_fd(), iov.as_ptr(), iov.len() as libc::c_int, (offset + total as u64) as libc::off_t)
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let mut n = n as usize;
        if n == 0 {
            break;
        }
        total += n;
        // Mark what the kernel filled as initialised, buffer by buffer.
        while n > 0 && first < bufs.len() {
            let want = lens[first] - done_in_first;
            let take = n.min(want);
            let buf = &mut bufs[first];
            // SAFETY: the kernel wrote `take` bytes right after `len`.
            unsafe { buf.set_len(buf.len() + take) };
            n -= take;
            if take == want {
                first += 1;
                done_in_first = 0;
            } else {
                done_in_first += take;
            }
        }
        while first < bufs.len() && lens[first] == 0 {
            first += 1;
        }
    }
    Ok(total)
}

/// Opens `path` with `opts` only if it is a regular file: never through a
/// symbolic link (`O_NOFOLLOW`: a link planted under a queue's name would
/// send a write, or `repair`'s quarantine copy, to a file outside the
/// queue), and never waiting on a FIFO or a device (`O_NONBLOCK` while
/// opening, then the type is checked and the flag cleared). Every file of
/// a queue is a regular file the queue made; anything else is refused at
/// once with what it is.
fn open_regular(opts: &mut OpenOptions, path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let f = opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC).open(path).map_err(|e| {
        match e.raw_os_error() {
            Some(libc::ELOOP) => io::Error::new(e.kind(), "a symbolic link, not a file the queue made: refused"),
            Some(libc::EISDIR) => io::Error::new(e.kind(), "a directory, where the queue keeps a regular file"),
            Some(libc::ENXIO) => io::Error::new(e.kind(), "a FIFO or socket with no other end, not a regular file: refused"),
            _ => e,
        }
    })?;
    let t = f.metadata()?.file_type();
    if !t.is_file() {
        let what = if t.is_fifo() {
            "a FIFO"
        } else if t.is_dir() {
            "a directory"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{what}, where the queue keeps a regular file: refused")));
    }
    // SAFETY: fcntl on a descriptor we own; no memory is passed.
    unsafe {
        let flags = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(f)
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
    fn read_parts_at(&self, bufs: &mut [Vec<u8>], lens: &[usize], offset: u64) -> io::Result<usize> {
        preadv_parts(&self.0, bufs, lens, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn start_writeback(&self, offset: u64, len: u64) {
        // SAFETY: a call on a descriptor we own; no memory is passed.
        unsafe {
            libc::sync_file_range(self.0.as_raw_fd(), offset as libc::off64_t, len as libc::off64_t, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn next_data(&self, offset: u64) -> io::Result<Option<u64>> {
        let Ok(off) = libc::off_t::try_from(offset) else { return Ok(None) };
        // SAFETY: lseek on a descriptor we own; no memory is passed.
        let at = unsafe { libc::lseek(self.0.as_raw_fd(), off, libc::SEEK_DATA) };
        if at < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENXIO) => Ok(None),
                // A file system without SEEK_DATA: no holes known.
                Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => Ok((offset < self.len()?).then_some(offset)),
                _ => Err(e),
            };
        }
        Ok(Some(at as u64))
    }
    fn is_linked(&self) -> io::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        Ok(self.0.metadata()?.nlink() > 0)
    }
    fn map(&self) -> io::Result<Option<FileMap>> {
        // SAFETY: memmap2 calls a mapping unsafe because the file may
        // change under it. The mapping is read-only, and FileMap hands out
        // no slice itself: the queue decides which bytes may be borrowed
        // (see FileMap::as_ptr).
        let map = unsafe { memmap2::MmapOptions::new().map(&self.0)? };
        Ok(Some(FileMap { map }))
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
        let f = open_regular(OpenOptions::new().read(true).write(true), &self.path(name))?;
        Ok(Arc::new(RealFile(f)))
    }

    fn open_read(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        let f = open_regular(OpenOptions::new().read(true), &self.path(name))?;
        Ok(Arc::new(RealFile(f)))
    }

    fn create(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        let f = open_regular(OpenOptions::new().read(true).write(true).create(true).truncate(true), &self.path(name))?;
        Ok(Arc::new(RealFile(f)))
    }

    fn create_new(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        let f = open_regular(OpenOptions::new().read(true).write(true).create_new(true), &self.path(name))?;
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
        let f = open_regular(OpenOptions::new().read(true).write(true).create(true).truncate(false), &self.path("LOCK"))?;
        let got = self.flock(f, libc::LOCK_EX)?;
        if got {
            if let Some(key) = dir_key(&self.dir) {
                OPEN_HERE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(key);
                *self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(key);
            }
        }
        Ok(got)
    }

    fn open_here(&self) -> bool {
        dir_key(&self.dir).is_some_and(|key| OPEN_HERE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains(&key))
    }

    fn try_lock_shared(&self) -> io::Result<bool> {
        let lock = self.path("LOCK");
        let f = match open_regular(OpenOptions::new().read(true), &lock) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match open_regular(OpenOptions::new().read(true).write(true).create(true).truncate(false), &lock) {
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
        self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(key) = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            let mut open = OPEN_HERE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(i) = open.iter().position(|k| *k == key) {
                open.swap_remove(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_read_fills_each_buffer_and_stops_at_the_end_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let s = DirStorage::new(dir.path()).unwrap();
        let f = s.create("f").unwrap();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        f.write_at(&data, 0).unwrap();
        // More buffers than IOV_MAX, some empty, the last running past the end.
        let lens: Vec<usize> = (0..1500).map(|i| [0, 1, 7, 3][i % 4]).collect();
        let mut bufs = vec![Vec::new(); lens.len()];
        let n = f.read_parts_at(&mut bufs, &lens, 13).unwrap();
        let total: usize = lens.iter().sum();
        assert_eq!(n, total.min(10_000 - 13));
        let joined: Vec<u8> = bufs.concat();
        assert_eq!(joined, data[13..13 + n]);
        // The generic path (the trait's default) agrees.
        struct Plain(Arc<dyn StorageFile>);
        impl StorageFile for Plain {
            fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
                self.0.read_at(buf, offset)
            }
            fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
                self.0.write_at(buf, offset)
            }
            fn sync_data(&self) -> io::Result<()> {
                Ok(())
            }
            fn len(&self) -> io::Result<u64> {
                self.0.len()
            }
        }
        let mut plain = vec![Vec::new(); lens.len()];
        assert_eq!(Plain(f.clone()).read_parts_at(&mut plain, &lens, 13).unwrap(), n);
        assert_eq!(plain.concat(), joined);
    }
}
