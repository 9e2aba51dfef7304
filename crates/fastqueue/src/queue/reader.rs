//! The reader: Sequential Grouping Prefetch. The records a consumer popped
//! are read in runs of adjacent records, each run with one large read:
//! - small records through one shared buffer, whose one read of
//!   `prefetch_bytes` then serves thousands of them (and the next dequeue);
//! - large records (at least [`SCATTER_MIN`] on average in the run)
//!   straight into the messages' own buffers with one scatter read
//!   (`preadv`), so that their payload is copied once (kernel to message),
//!   not twice (kernel to buffer to message).
//!
//! `dequeue_batch_into` reads into a caller's [`MessageBatch`] instead: a
//! run of large records with one plain read straight into the batch's
//! reused buffer (headers and padding included, the payloads handed out as
//! slices), small records copied out of the shared buffer. No allocation
//! per message, and no fresh pages to fault in once the buffer has grown.
//!
//! `dequeue_batch_mapped` copies nothing: each record is checked where it
//! lies in the segment's shared mapping and its payload handed out as a
//! slice of it (the batch pins the mapping, see `MessageBatch`).
//!
//! Every record's header and payload checksums are verified again when it
//! is read, by every path.

use super::*;

/// Records this large (on average in a run) are read by scatter read.
pub(super) const SCATTER_MIN: usize = 8 << 10;

impl Inner {
    /// Reads the payloads of popped messages, in order.
    pub(super) fn read(&self, items: Vec<Popped>) -> Result<Vec<Message>> {
        let mut out = Vec::with_capacity(items.len());
        let mut i = 0;
        while i < items.len() {
            let (j, bytes) = self.run_end(&items, i, self.cfg.prefetch_bytes);
            if bytes / (j - i) >= SCATTER_MIN {
                self.read_scattered(&items[i..j], &mut out)?;
            } else {
                self.read_cached(&items[i..j], &mut out)?;
            }
            i = j;
        }
        Ok(out)
    }

    /// Reads the payloads of popped messages, in order, into `batch`
    /// (emptied first; emptied again, pins and all, if a read or check
    /// fails). A message popped with its segment's mapping is checked in
    /// place and handed out as a slice of the mapping; the others are
    /// copied: large records run by run with one plain read each, headers
    /// and all, straight into the batch's buffer (one copy, kernel to
    /// buffer, and no allocation once the buffer has grown), small ones
    /// out of the shared prefetch buffer.
    pub(super) fn read_batch(&self, items: Vec<Popped>, batch: &mut MessageBatch) -> Result<()> {
        batch.clear();
        let mut i = 0;
        while i < items.len() {
            let (j, done) = match &items[i].map {
                // Adjacent records of one segment: one length check for all
                // of them (no cap: nothing is read into a buffer).
                Some(map) => {
                    let (j, _) = self.run_end(&items, i, usize::MAX);
                    (j, self.check_mapped(&items[i..j], map, batch))
                }
                None => {
                    let (j, bytes) = self.run_end(&items, i, self.cfg.prefetch_bytes);
                    let done = if bytes / (j - i) >= SCATTER_MIN {
                        self.read_run_into(&items[i..j], bytes, batch)
                    } else {
                        self.read_cached_into(&items[i..j], batch)
                    };
                    (j, done)
                }
            };
            if let Err(e) = done {
                batch.clear();
                return Err(e);
            }
            i = j;
        }
        Ok(())
    }

    /// Checks a run of adjacent records in `map` and adds them to `batch`.
    ///
    /// The file's length is looked up first (`fstat`) and bounds what is
    /// touched: a page of a mapping past the end of its file raises
    /// `SIGBUS`, so a record cut under the queue is reported "cut short"
    /// from the length alone, as the copying read reports a short read.
    /// (A cut made after this look-up and before the checks below is the
    /// case the documentation warns of.) Headers are copied out before
    /// they are decoded (`SegMap::copy_to`); payloads are checked where
    /// they lie, which also brings their pages in.
    fn check_mapped(&self, run: &[Popped], map: &Arc<SegMap>, batch: &mut MessageBatch) -> Result<()> {
        let first = &run[0];
        let file_len = first.file.len().map_err(|e| Error::io(self.storage.path(&first.seg_name), "stat", e))?;
        let avail = (file_len as usize).min(map.len());
        let mut header = [0u8; RECORD_HEADER_LEN];
        for it in run {
            let at = it.min.offset as usize;
            let payload_len = it.min.payload_len as usize;
            let have = avail.saturating_sub(at);
            let hn = have.min(RECORD_HEADER_LEN);
            map.copy_to(at.min(avail), &mut header[..hn]);
            let payload = (have >= RECORD_HEADER_LEN + payload_len).then(|| map.slice(at + RECORD_HEADER_LEN, payload_len));
            let h = self.verify(it, &header[..hn], payload)?;
            let payload = at + RECORD_HEADER_LEN..at + RECORD_HEADER_LEN + payload_len;
            batch.push_mapped(it.id, it.min.attempts, h.kind, h.enqueued_ns, map, payload);
        }
        Ok(())
    }

    /// Where the run that starts at `items[i]` ends (exclusive), and its
    /// bytes: adjacent records of one segment, at most `cap` bytes (one
    /// record at least).
    fn run_end(&self, items: &[Popped], i: usize, cap: usize) -> (usize, usize) {
        let len = |it: &Popped| record_len(it.min.payload_len as usize);
        let mut j = i + 1;
        let mut bytes = len(&items[i]);
        while j < items.len()
            && items[j].min.seq == items[i].min.seq
            && items[j].min.offset == items[j - 1].min.offset + len(&items[j - 1]) as u64
            && bytes.saturating_add(len(&items[j])) <= cap.max(len(&items[i]))
        {
            bytes += len(&items[j]);
            j += 1;
        }
        (j, bytes)
    }

    /// Reads a run of adjacent records (`bytes` in all) with one read into
    /// the batch's buffer and verifies each in place. Headers and padding
    /// stay in the buffer between the payloads: cheaper than splitting the
    /// read into pieces, and the buffer is reused anyway.
    fn read_run_into(&self, run: &[Popped], bytes: usize, batch: &mut MessageBatch) -> Result<()> {
        let first = &run[0];
        let (start, dst) = batch.reserve(bytes);
        // A short read (a file cut under the queue) leaves the rest of the
        // buffer stale: `n` bounds what the checks below may look at.
        let n = read_full(&*first.file, dst, first.min.offset)
            .map_err(|e| Error::io(self.storage.path(&first.seg_name), "read", e))?;
        let mut at = 0;
        for it in run {
            let payload_len = it.min.payload_len as usize;
            let rec_len = record_len(payload_len);
            let rec = batch.bytes(start + at, n.saturating_sub(at).min(rec_len));
            let h = self.verify(it, rec, rec.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + payload_len))?;
            batch.push(it.id, it.min.attempts, h.kind, h.enqueued_ns, start + at + RECORD_HEADER_LEN, payload_len);
            at += rec_len;
        }
        Ok(())
    }

    /// Reads small records through the shared prefetch buffer, copying
    /// each payload into the batch.
    fn read_cached_into(&self, run: &[Popped], batch: &mut MessageBatch) -> Result<()> {
        let mut cache = sync::lock(&self.cache);
        for it in run {
            let payload_len = it.min.payload_len as usize;
            let rec = self.cached_record(&mut cache, it)?;
            let payload = rec.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + payload_len);
            let h = self.verify(it, rec, payload)?;
            let (start, dst) = batch.reserve(payload_len);
            dst.copy_from_slice(payload.unwrap());
            batch.push(it.id, it.min.attempts, h.kind, h.enqueued_ns, start, payload_len);
        }
        Ok(())
    }

    /// Reads adjacent records with one scatter read: each header into a
    /// small buffer, each payload (with its padding) into the message's
    /// own.
    pub(super) fn read_scattered(&self, run: &[Popped], out: &mut Vec<Message>) -> Result<()> {
        let first = &run[0];
        let mut bufs = Vec::with_capacity(2 * run.len());
        let mut lens = Vec::with_capacity(2 * run.len());
        for it in run {
            let padded = record_len(it.min.payload_len as usize) - RECORD_HEADER_LEN;
            bufs.push(Vec::new());
            lens.push(RECORD_HEADER_LEN);
            bufs.push(Vec::new());
            lens.push(padded);
        }
        first
            .file
            .read_parts_at(&mut bufs, &lens, first.min.offset)
            .map_err(|e| Error::io(self.storage.path(&first.seg_name), "read", e))?;
        let mut parts = bufs.into_iter();
        for it in run {
            let (header, mut payload) = (parts.next().unwrap(), parts.next().unwrap());
            let h = self.verify(it, &header, payload.get(..it.min.payload_len as usize))?;
            payload.truncate(it.min.payload_len as usize);
            out.push(message(it, &h, payload));
        }
        Ok(())
    }

    /// Reads records through the shared prefetch buffer.
    fn read_cached(&self, run: &[Popped], out: &mut Vec<Message>) -> Result<()> {
        let mut cache = sync::lock(&self.cache);
        for it in run {
            let rec = self.cached_record(&mut cache, it)?;
            let payload = rec.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + it.min.payload_len as usize);
            let h = self.verify(it, rec, payload)?;
            out.push(message(it, &h, payload.unwrap().to_vec()));
        }
        Ok(())
    }

    /// The bytes of the shared prefetch buffer from `it`'s record on,
    /// refilled with one read of `prefetch_bytes` when the record is not in
    /// it (may be short: the checks then report the record cut short).
    fn cached_record<'c>(&self, cache: &'c mut ReadCache, it: &Popped) -> Result<&'c [u8]> {
        let len = record_len(it.min.payload_len as usize) as u64;
        let hit = cache.seq == it.min.seq
            && it.min.offset >= cache.start
            && it.min.offset + len <= cache.start + cache.data.len() as u64;
        if !hit {
            let want = len.max(self.cfg.prefetch_bytes as u64).min(it.seg_end.max(it.min.offset + len) - it.min.offset);
            cache.data.resize(want as usize, 0);
            let n = read_full(&*it.file, &mut cache.data, it.min.offset)
                .map_err(|e| Error::io(self.storage.path(&it.seg_name), "read", e))?;
            cache.data.truncate(n);
            cache.seq = it.min.seq;
            cache.start = it.min.offset;
        }
        let at = ((it.min.offset - cache.start) as usize).min(cache.data.len());
        Ok(&cache.data[at..])
    }

    /// Checks a record read back against its index node and checksums.
    fn verify(&self, it: &Popped, header: &[u8], payload: Option<&[u8]>) -> Result<RecordHeader> {
        let bad = |why: &str| Error::corrupt(self.storage.path(&it.seg_name), it.min.offset, why);
        let Some(payload) = payload.filter(|_| header.len() >= RECORD_HEADER_LEN) else {
            return Err(bad("record cut short"));
        };
        let h = match RecordHeader::decode(header) {
            HeaderCheck::Valid(h) => h,
            HeaderCheck::Bad(why) => return Err(bad(why)),
            HeaderCheck::Zero => return Err(bad("record is zeroed")),
        };
        if h.id != it.id || h.segment_seq != it.min.seq || h.payload_len != it.min.payload_len || !h.payload_ok(payload) {
            return Err(bad("record changed since it was written (checksum or id mismatch)"));
        }
        Ok(h)
    }
}

fn message(it: &Popped, h: &RecordHeader, payload: Vec<u8>) -> Message {
    Message { id: it.id, payload, attempts: it.min.attempts, kind: h.kind, enqueued_ns: h.enqueued_ns }
}
