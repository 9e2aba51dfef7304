//! The image file that holds the emulated disk's data.
//!
//! Its size is the model's capacity: a missing image is created (sparse),
//! a smaller one is extended with zeros (sparse; what it held is kept at
//! the same offsets), an image of the right size is used as it is, and a
//! larger one is refused, since its tail could not be reached and would be
//! silently ignored.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// What opening the image did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Opened {
    /// It did not exist and was created, sparse, at the capacity.
    Created,
    /// It was smaller and was extended to the capacity (from this size).
    Extended { from_bytes: u64 },
    /// It had the capacity already.
    Existing,
}

pub struct Image {
    file: File,
    path: PathBuf,
    size_bytes: u64,
    read_only: bool,
}

impl Image {
    /// Opens (or creates) `path` as a disk of `capacity_bytes`.
    pub fn open(path: &Path, capacity_bytes: u64, read_only: bool) -> Result<(Image, Opened)> {
        let image_err = |message: String| Error::Image {
            path: path.to_path_buf(),
            message,
        };
        let existed = match std::fs::metadata(path) {
            Ok(m) if m.file_type().is_file() => true,
            Ok(m) if m.file_type().is_block_device() => {
                return Err(image_err(
                    "is a block device; the emulator serves regular files".into(),
                ))
            }
            Ok(_) => return Err(image_err("is not a regular file".into())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(Error::io(path, e)),
        };
        if !existed && read_only {
            return Err(image_err(
                "does not exist (a read-only disk needs an image)".into(),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .create(!read_only)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        // Two servers on one image would interleave their writes: lock it
        // for as long as the file is open (shared when read-only).
        let how = if read_only {
            libc::LOCK_SH
        } else {
            libc::LOCK_EX
        };
        // SAFETY: flock on our own open descriptor.
        if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            return Err(image_err(if e.kind() == io::ErrorKind::WouldBlock {
                "is in use by another iolab emu (locked)".into()
            } else {
                format!("cannot lock it: {e}")
            }));
        }
        let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let opened = if !existed {
            Opened::Created
        } else if size == capacity_bytes {
            Opened::Existing
        } else if size > capacity_bytes {
            return Err(image_err(format!(
                "holds {size} bytes, more than the disk's {capacity_bytes}; \
                 use a larger disk model or a copy truncated to {capacity_bytes} bytes"
            )));
        } else if read_only {
            return Err(image_err(format!(
                "holds {size} bytes, less than the disk's {capacity_bytes}, and a read-only image cannot be extended"
            )));
        } else {
            Opened::Extended { from_bytes: size }
        };
        if opened != Opened::Existing {
            file.set_len(capacity_bytes).map_err(|e| {
                image_err(format!(
                    "cannot make it {capacity_bytes} bytes long (the disk's capacity): {e}"
                ))
            })?;
        }
        Ok((
            Image {
                file,
                path: path.to_path_buf(),
                size_bytes: capacity_bytes,
                read_only,
            },
            opened,
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// `length` bytes at `offset` (the range is checked by the caller).
    pub fn read(&self, offset: u64, length: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; length];
        self.read_into(offset, &mut buf)?;
        Ok(buf)
    }

    /// Fills `buf` from `offset`.
    pub fn read_into(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    pub fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file.write_all_at(data, offset)
    }

    /// Makes `length` bytes at `offset` read back as zeros: one
    /// `fallocate(FALLOC_FL_ZERO_RANGE)` (allocated, unwritten extents, so
    /// no hole either way), or written zeros where the file system cannot.
    pub fn write_zeroes(&self, offset: u64, length: u64) -> io::Result<()> {
        // SAFETY: plain system call on our own open descriptor.
        let rc = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE,
                offset as libc::off_t,
                length as libc::off_t,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let zeros = vec![0u8; (1 << 20).min(length as usize)];
        let mut done = 0;
        while done < length {
            let n = (length - done).min(zeros.len() as u64) as usize;
            self.file.write_all_at(&zeros[..n], offset + done)?;
            done += n as u64;
        }
        Ok(())
    }

    /// Puts the image's data on stable storage (`fdatasync`).
    pub fn sync(&self) -> io::Result<()> {
        if self.read_only {
            return Ok(());
        }
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_extended_existing_and_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("disk.img");
        let (img, how) = Image::open(&p, 1 << 20, false).unwrap();
        assert_eq!(how, Opened::Created);
        img.write(4096, b"kept").unwrap();
        drop(img);
        let (_, how) = Image::open(&p, 1 << 20, false).unwrap();
        assert_eq!(how, Opened::Existing);
        let (img, how) = Image::open(&p, 2 << 20, false).unwrap();
        assert_eq!(
            how,
            Opened::Extended {
                from_bytes: 1 << 20
            }
        );
        assert_eq!(img.read(4096, 4).unwrap(), b"kept");
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 2 << 20);
        drop(img);
        let e = Image::open(&p, 1 << 20, false).err().unwrap().to_string();
        assert!(e.contains("more than the disk's 1048576"), "{e}");
        assert_eq!(
            std::fs::metadata(&p).unwrap().len(),
            2 << 20,
            "a refused image is left alone"
        );
    }

    #[test]
    fn one_writer_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.img");
        let (first, _) = Image::open(&p, 4096, false).unwrap();
        let e = Image::open(&p, 4096, false).err().unwrap().to_string();
        assert!(e.contains("in use by another iolab emu"), "{e}");
        assert!(Image::open(&p, 4096, true).is_err());
        drop(first);
        let (_a, _) = Image::open(&p, 4096, true).unwrap();
        let (_b, _) = Image::open(&p, 4096, true).unwrap();
    }

    #[test]
    fn zeroes_read_back_as_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let (img, _) = Image::open(&dir.path().join("z.img"), 1 << 20, false).unwrap();
        img.write(0, &[7u8; 8192]).unwrap();
        img.write_zeroes(100, 5000).unwrap();
        let back = img.read(0, 8192).unwrap();
        assert!(back[..100].iter().all(|&b| b == 7));
        assert!(back[100..5100].iter().all(|&b| b == 0));
        assert!(back[5100..].iter().all(|&b| b == 7));
        img.sync().unwrap();
    }

    #[test]
    fn read_only_needs_an_image_of_the_right_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ro.img");
        assert!(Image::open(&p, 4096, true).is_err());
        std::fs::write(&p, [1u8; 1024]).unwrap();
        assert!(Image::open(&p, 4096, true)
            .err()
            .unwrap()
            .to_string()
            .contains("cannot be extended"));
        assert!(Image::open(dir.path(), 4096, false)
            .err()
            .unwrap()
            .to_string()
            .contains("not a regular file"));
    }
}
