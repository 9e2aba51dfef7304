//! Reading a file a user names (a parameter file, a trace): bounded in
//! size and refused at once when it is not a regular UTF-8 text file, with
//! the file's name in the error. Shared by the disk models, the trace
//! readers and validation, beneath them all.

use crate::error::{Error, Result};
use std::path::Path;

/// Reads a text file that must be a regular file of at most `limit`
/// bytes; a directory, a device or a FIFO gets a clear error instead of a
/// hang or an "is a directory".
pub fn read_text_file(path: &Path, limit: u64) -> Result<String> {
    let bad = |m: String| Err(Error::Spec { file: path.display().to_string(), message: m });
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return Err(Error::Io { path: path.into(), source: e }),
    };
    if meta.is_dir() {
        return bad("is a directory, not a file".into());
    }
    if !meta.is_file() {
        return bad("is not a regular file (a device, FIFO or socket)".into());
    }
    if meta.len() > limit {
        return bad(format!("is {} bytes; files of at most {limit} bytes are read", meta.len()));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::Io { path: path.into(), source: e })?;
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => bad(format!("is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to())),
    }
}
