//! The `Elevator` methods a wrapper elevator passes to the one it wraps
//! unchanged. A wrapper (blk-mq's dispatch layer, `mq::BlkMq`, and kblockd's
//! queue runs, `kblockd::Kblockd`) changes when the inner elevator is asked
//! for work, not what it merges, counts or logs; these are that part, written
//! once. The wrapper names its inner elevator `inner`. Exported for the
//! wrappers of tests (tests/kernel_differential.rs), hence the `$crate`
//! paths.

#[doc(hidden)]
#[macro_export]
macro_rules! forward_to_inner {
    () => {
        fn anticipation(&self) -> Option<$crate::sched::AnticipationStats> {
            self.inner.anticipation()
        }

        fn keep_messages(&mut self, max_lines: u32) {
            self.inner.keep_messages(max_lines);
        }

        fn take_messages(&mut self) -> (Vec<($crate::time::SimTime, String)>, u64) {
            self.inner.take_messages()
        }

        fn merges(&self) -> bool {
            self.inner.merges()
        }

        fn front_merge_candidate(&self, bio: &$crate::request::Request) -> Option<$crate::request::Request> {
            self.inner.front_merge_candidate(bio)
        }

        fn allow_merge(&self, rq: &$crate::request::Request, bio: &$crate::request::Request) -> bool {
            self.inner.allow_merge(rq, bio)
        }

        fn former_request(&self, rq: &$crate::request::Request) -> Option<$crate::request::Request> {
            self.inner.former_request(rq)
        }

        fn latter_request(&self, rq: &$crate::request::Request) -> Option<$crate::request::Request> {
            self.inner.latter_request(rq)
        }

        fn merged(&mut self, old: &$crate::request::Request, new: &$crate::request::Request, kind: $crate::sched::MergeKind) {
            self.inner.merged(old, new, kind);
        }

        fn merged_requests(
            &mut self,
            rq: &$crate::request::Request,
            merged: &$crate::request::Request,
            next: &$crate::request::Request,
            now: $crate::time::SimTime,
        ) {
            self.inner.merged_requests(rq, merged, next, now);
        }
    };
}
