//! `[host] cpus`: processes' `cpu` time on fewer CPUs than processes waits
//! for one (engine::cpu), and a run without the table is unchanged.

use iolab_sim::engine::RunControl;
use iolab_sim::experiment::{parse, Format};
use iolab_sim::metrics::RunResult;

/// Four synchronous readers on a 0.1 ms disk, each spending 1 ms of CPU
/// per request and thinking 1 ms after it.
fn spec(host: &str) -> String {
    format!(
        r#"
{host}
[disk]
preset = "fixed"
fixed_ms = 0.1
[[scheduler]]
name = "noop"
[workload]
kind = "processes"
[[workload.group]]
count = 4
pattern = "random"
request_kb = 4
file_mb = 16
cpu = {{ dist = "constant", ms = 1.0 }}
think = {{ dist = "constant", ms = 1.0 }}
[run]
duration_s = 2
"#
    )
}

fn run(host: &str) -> RunResult {
    let exp = parse(&spec(host), "t.toml", Format::Toml, &[]).expect("the spec parses");
    let job = exp.jobs()[0];
    exp.run_job(job, &RunControl::default()).expect("the run")
}

#[test]
fn one_cpu_serialises_the_bursts_and_enough_cpus_change_nothing() {
    let own = run("");
    let one = run("[host]\ncpus = 1");
    let four = run("[host]\ncpus = 4");
    // Alone, a request takes 0.1 ms of disk + 1 ms of CPU + 1 ms of think
    // (the four share the disk, which is idle 80% of the time): about 476
    // per second each, 1,900 in all.
    assert!(
        (1800.0..2000.0).contains(&own.iops),
        "one CPU each: {} IOPS",
        own.iops
    );
    // On one CPU at most 1,000 ms of bursts fit in a second: 1,000 IOPS.
    assert!(
        one.iops <= 1000.0 + 1.0 && one.iops > 900.0,
        "one CPU: {} IOPS",
        one.iops
    );
    let c = one.cpu.as_ref().expect("the CPUs' report");
    assert_eq!(c.cpus, 1);
    assert!(c.busy_ms > 1900.0 && c.mean_wait_us > 100.0, "{c:?}");
    // Four CPUs for four processes: what one CPU each gives, to the request.
    assert_eq!(four.requests.inserted, own.requests.inserted);
    assert_eq!(four.cpu.as_ref().unwrap().mean_wait_us, 0.0);
    assert!(own.cpu.is_none(), "no [host]: no CPUs reported");
}

#[test]
fn cpus_out_of_range_name_the_field_and_the_limit() {
    for bad in ["cpus = 0", "cpus = 5000"] {
        let msg = refused(&spec(&format!("[host]\n{bad}")));
        assert!(msg.contains("host.cpus") && msg.contains("4096"), "{msg}");
    }
    let msg = refused(&spec("[host]\ncores = 2"));
    assert!(msg.contains("cores"), "{msg}");
}

/// The error a spec is refused with.
fn refused(text: &str) -> String {
    match parse(text, "t.toml", Format::Toml, &[]) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}
