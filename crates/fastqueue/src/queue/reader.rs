//! The reader: Sequential Grouping Prefetch. Consumers read the records
//! they popped through one shared buffer: one large read serves every
//! adjacent record it covers. Every record's checksums are verified again
//! when it is read.

use super::*;

impl Inner {
    /// Reads the payloads of popped messages through the prefetch buffer.
    pub(super) fn read(&self, items: Vec<Popped>) -> Result<Vec<Message>> {
        let mut cache = self.cache.lock().unwrap();
        let mut out = Vec::with_capacity(items.len());
        for it in items {
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
            let at = (it.min.offset - cache.start) as usize;
            let rec = &cache.data[at.min(cache.data.len())..];
            let bad = |why: &str| Error::corrupt(self.storage.path(&it.seg_name), it.min.offset, why);
            if rec.len() < len as usize {
                return Err(bad("record cut short"));
            }
            let h = match RecordHeader::decode(rec) {
                HeaderCheck::Valid(h) => h,
                HeaderCheck::Bad(why) => return Err(bad(why)),
                HeaderCheck::Zero => return Err(bad("record is zeroed")),
            };
            let payload = &rec[RECORD_HEADER_LEN..RECORD_HEADER_LEN + h.payload_len as usize];
            if h.id != it.id || h.segment_seq != it.min.seq || !h.payload_ok(payload) {
                return Err(bad("record changed since it was written (checksum or id mismatch)"));
            }
            out.push(Message {
                id: it.id,
                payload: payload.to_vec(),
                attempts: it.min.attempts,
                kind: h.kind,
                enqueued_ns: h.enqueued_ns,
            });
        }
        Ok(out)
    }
}
