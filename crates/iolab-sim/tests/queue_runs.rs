//! `[host.queue_run_us]`: kblockd's runs (sched::kblockd) through a whole
//! run. A request waits for the worker's run after its insertion; the
//! module's C (`kernel:wpcas`) and the Rust elevators are wrapped alike;
//! a blk-mq elevator is refused by name.

use iolab_sim::engine::RunControl;
use iolab_sim::experiment::{parse, Format};
use iolab_sim::metrics::RunResult;

fn spec(scheduler: &str, host: &str, readers: u32) -> String {
    format!(
        r#"
[disk]
preset = "fixed"
fixed_ms = 2.0
{host}
[[scheduler]]
name = "{scheduler}"
[workload]
kind = "processes"
[[workload.group]]
count = {readers}
pattern = "random"
request_kb = 4
file_mb = 64
[run]
duration_s = 2
"#
    )
}

fn run(scheduler: &str, host: &str, readers: u32) -> Result<RunResult, String> {
    let exp = parse(&spec(scheduler, host, readers), "t.toml", Format::Toml, &[]).map_err(|e| e.to_string())?;
    let job = exp.jobs()[0];
    exp.run_job(job, &RunControl::default()).map_err(|e| e.to_string())
}

#[test]
fn a_lone_reader_waits_for_every_run_after_its_insertion() {
    let at_once = run("noop", "", 1).unwrap();
    let queued = run("noop", "[host.queue_run_us]\ninsert = [500.0]", 1).unwrap();
    let (a, b) = (at_once.latency_ms.mean, queued.latency_ms.mean);
    assert!((b - a - 0.5).abs() < 1e-6, "mean latency {a} ms at once, {b} ms with the worker");
    assert!(queued.throughput_mb_s < at_once.throughput_mb_s * 0.81);
}

#[test]
fn the_same_spec_and_seed_give_the_same_run() {
    let host = "[host.queue_run_us]\ninsert = [100.0, 300.0, 900.0]\ncompletion = [600.0, 700.0]";
    for elevator in ["wpcas", "kernel:wpcas", "as"] {
        let a = run(elevator, host, 4).unwrap();
        let b = run(elevator, host, 4).unwrap();
        assert_eq!(a, b, "{elevator}");
        let plain = run(elevator, "", 4).unwrap();
        assert_ne!(a.throughput_mb_s, plain.throughput_mb_s, "{elevator}: the delays changed nothing");
    }
}

#[test]
fn a_blk_mq_elevator_is_refused_and_a_bad_value_named() {
    let e = run("mq-deadline", "[host.queue_run_us]\ncompletion = [600.0]", 1).unwrap_err();
    assert!(e.contains("host.queue_run_us") && e.contains("mq-deadline"), "{e}");
    let e = run("noop", "[host.queue_run_us]\ntimer = [1.0, -3.0]", 1).unwrap_err();
    assert!(e.contains("host.queue_run_us.timer[1]"), "{e}");
    let e = run("noop", "[host.queue_run_us]\nsoon = [1.0]", 1).unwrap_err();
    assert!(e.contains("soon"), "{e}");
}
