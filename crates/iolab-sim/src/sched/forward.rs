//! The `Elevator` methods a wrapper elevator passes to the one it wraps
//! unchanged. A wrapper (blk-mq's dispatch layer, `mq::BlkMq`, and kblockd's
//! queue runs, `kblockd::Kblockd`) changes when the inner elevator is asked
//! for work, not what it merges, counts or logs; these are that part, written
//! once. The wrapper names its inner elevator `inner`.

macro_rules! forward_to_inner {
    () => {
        fn anticipation(&self) -> Option<AnticipationStats> {
            self.inner.anticipation()
        }

        fn keep_messages(&mut self, max_lines: u32) {
            self.inner.keep_messages(max_lines);
        }

        fn take_messages(&mut self) -> (Vec<(SimTime, String)>, u64) {
            self.inner.take_messages()
        }

        fn merges(&self) -> bool {
            self.inner.merges()
        }

        fn front_merge_candidate(&self, bio: &Request) -> Option<Request> {
            self.inner.front_merge_candidate(bio)
        }

        fn allow_merge(&self, rq: &Request, bio: &Request) -> bool {
            self.inner.allow_merge(rq, bio)
        }

        fn former_request(&self, rq: &Request) -> Option<Request> {
            self.inner.former_request(rq)
        }

        fn latter_request(&self, rq: &Request) -> Option<Request> {
            self.inner.latter_request(rq)
        }

        fn merged(&mut self, old: &Request, new: &Request, kind: MergeKind) {
            self.inner.merged(old, new, kind);
        }

        fn merged_requests(&mut self, rq: &Request, merged: &Request, next: &Request, now: SimTime) {
            self.inner.merged_requests(rq, merged, next, now);
        }
    };
}
