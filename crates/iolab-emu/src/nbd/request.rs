//! Requests and simple replies of the transmission phase (`doc/proto.md`,
//! "Request message", "Simple reply message", "Request types", "Error
//! values"): reading a request, checking it against the export, and the
//! reply's bytes.

use super::proto::*;
use crate::model::Op;
use std::io::{self, Read};

/// A request header as sent.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub flags: u16,
    pub kind: u16,
    pub cookie: u64,
    pub offset: u64,
    pub length: u32,
}

/// Reads a request header; `Ok(None)` when the client hung up between
/// requests. A wrong magic is an `InvalidData` error: the stream cannot be
/// resynchronised, so the connection is dropped.
pub fn read_header(r: &mut impl Read) -> io::Result<Option<Header>> {
    let mut b = [0u8; REQUEST_HEADER_BYTES];
    match r.read_exact(&mut b[..1]) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    r.read_exact(&mut b[1..])?;
    let magic = u32::from_be_bytes(b[0..4].try_into().unwrap());
    if magic != REQUEST_MAGIC {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("request magic {magic:#x}"),
        ));
    }
    Ok(Some(Header {
        flags: u16::from_be_bytes(b[4..6].try_into().unwrap()),
        kind: u16::from_be_bytes(b[6..8].try_into().unwrap()),
        cookie: u64::from_be_bytes(b[8..16].try_into().unwrap()),
        offset: u64::from_be_bytes(b[16..24].try_into().unwrap()),
        length: u32::from_be_bytes(b[24..28].try_into().unwrap()),
    }))
}

/// What a request asks for, once checked.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// NBD_CMD_DISC: serve what came before, then close.
    Disconnect,
    /// An operation for the disk, or the error to answer it with. `op` is
    /// `None` for a command type the server does not know.
    Io {
        op: Option<Op>,
        fua: bool,
        no_hole: bool,
        error: Option<NbdError>,
    },
}

/// Checks `h` against an export of `size` bytes: flags valid for the
/// command, not read-only, a non-zero length within the maximum payload,
/// and within the export. The errors are the ones the document asks for:
/// EINVAL for an unknown command or flag, a bad length, a read or trim
/// past the end; ENOSPC for a write past the end; EPERM for a write to a
/// read-only export.
pub fn check(h: &Header, size: u64, read_only: bool) -> Command {
    let op = match h.kind {
        CMD_READ => Some(Op::Read),
        CMD_WRITE => Some(Op::Write),
        CMD_DISC => return Command::Disconnect,
        CMD_FLUSH => Some(Op::Flush),
        CMD_TRIM => Some(Op::Trim),
        CMD_WRITE_ZEROES => Some(Op::WriteZeroes),
        _ => None,
    };
    let fua = h.flags & CMD_FLAG_FUA != 0;
    let no_hole = h.flags & CMD_FLAG_NO_HOLE != 0;
    let error = match op {
        None => Some(NbdError::Inval),
        Some(op) => check_op(op, h, size, read_only),
    };
    Command::Io {
        op,
        fua,
        no_hole,
        error,
    }
}

fn check_op(op: Op, h: &Header, size: u64, read_only: bool) -> Option<NbdError> {
    // FUA is valid on every command once negotiated (Command flags);
    // NO_HOLE only on WRITE_ZEROES. DF, REQ_ONE, FAST_ZERO were not
    // offered, so they are errors here.
    let allowed = match op {
        Op::WriteZeroes => CMD_FLAG_FUA | CMD_FLAG_NO_HOLE,
        _ => CMD_FLAG_FUA,
    };
    if h.flags & !allowed != 0 {
        return Some(NbdError::Inval);
    }
    let writes = matches!(op, Op::Write | Op::Trim | Op::WriteZeroes);
    if writes && read_only {
        return Some(NbdError::Perm);
    }
    if op == Op::Flush {
        // "length and offset are reserved, and MUST be set to all-zero".
        return (h.offset != 0 || h.length != 0).then_some(NbdError::Inval);
    }
    if h.length == 0 {
        return Some(NbdError::Inval);
    }
    if matches!(op, Op::Read | Op::Write) && h.length > MAX_PAYLOAD {
        return Some(NbdError::Inval);
    }
    let beyond = h
        .offset
        .checked_add(h.length as u64)
        .is_none_or(|end| end > size);
    if beyond {
        return Some(match op {
            Op::Write | Op::WriteZeroes => NbdError::NoSpc,
            _ => NbdError::Inval,
        });
    }
    None
}

/// Bytes of a simple reply header.
pub const REPLY_HEADER_BYTES: usize = 16;

/// Writes a simple reply header into the first 16 bytes of `buf`.
pub fn put_reply_header(buf: &mut [u8], cookie: u64, error: Option<NbdError>) {
    buf[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    buf[4..8].copy_from_slice(&error.map_or(0, NbdError::code).to_be_bytes());
    buf[8..16].copy_from_slice(&cookie.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(kind: u16, flags: u16, offset: u64, length: u32) -> Header {
        Header {
            flags,
            kind,
            cookie: 7,
            offset,
            length,
        }
    }

    fn err(c: Command) -> Option<NbdError> {
        match c {
            Command::Io { error, .. } => error,
            Command::Disconnect => panic!("disconnect"),
        }
    }

    #[test]
    fn errors_follow_the_document() {
        let size = 1 << 20;
        assert_eq!(err(check(&h(CMD_READ, 0, 0, 4096), size, false)), None);
        assert_eq!(
            err(check(&h(CMD_READ, 0, size - 512, 1024), size, false)),
            Some(NbdError::Inval)
        );
        assert_eq!(
            err(check(&h(CMD_WRITE, 0, size - 512, 1024), size, false)),
            Some(NbdError::NoSpc)
        );
        assert_eq!(
            err(check(&h(CMD_WRITE_ZEROES, 0, size, 1), size, false)),
            Some(NbdError::NoSpc)
        );
        assert_eq!(
            err(check(&h(CMD_TRIM, 0, size, 1), size, false)),
            Some(NbdError::Inval)
        );
        assert_eq!(
            err(check(&h(CMD_READ, 0, u64::MAX, 1), size, false)),
            Some(NbdError::Inval)
        );
        assert_eq!(
            err(check(&h(CMD_READ, 0, 0, 0), size, false)),
            Some(NbdError::Inval)
        );
        assert_eq!(
            err(check(&h(CMD_WRITE, 0, 0, 4096), size, true)),
            Some(NbdError::Perm)
        );
        assert_eq!(err(check(&h(CMD_READ, 0, 0, 4096), size, true)), None);
        assert_eq!(err(check(&h(CMD_FLUSH, 0, 0, 0), size, false)), None);
        assert_eq!(
            err(check(&h(CMD_FLUSH, 0, 0, 1), size, false)),
            Some(NbdError::Inval)
        );
        assert_eq!(
            err(check(&h(CMD_WRITE, CMD_FLAG_FUA, 0, 512), size, false)),
            None
        );
        assert_eq!(
            err(check(&h(CMD_WRITE, CMD_FLAG_NO_HOLE, 0, 512), size, false)),
            Some(NbdError::Inval)
        );
        assert_eq!(
            err(check(
                &h(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE, 0, 512),
                size,
                false
            )),
            None
        );
        assert_eq!(
            err(check(&h(CMD_READ, 1 << 2, 0, 512), size, false)),
            Some(NbdError::Inval)
        );
        assert_eq!(
            err(check(&h(CMD_READ, 0, 0, MAX_PAYLOAD + 1), u64::MAX, false)),
            Some(NbdError::Inval)
        );
        assert_eq!(
            err(check(&h(99, 0, 0, 512), size, false)),
            Some(NbdError::Inval)
        );
        assert!(matches!(
            check(&h(99, 0, 0, 512), size, false),
            Command::Io { op: None, .. }
        ));
        assert_eq!(
            check(&h(CMD_DISC, 0, 0, 0), size, false),
            Command::Disconnect
        );
    }

    #[test]
    fn headers_round_trip_and_bad_magic_is_an_error() {
        let mut b = REQUEST_MAGIC.to_be_bytes().to_vec();
        b.extend_from_slice(&1u16.to_be_bytes());
        b.extend_from_slice(&CMD_WRITE.to_be_bytes());
        b.extend_from_slice(&42u64.to_be_bytes());
        b.extend_from_slice(&4096u64.to_be_bytes());
        b.extend_from_slice(&512u32.to_be_bytes());
        let got = read_header(&mut &b[..]).unwrap().unwrap();
        assert_eq!(
            got,
            Header {
                flags: 1,
                kind: CMD_WRITE,
                cookie: 42,
                offset: 4096,
                length: 512
            }
        );
        assert_eq!(read_header(&mut &b[..0]).unwrap(), None);
        b[0] = 0;
        assert_eq!(
            read_header(&mut &b[..]).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        assert_eq!(
            read_header(&mut &b[..10]).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        let mut r = [0u8; 16];
        put_reply_header(&mut r, 42, Some(NbdError::NoSpc));
        assert_eq!(&r[4..8], &28u32.to_be_bytes());
    }
}
