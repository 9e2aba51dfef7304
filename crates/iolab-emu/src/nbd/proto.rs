//! Constants of the NBD protocol (NetworkBlockDevice/nbd `doc/proto.md`,
//! sections "Values" and "Transmission"), and the big-endian reads every
//! message is made of. Names follow the document.

use std::io::{self, Read};

// Handshake (section "Fixed newstyle negotiation").
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943; // "NBDMAGIC"
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054; // "IHAVEOPT"
pub const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9; // option replies

// Handshake flags (server) and client flags.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
pub const FLAG_NO_ZEROES: u16 = 1 << 1;
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

// Transmission flags.
pub const FLAG_HAS_FLAGS: u16 = 1 << 0;
pub const FLAG_READ_ONLY: u16 = 1 << 1;
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
pub const FLAG_SEND_FUA: u16 = 1 << 3;
pub const FLAG_ROTATIONAL: u16 = 1 << 4;
pub const FLAG_SEND_TRIM: u16 = 1 << 5;
pub const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;

// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_STARTTLS: u32 = 5;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;

// Option replies.
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
pub const REP_ERR_INVALID: u32 = (1 << 31) + 3;

// Information types (NBD_REP_INFO).
pub const INFO_EXPORT: u16 = 0;
pub const INFO_NAME: u16 = 1;
pub const INFO_DESCRIPTION: u16 = 2;
pub const INFO_BLOCK_SIZE: u16 = 3;

// Transmission (section "Request message", "Simple reply message").
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const REQUEST_HEADER_BYTES: usize = 28;

// Commands.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;

// Command flags.
pub const CMD_FLAG_FUA: u16 = 1 << 0;
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;

/// NBD error values (section "Error values"), with their names for the log.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NbdError {
    Perm,
    Io,
    Inval,
    NoSpc,
}

impl NbdError {
    pub fn code(self) -> u32 {
        match self {
            NbdError::Perm => 1,
            NbdError::Io => 5,
            NbdError::Inval => 22,
            NbdError::NoSpc => 28,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            NbdError::Perm => "EPERM",
            NbdError::Io => "EIO",
            NbdError::Inval => "EINVAL",
            NbdError::NoSpc => "ENOSPC",
        }
    }
}

/// Size constraints advertised with NBD_INFO_BLOCK_SIZE: any byte range
/// works (the image is a regular file), 4 KiB is efficient, and payloads
/// up to 32 MiB (2^25, the size every client may rely on and QEMU's own
/// limit) are accepted.
pub const MIN_BLOCK: u32 = 1;
pub const PREFERRED_BLOCK: u32 = 4096;
pub const MAX_PAYLOAD: u32 = 1 << 25;

/// Longest option data the server reads; options are a few strings of at
/// most 4 KiB each (section "Conventions"), so anything longer is treated
/// as a denial of service and the connection dropped.
pub const MAX_OPTION_BYTES: u32 = 1 << 16;

pub fn read_u16(r: &mut impl Read) -> io::Result<u16> {
    let mut b = [0u8; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}

pub fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

pub fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}
