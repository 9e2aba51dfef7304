//! BFQ's estimate of the device's peak rate (`bfq_update_peak_rate`,
//! `bfq_update_rate_reset`, `bfq_reset_rate_computation`), in sectors per
//! µs << 16, and what follows from it: the automatic maximum budget
//! (`bfq_calc_max_budget`: what the device serves in `timeout_sync` at
//! the peak rate) and the duration of interactive weight raising.
//!
//! An observation window opens at a dispatch and collects dispatches.
//! It closes after 1 s, after an idle gap of over 100 ms with nothing in
//! the device, or when completions come at a far lower rate than the
//! window's largest request allows. A closed window updates the estimate
//! if it lasted at least 300 ms with 32 dispatches, its rate is plausible
//! (at most 20 sectors/µs), and it was mostly sequential or faster than
//! the estimate; the update is a weighted average that trusts long,
//! sequential windows more.

use super::queue::{rq_seeky, QueueId};
use super::{
    Bfq, MIN_TT_NS, RATE_MIN_INTERVAL_NS, RATE_MIN_SAMPLES, RATE_REF_INTERVAL_NS, RATE_SHIFT,
};
use crate::request::Request;

impl Bfq {
    /// `bfq_calc_max_budget`: peak rate × timeout.
    pub(super) fn calc_max_budget(&self) -> i64 {
        let timeout_ms = self.hz.to_ms(self.p.timeout_j as u64);
        ((self.peak_rate as u64 * 1000 * timeout_ms) >> RATE_SHIFT) as i64
    }

    /// `update_thr_responsiveness_params`.
    fn update_thr_responsiveness_params(&mut self) {
        if self.p.user_max_budget == 0 {
            self.max_budget = self.calc_max_budget();
        }
    }

    /// `bfq_reset_rate_computation`: a new window from `rq`, or none until
    /// the next dispatch.
    fn reset_rate_computation(&mut self, rq: Option<&Request>) {
        match rq {
            Some(rq) => {
                let now = self.ns();
                self.last_dispatch = now;
                self.first_dispatch = now;
                self.peak_rate_samples = 1;
                self.sequential_samples = 0;
                self.tot_sectors_dispatched = rq.nr_sectors as u64;
                self.last_rq_max_size = rq.nr_sectors;
            }
            None => self.peak_rate_samples = 0,
        }
    }

    /// `bfq_update_rate_reset`: close the window, update the estimate if
    /// the window is worth it, and open a new one.
    pub(super) fn update_rate_reset(&mut self, rq: Option<&Request>) {
        if self.peak_rate_samples >= RATE_MIN_SAMPLES && self.delta_from_first >= RATE_MIN_INTERVAL_NS {
            self.delta_from_first =
                self.delta_from_first.max((self.last_completion - self.first_dispatch).max(0) as u64);
            let us = (self.delta_from_first / 1000).max(1);
            let mut rate = ((self.tot_sectors_dispatched << RATE_SHIFT) / us) as u32;
            let mostly_random = self.sequential_samples < (3 * self.peak_rate_samples) >> 2;
            if !((mostly_random && rate <= self.peak_rate) || rate > 20 << RATE_SHIFT) {
                // Weight up to 8 for a long, sequential window.
                let weight = (9 * self.sequential_samples) / self.peak_rate_samples;
                let weight = 8.min((weight as u64 * self.delta_from_first / RATE_REF_INTERVAL_NS) as u32);
                let divisor = 10 - weight;
                self.peak_rate = self.peak_rate * (divisor - 1) / divisor;
                rate /= divisor;
                self.peak_rate = (self.peak_rate + rate).max(1);
                self.update_thr_responsiveness_params();
            }
        }
        self.reset_rate_computation(rq);
    }

    /// `bfq_update_peak_rate`, at each dispatch.
    pub(super) fn update_peak_rate(&mut self, rq: &Request, id: QueueId) {
        let now = self.ns();
        if self.peak_rate_samples == 0 {
            // First dispatch of a window.
            self.reset_rate_computation(Some(rq));
        } else if now - self.last_dispatch > 100_000_000 && self.rq_in_driver == 0 {
            self.update_rate_reset(Some(rq));
        } else {
            self.peak_rate_samples += 1;
            if (self.rq_in_driver > 0 || ((now - self.last_completion) as u64) < MIN_TT_NS)
                && !rq_seeky(self.nonrot, self.last_position, rq)
            {
                self.sequential_samples += 1;
            }
            self.tot_sectors_dispatched += rq.nr_sectors as u64;
            // The largest request size, reset every 32 dispatches.
            if !self.peak_rate_samples.is_multiple_of(32) {
                self.last_rq_max_size = self.last_rq_max_size.max(rq.nr_sectors);
            } else {
                self.last_rq_max_size = rq.nr_sectors;
            }
            self.delta_from_first = (now - self.first_dispatch).max(0) as u64;
            if self.delta_from_first >= RATE_REF_INTERVAL_NS {
                self.update_rate_reset(Some(rq));
            }
        }
        self.last_position = rq.end_sector();
        if self.in_service == Some(id) {
            self.in_serv_last_pos = self.last_position;
        }
        self.last_dispatch = now;
    }
}
