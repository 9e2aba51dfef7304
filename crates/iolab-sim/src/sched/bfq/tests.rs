//! BFQ's rules, each pinned by a test (ELEVATORS.md 5; the functions of
//! bfq-iosched.c and bfq-wf2q.c named in each test).

use super::budget::Reason;
use super::*;
use crate::sched::testutil::{ms, read, write, LEN};

fn bfq() -> Bfq {
    Bfq::new(default_params(), false, 64)
}

#[test]
fn runs_in_the_engine() {
    use crate::experiment::{self, Format};
    let spec = |preset: &str, qd: u32| {
        format!(
            "[disk]\npreset = \"{preset}\"\nqueue_depth = {qd}\n[[scheduler]]\nname = \"bfq\"\n\
             [workload]\nkind = \"processes\"\n[[workload.group]]\ncount = 3\nfile_mb = 2\nrequest_kb = 16\npasses = 1\n\
             think = {{ dist = \"constant\", ms = 1 }}\n\
             [[workload.group]]\ncount = 2\nop = \"write\"\nsync = false\nfile_mb = 2\npasses = 1\n\
             [[workload.group]]\ncount = 1\npattern = \"random\"\nfile_mb = 2\npasses = 1\nioprio = \"idle\"\n"
        )
    };
    for (preset, qd) in [("hp97560", 1), ("modern7200", 4), ("ssd", 32)] {
        let e = experiment::parse(&spec(preset, qd), "t.toml", Format::Toml, &[]).unwrap();
        let r = e.run_job(experiment::Job { scheduler: 0, seed: 1 }, &Default::default()).unwrap();
        assert_eq!(r.requests.inserted, r.requests.completed, "{preset}");
        assert!(r.requests.completed > 0);
    }
}


impl Bfq {
    fn dump(&self) -> String {
        let mut out = format!(
            "in_service {:?} next {:?} busy {:?} queued {} in_driver {} timer {:?} wr_busy {}\n",
            self.in_service, self.sd.next_in_service, self.busy_queues, self.queued, self.rq_in_driver, self.idle_timer,
            self.wr_busy_queues
        );
        for (i, q) in self.queues.iter().enumerate() {
            out += &format!(
                "  q{i} owner {:?} sync {} busy {} rqs {} disp {} budget {} service {} S {} F {} tree {:?} on_st {} wait {} nbw {} class {:?} w {}\n",
                q.owner, q.sync, q.busy, q.rqs.len(), q.dispatched, q.e.budget, q.e.service, q.e.start, q.e.finish, q.e.tree,
                q.e.on_st_or_in_serv, q.wait_request, q.non_blocking_wait_rq, q.ioprio_class, q.e.weight
            );
        }
        for (c, st) in self.sd.st.iter().enumerate() {
            out += &format!("  st{c} vtime {} wsum {} active {:?} idle {:?}\n", st.vtime, st.wsum, st.active, st.idle);
        }
        out
    }
}

/// A small closed-loop harness: `readers` sync sequential readers (and
/// `writers` async writers with 4 in flight) on a device that serves one
/// request in `svc_ms`; readers think `think_ms`. Returns the BFQ and the
/// completions per process, after `until_ms`.
fn harness(b: &mut Bfq, readers: u32, writers: u32, svc_ms: u64, think_ms: u64, until_ms: u64) -> Vec<u32> {
    let n = (readers + writers) as usize;
    let mut done = vec![0u32; n];
    let mut next_sector: Vec<u64> = (0..n as u64).map(|i| 1_000_000 * (i + 1)).collect();
    let mut in_flight: Option<(Request, SimTime)> = None;
    let mut wake: Vec<Option<SimTime>> = vec![Some(ms(0)); n];
    let mut outstanding = vec![0u32; n];
    let mut id = 0u32;
    let mut now = ms(0);
    let end = ms(until_ms);
    while now < end {
        // Wake processes.
        for p in 0..n {
            if wake[p].is_some_and(|t| t <= now) {
                wake[p] = None;
                let is_writer = p >= readers as usize;
                let k = if is_writer { 4 - outstanding[p] } else { 1 };
                for _ in 0..k {
                    let rq = if is_writer { write(id, p as u32, next_sector[p]) } else { read(id, p as u32, next_sector[p]) };
                    id += 1;
                    next_sector[p] += LEN as u64;
                    outstanding[p] += 1;
                    b.insert(rq, now);
                }
            }
        }
        if in_flight.is_none() {
            if let Dispatch::Request(rq) = b.dispatch(now) {
                in_flight = Some((rq, SimTime(now.ns() + svc_ms * 1_000_000)));
            }
        }
        // Next event.
        let mut t = end;
        if let Some((_, d)) = in_flight {
            t = t.min(d);
        }
        for w in wake.iter().flatten() {
            t = t.min(*w);
        }
        if let Some(x) = b.armed_timer() {
            t = t.min(x);
        }
        if t == end && in_flight.is_none() && b.queued() > 0 {
            panic!("stalled at {now:?}\n{}", b.dump());
        }
        now = t.max(now);
        if let Some((rq, d)) = in_flight {
            if d <= now {
                in_flight = None;
                b.completed(&rq, now);
                let p = rq.pid as usize;
                done[p] += 1;
                outstanding[p] -= 1;
                let is_writer = p >= readers as usize;
                if !is_writer {
                    wake[p] = Some(SimTime(now.ns() + think_ms * 1_000_000));
                } else if wake[p].is_none() {
                    wake[p] = Some(now);
                }
                continue;
            }
        }
        if b.armed_timer().is_some_and(|x| x <= now) {
            b.timer(now);
        }
    }
    done
}

#[test]
fn debug_harness() {
    let mut b = bfq();
    let done = harness(&mut b, 3, 1, 1, 1, 5000);
    eprintln!("{done:?}\n{}", b.dump());
}
