//! Plugging (2.6.20 block/ll_rw_blk.c `blk_plug_device`,
//! `blk_remove_plug`, `__generic_unplug_device`, `blk_unplug_timeout`).
//!
//! A request added to an empty queue plugs it (`__make_request`: "if
//! (elv_queue_empty(q)) blk_plug_device(q)") and arms the unplug timer
//! `unplug_delay` ahead. While plugged, adding requests does not start the
//! device, so that bios submitted in a burst can be merged and sorted
//! first. The plug goes when `unplug_thresh` requests wait (`elv_insert`),
//! when the timer fires, when a sync bio is submitted, when a process waits
//! for its I/O (the page cache's `sync_page` and direct I/O's
//! `blk_run_address_space`), when a submitter must sleep for a request, and
//! whenever the driver or an elevator runs the queue (`blk_run_queue`,
//! `blk_start_queueing`).

use super::{Effects, KernelTimer};
use crate::time::SimTime;

#[derive(Debug, Default)]
pub struct Plug {
    /// `QUEUE_FLAG_PLUGGED`.
    pub plugged: bool,
    /// When the armed unplug timer fires.
    timer: Option<SimTime>,
}

impl Plug {
    /// `blk_plug_device`: plug (if not already) and arm the timer.
    pub fn plug(&mut self, now: SimTime, delay_ns: u64, fx: &mut Effects) {
        if self.plugged {
            return;
        }
        self.plugged = true;
        let at = now + delay_ns;
        self.timer = Some(at);
        fx.timers.push((at, KernelTimer::Unplug));
    }

    /// `blk_remove_plug`: true if the queue was plugged.
    pub fn unplug(&mut self) -> bool {
        self.timer = None;
        std::mem::replace(&mut self.plugged, false)
    }

    /// The unplug timer fired at `now`: is it the one still armed? (A
    /// timer whose plug was removed meanwhile is `del_timer`ed in Linux.)
    pub fn timer_due(&mut self, now: SimTime) -> bool {
        self.plugged && self.timer == Some(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plug_arms_one_timer_and_a_removed_plug_ignores_it() {
        let mut fx = Effects::default();
        let mut p = Plug::default();
        p.plug(SimTime(10), 3_000_000, &mut fx);
        p.plug(SimTime(20), 3_000_000, &mut fx); // already plugged: no new timer
        assert_eq!(fx.timers, vec![(SimTime(3_000_010), KernelTimer::Unplug)]);
        assert!(p.unplug());
        assert!(!p.unplug());
        assert!(!p.timer_due(SimTime(3_000_010)), "del_timer'd");
        p.plug(SimTime(50), 3_000_000, &mut fx);
        assert!(!p.timer_due(SimTime(3_000_010)), "the old timer");
        assert!(p.timer_due(SimTime(3_000_050)));
    }
}
