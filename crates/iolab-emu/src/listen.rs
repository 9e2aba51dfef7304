//! Where the emulator listens and what a connection is: a Unix socket
//! (QEMU's `nbd:unix:PATH`) or TCP on the loopback address, behind one
//! [`Stream`] type for both.

use crate::error::{Error, Result};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Where to listen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// A Unix socket at this path (QEMU: `nbd:unix:PATH`).
    Unix(PathBuf),
    /// TCP on 127.0.0.1 at this port (0: any free port). Loopback only:
    /// NBD has no authentication.
    Tcp(u16),
}

/// A connected socket of either kind.
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }
    /// How long a write may block (a client that stops reading).
    pub(crate) fn set_write_timeout(&self, t: Option<std::time::Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tcp(s) => s.set_write_timeout(t),
        }
    }
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(how),
            Stream::Tcp(s) => s.shutdown(how),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => (&*s).write(buf),
            Stream::Tcp(s) => (&*s).write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub(crate) enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Listener {
    pub(crate) fn bind(listen: &Listen) -> Result<Listener> {
        let l = match listen {
            Listen::Unix(path) => {
                clear_stale_socket(path)?;
                let l = UnixListener::bind(path).map_err(|e| Error::Listen {
                    address: path.display().to_string(),
                    message: e.to_string(),
                })?;
                Listener::Unix(l, path.clone())
            }
            Listen::Tcp(port) => {
                let l =
                    TcpListener::bind((Ipv4Addr::LOCALHOST, *port)).map_err(|e| Error::Listen {
                        address: format!("127.0.0.1:{port}"),
                        message: e.to_string(),
                    })?;
                Listener::Tcp(l)
            }
        };
        let nonblocking = match &l {
            Listener::Unix(u, _) => u.set_nonblocking(true),
            Listener::Tcp(t) => t.set_nonblocking(true),
        };
        nonblocking.map_err(|e| Error::Listen {
            address: "listener".into(),
            message: e.to_string(),
        })?;
        Ok(l)
    }

    /// Removes a Unix socket's file (at stop, or when starting failed).
    pub(crate) fn remove(&self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }

    pub(crate) fn address(&self) -> String {
        match self {
            Listener::Unix(_, p) => format!("unix:{}", p.display()),
            Listener::Tcp(t) => t
                .local_addr()
                .map_or_else(|_| "tcp".into(), |a| format!("tcp:{a}")),
        }
    }

    pub(crate) fn accept(&self) -> io::Result<Stream> {
        let s = match self {
            Listener::Unix(l, _) => Stream::Unix(l.accept()?.0),
            Listener::Tcp(l) => {
                let s = l.accept()?.0;
                // NBD asks both ends to disable Nagle (section "Protocol
                // phases"): a reply must not wait for an ACK.
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
        };
        match &s {
            Stream::Unix(u) => u.set_nonblocking(false)?,
            Stream::Tcp(t) => t.set_nonblocking(false)?,
        }
        Ok(s)
    }
}

/// A socket path may be reused when nothing listens on it any more (left
/// by a server that was killed); anything else there is refused.
fn clear_stale_socket(path: &Path) -> Result<()> {
    let err = |message: String| Error::Listen {
        address: path.display().to_string(),
        message,
    };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(err(e.to_string())),
        Ok(m) if !m.file_type().is_socket() => Err(err("exists and is not a socket".into())),
        Ok(_) if UnixStream::connect(path).is_ok() => {
            Err(err("another server is listening on it".into()))
        }
        Ok(_) => std::fs::remove_file(path)
            .map_err(|e| err(format!("cannot remove the stale socket: {e}"))),
    }
}
