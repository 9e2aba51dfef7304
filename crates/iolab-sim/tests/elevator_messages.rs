//! `run.elevator_messages`: the module's own blktrace lines
//! (`blk_add_trace_msg` in kernel/wpcas-policy.c and as-wait.c), kept by
//! kshim as a trace in the guest keeps them, agree with the elevator's
//! counters, and keeping them changes nothing of the run.

use iolab_sim::engine::RunControl;
use iolab_sim::experiment::{parse, Format};
use iolab_sim::metrics::RunResult;

/// The randseq workload of `iolab kernel compare` in small: two random
/// readers and two sequential readers thinking 1 ms, on the HP 97560.
fn spec(scheduler: &str, messages: u64) -> String {
    format!(
        r#"
[disk]
preset = "hp97560"
[[scheduler]]
name = "{scheduler}"
[workload]
kind = "processes"
[[workload.group]]
count = 2
pattern = "random"
request_kb = 4
file_mb = 512
[[workload.group]]
count = 2
pattern = "sequential"
request_kb = 16
file_mb = 64
think = {{ dist = "constant", ms = 1.0 }}
[run]
duration_s = 5
elevator_messages = {messages}
"#
    )
}

fn run(scheduler: &str, messages: u64) -> RunResult {
    let exp = parse(&spec(scheduler, messages), "t.toml", Format::Toml, &[]).expect("the spec parses");
    let job = exp.jobs()[0];
    exp.run_job(job, &RunControl::default()).expect("the run")
}

/// The number after `key` in a message line.
fn field(text: &str, key: &str) -> u64 {
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        if w == key {
            return words.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{key} in {text:?}"));
        }
    }
    panic!("no {key} in {text:?}")
}

#[test]
fn the_module_lines_agree_with_its_counters_and_change_nothing() {
    let logged = run("kernel:wpcas", 1_000_000);
    let plain = run("kernel:wpcas", 0);
    assert_eq!(logged.throughput_mb_s, plain.throughput_mb_s, "keeping messages changed the run");
    assert_eq!(logged.anticipation, plain.anticipation);
    assert!(plain.elevator_messages.is_empty());
    let m = &logged.elevator_messages;
    assert!(m.windows(2).all(|w| w[0].t_ns <= w[1].t_ns), "messages out of time order");
    assert!(m.iter().all(|l| l.text.len() < 128), "a line longer than BLK_TN_MAX_MSG");
    let ste: Vec<&str> = m.iter().map(|l| l.text.as_str()).filter(|t| t.starts_with("wpcas ste ")).collect();
    let as_rule = m.iter().filter(|l| l.text.starts_with("wpcas as ")).count();
    assert!(ste.len() > 100, "{} STE decisions", ste.len());
    assert!(as_rule > 0, "no decision by AS's rule (a process's first anticipations)");
    // Every decision line names a waiting choice and the target's place.
    assert!(ste.iter().all(|t| field(t, "w") <= 1 && field(t, "st") <= 3 && field(t, "ok") + field(t, "f") > 0));
    // Every wait that ended is one "as end" line, its outcome and its time
    // (whole µs, truncated) those of Table 1's counters.
    let a = &logged.anticipation;
    let ends: Vec<&str> = m.iter().map(|l| l.text.as_str()).filter(|t| t.starts_with("as end ")).collect();
    let ok: Vec<&&str> = ends.iter().filter(|t| field(t, "ok") == 1).collect();
    assert_eq!(ok.len() as u64, a.succeeded);
    assert_eq!(ends.len() as u64, a.succeeded + a.failed);
    let starts: Vec<&str> = m.iter().map(|l| l.text.as_str()).filter(|t| t.starts_with("as start ")).collect();
    assert_eq!(starts.len() as u64, a.started);
    assert!(starts.iter().all(|t| field(t, "req") <= 1));
    let ok_us: u64 = ok.iter().map(|t| field(t, "waited")).sum();
    let ms = a.success_wait_ms;
    assert!(
        (ok_us as f64 / 1e3 - ms).abs() <= ok.len() as f64 / 1e3,
        "success waits: {ok_us} us in the lines, {ms} ms counted"
    );
}

#[test]
fn past_the_limit_lines_are_counted_not_kept() {
    let all = run("kernel:wpcas", 1_000_000);
    let ten = run("kernel:wpcas", 10);
    assert_eq!(ten.elevator_messages.len(), 10);
    assert_eq!(ten.elevator_messages, all.elevator_messages[..10]);
    assert_eq!(ten.elevator_messages_dropped as usize, all.elevator_messages.len() - 10);
    // The Rust elevators write no blktrace lines.
    assert!(run("wpcas", 1_000).elevator_messages.is_empty());
}

#[test]
fn a_limit_beyond_the_bound_is_refused_by_name() {
    let e = parse(&spec("kernel:wpcas", 1_000_001), "t.toml", Format::Toml, &[]).unwrap_err().to_string();
    assert!(e.contains("run.elevator_messages") && e.contains("1000000"), "{e}");
}
