//! A writer process killed with SIGKILL at random moments, 200 times; after
//! each kill the queue is reopened and checked against what the writer
//! logged as acknowledged.
//!
//! The writer is this test binary itself, started again with
//! `FQ_KILL_CHILD` set and a filter that runs only `kill_child`. It logs a
//! line before each enqueue (`T key`), after each successful enqueue
//! (`E id key`), before each ack (`A id`) and after each successful ack
//! (`D id`), each line with one
//! `write` call on an `O_APPEND` file, which a SIGKILL does not lose.
//!
//! A test binary of its own, apart from `main.rs`'s tests: between `fork`
//! and `exec` each writer child holds a copy of every descriptor of the
//! process that starts it, the `flock`ed lock files of queues that tests
//! running beside it opened included, so one of those tests that closed a
//! queue and reopened it at once could find it still locked (`Locked`).
//! Alone in its process, this test starts children that can hold nothing
//! but its own queue, which it never reopens before the child is dead.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fastqueue::{Config, FastQueue};

// Only some of the shared helpers are used here.
#[allow(dead_code)]
mod common;
use common::{drain, key_of, payload};

const ROUNDS: u32 = 200;

fn config() -> Config {
    Config {
        segment_size: 64 << 10,
        batch_delay: Duration::from_micros(300),
        spare_segments: 1,
        max_attempts: 1000,
        ..Config::default()
    }
}

/// The writer. Does nothing unless started by `kill9_loop`.
#[test]
fn kill_child() {
    let Ok(dir) = std::env::var("FQ_KILL_CHILD") else { return };
    let round: u32 = std::env::var("FQ_KILL_ROUND").unwrap().parse().unwrap();
    let dir = Path::new(&dir);
    let log = Arc::new(Mutex::new(
        OpenOptions::new().append(true).create(true).open(dir.join("log")).unwrap(),
    ));
    let say = {
        let log = log.clone();
        move |line: String| {
            let mut f = log.lock().unwrap();
            f.write_all(line.as_bytes()).unwrap();
        }
    };
    let q = Arc::new(FastQueue::open(dir.join("q"), config()).unwrap());
    say(format!("O {round}\n"));
    let mut threads = Vec::new();
    for t in 0..4 {
        let (q, say) = (q.clone(), say.clone());
        threads.push(std::thread::spawn(move || {
            for i in 0.. {
                let key = format!("{round}.{t}.{i}");
                say(format!("T {key}\n"));
                let id = q.enqueue(&payload(&key, 20 + (i * 131 + t * 17) % 3000)).unwrap();
                say(format!("E {id} {key}\n"));
            }
        }));
    }
    let (qc, sayc) = (q.clone(), say.clone());
    threads.push(std::thread::spawn(move || {
        for n in 0u64.. {
            let batch = qc.dequeue_batch(16, Some(Duration::from_millis(5))).unwrap();
            for m in batch {
                if (m.id + n) % 11 == 0 {
                    qc.nack(m.id, Duration::ZERO).unwrap();
                } else {
                    sayc(format!("A {}\n", m.id));
                    qc.ack(m.id).unwrap();
                    sayc(format!("D {}\n", m.id));
                }
            }
        }
    }));
    for t in threads {
        t.join().unwrap();
    }
}

#[derive(Default)]
struct Log {
    tried: BTreeSet<String>,
    stored: BTreeMap<u64, String>,
    deleted: BTreeSet<u64>,
    ack_tried: BTreeSet<u64>,
}

fn read_log(path: &Path) -> Log {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut log = Log::default();
    for line in text.lines() {
        let mut parts = line.split(' ');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("T"), Some(key), None) => {
                log.tried.insert(key.to_string());
            }
            (Some("E"), Some(id), Some(key)) => {
                log.stored.insert(id.parse().unwrap(), key.to_string());
            }
            (Some("A"), Some(id), None) => {
                log.ack_tried.insert(id.parse().unwrap());
            }
            (Some("D"), Some(id), None) => {
                log.deleted.insert(id.parse().unwrap());
            }
            _ => {}
        }
    }
    log
}

#[test]
fn kill9_loop() {
    if std::env::var("FQ_KILL_CHILD").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng: u64 = 0x2545_F491_4F6C_DD1D;
    let mut opened = 0;
    let mut checked_messages = 0usize;
    for round in 0..ROUNDS {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let mut child = Command::new(&exe)
            .args(["--exact", "kill_child", "--nocapture", "--test-threads=1"])
            .env("FQ_KILL_CHILD", dir.path())
            .env("FQ_KILL_ROUND", round.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(2_000 + rng % 60_000));
        child.kill().unwrap();
        child.wait().unwrap();

        let log = read_log(&dir.path().join("log"));
        let q = FastQueue::open(dir.path().join("q"), config())
            .unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
        let got = drain(&q);
        let mut seen = BTreeSet::new();
        for m in &got {
            assert!(seen.insert(m.id), "round {round}: {} delivered twice", m.id);
            assert!(!log.deleted.contains(&m.id), "round {round}: acknowledged {} came back", m.id);
            let key = key_of(&m.payload);
            match log.stored.get(&m.id) {
                Some(k) => assert_eq!(k, &key, "round {round}: payload of {}", m.id),
                None => assert!(log.tried.contains(&key), "round {round}: {key} never enqueued"),
            }
        }
        for (id, key) in &log.stored {
            if !log.ack_tried.contains(id) {
                assert!(seen.contains(id), "round {round}: stored {id} ({key}) lost");
            }
        }
        checked_messages += got.len();
        if log.stored.keys().any(|id| !log.deleted.contains(id)) || !got.is_empty() {
            opened += 1;
        }
    }
    // The loop must have exercised something: the writer got to store
    // messages in most rounds.
    let log = read_log(&dir.path().join("log"));
    assert!(log.stored.len() > 1000, "only {} messages stored", log.stored.len());
    assert!(opened > ROUNDS / 2, "{opened}");
    eprintln!("kill -9 loop: {ROUNDS} rounds, {} stored, {} acked, {checked_messages} checked", log.stored.len(), log.deleted.len());
}
