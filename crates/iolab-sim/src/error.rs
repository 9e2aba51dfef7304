//! The library's error type. Every variant names where the problem is (a
//! file and line, or a spec field) and what was expected, so the `iolab`
//! command can print it as it is, without a backtrace.

use std::path::PathBuf;

#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A spec or parameter file could not be understood.
    #[error("{file}: {message}")]
    Spec { file: String, message: String },
    /// One line of a text input (trace, parameter file) is malformed.
    #[error("{file}:{line}: {message}")]
    Line { file: String, line: usize, message: String },
    /// A field has a value outside what it accepts.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// A name (scheduler, preset, workload, tunable) is not known.
    #[error("unknown {kind} '{name}'; expected one of: {valid}")]
    Unknown { kind: &'static str, name: String, valid: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// The run was stopped by its cancel flag (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
}

impl Error {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Invalid { field: field.into(), message: message.into() }
    }
    pub fn unknown(kind: &'static str, name: &str, valid: &[&str]) -> Error {
        Error::Unknown { kind, name: name.to_string(), valid: valid.join(", ") }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
