//! The drive: the one thread that serves requests, one at a time, in the
//! order they arrived (from every connection), with the model's timing.
//!
//! For each request: it starts when it arrived or when the previous one
//! completed on the model, whichever is later (`start_ns`); the model
//! charges it at that instant (`service`); it completes on the model at
//! `complete_ns = start_ns + service`. Meanwhile the data moves between the
//! image and the request; the reply goes out when the model clock reaches
//! `complete_ns` ([`ModelClock::wait_until`]), and the instant it has been
//! written is `reply_ns`. The next request starts at `complete_ns`, not at
//! `reply_ns`: lateness in replying does not shift the model's timeline.

use crate::clock::ModelClock;
use crate::image::Image;
use crate::log::{Record, RequestLog};
use crate::model::{Model, Op};
use crate::nbd::proto::NbdError;
use crate::nbd::request::{put_reply_header, Header, REPLY_HEADER_BYTES};
use crate::outbox::{Conn, Sent};
use crate::stats::Shared;
use iolab_sim::disk::Service;
use std::io;
use std::sync::Arc;

/// What a connection hands the drive.
pub(crate) enum Item {
    Request {
        conn: Arc<Conn>,
        header: Header,
        op: Option<Op>,
        fua: bool,
        no_hole: bool,
        /// Set when the request is refused without reaching the model.
        error: Option<NbdError>,
        /// Model time when its header had been read.
        arrival_ns: u64,
        /// A write's data.
        payload: Vec<u8>,
    },
    /// NBD_CMD_DISC: everything before it is served; close the connection.
    Disconnect(Arc<Conn>),
}

pub(crate) struct Drive {
    pub model: Model,
    pub image: Image,
    pub log: Option<RequestLog>,
    pub clock: ModelClock,
    /// Sync the image on FLUSH and FUA (off: faster, not crash-safe).
    pub sync: bool,
    /// When the previous request completes on the model.
    pub free_ns: u64,
    pub seq: u64,
    pub shared: Arc<Shared>,
}

fn nbd_error(e: &io::Error) -> NbdError {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => NbdError::NoSpc,
        _ => NbdError::Io,
    }
}

impl Drive {
    pub fn serve(&mut self, item: Item) -> io::Result<()> {
        let Item::Request {
            conn,
            header,
            op,
            fua,
            no_hole,
            error,
            arrival_ns,
            payload,
        } = item
        else {
            if let Item::Disconnect(conn) = item {
                conn.disconnect();
            }
            return Ok(());
        };
        let (offset, length) = (header.offset, header.length as u64);
        let mut reply = vec![0u8; REPLY_HEADER_BYTES];
        let (start_ns, service, charged, error) = match (op, error) {
            (Some(op), None) => {
                let start_ns = arrival_ns.max(self.free_ns);
                let service = self.model.charge(op, offset, length, fua, start_ns);
                let error = self
                    .move_data(op, offset, length, fua, &payload, &mut reply)
                    .err()
                    .map(|e| nbd_error(&e));
                (start_ns, service, true, error)
            }
            // Refused: answered when the drive takes it, costing nothing.
            (_, error) => (
                self.clock.now_ns(),
                Service::default(),
                false,
                error.or(Some(NbdError::Inval)),
            ),
        };
        let complete_ns = start_ns + service.total_ns;
        if charged {
            self.free_ns = complete_ns;
        }
        if error.is_some() {
            reply.truncate(REPLY_HEADER_BYTES);
        }
        put_reply_header(&mut reply, header.cookie, error);
        self.clock.wait_until(complete_ns);
        // Never waits for the client: a reply the socket does not take at
        // once waits in the connection's outbox (`outbox`), so a client
        // that stops reading holds up no other. A client that hung up is
        // not the drive's failure: its connection ends, the disk goes on.
        let sent = conn.send(reply);
        let reply_ns = self.clock.now_ns();
        let record = Record {
            seq: self.seq,
            conn: conn.id,
            op: Record::op_name(op, header.kind),
            fua,
            no_hole,
            offset,
            length,
            arrival_ns,
            start_ns,
            complete_ns,
            reply_ns,
            service,
            charged,
            error: error.map(NbdError::name),
        };
        self.seq += 1;
        self.shared.record(&record, op, sent != Sent::Dropped);
        if let Some(log) = &mut self.log {
            log.write(&record)?;
        }
        Ok(())
    }

    /// Moves a request's data between the image and the reply; for a read
    /// the data goes after the reply header in `reply`.
    fn move_data(
        &self,
        op: Op,
        offset: u64,
        length: u64,
        fua: bool,
        payload: &[u8],
        reply: &mut Vec<u8>,
    ) -> io::Result<()> {
        match op {
            Op::Read => {
                reply.resize(REPLY_HEADER_BYTES + length as usize, 0);
                self.image
                    .read_into(offset, &mut reply[REPLY_HEADER_BYTES..])
            }
            Op::Write => {
                self.image.write(offset, payload)?;
                self.sync_if(fua)
            }
            Op::WriteZeroes => {
                self.image.write_zeroes(offset, length)?;
                self.sync_if(fua)
            }
            Op::Flush => self.sync_if(true),
            Op::Trim => Ok(()),
        }
    }

    fn sync_if(&self, wanted: bool) -> io::Result<()> {
        if wanted && self.sync {
            self.image.sync()
        } else {
            Ok(())
        }
    }

    /// At stop: the log to its file, the image to stable storage.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(log) = &mut self.log {
            log.flush()?;
        }
        self.image.sync()
    }
}
