//! Disk models: what a request costs on a device.
//!
//! Brief overview: the engine hands the device one request at a time
//! ([`Disk::service`], with the absolute time so rotation and the on-drive
//! cache can follow the clock) and gets back how long it takes and why
//! ([`Service`]). Schedulers never see the disk; those that need cost
//! estimates (WPCAS's STE, the 95% heuristic) get the model's
//! [`PositionCost`] (a trait of [`crate::cost`], beneath both) when they
//! are built.

use crate::cost::PositionCost;
use crate::error::{Error, Result};
use crate::request::Request;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

pub mod cache;
pub mod controller;
pub mod diskspecs;
pub mod fixed;
pub mod hdd;
pub mod host;
pub mod layout;
pub mod media;
pub mod paramfile;
pub mod presets;
pub mod seek;
pub mod ssd;

/// Where a request's time went.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Service {
    /// From the start of service to completion.
    pub total_ns: u64,
    pub seek_ns: u64,
    pub rotation_ns: u64,
    pub transfer_ns: u64,
    pub overhead_ns: u64,
    /// Cylinders the arm moved (0 for a cache hit or a non-mechanical device).
    pub seek_cylinders: u64,
    pub cache: CacheOutcome,
}

/// How the on-drive cache served a request.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheOutcome {
    #[default]
    Miss,
    /// Entirely from the cache (reads) or absorbed by it (writes).
    Hit,
    /// Partly from the cache.
    Partial,
}

/// A device model. A disk serves one request at a time (the drive's own
/// queue, when deeper than 1, is kept by the engine); a device with
/// internal parallelism (an SSD's channels and dies) says how many it
/// takes at once with [`Disk::max_in_service`] and accounts for its own
/// contention in the times it returns.
pub trait Disk: Send {
    /// A short description for reports (model name, geometry).
    fn describe(&self) -> String;
    /// Size of the device in 512-byte sectors.
    fn capacity_sectors(&self) -> u64;
    /// Serve `rq`, starting at `now` with the device otherwise idle.
    fn service(&mut self, rq: &Request, now: SimTime) -> Service;
    /// Serve a cache flush (SCSI SYNCHRONIZE CACHE, ATA FLUSH CACHE)
    /// issued at `now`: it completes once every write the device has
    /// reported complete is on the media. Optional: a device without a
    /// write-back cache has nothing to flush (the default, 0 ns).
    fn flush(&mut self, _now: SimTime) -> Service {
        Service::default()
    }
    /// Estimated positioning time (seek plus rotational latency) if `rq`
    /// started at `now`; used by a device queue ordered shortest
    /// positioning time first. Must not change the model's state.
    fn positioning_ns(&self, rq: &Request, now: SimTime) -> u64;
    /// A stateless cost function for schedulers.
    fn position_cost(&self) -> Arc<dyn PositionCost>;
    /// Requests in service at once; `service` is then called at each one's
    /// start while others are still in service.
    fn max_in_service(&self) -> usize {
        1
    }
    /// A spinning disk (Linux's `rotational` queue flag).
    fn rotational(&self) -> bool {
        true
    }
}

/// The device's own queue: how it orders requests when `queue_depth` > 1.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceOrder {
    #[default]
    Fifo,
    /// Shortest positioning time first.
    Sptf,
}

/// The `[disk]` table of an experiment spec.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSpec {
    /// A built-in model (`iolab presets` lists them).
    #[serde(default)]
    pub preset: Option<String>,
    /// A DiskSim `.diskspecs` file, relative to the spec file.
    #[serde(default)]
    pub diskspecs: Option<String>,
    /// Requests the device holds at once (1 = the disks of the WPCAS era).
    #[serde(default = "one")]
    pub queue_depth: u32,
    /// Order of the device's own queue when `queue_depth` > 1.
    #[serde(default)]
    pub device_order: DeviceOrder,
    /// Service time of the `fixed` preset, in ms.
    #[serde(default)]
    pub fixed_ms: Option<f64>,
    /// The host's own time per request, µs, outside the disk: a measured
    /// input (`host::HostOverhead`; `iolab kernel compare` measures it).
    #[serde(default)]
    pub host_overhead_us: f64,
    /// With `diskspecs`: do zero-latency reads and writes where the file
    /// asks for them ("Immediate buffer read/write"), which DiskSim 4.0
    /// itself never does (docs/disks.md).
    #[serde(default)]
    pub zero_latency: bool,
}

fn one() -> u32 {
    1
}

impl Default for DiskSpec {
    fn default() -> Self {
        DiskSpec {
            preset: Some("hp97560".into()),
            diskspecs: None,
            queue_depth: 1,
            device_order: DeviceOrder::Fifo,
            fixed_ms: None,
            host_overhead_us: 0.0,
            zero_latency: false,
        }
    }
}

/// Built-in disk presets: name and one line of description.
pub static PRESETS: &[(&str, &str)] = &[
    (presets::HP97560, "HP 97560 (1994): the WPCAS paper's disk, 1.3 GB, 4002 rpm, seek by its equation (2)"),
    (presets::MODERN7200, "7200 rpm 2 TB SATA drive of the 4 KiB era (BarraCuda ST2000DM008 class)"),
    (ssd::NAME, "flash SSD with MQSim's default parameters: 8 channels x 4 chips x 2 dies x 2 planes; set queue_depth (e.g. 32)"),
    (fixed::NAME, "constant service time (`fixed_ms`, default 5 ms); for tests"),
];

/// What disk a spec builds, as lines of text: the preset and its summary,
/// or which disk, model, bus and controller a DiskSim file gave, from
/// where, with any notes and warnings.
pub fn report(spec: &DiskSpec, base_dir: &Path) -> Result<Vec<String>> {
    let depth = format!("queue depth {}, device order {:?}", spec.queue_depth, spec.device_order);
    match (&spec.preset, &spec.diskspecs) {
        (Some(_), None) => {
            let d = build(spec, base_dir)?;
            Ok(vec![format!("disk        preset {} ({depth}): {}", spec.preset.as_deref().unwrap_or(""), d.describe())])
        }
        (None, Some(path)) if !path.trim().is_empty() => {
            let opts = diskspecs::Options { zero_latency: spec.zero_latency };
            let file = base_dir.join(path);
            let (params, r) = diskspecs::load_with_report(&file, &opts)?;
            let d = hdd::Hdd::new(params)?;
            let mut v = vec![format!("disk file   {} ({depth}): {}", file.display(), d.describe())];
            v.extend(r.lines());
            Ok(v)
        }
        _ => build(spec, base_dir).map(|_| Vec::new()),
    }
}

/// Build the disk a spec describes. `base_dir` resolves relative paths.
pub fn build(spec: &DiskSpec, base_dir: &Path) -> Result<Box<dyn Disk>> {
    host::HostOverhead::wrap(build_model(spec, base_dir)?, spec.host_overhead_us)
}

/// The disk model alone, without the host's time.
fn build_model(spec: &DiskSpec, base_dir: &Path) -> Result<Box<dyn Disk>> {
    if spec.queue_depth == 0 {
        return Err(Error::invalid("disk.queue_depth", "must be at least 1"));
    }
    match (&spec.preset, &spec.diskspecs) {
        (Some(_), Some(_)) => {
            Err(Error::invalid("disk", "give either `preset` or `diskspecs`, not both"))
        }
        (None, None) => Err(Error::invalid("disk", "give `preset` or `diskspecs`")),
        (None, Some(path)) if path.trim().is_empty() => Err(Error::invalid(
            "disk.diskspecs",
            "is empty: give the path of a DiskSim .parv or .diskspecs file (FILE#NAME picks a disk)",
        )),
        (None, Some(path)) => {
            let opts = diskspecs::Options { zero_latency: spec.zero_latency };
            let (params, _) = diskspecs::load_with_report(&base_dir.join(path), &opts)?;
            Ok(Box::new(hdd::Hdd::new(params)?))
        }
        (Some(name), None) => match name.as_str() {
            fixed::NAME => Ok(Box::new(fixed::FixedDisk::new(spec.fixed_ms.unwrap_or(5.0))?)),
            presets::HP97560 => Ok(Box::new(hdd::Hdd::new(presets::hp97560_params())?)),
            presets::MODERN7200 => Ok(Box::new(hdd::Hdd::new(presets::modern7200_params())?)),
            ssd::NAME => Ok(Box::new(ssd::Ssd::new(ssd::mqsim_params())?)),
            other => {
                let names: Vec<&str> = PRESETS.iter().map(|p| p.0).collect();
                Err(Error::unknown("disk preset", other, &names))
            }
        },
    }
}
