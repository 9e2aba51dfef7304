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
        Error::Unknown { kind, name: one_line(name), valid: valid.join(", ") }
    }
}

/// `text` with control characters escaped (`\n`, `\u{7}`), so that a name
/// or value from the input never breaks an error message over lines.
pub fn one_line(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars().map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() }).collect()
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
