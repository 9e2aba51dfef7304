//! Errors of the mail server.

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// A setting is out of range (names the field).
    #[error("{0}")]
    Config(String),
    /// The queue failed.
    #[error(transparent)]
    Queue(#[from] fastqueue::Error),
    /// A socket or file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A stored record is not a mail record.
    #[error("queue record {id}: {why}")]
    BadRecord {
        /// Queue id.
        id: u64,
        /// What is wrong.
        why: String,
    },
}

impl MailError {
    /// An I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> MailError {
        MailError::Io { what: what.into(), source }
    }
}

/// Result with [`MailError`].
pub type Result<T> = std::result::Result<T, MailError>;
