//! The emulator's error type: every message names the file, option or
//! address at fault and what was expected, so `iolab emu` prints it as one
//! line.

use std::path::PathBuf;

#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The disk model could not be built (unknown preset, bad DiskSim file).
    #[error(transparent)]
    Model(#[from] iolab_sim::Error),
    /// The image file cannot serve as this disk.
    #[error("image {path}: {message}")]
    Image { path: PathBuf, message: String },
    /// The address to listen on (socket path, port) is unusable.
    #[error("listen {address}: {message}")]
    Listen { address: String, message: String },
    /// An option has a value outside what it accepts.
    #[error("{option}: {message}")]
    Config {
        option: &'static str,
        message: String,
    },
    /// A file (image, log) could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
