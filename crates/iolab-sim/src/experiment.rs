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
use crate::sched::{self, SchedContext, TunableValues};
use crate::time::{SimTime, NS_PER_S};
use crate::workload::{self, WorkloadSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec { duration_s: None, max_requests: None, seed: 1, repetitions: 1, seeds: None }
    }
}

/// The input format of a spec.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

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
    tunables: Vec<TunableValues>,
}

/// Parse and check a spec. `file` names it in errors; `overrides` are
/// `key=value` settings applied before checking (`workload.processes=40`,
/// or `SCHEDULER.TUNABLE=value` for every scheduler of that name or label).
pub fn parse(text: &str, file: &str, format: Format, overrides: &[(String, String)]) -> Result<Experiment> {
    let spec_err = |message: String| Error::Spec { file: file.to_string(), message };
    let spec: Spec = if overrides.is_empty() && format == Format::Toml {
        // Straight from the text, so errors carry line and column.
        toml::from_str(text).map_err(|e| spec_err(e.to_string()))?
    } else {
        let mut value: Value = match format {
            Format::Toml => toml::from_str(text).map_err(|e| spec_err(e.to_string()))?,
            Format::Json => serde_json::from_str(text).map_err(|e| spec_err(e.to_string()))?,
        };
        for (key, raw) in overrides {
            apply_override(&mut value, key, raw).map_err(|m| spec_err(format!("--set {key}={raw}: {m}")))?;
        }
        serde_path_to_error::deserialize(value)
            .map_err(|e| spec_err(format!("field `{}`: {}", e.path(), e.inner())))?
    };
    let base_dir = Path::new(file).parent().map(Path::to_path_buf).unwrap_or_default();
    Experiment::new(spec, base_dir).map_err(|e| match e {
        Error::Invalid { field, message } => spec_err(format!("field `{field}`: {message}")),
        other => other,
    })
}

/// Set `key` (a dotted path) to `raw` (JSON if it parses, else a string).
fn apply_override(root: &mut Value, key: &str, raw: &str) -> std::result::Result<(), String> {
    let value: Value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("expected KEY=VALUE with a dotted KEY, e.g. workload.processes=40 or as.antic_expire=4".into());
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
    let mut cur = root;
    for part in &parts[..parts.len() - 1] {
        let map = cur.as_object_mut().ok_or_else(|| format!("`{part}` is inside a value that is not a table"))?;
        cur = map.entry(part.to_string()).or_insert_with(|| Value::Object(Default::default()));
    }
    let map = cur.as_object_mut().ok_or("the parent of this key is not a table")?;
    map.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

impl Experiment {
    /// Check everything that can be checked before running.
    pub fn new(mut spec: Spec, base_dir: PathBuf) -> Result<Experiment> {
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
        let mut tunables = Vec::new();
        let mut labels = std::collections::BTreeSet::new();
        for (i, s) in spec.schedulers.iter().enumerate() {
            let info = sched::find(&s.name)
                .map_err(|e| Error::invalid(format!("scheduler[{i}].name"), e.to_string()))?;
            tunables.push(sched::resolve_tunables(info, &s.tunables, &format!("scheduler[{i}]"))?);
            if !labels.insert(s.display_name().to_string()) {
                return Err(Error::invalid(
                    format!("scheduler[{i}]"),
                    format!("'{}' appears twice; give one of them a `label`", s.display_name()),
                ));
            }
        }
        let r = &spec.run;
        if let Some(d) = r.duration_s {
            if !(d.is_finite() && d > 0.0) {
                return Err(Error::invalid("run.duration_s", "must be a positive number of seconds"));
            }
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
        // Build the disk and workload once to report their errors now.
        let d = disk::build(&spec.disk, &base_dir)?;
        workload::build(&spec.workload, d.capacity_sectors())?;
        Ok(Experiment { spec, base_dir, tunables })
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
        let built = workload::build(&self.spec.workload, disk.capacity_sectors())?;
        let ctx = SchedContext { position_cost: disk.position_cost() };
        let info = sched::find(&s.name)?;
        let values = &self.tunables[job.scheduler];
        let elevator = (info.build)(values, &ctx);
        let cfg = EngineConfig {
            queue: self.spec.queue.clone(),
            vm: self.spec.vm.clone(),
            queue_depth: self.spec.disk.queue_depth,
            device_order: self.spec.disk.device_order,
            max_time: self.spec.run.duration_s.map(|d| SimTime((d * NS_PER_S as f64).round() as u64)),
            max_requests: self.spec.run.max_requests,
            seed: job.seed,
        };
        let out = engine::run(disk, elevator, built, &cfg, control)?;
        let header = RunHeader { scheduler: s.display_name().to_string(), tunables: values.0.clone(), seed: job.seed };
        let mut result =
            out.collector.finish(out.end, out.overhang_ns, header, &out.classes, &out.process_names, out.anticipation);
        result.phases = crate::metrics::phase_results(&out.timings);
        result.page_cache = out.cache;
        Ok(result)
    }
}
