//! Reading a file a user names (a parameter file, a trace): bounded in
//! size and refused at once when it is not a regular UTF-8 text file, with
//! the file's name in the error. Shared by the disk models, the trace
//! readers and validation, beneath them all.

use crate::error::{Error, Result};
use std::path::Path;

/// Checks that `path` is a regular file of at most `limit` bytes (a
/// directory, a device or a FIFO gets a clear error instead of a hang or
/// an "is a directory") and opens it.
pub fn open_text_file(path: &Path, limit: u64) -> Result<std::fs::File> {
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
    std::fs::File::open(path).map_err(|e| Error::Io { path: path.into(), source: e })
}

/// The error for text that is not UTF-8, `offset` being the first bad byte.
fn not_utf8(file: String, offset: u64) -> Error {
    Error::Spec { file, message: format!("is not UTF-8 text (invalid byte at offset {offset})") }
}

/// Reads a text file that must be a regular file of at most `limit`
/// bytes (see [`open_text_file`]), whole.
pub fn read_text_file(path: &Path, limit: u64) -> Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_text_file(path, limit)?.read_to_end(&mut bytes).map_err(|e| Error::Io { path: path.into(), source: e })?;
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => Err(not_utf8(path.display().to_string(), e.utf8_error().valid_up_to() as u64)),
    }
}

/// The lines of a text read one at a time into one reused buffer, so that
/// reading a file of any length holds one line: what `BufRead::lines`
/// gives (the line ending, `\n` or `\r\n`, removed), without a `String`
/// per line, and text that is not UTF-8 refused with the same error as
/// [`read_text_file`]'s (`name` is the file named in errors).
pub struct TextLines<R> {
    reader: R,
    buf: Vec<u8>,
    /// Bytes read before the current line.
    offset: u64,
    name: String,
}

impl<R: std::io::BufRead> TextLines<R> {
    pub fn new(reader: R, name: &str) -> Self {
        TextLines { reader, buf: Vec::with_capacity(256), offset: 0, name: name.to_string() }
    }

    /// The next line, None at the end of the text.
    pub fn next_line(&mut self) -> Result<Option<&str>> {
        self.offset += self.buf.len() as u64;
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Error::Spec { file: self.name.clone(), message: format!("unreadable: {e}") })?;
        if n == 0 {
            return Ok(None);
        }
        let mut end = self.buf.len();
        if self.buf[end - 1] == b'\n' {
            end -= 1;
            if end > 0 && self.buf[end - 1] == b'\r' {
                end -= 1;
            }
        }
        match std::str::from_utf8(&self.buf[..end]) {
            Ok(line) => Ok(Some(line)),
            Err(e) => Err(not_utf8(self.name.clone(), self.offset + e.valid_up_to() as u64)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_lines(text: &[u8]) -> Result<Vec<String>> {
        let mut r = TextLines::new(text, "t");
        let mut out = Vec::new();
        while let Some(l) = r.next_line()? {
            out.push(l.to_string());
        }
        Ok(out)
    }

    #[test]
    fn lines_are_those_of_bufread_lines() {
        use std::io::BufRead;
        for text in ["", "a", "a\n", "a\r\nb\n\nc", "a\rb\r", "\n\n", "x y\r\n"] {
            let want: Vec<String> = text.as_bytes().lines().map(|l| l.unwrap()).collect();
            assert_eq!(all_lines(text.as_bytes()).unwrap(), want, "{text:?}");
        }
    }

    #[test]
    fn text_that_is_not_utf8_is_refused_as_when_read_whole() {
        let text = b"ok line\nbad \xff here\n";
        let whole = String::from_utf8(text.to_vec()).unwrap_err().utf8_error().valid_up_to();
        let e = all_lines(text).unwrap_err().to_string();
        assert_eq!(e, not_utf8("t".into(), whole as u64).to_string());
        assert!(e.contains("offset 12"), "{e}");
    }
}
