//! The model's clock: nanoseconds of real time since the emulator started.
//!
//! The disk model keeps its own time (the platters' angle is a function of
//! it); the emulator advances that time with the wall clock, so a request
//! that arrives 3.1 ms after another finds the platters 3.1 ms further
//! round. `CLOCK_MONOTONIC` is the source: it never steps (NTP slews it at
//! most 0.05%), and it is the clock QEMU and the guest's kvmclock/TSC are
//! steered by.
//!
//! [`ModelClock::wait_until`] completes a request at its model instant:
//! an absolute `clock_nanosleep` to [`SPIN_NS`] before the instant, then a
//! spin on the clock for the last stretch, which a sleep alone overshoots
//! by the scheduler's wake-up latency (tens of µs on a loaded machine).

/// The last stretch before a deadline spent spinning instead of sleeping.
/// Wake-ups from `clock_nanosleep` here came 5–60 µs late (docs/emu.md);
/// 100 µs covers them and costs at most 100 µs of CPU per request.
pub const SPIN_NS: u64 = 100_000;

/// A clock that reads 0 when the emulator starts.
#[derive(Copy, Clone, Debug)]
pub struct ModelClock {
    origin_ns: u64,
    /// `CLOCK_REALTIME` at the origin, for lining a log up with other
    /// records of the same run (the guest's, fio's).
    origin_unix_ns: u64,
}

fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; both clocks always exist
    // on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl ModelClock {
    /// A clock whose time 0 is now.
    pub fn start() -> ModelClock {
        ModelClock {
            origin_ns: read(libc::CLOCK_MONOTONIC),
            origin_unix_ns: read(libc::CLOCK_REALTIME),
        }
    }

    /// Nanoseconds since the start.
    pub fn now_ns(&self) -> u64 {
        read(libc::CLOCK_MONOTONIC).saturating_sub(self.origin_ns)
    }

    /// Wall-clock time (ns since the Unix epoch) of model time 0.
    pub fn origin_unix_ns(&self) -> u64 {
        self.origin_unix_ns
    }

    /// Returns at model time `t_ns` (or at once if that has passed).
    pub fn wait_until(&self, t_ns: u64) {
        let wake = t_ns.saturating_sub(SPIN_NS);
        if self.now_ns() < wake {
            let abs = self.origin_ns + wake;
            let ts = libc::timespec {
                tv_sec: (abs / 1_000_000_000) as libc::time_t,
                tv_nsec: (abs % 1_000_000_000) as libc::c_long,
            };
            // An absolute sleep does not drift when a signal interrupts it:
            // call again with the same deadline until it has passed.
            loop {
                // SAFETY: `ts` is a valid timespec; the remainder pointer
                // may be null for an absolute sleep.
                let rc = unsafe {
                    libc::clock_nanosleep(
                        libc::CLOCK_MONOTONIC,
                        libc::TIMER_ABSTIME,
                        &ts,
                        std::ptr::null_mut(),
                    )
                };
                if rc != libc::EINTR {
                    break;
                }
            }
        }
        while self.now_ns() < t_ns {
            std::hint::spin_loop();
        }
    }
}

/// Lets the calling thread's timed sleeps end as close to their deadline
/// as the kernel can (`PR_SET_TIMERSLACK`, default 50 µs, down to 1 ns).
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and affects only
    // the calling thread; a failure leaves the default slack, harmlessly.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// The real-time priority asked for by [`try_realtime`]: low among
/// real-time threads (1..99), above every normal one.
pub const REALTIME_PRIORITY: i32 = 10;

/// Puts the calling thread in the `SCHED_FIFO` class at
/// [`REALTIME_PRIORITY`], so it runs as soon as it wakes instead of
/// waiting for a time slice behind busy processes: on a loaded host this
/// is what keeps replies on time. Returns false where it is not permitted
/// (no root or `CAP_SYS_NICE`, `RLIMIT_RTPRIO` 0); the thread then stays
/// as it was. The kernel's real-time throttling (95% of each second by
/// default) still bounds what such a thread can take.
pub fn try_realtime() -> bool {
    let param = libc::sched_param {
        sched_priority: REALTIME_PRIORITY,
    };
    // SAFETY: changes the calling thread's own policy; `param` is valid.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_reach_their_deadline_and_not_much_later() {
        tighten_timer_slack();
        let c = ModelClock::start();
        let mut late = Vec::new();
        for i in 1..=20u64 {
            let t = c.now_ns() + i * 300_000;
            c.wait_until(t);
            let now = c.now_ns();
            assert!(now >= t, "woke {} ns early", t - now);
            late.push(now - t);
        }
        late.sort();
        // The median; a loaded machine can delay any single wake-up.
        assert!(late[10] < 2_000_000, "median lateness {} ns", late[10]);
    }

    #[test]
    fn a_past_deadline_returns_at_once() {
        let c = ModelClock::start();
        let before = c.now_ns();
        c.wait_until(0);
        assert!(c.now_ns() - before < 50_000_000);
        assert!(c.origin_unix_ns() > 1_600_000_000_000_000_000);
    }
}
