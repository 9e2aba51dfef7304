//! Helpers shared by the test binaries (`main.rs`, `killloop.rs`).

use std::time::Duration;

use fastqueue::{Config, FastQueue, Message};

/// Small segments so that tests cross segment boundaries and recycle.
pub fn small_config() -> Config {
    Config {
        segment_size: 16 << 10,
        batch_delay: Duration::ZERO,
        spare_segments: 0,
        ..Config::default()
    }
}

/// Takes every deliverable message (main, retry and dead), leaving them in
/// flight.
pub fn drain(q: &FastQueue) -> Vec<Message> {
    let mut out = Vec::new();
    loop {
        let batch = q.dequeue_batch(64, None).unwrap();
        if batch.is_empty() {
            break;
        }
        out.extend(batch);
    }
    loop {
        let batch = q.dequeue_dead(64).unwrap();
        if batch.is_empty() {
            break;
        }
        out.extend(batch);
    }
    out
}

/// A payload that names itself, of `len` bytes (at least the key).
pub fn payload(key: &str, len: usize) -> Vec<u8> {
    let mut p = key.as_bytes().to_vec();
    p.push(b'|');
    while p.len() < len {
        p.push(b'a' + (p.len() % 26) as u8);
    }
    p
}

/// The key of a payload made by [`payload`].
pub fn key_of(p: &[u8]) -> String {
    let end = p.iter().position(|&b| b == b'|').unwrap_or(p.len());
    String::from_utf8_lossy(&p[..end]).into_owned()
}
