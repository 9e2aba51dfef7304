//! The writer: Lazy Gathering Write with group commit, pipelined.
//!
//! Producers encode their record into the open batch under the state lock
//! (`append`) and sleep until its round is durable (`wait_round`). The
//! writer thread closes a round when it holds `batch_bytes`, when
//! `batch_delay` has passed since its first record, when every caller not
//! already waiting for a round in flight has arrived (`all_back`: waiting
//! longer only adds latency), or on `flush`; it writes the round (one write
//! call per segment, plus the 1-byte delete flags of acknowledgements) and
//! hands it to a syncer thread, then goes on gathering the next round.
//! While one round's `fdatasync` runs, the next round is written and its
//! own sync started, so a producer that just missed a round waits for one
//! sync of its own instead of two (issue 11, part 5).
//!
//! Durability is unchanged: a round completes (its records are published
//! to the index and its producers woken) only after its own sync and after
//! every earlier round completed, so an acknowledged message is always on
//! disk and acknowledgements come in order. What the pipeline changes is
//! what a crash can leave: up to `PIPELINE_DEPTH` rounds written and not
//! synced, hence that many incomplete batches at the end of the newest
//! segment, none of them acknowledged (the scan drops them, see
//! `scan.rs`). Segments whose records are all acknowledged are recycled
//! by a thread of their own (`recycler_loop`), off the rounds' path. A round that opens a segment, or a `flush`, is a barrier:
//! it waits until every earlier round is durable and syncs itself, so no
//! segment ever follows an unsynced one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

/// Opens a chunk (a new batch, with its own number) at the head.
pub(super) fn new_chunk(st: &mut State, activate: Option<u64>) {
    let mut buf = st.buf_pool.pop().unwrap_or_default();
    buf.clear();
    let chunk = Chunk {
        seq: st.head_seq,
        offset: st.head_off,
        batch: st.next_batch,
        buf,
        last_record: 0,
        activate,
        records: Vec::new(),
    };
    st.next_batch += 1;
    st.chunks.push(chunk);
    *st.unpublished.entry(st.head_seq).or_default() += 1;
}

/// Fails if `file` was deleted while open (the queue directory removed
/// under a running queue): its records could never be found again, so the
/// producers waiting for them must not be told they are stored.
fn check_linked(file: &dyn StorageFile, path: &Path) -> Result<()> {
    match file.is_linked() {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::io(
            path,
            "fdatasync",
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the segment file was deleted while the queue was open; the messages written to it are not stored",
            ),
        )),
        Err(e) => Err(Error::io(path, "fstat", e)),
    }
}

pub(super) fn zero_range(file: &dyn StorageFile, from: u64, to: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; 1 << 20];
    let mut at = from;
    while at < to {
        let n = ((to - at) as usize).min(zeros.len());
        file.write_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

impl Inner {
    /// Encodes a record into the open batch; returns the round to wait
    /// for. Called with the state lock held, from enqueue and nack.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn append(
        &self,
        st: &mut State,
        id: u64,
        payload: &[u8],
        payload_crc: u32,
        kind: QueueKind,
        attempts: u32,
        enqueued_ns: u64,
        not_before_ns: u64,
    ) -> u64 {
        let need = record_len(payload.len()) as u64;
        let mut activate = None;
        if st.head_off + need > st.head_size {
            if st.head_off + RECORD_HEADER_LEN as u64 <= st.head_size {
                self.seal(st);
            }
            // Next segment; the flusher sets it up before writing to it.
            st.head_seq = st.next_seq;
            st.next_seq += 1;
            st.head_off = SEGMENT_HEADER_LEN;
            st.head_size = self.cfg.segment_size;
            // Not `id`: a retry copy keeps an old id, and the floor must
            // stay above every id issued so far, so that none is reused
            // after the older segments are recycled.
            activate = Some(st.next_id.max(id + 1));
        }
        if activate.is_some() || st.chunks.last().is_none_or(|c| c.seq != st.head_seq) {
            new_chunk(st, activate);
        }
        let offset = st.head_off;
        st.head_off += need;
        let chunk = st.chunks.last_mut().unwrap();
        let header = RecordHeader {
            flags: 0,
            delete_flag: LIVE,
            kind,
            payload_len: payload.len() as u32,
            attempts,
            id,
            enqueued_ns,
            not_before_ns,
            segment_seq: chunk.seq,
            batch_seq: chunk.batch,
            payload_crc,
        };
        chunk.last_record = chunk.buf.len();
        header.encode_with_crc(payload, &mut chunk.buf);
        chunk.records.push((
            id,
            Min {
                seq: chunk.seq,
                offset,
                payload_len: payload.len() as u32,
                kind,
                attempts,
                enqueued_ns,
                not_before_ns,
                state: MinState::Ready,
                delivered: false,
                lease_ns: 0,
            },
        ));
        st.pending_bytes += need as usize;
        st.pending_waiters += 1;
        st.stats.enqueued += u64::from(kind == QueueKind::Main);
        self.work_added(st);
        if st.pending_bytes >= self.cfg.batch_bytes {
            st.flush_now = true;
            self.work_cv.notify_one();
        } else if all_back(st) {
            // The writer waits on its timer; this record completes the
            // round early.
            self.work_cv.notify_one();
        }
        st.open_round
    }

    /// Closes the head segment with a seal record, in the batch that
    /// writes its last records (or a batch of its own).
    pub(super) fn seal(&self, st: &mut State) {
        if st.chunks.last().is_none_or(|c| c.seq != st.head_seq) {
            new_chunk(st, None);
        }
        let offset = st.head_off;
        st.head_off += RECORD_HEADER_LEN as u64;
        st.pending_bytes += RECORD_HEADER_LEN;
        let chunk = st.chunks.last_mut().unwrap();
        let seal = RecordHeader::padding(FLAG_SEAL, chunk.seq, chunk.batch);
        debug_assert_eq!(chunk.offset + chunk.buf.len() as u64, offset);
        chunk.last_record = chunk.buf.len();
        seal.encode(&[], &mut chunk.buf);
    }

    /// Work (a record, a delete flag, a sync) was just put into the open
    /// round: starts its batch timer and wakes the writer if the round had
    /// none. Every change that gives the open round work goes through here,
    /// with the state lock held: the writer sleeps without a timeout only
    /// when the round has no work (`writer_loop`), so it cannot miss one
    /// (the models of `tests/loom.rs` check this).
    pub(super) fn work_added(&self, st: &mut State) {
        if st.first_pending.is_none() {
            st.first_pending = Some(Instant::now());
            self.work_cv.notify_one();
        }
    }

    /// A thread of the queue (`name`) panicked: the queue fails, so that
    /// every caller waiting for a round, a message or room gets an error
    /// naming it, instead of waiting for a thread that is gone.
    pub(super) fn died(&self, name: &str, panic: &(dyn std::any::Any + Send)) {
        let what = match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
            (Some(s), _) => s.to_string(),
            (_, Some(s)) => s.clone(),
            _ => "no message".to_string(),
        };
        let mut st = sync::lock(&self.state);
        st.failed.get_or_insert(format!("the {name} thread panicked: {what}"));
        self.wake_all();
    }

    /// Waits until round `ticket` is durable.
    pub(super) fn wait_round(&self, mut st: MutexGuard<'_, State>, ticket: u64) -> Result<()> {
        loop {
            if st.durable_round >= ticket {
                return Ok(());
            }
            if st.failed.is_some() || st.closed {
                return Err(self.unusable(&st));
            }
            st = sync::wait(&self.done_cv[(ticket % DONE_CVS) as usize], st);
        }
    }





    /// Makes a round's records visible and applies its flags; returns the
    /// segments that can now be recycled.
    pub(super) fn publish(&self, st: &mut State, chunks: Vec<Chunk>, flags: &[(u64, u64)]) -> Vec<u64> {
        for chunk in chunks {
            let end = chunk.offset + chunk.buf.len() as u64;
            for (id, min) in chunk.records {
                if let Some(old) = st.index.insert(id, min.clone()) {
                    // The retry copy is durable: delete the old copy in a
                    // later round.
                    if old.state != MinState::Ready {
                        st.in_flight -= 1;
                    }
                    st.flags.push((old.seq, old.offset));
                    // The writer may be asleep with nothing to do (issue
                    // 26: without this wake a lone nack waited forever).
                    self.work_added(st);
                }
                push_ready(st, id, &min);
                st.segments.get_mut(&chunk.seq).unwrap().live += 1;
            }
            if st.buf_pool.len() <= PIPELINE_DEPTH && chunk.buf.capacity() <= 2 * self.cfg.batch_bytes.max(1 << 20) {
                st.buf_pool.push(chunk.buf);
            }
            let seg = st.segments.get_mut(&chunk.seq).unwrap();
            seg.end = seg.end.max(end);
            let left = st.unpublished.get_mut(&chunk.seq).unwrap();
            *left -= 1;
            if *left == 0 {
                st.unpublished.remove(&chunk.seq);
            }
        }
        let mut retire = Vec::new();
        for &(seq, _) in flags {
            let seg = st.segments.get_mut(&seq).unwrap();
            seg.live -= 1;
            if seg.live == 0 && seq != st.head_seq && !st.unpublished.contains_key(&seq) {
                retire.push(seq);
            }
        }
        retire
    }

    /// Recycles segments whose records are all deleted and durable: they
    /// become free files, reused for later segments.
    pub(super) fn retire(&self, seqs: Vec<u64>) -> Result<()> {
        if seqs.is_empty() {
            return Ok(());
        }
        let mut done = Vec::new();
        for seq in seqs {
            let mut st = sync::lock(&self.state);
            let Some(seg) = st.segments.get(&seq) else { continue };
            if pinned(seg) {
                // A mapped batch still borrows from it: renamed to a free
                // file it could be rewritten under the consumer. Looked at
                // again later (`recycler_loop`); the writer takes another
                // segment file meanwhile. Pins are only taken under the
                // state lock, so a count of 1 seen here stays 1.
                if !st.retire_pinned.contains(&seq) {
                    st.retire_pinned.push(seq);
                }
                continue;
            }
            let seg = st.segments.remove(&seq).unwrap();
            // Unmapped here (the state's clone is the last one).
            drop(seg.map);
            let free = free_name(st.next_free);
            st.next_free += 1;
            drop(st);
            self.storage
                .rename(&seg.name, &free)
                .map_err(|e| Error::io(self.storage.path(&seg.name), "rename", e))?;
            done.push(free);
        }
        if done.is_empty() {
            // All pinned: nothing renamed, nothing to make durable.
            return Ok(());
        }
        self.storage.sync_dir().map_err(|e| Error::io(&self.dir, "fsync", e))?;
        // Only now, and before the free files can be reused, does the
        // manifest drop them (see `manifest.rs` for why in this order).
        self.write_manifest(None)?;
        let mut st = sync::lock(&self.state);
        st.stats.recycled += done.len() as u64;
        st.free.extend(done);
        Ok(())
    }

    /// Rewrites the manifest: the segments in use now; `clean` at a clean
    /// close.
    pub(super) fn write_manifest(&self, clean: Option<Tail>) -> Result<()> {
        let mut generation = sync::lock(&self.manifest_generation);
        *generation += 1;
        let segments = sync::lock(&self.state).segments.keys().copied().collect();
        let m = Manifest { generation: *generation, clean, segments };
        manifest::write(&*self.storage, &m).map_err(|e| Error::io(self.storage.path(manifest::MANIFEST), "write", e))
    }

    /// Sets up segment `seq` from a free file (or a new one): header,
    /// sync, rename, directory sync, then the manifest lists it; all before
    /// any record goes in.
    pub(super) fn activate(&self, seq: u64, id_floor: u64) -> Result<()> {
        let mut from = None;
        while let Some(name) = sync::lock(&self.state).free.pop() {
            // A free file made with another segment size is not reused.
            let len = self.storage.open(&name).and_then(|f| f.len());
            if len.is_ok_and(|l| l == self.cfg.segment_size) {
                from = Some(name);
                break;
            }
            self.storage.remove(&name).map_err(|e| Error::io(self.storage.path(&name), "remove", e))?;
        }
        let from = match from {
            Some(name) => name,
            None => self.create_free()?,
        };
        let name = seg_name(seq);
        let io = |op, e| Error::io(self.storage.path(&from), op, e);
        let file = self.storage.open(&from).map_err(|e| io("open", e))?;
        let header = SegmentHeader {
            segment_size: self.cfg.segment_size,
            seq,
            id_floor,
            created_ns: self.clock.now_ns(),
        };
        file.write_at(&header.encode(), 0).map_err(|e| io("write", e))?;
        file.sync_data().map_err(|e| io("fdatasync", e))?;
        self.storage.rename(&from, &name).map_err(|e| io("rename", e))?;
        self.storage.sync_dir().map_err(|e| Error::io(&self.dir, "fsync", e))?;
        let seg = Segment { name, file, live: 0, end: SEGMENT_HEADER_LEN, map: None };
        sync::lock(&self.state).segments.insert(seq, seg);
        self.write_manifest(None)
    }

    /// Writes a new free segment file (zeros, every byte written once so
    /// that later syncs carry no metadata) and returns its name.
    pub(super) fn create_free(&self) -> Result<String> {
        // Never start filling the disk with a file that cannot fit.
        self.check_space("segment_size", 1)?;
        let n = {
            let mut st = sync::lock(&self.state);
            st.next_free += 1;
            st.next_free - 1
        };
        let tmp = format!("tmp-{n:016x}.fq");
        let name = free_name(n);
        let io = |op, e| Error::io(self.storage.path(&tmp), op, e);
        let file = self.storage.create(&tmp).map_err(|e| io("create", e))?;
        zero_range(&*file, 0, self.cfg.segment_size).map_err(|e| io("write", e))?;
        file.sync_data().map_err(|e| io("fdatasync", e))?;
        self.storage.rename(&tmp, &name).map_err(|e| io("rename", e))?;
        self.storage.sync_dir().map_err(|e| Error::io(&self.dir, "fsync", e))?;
        Ok(name)
    }

    pub(super) fn spawn_allocator(self: &Arc<Self>) {
        let me = self.clone();
        let mut slot = sync::lock(&self.allocator);
        if let Some(h) = slot.take() {
            let _ = h.join();
        }
        *slot = sync::spawn("allocator", move || {
            let made = me.create_free();
            let mut st = sync::lock(&me.state);
            st.allocating = false;
            if let Ok(name) = made {
                st.free.push(name);
            }
            // A failure here is not fatal: the flusher creates the
            // segment itself when it needs one, and reports errors.
        })
        .ok();
    }

    /// The writer thread: gathers rounds and writes them.
    pub(super) fn writer_loop(self: Arc<Self>) {
        loop {
            let mut st = sync::lock(&self.state);
            loop {
                if st.failed.is_some() {
                    return;
                }
                let work = !st.chunks.is_empty() || !st.flags.is_empty() || st.sync_all;
                if st.closing && !work {
                    st.writer_done = true;
                    self.sync_cv.notify_all();
                    self.recycle_cv.notify_all();
                    return;
                }
                if work {
                    let waited = st.first_pending.map_or(Duration::ZERO, |t| t.elapsed());
                    if st.flush_now || st.closing || all_back(&st) || waited >= self.cfg.batch_delay {
                        break;
                    }
                    let nap = self.cfg.batch_delay - waited;
                    st = sync::wait_timeout(&self.work_cv, st, nap);
                } else {
                    st = sync::wait(&self.work_cv, st);
                }
            }
            let mut chunks = std::mem::take(&mut st.chunks);
            let flags = std::mem::take(&mut st.flags);
            let sync_all = std::mem::replace(&mut st.sync_all, false);
            let number = st.open_round;
            st.open_round += 1;
            st.flush_now = false;
            st.first_pending = None;
            st.pending_bytes = 0;
            let waiters = std::mem::take(&mut st.pending_waiters);
            if waiters > 0 {
                st.expected_waiters = waiters + st.inflight_waiters;
                st.inflight_waiters += waiters;
            }
            // Room in the pipeline; a barrier round needs all of it.
            let barrier = sync_all || chunks.iter().any(|c| c.activate.is_some());
            let limit = if barrier { 0 } else { PIPELINE_DEPTH - 1 };
            while st.written.len() > limit && st.failed.is_none() {
                st = sync::wait(&self.room_cv, st);
            }
            if st.failed.is_some() {
                return;
            }
            drop(st);

            let sync = self.cfg.durability == Durability::Sync;
            let result = if barrier {
                self.write_and_sync(&mut chunks, &flags, sync_all)
            } else {
                self.write_only(&mut chunks, &flags)
            };
            let (files, syncs, bytes) = match result {
                Ok(r) => r,
                Err(e) => {
                    self.fail(e);
                    return;
                }
            };
            let mut st = sync::lock(&self.state);
            if !st.written.is_empty() {
                st.stats.pipelined += 1;
            }
            let synced = barrier || !sync || files.is_empty();
            st.written.push_back(Round { number, chunks, flags, files, claimed: synced, synced, syncs, bytes, waiters });
            if synced {
                self.complete(&mut st);
            } else {
                self.sync_cv.notify_one();
            }
            let spare = !st.closing && !st.allocating && st.free.len() < self.cfg.spare_segments;
            if spare {
                st.allocating = true;
            }
            drop(st);
            if spare {
                self.spawn_allocator();
            }
        }
    }

    /// A syncer thread: syncs written rounds, oldest first, and completes
    /// those whose turn it is.
    pub(super) fn syncer_loop(self: Arc<Self>) {
        let mut st = sync::lock(&self.state);
        loop {
            if st.failed.is_some() {
                return;
            }
            if let Some(round) = st.written.iter_mut().find(|r| !r.claimed) {
                round.claimed = true;
                let (number, files) = (round.number, round.files.clone());
                drop(st);
                let result = self.sync_files(&files);
                st = sync::lock(&self.state);
                match result {
                    Ok(n) => {
                        st.stats.syncs += n;
                        // `fdatasync` makes durable everything written to
                        // the file before it was called: every earlier
                        // round was written before this one, so those whose
                        // files this sync covered are durable too, even if
                        // their own sync is still running.
                        let synced: BTreeSet<&str> = files.iter().map(|f| f.0.as_str()).collect();
                        for round in st.written.iter_mut().take_while(|r| r.number <= number) {
                            if round.number == number || round.files.iter().all(|f| synced.contains(f.0.as_str())) {
                                round.synced = true;
                            }
                        }
                        self.complete(&mut st);
                    }
                    Err(e) => {
                        st.failed.get_or_insert(e.to_string());
                        self.wake_all();
                        return;
                    }
                }
                continue;
            }
            if st.writer_done {
                return;
            }
            st = sync::wait(&self.sync_cv, st);
        }
    }

    /// Completes the synced rounds at the front of the pipeline, in order:
    /// publishes their records and flags and wakes their producers.
    fn complete(&self, st: &mut State) {
        while st.written.front().is_some_and(|r| r.synced) {
            let round = st.written.pop_front().unwrap();
            st.inflight_waiters -= round.waiters;
            st.stats.rounds += 1;
            st.stats.syncs += round.syncs;
            st.stats.bytes_written += round.bytes;
            let retire = self.publish(st, round.chunks, &round.flags);
            if !retire.is_empty() {
                st.retire_pending.extend(retire);
                self.recycle_cv.notify_one();
            }
            st.durable_round = round.number;
            self.done_cv[(round.number % DONE_CVS) as usize].notify_all();
            self.ready_cv.notify_all();
            self.room_cv.notify_all();
        }
        if st.writer_done && st.written.is_empty() {
            // The recycler's exit condition just became true (a round the
            // writer left in flight as it ended, at a close): without this
            // it waited for its poll (found by the models of tests/loom.rs).
            self.recycle_cv.notify_all();
        }
    }

    /// The recycler thread: renames segments whose records are all
    /// acknowledged to free files (directory sync, manifest), off the
    /// writer's path, so that rounds never wait for it.
    pub(super) fn recycler_loop(self: Arc<Self>) {
        loop {
            let mut st = sync::lock(&self.state);
            while st.retire_pending.is_empty() && !unpinned(&st) {
                if st.failed.is_some() || (st.writer_done && st.written.is_empty()) {
                    return;
                }
                // Also the poll of pinned segments: a batch lets go of its
                // pins without the state lock (it has no way to the queue),
                // so nobody wakes the recycler for it.
                st = sync::wait_timeout(&self.recycle_cv, st, Duration::from_millis(50));
            }
            let mut seqs = std::mem::take(&mut st.retire_pending);
            let free_now: Vec<u64> = st.retire_pinned.iter().copied().filter(|&seq| let_go(&st, seq)).collect();
            st.retire_pinned.retain(|seq| !free_now.contains(seq));
            seqs.extend(free_now);
            drop(st);
            if let Err(e) = self.retire(seqs) {
                self.fail(e);
                return;
            }
        }
    }

    pub(super) fn wake_all(&self) {
        for cv in &self.done_cv {
            cv.notify_all();
        }
        self.ready_cv.notify_all();
        self.room_cv.notify_all();
        self.sync_cv.notify_all();
        self.work_cv.notify_all();
        self.recycle_cv.notify_all();
    }

    pub(super) fn fail(&self, e: Error) {
        let mut st = sync::lock(&self.state);
        st.failed.get_or_insert(e.to_string());
        self.wake_all();
    }

    /// The segment files of `seqs`, once each, by sequence number.
    fn files_of(&self, seqs: impl Iterator<Item = u64>) -> BTreeMap<u64, SegFile> {
        let st = sync::lock(&self.state);
        let mut out = BTreeMap::new();
        for seq in seqs {
            if let Some(s) = st.segments.get(&seq) {
                out.entry(seq).or_insert_with(|| (s.name.clone(), s.file.clone()));
            }
        }
        out
    }

    /// Writes the delete flags of a round (1 byte each).
    ///
    /// Flags of records at most [`FLAG_SPAN_GAP`] apart (small messages
    /// acknowledged together) are set with one read and one write of the
    /// span that holds them: two calls instead of one per message. The
    /// other bytes of the span are written back unchanged (only the writer
    /// changes stored bytes, and only delete flags of published records,
    /// which lie before every record in flight), so a torn write of the
    /// span damages nothing.
    fn write_flags(&self, flags: &[(u64, u64)]) -> Result<u64> {
        let files = self.files_of(flags.iter().map(|f| f.0));
        let mut sorted = flags.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut bytes = 0;
        let mut span = Vec::new();
        let mut i = 0;
        while i < sorted.len() {
            let (seq, first) = sorted[i];
            let mut j = i + 1;
            while j < sorted.len() && sorted[j].0 == seq && sorted[j].1 - sorted[j - 1].1 <= FLAG_SPAN_GAP {
                j += 1;
            }
            let (name, file) = &files[&seq];
            let io = |e| Error::io(self.storage.path(name), "write", e);
            if j - i == 1 {
                file.write_at(&[DELETED], first + DELETE_FLAG_OFFSET).map_err(io)?;
                bytes += 1;
            } else {
                let from = first + DELETE_FLAG_OFFSET;
                let len = (sorted[j - 1].1 - first + 1) as usize;
                span.clear();
                span.resize(len, 0);
                let n = read_full(&**file, &mut span, from).map_err(io)?;
                if n < len {
                    return Err(io(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "delete flags past the end")));
                }
                for &(_, offset) in &sorted[i..j] {
                    span[(offset - first) as usize] = DELETED;
                }
                file.write_at(&span, from).map_err(io)?;
                bytes += len as u64;
            }
            i = j;
        }
        Ok(bytes)
    }

    /// Writes one chunk (one batch: one write call), its last record
    /// flagged as the batch end.
    fn write_chunk(&self, chunk: &mut Chunk) -> Result<SegFile> {
        let (name, file) = self.files_of(std::iter::once(chunk.seq)).remove(&chunk.seq).expect("segment of a chunk");
        RecordHeader::add_flag(&mut chunk.buf[chunk.last_record..], FLAG_BATCH_END);
        let sync = self.cfg.durability == Durability::Sync;
        let piece = if sync { WRITEBACK_PIECE } else { chunk.buf.len().max(1) };
        let mut at = 0;
        for part in chunk.buf.chunks(piece) {
            let offset = chunk.offset + at;
            file.write_at(part, offset).map_err(|e| Error::io(self.storage.path(&name), "write", e))?;
            if sync && chunk.buf.len() > piece {
                file.start_writeback(offset, part.len() as u64);
            }
            at += part.len() as u64;
        }
        Ok((name, file))
    }

    /// Writes a round without syncing it; returns the files to sync, 0
    /// syncs, and the bytes written.
    fn write_only(&self, chunks: &mut [Chunk], flags: &[(u64, u64)]) -> Result<RoundWrite> {
        let mut bytes = self.write_flags(flags)?;
        for chunk in chunks.iter_mut() {
            self.write_chunk(chunk)?;
            bytes += chunk.buf.len() as u64;
        }
        let files = self.files_of(flags.iter().map(|f| f.0).chain(chunks.iter().map(|c| c.seq)));
        Ok((files.into_values().collect(), 0, bytes))
    }

    /// Writes and syncs a barrier round, the pipeline being empty: flags
    /// first, then each chunk written and synced in order (a segment is set
    /// up only after the one before is durable), then the files that only
    /// got flags; with `sync_all` every segment (`flush`, `close`).
    fn write_and_sync(&self, chunks: &mut [Chunk], flags: &[(u64, u64)], sync_all: bool) -> Result<RoundWrite> {
        let sync = self.cfg.durability == Durability::Sync;
        let mut syncs = 0;
        let mut bytes = self.write_flags(flags)?;
        let mut dirty = self.files_of(flags.iter().map(|f| f.0));
        for chunk in chunks.iter_mut() {
            if let Some(id_floor) = chunk.activate {
                self.activate(chunk.seq, id_floor)?;
            }
            let (name, file) = self.write_chunk(chunk)?;
            bytes += chunk.buf.len() as u64;
            if sync {
                syncs += self.sync_files(&[(name, file)])?;
                dirty.remove(&chunk.seq);
            } else {
                dirty.insert(chunk.seq, (name, file));
            }
        }
        if sync_all && !sync {
            let st = sync::lock(&self.state);
            for (&seq, s) in &st.segments {
                dirty.insert(seq, (s.name.clone(), s.file.clone()));
            }
        }
        if sync || sync_all {
            let files: Vec<_> = dirty.into_values().collect();
            syncs += self.sync_files(&files)?;
        }
        Ok((Vec::new(), syncs, bytes))
    }

    /// `fdatasync`s each file, then checks it still has a name.
    fn sync_files(&self, files: &[SegFile]) -> Result<u64> {
        for (name, file) in files {
            let path = self.storage.path(name);
            let t0 = Instant::now();
            file.sync_data().map_err(|e| Error::io(&path, "fdatasync", e))?;
            let us = t0.elapsed().as_micros().min(u32::MAX as u128) as u32;
            let mut st = sync::lock(&self.state);
            if st.sync_times.len() == 4096 {
                st.sync_times.pop_front();
            }
            st.sync_times.push_back(us);
            drop(st);
            check_linked(&**file, &path)?;
        }
        Ok(files.len() as u64)
    }
}

/// Whether the open round should close without waiting for its timer:
/// every caller that is not already waiting for a round in flight has
/// arrived. `expected_waiters` (how many were waiting in all when the last
/// round closed) estimates the active callers: closed-loop producers come
/// back as soon as their round completes, so waiting longer would only add
/// latency; a caller that is slower still gets the timer. With rounds in
/// flight this closes a round of the callers that are free, so that it is
/// written while the earlier round syncs, instead of waiting for the
/// callers of that round (issue 11, part 5).
fn all_back(st: &State) -> bool {
    st.expected_waiters > 0 && st.pending_waiters >= st.expected_waiters.saturating_sub(st.inflight_waiters).max(1)
}

/// A large batch is written in pieces of this size, and the device starts
/// writing each piece back (`sync_file_range`) while the next is copied
/// into the page cache, instead of all of it only when the round's
/// `fdatasync` begins: several write-behind I/Os in flight, as `fio` keeps
/// 1 MiB writes in flight (docs/fastqueue.md, "Measured on a quiet
/// machine").
const WRITEBACK_PIECE: usize = 1 << 20;

/// Delete flags this close together (in bytes) are written as one span
/// (see `write_flags`); farther apart (large messages) one byte each, so
/// that no page without a flag is dirtied.
const FLAG_SPAN_GAP: u64 = 4096;

/// What writing a round gave: the files still to sync, the syncs done, the
/// bytes written.
type RoundWrite = (Vec<SegFile>, u64, u64);

/// Whether a mapped batch borrows from `seg`: its mapping has a clone
/// besides the state's own.
fn pinned(seg: &Segment) -> bool {
    seg.map.as_ref().is_some_and(|m| Arc::strong_count(m) > 1)
}

/// Whether segment `seq`, waiting for its pins to go, has lost them all.
fn let_go(st: &State, seq: u64) -> bool {
    st.segments.get(&seq).is_none_or(|s| !pinned(s))
}

/// Whether any segment waiting for its pins to go has lost them all.
fn unpinned(st: &State) -> bool {
    st.retire_pinned.iter().any(|&seq| let_go(st, seq))
}
