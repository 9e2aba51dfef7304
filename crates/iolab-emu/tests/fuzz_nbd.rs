//! Fuzzing the NBD server's decoders (issue 27): the handshake and the
//! request decoder read bytes an untrusted client sends. The seed corpus
//! (tests/fuzz-corpus/) is replayed as it is, then mutated by proptest: bytes
//! flipped, cut, spliced and repeated, a fixed number of cases per run
//! (`PROPTEST_CASES` raises it). Whatever the bytes, the server answers
//! within bounds or drops the connection: no panic, no reply larger than
//! the protocol allows, and a request is let through to the disk only if it
//! lies within the export.

use iolab_emu::nbd::handshake::{negotiate, Export};
use iolab_emu::nbd::request::{check, read_header, Command};
use proptest::prelude::*;
use std::io::{self, Cursor, Read, Write};
use std::path::PathBuf;

const SIZE: u64 = 1 << 30;

/// A connection whose client sends `input` and then hangs up; what the
/// server writes is kept (and bounded: a server that answers one option
/// with megabytes is a bug).
struct Wire {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Wire {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn corpus(prefix: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    files.sort();
    let out: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(!out.is_empty(), "no {prefix}* seeds in {}", dir.display());
    out
}

fn export() -> Export {
    Export { size_bytes: SIZE, transmission_flags: 0x7f, description: "fuzz".into() }
}

fn handshake(input: Vec<u8>) {
    let len = input.len();
    let mut wire = Wire { input: Cursor::new(input), output: Vec::new() };
    let _ = negotiate(&mut wire, &export());
    // Each option gets a reply of at most a few hundred bytes (NBD_OPT_LIST
    // names one export; NBD_INFO blocks are small); 18 bytes of greeting.
    assert!(wire.output.len() <= 18 + 512 * (len / 16 + 1), "{} bytes of replies to {len} bytes", wire.output.len());
}

fn requests(input: Vec<u8>, read_only: bool) {
    let mut r = Cursor::new(input);
    while let Ok(Some(h)) = read_header(&mut r) {
        match check(&h, SIZE, read_only) {
            Command::Disconnect => break,
            Command::Io { op: Some(_), error: None, .. } => {
                // Let through to the disk: it must lie within the export.
                assert!(h.offset.checked_add(h.length as u64).is_some_and(|end| end <= SIZE), "{h:?}");
            }
            Command::Io { .. } => {}
        }
        // Skip a write's data as the server does (it may be cut short).
        if h.kind == 1 {
            let mut sink = vec![0u8; (h.length as usize).min(1 << 16)];
            if r.read_exact(&mut sink).is_err() {
                break;
            }
        }
    }
}

/// A seed from the corpus, mutated: bytes replaced, a range cut out, a
/// range repeated, random bytes spliced in.
fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len();
    (0..n, prop::collection::vec((any::<u8>(), any::<u16>(), any::<u16>(), any::<u8>()), 0..8)).prop_map(
        move |(i, edits)| {
            let mut b = seeds[i].clone();
            for (kind, at, len, byte) in edits {
                let at = if b.is_empty() { 0 } else { at as usize % (b.len() + 1) };
                let len = (len as usize) % 64;
                match kind % 4 {
                    0 if at < b.len() => {
                        b[at] = byte;
                    }
                    1 => {
                        let end = (at + len).min(b.len());
                        b.drain(at..end);
                    }
                    2 => {
                        let end = (at + len).min(b.len());
                        let piece = b[at..end].to_vec();
                        for _ in 0..(byte % 8) {
                            b.splice(at..at, piece.iter().copied());
                        }
                    }
                    _ => {
                        b.splice(at..at, std::iter::repeat_n(byte, len));
                    }
                }
            }
            b
        },
    )
}

#[test]
fn the_seed_corpus_as_it_is() {
    for s in corpus("handshake-") {
        handshake(s);
    }
    for s in corpus("request-") {
        requests(s.clone(), false);
        requests(s, true);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

    #[test]
    fn mutated_handshakes(input in mutated(corpus("handshake-"))) {
        handshake(input);
    }

    #[test]
    fn mutated_requests(input in mutated(corpus("request-")), read_only in any::<bool>()) {
        requests(input, read_only);
    }

    #[test]
    fn arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..512)) {
        handshake(input.clone());
        requests(input, false);
    }
}
