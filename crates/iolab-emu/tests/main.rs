//! The emulator's integration tests, built as one binary. A bare NBD
//! client (`integration/client.rs`) drives a real server on a Unix socket.
//!
//! - `protocol`: the handshake (GO, INFO, LIST, EXPORT_NAME, ABORT,
//!   unsupported options), errors for out-of-range and malformed requests,
//!   dropped connections that do not hurt the server, stop and restart.
//! - `data`: what is written reads back, through NBD and in the image.
//! - `timing`: requests take the model's time, in arrival order; the log
//!   holds what the model charges.

mod integration;
