//! iolab-mail: the FastQueue paper's own system (seed 002, section 3: FSmail),
//! rebuilt: an SMTP server whose queue is FastQueue, or, for comparison,
//! the paper's baseline of one file per message in 10 hashed directories.
//!
//! Modules, each importing only those below it (issue 22; checked by
//! `scripts/layers.py`):
//!
//! - `server` ([`MailServer`]): listener, limits, start-up checks, drain.
//! - [`control`]: the control socket the queue commands use while the
//!   server runs ([`queue_command`]), over [`admin`]: the commands
//!   themselves (`mailq`, `postsuper`, ...), also run without a server.
//! - `session`: inbound SMTP (RFC 5321) on our own `framing` and
//!   `command` parsing; the text goes to a `spool` as it arrives; the
//!   `250` after `DATA` waits for the queue's durable commit (`commit`).
//! - `deliver`: the queue manager: grouped reads, Maildir or relay
//!   delivery, per-recipient results, retries, bounces (`dsn`).
//! - `maildir`, [`relay`]: the two delivery agents.
//! - `shared`, [`config`], [`status`], [`address`], [`envelope`], [`stats`],
//!   [`store`], `operator`, `deferlog`: the vocabulary beneath them.
//! - [`loadgen`]: a small SMTP load client that records, per message,
//!   whether it got `250` and how long `DATA` took (smtp-source cannot).
//!
//! Semantics: at least once. docs/mail.md says which duplicates a crash
//! can cause and how many.
#![deny(missing_docs)]

pub mod address;
pub mod admin;
mod command;
mod commit;
pub mod control;
pub mod config;
mod deferlog;
mod deliver;
mod dsn;
pub mod envelope;
mod error;
mod framing;
pub mod loadgen;
mod logging;
mod maildir;
mod operator;
pub mod relay;
mod server;
mod session;
mod shared;
mod spool;
pub mod stats;
pub mod status;
pub mod store;

pub use admin::{Line, Request};
pub use config::{Delivery, Network, QueueChoice, ServerConfig};
pub use control::{queue_command, Answer, Via};
pub use envelope::Envelope;
pub use error::{MailError, Result};
pub use logging::init_logging;
pub use server::{raise_nofile_limit, MailServer};
pub use stats::StatsSnapshot;
