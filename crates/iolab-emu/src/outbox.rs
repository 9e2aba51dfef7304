//! Where a connection's replies go, without ever holding up the drive.
//!
//! The drive is one thread serving every client in arrival order, so it
//! must not block on one client's socket: a client that stops reading its
//! replies (its socket buffer full) would stall every other client for as
//! long as the write waits. [`Conn::send`] therefore tries the socket
//! without blocking (`send(2)` with `MSG_DONTWAIT`), which is the whole
//! story when the client keeps up (no thread hop: the reply leaves at the
//! model's instant). What the socket does not take waits in the
//! connection's outbox, and a writer thread of that connection (started
//! then, ended when the outbox is empty) writes it with the connection's
//! `reply_timeout`. Later replies of that connection join the outbox
//! behind it, so the stream keeps its order. A client whose outbox grows
//! beyond [`BACKLOG_LIMIT`], or whose write does not finish within the
//! timeout, is disconnected; the others never wait for it.

use crate::listen::Stream;
use crate::stats::Shared;
use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// Reply bytes a connection may leave untaken before it is dropped: four
/// of the largest reads the emulator serves (`nbd::proto::MAX_PAYLOAD`,
/// 32 MiB), more than any client that reads its replies ever leaves.
pub const BACKLOG_LIMIT: usize = 4 * crate::nbd::proto::MAX_PAYLOAD as usize;

/// A client connection as the drive sees it: where its replies go.
pub(crate) struct Conn {
    pub id: u64,
    stream: Stream,
    out: Mutex<Outbox>,
    /// Where replies lost with a dropped client are counted.
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Outbox {
    /// Replies (or the unsent tail of one) waiting for the writer thread.
    pending: VecDeque<Vec<u8>>,
    bytes: usize,
    /// A writer thread owns the socket's output (it runs until `pending`
    /// is empty); the drive must then queue, not write.
    writing: bool,
    /// Close the connection once `pending` is written (NBD_CMD_DISC).
    close_after: bool,
    /// Dropped: nothing more is sent.
    closed: bool,
}

/// What became of a reply.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Written to the socket.
    Written,
    /// Queued behind replies the client has not taken yet.
    Queued,
    /// The connection is gone (or was dropped for not reading).
    Dropped,
}

impl Conn {
    pub fn new(id: u64, stream: Stream, reply_timeout: Duration, shared: Arc<Shared>) -> io::Result<Arc<Conn>> {
        stream.set_write_timeout(Some(reply_timeout))?;
        Ok(Arc::new(Conn { id, stream, out: Mutex::new(Outbox::default()), shared }))
    }

    /// Hands `reply` to the client without blocking: written now if the
    /// socket takes it, else queued for this connection's writer thread.
    pub fn send(self: &Arc<Conn>, reply: Vec<u8>) -> Sent {
        let mut out = self.out.lock().unwrap();
        if out.closed {
            return Sent::Dropped;
        }
        let mut done = 0;
        if !out.writing {
            match self.try_write(&reply) {
                Ok(n) if n == reply.len() => return Sent::Written,
                Ok(n) => done = n,
                Err(_) => {
                    self.drop_locked(&mut out);
                    return Sent::Dropped;
                }
            }
        }
        let rest = reply.len() - done;
        if out.bytes + rest > BACKLOG_LIMIT {
            self.drop_locked(&mut out);
            return Sent::Dropped;
        }
        out.bytes += rest;
        out.pending.push_back(if done == 0 { reply } else { reply[done..].to_vec() });
        if !out.writing {
            out.writing = true;
            let conn = self.clone();
            let spawned = thread::Builder::new()
                .name(format!("iolab-emu-reply{}", self.id))
                .spawn(move || conn.write_pending());
            if spawned.is_err() {
                self.drop_locked(&mut out);
                return Sent::Dropped;
            }
        }
        Sent::Queued
    }

    /// NBD_CMD_DISC: close once every reply before it has been written.
    pub fn disconnect(&self) {
        let mut out = self.out.lock().unwrap();
        if out.writing {
            out.close_after = true;
        } else {
            out.closed = true;
            let _ = self.stream.shutdown(Shutdown::Both);
        }
    }

    /// As much of `buf` as the socket takes now, without waiting.
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        let fd = match &self.stream {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        };
        let mut done = 0;
        while done < buf.len() {
            let rest = &buf[done..];
            // SAFETY: `rest` is a live slice of `rest.len()` bytes and `fd`
            // is this connection's open socket for as long as `self` lives.
            let n = unsafe {
                libc::send(fd, rest.as_ptr().cast(), rest.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
            };
            if n >= 0 {
                done += n as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => break,
                io::ErrorKind::Interrupted => continue,
                _ => return Err(e),
            }
        }
        Ok(done)
    }

    /// The writer thread: writes the outbox in order, blocking up to the
    /// reply timeout per write, until it is empty (or the client is gone).
    fn write_pending(self: Arc<Conn>) {
        loop {
            let buf = {
                let mut out = self.out.lock().unwrap();
                match out.pending.pop_front() {
                    Some(b) => b,
                    None => {
                        out.writing = false;
                        if out.close_after {
                            out.closed = true;
                            let _ = self.stream.shutdown(Shutdown::Both);
                        }
                        return;
                    }
                }
            };
            let written = (&self.stream).write_all(&buf);
            let mut out = self.out.lock().unwrap();
            out.bytes -= buf.len();
            if written.is_err() {
                // Not read within reply_timeout, or gone: this reply and
                // every one behind it are lost with the client.
                self.shared.unsent(1);
                self.drop_locked(&mut out);
                out.writing = false;
                return;
            }
        }
    }

    fn drop_locked(&self, out: &mut Outbox) {
        self.shared.unsent(out.pending.len() as u64);
        out.closed = true;
        out.pending.clear();
        out.bytes = 0;
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}
