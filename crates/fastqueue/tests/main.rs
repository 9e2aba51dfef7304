//! FastQueue's integration tests, built as one binary.
//!
//! - `basic`: the API (order, ack, nack, retry, dead letters, lock,
//!   recycling, many threads), and the file-per-message baseline.
//! - `crash`: property tests over random operations and crash points on
//!   the crash simulator (issue 4, item 8a).
//! - `torn`: the log cut at every byte offset of its last records (8b).
//! - `corrupt`: bit flips in the middle are reported, and repaired (8d).
//!
//! The kill -9 loop (8c) is a binary of its own, `killloop.rs`.

mod common;
mod integration;
