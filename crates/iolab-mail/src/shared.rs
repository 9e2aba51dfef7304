//! [`Shared`]: the state every session and delivery worker reads (the
//! settings, the queues, the counters). It sits beneath the modules that
//! use it (`server` builds it; `session`, `deliver` read it) so that none
//! of them imports another to reach it (issue 22: no import circle).

use std::path::PathBuf;
use std::sync::Arc;

use crate::commit::Committer;
use crate::config::ServerConfig;
use crate::operator::Operator;
use crate::spool::MemoryBudget;
use crate::stats::Stats;
use crate::store::MailQueue;

/// What sessions and delivery workers share.
pub(crate) struct Shared {
    pub(crate) cfg: ServerConfig,
    pub(crate) queue: Arc<dyn MailQueue>,
    pub(crate) dead: Arc<dyn MailQueue>,
    pub(crate) stats: Arc<Stats>,
    /// For a group-committing queue: the committer threads sessions hand
    /// their records to (else each session's enqueue runs on a blocking
    /// thread of its own, as the file-per-message queue needs).
    pub(crate) committer: Option<Committer>,
    /// Memory for message text, shared by all sessions (`spool.rs`).
    pub(crate) memory: MemoryBudget,
    /// Where message text beyond the memory goes while it arrives.
    pub(crate) spool_dir: PathBuf,
    /// Deletes by the queue commands, as delivery must see them.
    pub(crate) operator: Arc<Operator>,
}

