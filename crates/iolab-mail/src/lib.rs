//! iolab-mail: the FastQueue paper's own system (seed 002, section 3: FSmail),
//! rebuilt: an SMTP server whose queue is FastQueue, or, for comparison,
//! the paper's baseline of one file per message in 10 hashed directories.
//!
//! - `session`: inbound SMTP (RFC 5321 via `smtp-proto`); the `250`
//!   after `DATA` waits for the queue's durable commit.
//! - [`store`]: the two queues behind one trait.
//! - `deliver`, `maildir`, [`relay`]: grouped reads, Maildir or SMTP-relay
//!   delivery, retry with exponential backoff, dead-letter queue with
//!   bounce records.
//! - [`MailServer`]: listener, limits, drain on shutdown.
//! - [`loadgen`]: a small SMTP load client that records, per message,
//!   whether it got `250` and how long `DATA` took (smtp-source cannot).
//!
//! Semantics: at least once. docs/mail.md says which duplicates a crash
//! can cause and how many.
#![deny(missing_docs)]

mod address;
mod commit;
pub mod config;
mod deliver;
pub mod envelope;
mod error;
pub mod loadgen;
mod maildir;
pub mod relay;
mod server;
mod session;
mod shared;
pub mod stats;
pub mod store;

pub use config::{Delivery, QueueChoice, ServerConfig};
pub use envelope::Envelope;
pub use error::{MailError, Result};
pub use server::{raise_nofile_limit, MailServer};
pub use stats::StatsSnapshot;
