//! Experiments: the TOML spec, its validation, and running one job (one
//! scheduler on one seed). See docs/spec.md for the format.
//!
//! ```toml
//! name = "iozone-seq"
//! [disk]
//! preset = "hp97560"
//! [[scheduler]]
//! name = "as"
//! antic_expire = 6
//! [[scheduler]]
//! name = "deadline"
//! [workload]
//! kind = "iozone"
//! processes = 10
//! [run]
//! seed = 1
//! repetitions = 5
//! ```

use crate::blk::QueueSpec;
use crate::pagecache::VmSpec;
use crate::disk::{self, DiskSpec};
use crate::engine::{self, EngineConfig, RunControl};
use crate::error::{Error, Result};
use crate::metrics::{RunHeader, RunResult};
use crate::sched::{self, TunableValues};
use crate::time::{SimTime, NS_PER_S};
use crate::trace::{ReadControl, Trace};
use crate::workload::{self, WorkloadSpec};
use crate::field::{FieldError, FieldPath, Seg};
use source::SpecSource;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

pub mod bounds;
pub mod source;

/// The trace a spec names, read once while any experiment holds it: the
/// points of a sweep are experiments of one spec (a sweep of 20 points over
/// a 10^7-line trace read it 20 times). The key is the file's identity and
/// state (device, inode, size, modification time) and the read's options,
/// so a changed file is read again.
fn load_trace(t: &workload::trace::TraceSpec, control: &RunControl) -> Result<Arc<Trace>> {
    use std::os::unix::fs::MetadataExt;
    static LAST: Mutex<Option<(String, Weak<Trace>)>> = Mutex::new(None);
    let key = std::fs::metadata(&t.file).ok().map(|m| {
        format!(
            "{}:{}:{}:{}.{}|{:?}|{}|{:?}",
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
            t.format,
            t.blkparse_action,
            t.max_records
        )
    });
    if let (Some(k), Some((last, weak))) = (&key, LAST.lock().unwrap().as_ref()) {
        if k == last {
            if let Some(trace) = weak.upgrade() {
                return Ok(trace);
            }
        }
    }
    let ctl = ReadControl { bytes: &control.completed, cancel: &control.cancel };
    let trace = Arc::new(workload::trace::load(t, ctl)?);
    if let Some(k) = key {
        *LAST.lock().unwrap() = Some((k, Arc::downgrade(&trace)));
    }
    Ok(trace)
}

/// A job's processes: a trace workload replays the records read at parse
/// time; the others are built from their spec.
fn build_workload(w: &WorkloadSpec, trace: Option<&Trace>, capacity: u64) -> Result<workload::BuiltWorkload> {
    match (w, trace) {
        (WorkloadSpec::Trace(t), Some(records)) => workload::trace::replay(t, records, capacity),
        _ => workload::build(w, capacity),
    }
}

/// A `[host]` table left as it is is not written into results (the specs
/// recorded before it existed read the same).
fn host_is_default(h: &crate::engine::cpu::HostSpec) -> bool {
    *h == crate::engine::cpu::HostSpec::default()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub disk: DiskSpec,
    /// The request queue between the processes and the elevator.
    #[serde(default)]
    pub queue: QueueSpec,
    /// Memory and write-back (buffered I/O only).
    #[serde(default)]
    pub vm: VmSpec,
    /// The CPUs the processes compute on (`cpus`; absent, one each).
    #[serde(default, skip_serializing_if = "host_is_default")]
    pub host: crate::engine::cpu::HostSpec,
    /// `[[scheduler]]` tables, one per configuration to compare.
    #[serde(rename = "scheduler")]
    pub schedulers: Vec<SchedSpec>,
    pub workload: WorkloadSpec,
    #[serde(default)]
    pub run: RunSpec,
}

/// One scheduler configuration: its name, an optional label (to compare the
/// same scheduler with different tunables) and its tunables.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SchedSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(flatten)]
    pub tunables: BTreeMap<String, f64>,
}

impl SchedSpec {
    /// The name results are reported under.
    pub fn display_name(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.name)
    }

    /// Check one `[[scheduler]]` table before serde reads it (its tunables
    /// are a flattened map, which serde reports as a whole): `name` a
    /// string, `label` a non-empty line of text, every other field a number
    /// (`true`/`false` are read as 1/0, as sysfs takes them).
    pub fn check_value(entry: &mut Value, path: &FieldPath) -> std::result::Result<(), FieldError> {
        let Some(obj) = entry.as_object_mut() else {
            return Err(FieldError::new(path.clone(), "expected a table, e.g. { name = \"as\", antic_expire = 6 }"));
        };
        match obj.get("name") {
            Some(Value::String(_)) => {}
            Some(_) => return Err(FieldError::new(path.clone().key("name"), "expected a scheduler name (a string)")),
            None => return Err(FieldError::new(path.clone(), "missing field `name`")),
        }
        match obj.get("label") {
            None => {}
            Some(Value::String(s)) if s.trim().is_empty() => {
                return Err(FieldError::new(path.clone().key("label"), "must not be empty (it names the results)"))
            }
            Some(Value::String(s)) if s.chars().any(char::is_control) => {
                return Err(FieldError::new(path.clone().key("label"), "must be one line without control characters"))
            }
            Some(Value::String(_)) => {}
            Some(_) => return Err(FieldError::new(path.clone().key("label"), "expected a string")),
        }
        for (k, v) in obj.iter_mut() {
            if k == "name" || k == "label" {
                continue;
            }
            match v {
                Value::Number(_) => {}
                Value::Bool(b) => *v = Value::from(u8::from(*b)),
                other => {
                    let got = match other {
                        Value::String(s) => format!("the string {s:?}"),
                        Value::Array(_) => "an array".into(),
                        Value::Object(_) => "a table".into(),
                        _ => "nothing".into(),
                    };
                    return Err(FieldError::new(path.clone().key(k), format!("a tunable takes a number, got {got}")));
                }
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSpec {
    /// Stop at this simulated time (seconds).
    pub duration_s: Option<f64>,
    /// Stop after this many completed requests.
    pub max_requests: Option<u64>,
    /// First seed; seeds are `seed, seed+1, ...` for `repetitions` runs.
    pub seed: u64,
    pub repetitions: u32,
    /// Explicit seeds (instead of `seed` and `repetitions`).
    pub seeds: Option<Vec<u64>>,
    /// Keep up to this many of the elevator's own trace messages per run
    /// (`blk_add_trace_msg` of the module's C, `kernel:NAME`) in its
    /// result; 0 (the default, not written into results): none.
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub elevator_messages: u32,
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec { duration_s: None, max_requests: None, seed: 1, repetitions: 1, seeds: None, elevator_messages: 0 }
    }
}

/// The input format of a spec.
pub use source::Format;

/// One unit of work: a scheduler configuration on a seed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Job {
    pub scheduler: usize,
    pub seed: u64,
}

/// A checked spec, ready to run.
#[derive(Clone, Debug)]
pub struct Experiment {
    pub spec: Spec,
    /// Directory that relative paths in the spec are relative to.
    pub base_dir: PathBuf,
    /// The spec's name in errors (its file), for those only a run finds.
    file: String,
    tunables: Vec<TunableValues>,
    /// A trace workload's records, read once at parse time and replayed by
    /// every job (a sweep of a 10^7-line trace read it once per job).
    trace: Option<Arc<Trace>>,
}

/// Parse and check a spec. `file` names it in errors; `overrides` are
/// `key=value` settings applied before checking (`workload.processes=40`,
/// or `SCHEDULER.TUNABLE=value` for every scheduler of that name or label).
///
/// Every error is one line naming the file, the line of the field when the
/// text holds it (or the `--set` that wrote it) and the field itself.
pub fn parse(text: &str, file: &str, format: Format, overrides: &[(String, String)]) -> Result<Experiment> {
    parse_controlled(text, file, format, overrides, &RunControl::default())
}

/// [`parse`], reporting the bytes of a trace file read so far in
/// `control.completed` (for a progress bar) and stopping when
/// `control.cancel` is set (Ctrl-C while a large trace is read).
pub fn parse_controlled(
    text: &str,
    file: &str,
    format: Format,
    overrides: &[(String, String)],
    control: &RunControl,
) -> Result<Experiment> {
    let src = SpecSource::read(text, file, format)?;
    let mut value = src.value.clone();
    for (key, raw) in overrides {
        apply_override(&mut value, key, raw)
            .map_err(|m| Error::Spec { file: file.to_string(), message: format!("--set {key}={raw}: {m}") })?;
    }
    let at = |fe: FieldError| {
        let by = override_for(&fe.path, overrides);
        src.field_error(&fe, by.as_deref())
    };
    let spec = spec_from_value(value).map_err(at)?;
    let base_dir = Path::new(file).parent().map(Path::to_path_buf).unwrap_or_default();
    Experiment::new_controlled(spec, base_dir, file, control).map_err(|e| match e {
        Error::Invalid { field, message } => at(FieldError::new(FieldPath::parse(&field), message)),
        Error::Unknown { kind: "disk preset", .. } => at(FieldError::new(FieldPath::parse("disk.preset"), e.to_string())),
        e @ Error::Unknown { .. } => Error::Spec { file: file.to_string(), message: e.to_string() },
        other => other,
    })
}

/// The `--set KEY=VALUE` that wrote the field at `path`, if one did.
fn override_for(path: &FieldPath, overrides: &[(String, String)]) -> Option<String> {
    overrides.iter().rev().find_map(|(key, raw)| {
        let k = FieldPath::parse(key);
        let direct = path.starts_with(&k);
        // SCHEDULER.TUNABLE lands in scheduler[i].TUNABLE.
        let tunable = matches!((&k.0[..], &path.0[..]),
            ([Seg::Key(_), Seg::Key(t)], [Seg::Key(s), Seg::Index(_), Seg::Key(u), ..]) if s == "scheduler" && t == u);
        (direct || tunable).then(|| format!("{key}={raw}"))
    })
}

/// The spec in `value`, or the field at fault. The workload and scheduler
/// tables are checked on their own first: serde reads an internally tagged
/// (`kind = ...`) or flattened table as a whole and would name only the
/// table in an error, not the field.
fn spec_from_value(mut value: Value) -> std::result::Result<Spec, FieldError> {
    let root = FieldPath::default();
    let Some(obj) = value.as_object_mut() else {
        return Err(FieldError::new(root, "a spec is a table of fields ([disk], [[scheduler]], [workload], [run])"));
    };
    if let Some(w) = obj.get("workload") {
        workload::check_value(w, &root.clone().key("workload"))?;
    }
    if let Some(Value::Array(entries)) = obj.get_mut("scheduler") {
        for (i, e) in entries.iter_mut().enumerate() {
            SchedSpec::check_value(e, &root.clone().key("scheduler").index(i))?;
        }
    }
    if let Some(Value::Object(run)) = obj.get("run") {
        if run.contains_key("seeds") {
            if let Some(other) = ["repetitions", "seed"].into_iter().find(|k| run.contains_key(*k)) {
                return Err(FieldError::new(
                    root.key("run").key(other),
                    "give either `seeds = [...]` or `seed` and `repetitions`, not both",
                ));
            }
        }
    }
    serde_path_to_error::deserialize(value).map_err(|e| FieldError::from_serde(&root, e))
}

/// Set `key` (a dotted path) to `raw` (JSON if it parses, else a string).
/// Seeds are given one way or the other: `run.seeds` replaces the spec's
/// `seed` and `repetitions`, and either of those replaces its `seeds`.
fn apply_override(root: &mut Value, key: &str, raw: &str) -> std::result::Result<(), String> {
    let value: Value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("expected KEY=VALUE with a dotted KEY, e.g. workload.processes=40 or as.antic_expire=4".into());
    }
    if let Some(Value::Object(run)) = root.get_mut("run") {
        match key {
            "run.seeds" => {
                run.remove("seed");
                run.remove("repetitions");
            }
            "run.seed" | "run.repetitions" => {
                run.remove("seeds");
            }
            _ => {}
        }
    }
    let obj = root.as_object_mut().ok_or("the spec is not a table")?;
    // SCHEDULER.TUNABLE: every scheduler entry with that name or label.
    if let Some(Value::Array(entries)) = obj.get_mut("scheduler") {
        let mut hit = false;
        for entry in entries.iter_mut() {
            let matches = ["name", "label"].iter().any(|k| entry.get(k).and_then(Value::as_str) == Some(parts[0]));
            if matches && parts.len() == 2 {
                entry[parts[1]] = value.clone();
                hit = true;
            }
        }
        if hit {
            return Ok(());
        }
    }
    // A dotted path, with `[i]` for an entry of an array of tables
    // (`workload.group[0].count`); missing tables are made.
    let path = FieldPath::parse(key);
    let Some((last, parents)) = path.0.split_last() else {
        return Err("expected KEY=VALUE, e.g. workload.processes=40".into());
    };
    let mut cur = root;
    let mut at = FieldPath::default();
    for seg in parents {
        cur = step(cur, seg, &at, true)?;
        at.0.push(seg.clone());
    }
    *step(cur, last, &at, false)? = value;
    Ok(())
}

/// The value at `seg` inside `cur` (`at` names `cur` in messages); a
/// missing key is made, as a table when `table`.
fn step<'v>(cur: &'v mut Value, seg: &Seg, at: &FieldPath, table: bool) -> std::result::Result<&'v mut Value, String> {
    let name = if at.0.is_empty() { "the spec".to_string() } else { format!("`{at}`") };
    match seg {
        Seg::Key(k) => {
            let map = cur.as_object_mut().ok_or_else(|| format!("{name} is not a table, so it has no `{k}`"))?;
            let fresh = if table { Value::Object(Default::default()) } else { Value::Null };
            Ok(map.entry(k.clone()).or_insert(fresh))
        }
        Seg::Index(i) => {
            let list = cur.as_array_mut().ok_or_else(|| format!("{name} is not an array, so it has no [{i}]"))?;
            let n = list.len();
            list.get_mut(*i).ok_or_else(|| format!("{name} has {n} entries, so no [{i}]"))
        }
    }
}

impl Experiment {
    /// Check everything that can be checked before running; `file` names
    /// the spec in the errors only a run finds.
    pub fn new(spec: Spec, base_dir: PathBuf, file: &str) -> Result<Experiment> {
        Experiment::new_controlled(spec, base_dir, file, &RunControl::default())
    }

    /// [`Experiment::new`], reading a trace under `control` (see [`parse_controlled`]).
    pub fn new_controlled(mut spec: Spec, base_dir: PathBuf, file: &str, control: &RunControl) -> Result<Experiment> {
        // A trace named relative to the spec is found beside the spec.
        if let WorkloadSpec::Trace(t) = &mut spec.workload {
            let p = Path::new(&t.file);
            if p.is_relative() && !base_dir.as_os_str().is_empty() {
                t.file = base_dir.join(p).to_string_lossy().into_owned();
            }
        }
        if spec.schedulers.is_empty() {
            return Err(Error::invalid("scheduler", "needs at least one [[scheduler]]"));
        }
        // Bounds first: they keep what follows from allocating the impossible.
        bounds::check(&spec)?;
        let mut tunables = Vec::new();
        // Results are reported under the label, or else the scheduler's own
        // name (an alias names the same scheduler: `none` is `noop`).
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (i, s) in spec.schedulers.iter().enumerate() {
            let info = sched::find(&s.name)
                .map_err(|e| Error::invalid(format!("scheduler[{i}].name"), e.to_string()))?;
            tunables.push(sched::resolve_tunables(info, &s.tunables, &format!("scheduler[{i}]"))?);
            let ident = s.label.clone().unwrap_or_else(|| info.name.to_string());
            if let Some(j) = seen.insert(ident.clone(), i) {
                let first = &spec.schedulers[j];
                let message = if first.display_name() == s.display_name() {
                    format!("'{}' appears twice (scheduler[{j}] and [{i}]); give one of them a `label`", s.display_name())
                } else if s.label.is_none() && first.label.is_none() {
                    format!(
                        "'{}' and '{}' (scheduler[{j}]) are names of one scheduler, '{ident}'; \
                         keep one, or give one a `label`",
                        s.name, first.name
                    )
                } else {
                    format!("'{ident}' names scheduler[{j}] already; choose another `label`")
                };
                return Err(Error::invalid(format!("scheduler[{i}]"), message));
            }
        }
        let r = &spec.run;
        if let Some(seeds) = &r.seeds {
            let mut distinct = std::collections::BTreeSet::new();
            if let Some(dup) = seeds.iter().find(|s| !distinct.insert(**s)) {
                return Err(Error::invalid(
                    "run.seeds",
                    format!("seed {dup} appears twice: the same seed gives the same run, not another sample"),
                ));
            }
        }
        if r.elevator_messages > crate::limits::MAX_ELEVATOR_MESSAGES {
            return Err(Error::invalid(
                "run.elevator_messages",
                format!(
                    "{} is more than {}, the most messages a run keeps",
                    r.elevator_messages,
                    crate::limits::MAX_ELEVATOR_MESSAGES
                ),
            ));
        }
        if r.max_requests == Some(0) {
            return Err(Error::invalid("run.max_requests", "must be at least 1"));
        }
        if r.seeds.as_ref().is_some_and(|s| s.is_empty()) || (r.seeds.is_none() && r.repetitions == 0) {
            return Err(Error::invalid("run.repetitions", "must be at least 1"));
        }
        if r.duration_s.is_none() && r.max_requests.is_none() {
            if let WorkloadSpec::Processes(p) = &spec.workload {
                if let Some(i) = p.group.iter().position(|g| g.passes == 0 && g.stop_ms.is_none()) {
                    return Err(Error::invalid(
                        "run",
                        format!("workload.group[{i}] never ends (passes = 0, no stop_ms): give run.duration_s or run.max_requests"),
                    ));
                }
            }
        }
        spec.queue.validate()?;
        spec.vm.validate()?;
        spec.host.check()?;
        if spec.disk.diskspecs.as_ref().is_some_and(|p| p.trim().is_empty()) {
            return Err(Error::invalid("disk.diskspecs", "is empty; name a DiskSim parameter file"));
        }
        if let Some(p) = &spec.disk.diskspecs {
            let path = base_dir.join(p);
            if std::fs::metadata(&path).is_ok_and(|m| !m.is_file()) {
                return Err(Error::invalid("disk.diskspecs", format!("{} is not a regular file", path.display())));
            }
        }
        // Build the disk and workload once to report their errors now.
        let d = disk::build(&spec.disk, &base_dir)?;
        let trace = match &spec.workload {
            WorkloadSpec::Trace(t) => Some(load_trace(t, control)?),
            _ => None,
        };
        let built = build_workload(&spec.workload, trace.as_deref(), d.capacity_sectors())?;
        // Only a trace says how many processes it makes once read (one per stream).
        crate::limits::check_processes("workload.streams", built.processes.len() as u64)?;
        Ok(Experiment { spec, base_dir, file: file.to_string(), tunables, trace })
    }

    pub fn seeds(&self) -> Vec<u64> {
        match &self.spec.run.seeds {
            Some(s) => s.clone(),
            None => (0..self.spec.run.repetitions as u64).map(|i| self.spec.run.seed + i).collect(),
        }
    }

    /// Every job, scheduler by scheduler, seed by seed.
    pub fn jobs(&self) -> Vec<Job> {
        let seeds = self.seeds();
        (0..self.spec.schedulers.len())
            .flat_map(|s| seeds.iter().map(move |&seed| Job { scheduler: s, seed }))
            .collect()
    }

    /// The spec as JSON, with every default filled in (recorded in results).
    pub fn spec_json(&self) -> Value {
        serde_json::to_value(&self.spec).expect("a spec always serializes")
    }

    /// Run one job.
    pub fn run_job(&self, job: Job, control: &RunControl) -> Result<RunResult> {
        let s = &self.spec.schedulers[job.scheduler];
        let disk = disk::build(&self.spec.disk, &self.base_dir)?;
        let built = build_workload(&self.spec.workload, self.trace.as_deref(), disk.capacity_sectors())?;
        let ctx = engine::sched_context(&*disk, self.spec.disk.queue_depth);
        let info = sched::find(&s.name)?;
        let values = &self.tunables[job.scheduler];
        let mut elevator = (info.build)(values, &ctx);
        if !self.spec.host.queue_run_us.is_empty() {
            elevator = crate::sched::kblockd::Kblockd::wrap(elevator, &self.spec.host.queue_run_us, job.seed)?;
        }
        elevator.keep_messages(self.spec.run.elevator_messages);
        let cfg = EngineConfig {
            queue: self.spec.queue.clone(),
            vm: self.spec.vm.clone(),
            queue_depth: self.spec.disk.queue_depth,
            device_order: self.spec.disk.device_order,
            max_time: self.spec.run.duration_s.map(|d| SimTime((d * NS_PER_S as f64).round() as u64)),
            max_requests: self.spec.run.max_requests,
            seed: job.seed,
            cpus: self.spec.host.cpus,
        };
        // What only the run finds (a process that stops the clock) is told
        // with the spec and the job it came from.
        let out = engine::run(disk, elevator, built, &cfg, control).map_err(|e| match e {
            Error::Interrupted => e,
            e => Error::Spec {
                file: self.file.clone(),
                message: format!("{} on seed {}: {e}", s.display_name(), job.seed),
            },
        })?;
        let header = RunHeader { scheduler: s.display_name().to_string(), tunables: values.0.clone(), seed: job.seed };
        let mut result =
            out.collector.finish(out.end, out.overhang_ns, header, &out.classes, &out.process_names, out.anticipation);
        result.phases = crate::metrics::phase_results(&out.timings);
        result.page_cache = out.cache;
        result.cpu = out.cpu;
        let (messages, dropped) = out.messages;
        result.elevator_messages =
            messages.into_iter().map(|(t, text)| crate::metrics::ElevatorMessage { t_ns: t.ns(), text }).collect();
        result.elevator_messages_dropped = dropped;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn the_points_of_a_sweep_share_one_read_of_their_trace() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/traces/");
        let text = format!(
            "[disk]\npreset = \"hp97560\"\n[[scheduler]]\nname = \"noop\"\n[workload]\nkind = \"trace\"\n\
             file = \"{dir}sample.fiu.txt\"\nformat = \"fiu\"\n[run]\nduration_s = 1\n"
        );
        let read = |overrides: &[(String, String)]| {
            let control = RunControl::default();
            let exp = parse_controlled(&text, "s.toml", Format::Toml, overrides, &control).unwrap();
            (exp, control.completed.load(Ordering::Relaxed))
        };
        let (first, bytes) = read(&[]);
        assert!(bytes > 0);
        // Another point of the same spec while the first is held: no read.
        let (second, again) = read(&[("noop.label".into(), "x".into())]);
        assert_eq!(again, 0);
        assert!(Arc::ptr_eq(first.trace.as_ref().unwrap(), second.trace.as_ref().unwrap()));
        // Another max_records is another read.
        let (_, other) = read(&[("workload.max_records".into(), "5".into())]);
        assert!(other > 0 && other < bytes);
        drop((first, second));
    }
}

