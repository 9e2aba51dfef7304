//! The fixed newstyle handshake, server side (`doc/proto.md`, "Handshake"
//! and "Option types"): NBD_OPT_GO, NBD_OPT_INFO and NBD_OPT_EXPORT_NAME
//! enter or describe the one export; NBD_OPT_LIST lists it; NBD_OPT_ABORT
//! ends the session; every other option (STARTTLS, STRUCTURED_REPLY, the
//! metadata contexts, extended headers...) gets NBD_REP_ERR_UNSUP, after
//! which clients carry on without it (QEMU and libnbd then use simple
//! replies).
//!
//! The server has a single export and gives it under any name a client
//! asks for (QEMU's `nbd:unix:PATH` asks for "", libnbd's URIs for what
//! follows the slash).

use super::proto::*;
use std::io::{self, Read, Write};

/// What the handshake tells a client about the export.
#[derive(Clone, Debug)]
pub struct Export {
    pub size_bytes: u64,
    pub transmission_flags: u16,
    /// Shown by `nbdinfo` and in NBD_OPT_LIST replies.
    pub description: String,
}

/// How the handshake ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The client entered the transmission phase.
    Transmission,
    /// The client ended the session (NBD_OPT_ABORT, or it hung up).
    Closed,
}

fn violation(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// An option reply (`doc/proto.md`, "Fixed newstyle negotiation").
fn reply(s: &mut impl Write, option: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut m = Vec::with_capacity(20 + data.len());
    m.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    m.extend_from_slice(&option.to_be_bytes());
    m.extend_from_slice(&kind.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    s.write_all(&m)
}

fn info(s: &mut impl Write, option: u32, kind: u16, payload: &[u8]) -> io::Result<()> {
    let mut d = kind.to_be_bytes().to_vec();
    d.extend_from_slice(payload);
    reply(s, option, REP_INFO, &d)
}

/// Runs the handshake on a new connection. An `Err` is a protocol
/// violation or an I/O failure; the caller drops the connection.
pub fn negotiate<S: Read + Write>(s: &mut S, export: &Export) -> io::Result<Outcome> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&hello)?;
    let client_flags = match read_u32(s) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Outcome::Closed),
        Err(e) => return Err(e),
    };
    // "the server MUST drop the TCP connection if the client sets an
    // unknown flag" (Client flags).
    if client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(violation(format!("unknown client flags {client_flags:#x}")));
    }
    let no_zeroes = client_flags & FLAG_C_NO_ZEROES != 0;
    loop {
        let magic = match read_u64(s) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Outcome::Closed),
            Err(e) => return Err(e),
        };
        if magic != IHAVEOPT {
            return Err(violation(format!(
                "option magic {magic:#x}, expected IHAVEOPT"
            )));
        }
        let option = read_u32(s)?;
        let len = read_u32(s)?;
        if len > MAX_OPTION_BYTES {
            return Err(violation(format!(
                "option {option} carries {len} bytes (at most {MAX_OPTION_BYTES})"
            )));
        }
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data)?;
        match option {
            OPT_EXPORT_NAME => {
                // No way to return an error here; the export always exists.
                let mut m = Vec::with_capacity(134);
                m.extend_from_slice(&export.size_bytes.to_be_bytes());
                m.extend_from_slice(&export.transmission_flags.to_be_bytes());
                if !no_zeroes {
                    m.extend_from_slice(&[0u8; 124]);
                }
                s.write_all(&m)?;
                return Ok(Outcome::Transmission);
            }
            OPT_ABORT => {
                // The client may have hung up already; either is fine.
                let _ = reply(s, option, REP_ACK, &[]);
                return Ok(Outcome::Closed);
            }
            OPT_LIST => {
                if !data.is_empty() {
                    reply(s, option, REP_ERR_INVALID, b"NBD_OPT_LIST takes no data")?;
                    continue;
                }
                // Name "" (the default export), then its description.
                let mut d = 0u32.to_be_bytes().to_vec();
                d.extend_from_slice(export.description.as_bytes());
                reply(s, option, REP_SERVER, &d)?;
                reply(s, option, REP_ACK, &[])?;
            }
            OPT_INFO | OPT_GO => {
                let Some((name, requests)) = parse_info_request(&data) else {
                    reply(
                        s,
                        option,
                        REP_ERR_INVALID,
                        b"malformed NBD_OPT_INFO/NBD_OPT_GO data",
                    )?;
                    continue;
                };
                let mut e = export.size_bytes.to_be_bytes().to_vec();
                e.extend_from_slice(&export.transmission_flags.to_be_bytes());
                info(s, option, INFO_EXPORT, &e)?;
                if requests.contains(&INFO_NAME) {
                    info(s, option, INFO_NAME, name)?;
                }
                if requests.contains(&INFO_DESCRIPTION) {
                    info(s, option, INFO_DESCRIPTION, export.description.as_bytes())?;
                }
                // Sent unasked too: a client ignores what it did not ask for.
                let mut b = MIN_BLOCK.to_be_bytes().to_vec();
                b.extend_from_slice(&PREFERRED_BLOCK.to_be_bytes());
                b.extend_from_slice(&MAX_PAYLOAD.to_be_bytes());
                info(s, option, INFO_BLOCK_SIZE, &b)?;
                reply(s, option, REP_ACK, &[])?;
                if option == OPT_GO {
                    return Ok(Outcome::Transmission);
                }
            }
            OPT_STARTTLS => reply(s, option, REP_ERR_UNSUP, b"TLS is not supported")?,
            _ => reply(
                s,
                option,
                REP_ERR_UNSUP,
                b"option not supported by iolab emu",
            )?,
        }
    }
}

/// The export name and information requests of NBD_OPT_INFO/GO data:
/// u32 name length, name, u16 count, count × u16. `None` if the lengths do
/// not add up.
fn parse_info_request(data: &[u8]) -> Option<(&[u8], Vec<u16>)> {
    let name_len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let name = data.get(4..4usize.checked_add(name_len)?)?;
    let at = 4 + name_len;
    let n = u16::from_be_bytes(data.get(at..at + 2)?.try_into().ok()?) as usize;
    let list = data.get(at + 2..)?;
    if list.len() != 2 * n {
        return None;
    }
    Some((
        name,
        list.chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_requests_parse_and_bad_lengths_are_refused() {
        let mut d = 3u32.to_be_bytes().to_vec();
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&2u16.to_be_bytes());
        d.extend_from_slice(&INFO_NAME.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        let (name, reqs) = parse_info_request(&d).unwrap();
        assert_eq!(name, b"abc");
        assert_eq!(reqs, vec![INFO_NAME, INFO_BLOCK_SIZE]);
        assert!(parse_info_request(&d[..d.len() - 1]).is_none());
        assert!(parse_info_request(&[0, 0, 0]).is_none());
        let mut huge = u32::MAX.to_be_bytes().to_vec();
        huge.extend_from_slice(&[0, 0]);
        assert!(parse_info_request(&huge).is_none());
    }
}
