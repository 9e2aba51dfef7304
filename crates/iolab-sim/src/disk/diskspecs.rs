//! Builds a drive from DiskSim 4.0 parameter files: a `.parv` run
//! configuration (which sources the `.diskspecs`, instantiates the disk
//! and says which bus it sits on) or a `.diskspecs` alone; the
//! `disksim_disk` block with its controller and cache parameters; its
//! `dm_disk` model with the g1 layout and g1 mechanics; `.seek` tables.
//!
//! Every parameter of those blocks that DiskSim 4.0's manual defines is
//! read and used, checked (finite, in range) with an error naming its
//! file and line. Parameters that cannot change the timing of a drive
//! serving one request at a time (the drive's own queue and scheduler,
//! statistics switches) are listed in a note; a value iolab does not model
//! is refused with an error, or, when its effect is small, named in a
//! warning — never dropped silently. [`load`] also says which disk, model,
//! bus and controller it took from where ([`BuildReport`]).

use super::cache::{CacheParams, FastWrite, OverRequested, ReadAhead};
use super::controller::{Controller, ExtraDisconnect};
use super::hdd::HddParams;
use super::layout::{Layout, Mapping, Sparing, Zone};
use super::paramfile::{read_file, Block, ParamFile, Value, MAX_PARAM_FILE};
use crate::input::read_text_file;
use super::seek::{Mechanics, SeekCurve};
use crate::error::{Error, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What was built from which file, to be shown to the user.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BuildReport {
    /// The file given (with `#NAME` if any).
    pub file: String,
    /// The `disksim_disk` block: name, where it is, and why this one.
    pub disk: String,
    /// The `dm_disk` model: name, where, geometry and mechanics.
    pub model: String,
    /// The buffer.
    pub cache: String,
    /// The host bus the disk sits on, and its block transfer times.
    pub bus: String,
    /// The controller between the driver and that bus.
    pub controller: String,
    /// Remarks: parameters not used, values DiskSim treats specially.
    pub notes: Vec<String>,
    /// Parameters set to values iolab does not model.
    pub warnings: Vec<String>,
}

impl BuildReport {
    /// The report as lines of text.
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![
            format!("disk        {}", self.disk),
            format!("model       {}", self.model),
            format!("cache       {}", self.cache),
            format!("bus         {}", self.bus),
            format!("controller  {}", self.controller),
        ];
        v.extend(self.warnings.iter().map(|w| format!("warning     {w}")));
        v.extend(self.notes.iter().map(|n| format!("note        {n}")));
        v
    }
}

/// How to read a DiskSim file where DiskSim 4.0's code departs from its
/// manual in a way its validated drives depend on.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Honour "Immediate buffer read/write" (zero-latency access) as the
    /// manual describes it. DiskSim 4.0 never performs it (see
    /// `docs/disks.md`), and the drives validated with it were fitted
    /// that way, so by default iolab does not either.
    pub zero_latency: bool,
}

/// Loads the drive of `path` (`FILE` or `FILE#NAME`).
pub fn load(path: &Path) -> Result<HddParams> {
    Ok(load_with_report(path, &Options::default())?.0)
}

/// Splits `FILE#NAME`.
fn split_name(path: &Path) -> (PathBuf, Option<String>) {
    let text = path.to_string_lossy();
    match text.rsplit_once('#') {
        Some((f, n)) if !n.contains('/') && !n.is_empty() => (PathBuf::from(f), Some(n.to_string())),
        _ => (path.to_path_buf(), None),
    }
}

fn at(b: &Block) -> String {
    format!("{}:{}", b.file, b.line)
}

/// Loads the drive of `path` and says what it built.
pub fn load_with_report(path: &Path, opts: &Options) -> Result<(HddParams, BuildReport)> {
    let (file, want) = split_name(path);
    if file.as_os_str().is_empty() {
        return Err(Error::invalid("diskspecs", "is empty: give a DiskSim .parv or .diskspecs file"));
    }
    let pf = read_file(&file)?;
    let fname = file.display().to_string();
    let mut report = BuildReport { file: path.display().to_string(), ..BuildReport::default() };
    let (disk, instance, why) = pick_disk(&pf, &fname, want.as_deref())?;
    report.disk = format!("{} (disksim_disk at {}), {why}", disk.name, at(disk));
    let bus = find_bus(&pf, instance.as_deref(), &mut report)?;
    let params = from_disk_block(disk, bus, opts, &mut report)?;
    Ok((params, report))
}

/// The disk to build: named by `#NAME` (a block or an instance name), the
/// one the file instantiates, or the only one there is.
fn pick_disk<'a>(pf: &'a ParamFile, fname: &str, want: Option<&str>) -> Result<(&'a Block, Option<String>, String)> {
    let disks: Vec<&Block> = pf.blocks.iter().filter(|b| b.kind == "disksim_disk").collect();
    let spec = |m: String| Error::Spec { file: fname.to_string(), message: m };
    let names = || disks.iter().map(|b| b.name.as_str()).collect::<Vec<_>>().join(", ");
    let find = |n: &str| disks.iter().copied().find(|b| b.name == n);
    // Instances of disk blocks: (instance name, block name).
    let inst: Vec<(String, String)> = pf
        .instances
        .iter()
        .filter(|i| find(&i.of).is_some())
        .flat_map(|i| i.names.iter().map(move |n| (n.clone(), i.of.clone())))
        .collect();
    if let Some(n) = want {
        if let Some(b) = find(n) {
            let inst_name = inst.iter().find(|(_, of)| of == n).map(|(i, _)| i.clone());
            return Ok((b, inst_name, format!("named by #{n}")));
        }
        if let Some((i, of)) = inst.iter().find(|(i, _)| i == n) {
            return Ok((find(of).expect("instance of a disk block"), Some(i.clone()), format!("instance {i}, named by #{n}")));
        }
        return Err(spec(format!("no disksim_disk or disk instance named '{n}' (disks: {})", names())));
    }
    match (inst.as_slice(), disks.as_slice()) {
        ([(i, of)], _) => Ok((find(of).expect("instance of a disk block"), Some(i.clone()), format!("the disk this file instantiates as {i}"))),
        ([], []) => Err(spec("no disksim_disk block".into())),
        ([], [one]) => Ok((one, None, "the only disk in the file".into())),
        ([], _) => Err(spec(format!("several disks ({}); name one as FILE#NAME", names()))),
        (many, _) => {
            let list: Vec<String> = many.iter().map(|(i, of)| format!("{i} = {of}")).collect();
            Err(spec(format!("instantiates several disks ({}); name one as FILE#NAME", list.join(", "))))
        }
    }
}

/// The host bus of the disk instance: its block transfer times (read,
/// write), or none when the file has no topology placing the disk.
fn find_bus(pf: &ParamFile, instance: Option<&str>, report: &mut BuildReport) -> Result<Option<(f64, f64)>> {
    let block_of = |name: &str| {
        let of = pf.instances.iter().find(|i| i.names.iter().any(|n| n == name)).map(|i| i.of.as_str());
        of.and_then(|o| pf.blocks.iter().find(|b| b.name == o))
    };
    let path = instance.and_then(|i| pf.topologies.iter().find_map(|t| t.path_to(i)));
    let Some(path) = path else {
        report.bus = "none: the file places the disk on no bus, so a block crosses the host bus in the disk's \
                      'Bulk sector transfer time' alone (give the .parv to use its bus)"
            .into();
        report.controller = "none (no topology)".into();
        return Ok(None);
    };
    let names: Vec<&str> = path.iter().map(|n| n.name.as_str()).collect();
    let mut out = None;
    // The bus right above the disk carries its data (DiskSim's
    // disk_get_blktranstime); the controllers on the way add their delays.
    if path.len() >= 2 {
        let bus_node = path[path.len() - 2];
        if bus_node.kind == "disksim_bus" {
            if let Some(b) = block_of(&bus_node.name) {
                let r = b.nonneg_or("Read block transfer time", 0.0)?;
                let w = b.nonneg_or("Write block transfer time", 0.0)?;
                let arb = b.nonneg_or("Arbitration time", 0.0)?;
                if arb != 0.0 {
                    report.warnings.push(format!(
                        "{} 'Arbitration time' = {arb} ms ({}) is not modelled: the bus is never contended with one disk",
                        b.name,
                        at(b)
                    ));
                }
                report.bus = format!(
                    "{} (disksim_bus at {}, the bus {} sits on, path {}): {r} ms per block read, {w} ms written",
                    b.name,
                    at(b),
                    names[names.len() - 1],
                    names.join(" > ")
                );
                out = Some((r, w));
            }
        }
    }
    if out.is_none() {
        report.bus = format!("none found above {} in the topology ({})", names[names.len() - 1], names.join(" > "));
    }
    let mut ctlrs = Vec::new();
    for node in &path {
        let Some(b) = block_of(&node.name) else { continue };
        match node.kind.as_str() {
            "disksim_ctlr" => {
                let ty = b.int_or("type", 1, 3, 1)?;
                let scale = b.nonneg_or("Scale for delays", 0.0)?;
                if ty != 1 {
                    report.warnings.push(format!(
                        "{} (disksim_ctlr at {}) is of type {ty} ({}); iolab models the passthrough controller \
                         (type 1) of DiskSim's validation runs, adding no delay",
                        b.name,
                        at(b),
                        if ty == 2 { "53C700-based" } else { "smart, with its own cache" }
                    ));
                } else if scale != 0.0 {
                    report.warnings.push(format!(
                        "{} 'Scale for delays' = {scale} ({}): DiskSim's passthrough controller would add {scale} ms \
                         to every message it passes; iolab adds none",
                        b.name,
                        at(b)
                    ));
                }
                ctlrs.push(format!("{} (type {ty}, passthrough, no delay)", b.name));
            }
            "disksim_iodriver" => {
                let c = b.num_or("Constant access time", 0.0)?;
                if c != 0.0 {
                    report.warnings.push(format!(
                        "{} 'Constant access time' = {c} ({}) is not modelled: iolab times the disk's mechanics",
                        b.name,
                        at(b)
                    ));
                }
            }
            _ => {}
        }
    }
    report.controller = if ctlrs.is_empty() { "none on the path".into() } else { ctlrs.join(", ") };
    Ok(out)
}

/// Parameters of `disksim_disk` that the timing model reads.
const DISK_KEYS: &[&str] = &[
    "Model",
    "Scheduler",
    "Max queue length",
    "Bulk sector transfer time",
    "Segment size (in blks)",
    "Number of buffer segments",
    "Print stats",
    "Per-request overhead time",
    "Time scale for overheads",
    "Hold bus entire read xfer",
    "Hold bus entire write xfer",
    "Allow almost read hits",
    "Allow sneaky full read hits",
    "Allow sneaky partial read hits",
    "Allow sneaky intermediate read hits",
    "Allow read hits on write data",
    "Allow write prebuffering",
    "Preseeking level",
    "Never disconnect",
    "Avg sectors per cylinder",
    "Maximum number of write segments",
    "Use separate write segment",
    "Low (write) water mark",
    "High (read) water mark",
    "Set watermark by reqsize",
    "Calc sector by sector",
    "Enable caching in buffer",
    "Buffer continuous read",
    "Minimum read-ahead (blks)",
    "Maximum read-ahead (blks)",
    "Read-ahead over requested",
    "Read-ahead on idle hit",
    "Read any free blocks",
    "Fast write level",
    "Immediate buffer read",
    "Immediate buffer write",
    "Combine seq writes",
    "Stop prefetch in sector",
    "Disconnect write if seek",
    "Write hit stop prefetch",
    "Read directly to buffer",
    "Immed transfer partial hit",
    "Read hit over. after read",
    "Read hit over. after write",
    "Read miss over. after read",
    "Read miss over. after write",
    "Write hit over. after read",
    "Write hit over. after write",
    "Write miss over. after read",
    "Write miss over. after write",
    "Read completion overhead",
    "Write completion overhead",
    "Data preparation overhead",
    "First reselect overhead",
    "Other reselect overhead",
    "Read disconnect afterread",
    "Read disconnect afterwrite",
    "Write disconnect overhead",
    "Extra write disconnect",
    "Extradisc command overhead",
    "Extradisc disconnect overhead",
    "Extradisc inter-disconnect delay",
    "Extradisc 2nd disconnect overhead",
    "Extradisc seek delta",
    "Minimum seek delay",
];

fn bad<T>(b: &Block, line: usize, m: impl Into<String>) -> Result<T> {
    Err(Error::Line { file: b.file.clone(), line, message: m.into() })
}

fn check_keys(b: &Block, known: &[&str]) -> Result<()> {
    if let Some(p) = b.unknown_key(known) {
        return bad(b, p.line, format!("'{}' is not a parameter of {} in DiskSim 4.0", p.key, b.kind));
    }
    Ok(())
}

fn from_disk_block(d: &Block, bus: Option<(f64, f64)>, opts: &Options, report: &mut BuildReport) -> Result<HddParams> {
    check_keys(d, DISK_KEYS)?;
    let model = d.block("Model")?;
    if model.kind != "dm_disk" {
        return bad(model, model.line, format!("the model must be a dm_disk block, not {}", model.kind));
    }
    let mut notes = Vec::new();
    let layout = layout(model, &mut notes)?;
    let mech_b = model.block("Mechanical Model")?;
    let (mechanics, rpm, seek_desc) = mechanics(mech_b, layout.cylinders, report)?;
    let scale = d.nonneg_or("Time scale for overheads", 1.0)?;
    let ov = |k: &str| -> Result<f64> { Ok(d.nonneg(k)? * scale) };
    let pair = |a: &str, b: &str| -> Result<[f64; 2]> { Ok([ov(a)?, ov(b)?]) };
    let extra = if d.flag_or("Extra write disconnect", false)? {
        Some(ExtraDisconnect {
            command_ms: ov("Extradisc command overhead")?,
            disconnect_ms: ov("Extradisc disconnect overhead")?,
            inter_disconnect_ms: ov("Extradisc inter-disconnect delay")?,
            second_disconnect_ms: ov("Extradisc 2nd disconnect overhead")?,
            seek_delta_ms: ov("Extradisc seek delta")?,
        })
    } else {
        None
    };
    // A block crosses the bus in the slower of the bus's time and the
    // disk's own (DiskSim's disk_get_blktranstime).
    let bulk = d.nonneg_or("Bulk sector transfer time", 0.0)?;
    let (bus_r, bus_w) = bus.unwrap_or((0.0, 0.0));
    let watermark = |k: &str| -> Result<f64> {
        let w = d.nonneg_or(k, 0.0)?;
        if w > 1.0 {
            return bad(d, d.line_of(k), format!("'{k}' is a fraction in [0, 1], not {w}"));
        }
        Ok(w)
    };
    let controller = Controller {
        read_hit_ms: pair("Read hit over. after read", "Read hit over. after write")?,
        read_miss_ms: pair("Read miss over. after read", "Read miss over. after write")?,
        write_hit_ms: pair("Write hit over. after read", "Write hit over. after write")?,
        write_miss_ms: pair("Write miss over. after read", "Write miss over. after write")?,
        read_complete_ms: ov("Read completion overhead")?,
        write_complete_ms: ov("Write completion overhead")?,
        data_prep_ms: ov("Data preparation overhead")?,
        reselect_first_ms: ov("First reselect overhead")?,
        reselect_other_ms: ov("Other reselect overhead")?,
        read_disconnect_ms: pair("Read disconnect afterread", "Read disconnect afterwrite")?,
        write_disconnect_ms: ov("Write disconnect overhead")?,
        extra_disconnect: extra,
        per_request_ms: d.nonneg_or("Per-request overhead time", 0.0)? * scale,
        bus_read_block_ms: bus_r.max(bulk),
        bus_write_block_ms: bus_w.max(bulk),
        read_watermark: watermark("High (read) water mark")?,
        write_watermark: watermark("Low (write) water mark")?,
        watermark_by_request: d.flag_or("Set watermark by reqsize", true)?,
        min_write_seek_ms: d.nonneg_or("Minimum seek delay", 0.0)?,
        never_disconnect: d.flag_or("Never disconnect", false)?,
        hold_bus_read: d.flag_or("Hold bus entire read xfer", false)?,
        hold_bus_write: d.flag_or("Hold bus entire write xfer", false)?,
        sneaky_full_read_hits: d.flag_or("Allow sneaky full read hits", false)?,
        sneaky_partial_read_hits: d.flag_or("Allow sneaky partial read hits", false)?,
        write_prebuffering: d.flag_or("Allow write prebuffering", false)?,
        wait_for_prefetch_step: d.flag_or("Disconnect write if seek", false)?,
    };
    let segments = d.int("Number of buffer segments", 1, 1 << 16)? as u32;
    let segment_sectors = d.int("Segment size (in blks)", 1, u32::MAX as i64)? as u32;
    if segment_sectors as u64 > layout.mapped() {
        return bad(d, d.line_of("Segment size (in blks)"), "the segment is bigger than the disk");
    }
    let enabled = d.flag_or("Enable caching in buffer", true)?;
    let read_ahead = match d.int_or("Buffer continuous read", 0, 4, 0)? {
        0 => ReadAhead::Off,
        1 => ReadAhead::TrackEnd,
        2 => ReadAhead::CylinderEnd,
        3 => ReadAhead::SegmentFull,
        _ => ReadAhead::DecTrackAhead,
    };
    let fast_write = match d.int_or("Fast write level", 0, 2, 0)? {
        0 => FastWrite::Off,
        1 => FastWrite::Limited,
        _ => FastWrite::Full,
    };
    if !enabled {
        for (k, on) in [
            ("Buffer continuous read", read_ahead != ReadAhead::Off),
            ("Fast write level", fast_write != FastWrite::Off),
            ("Read any free blocks", d.flag_or("Read any free blocks", false)?),
        ] {
            if on {
                return bad(d, d.line_of(k), format!("'{k}' needs 'Enable caching in buffer' (DiskSim refuses this too)"));
            }
        }
    }
    let min_ra = d.int_or("Minimum read-ahead (blks)", 0, u32::MAX as i64, 0)? as u32;
    let max_ra = d.int_or("Maximum read-ahead (blks)", 0, u32::MAX as i64, 0)? as u32;
    // DiskSim's postpass: no read-ahead without the policy, and the
    // maximum is at least the minimum.
    let (min_ra, max_ra) = if read_ahead == ReadAhead::Off { (0, 0) } else { (min_ra, max_ra.max(min_ra)) };
    let write_segments = d.int_or("Maximum number of write segments", 1, segments as i64, 1)? as u32;
    let dedicated = d.flag_or("Use separate write segment", false)?;
    if dedicated && segments < 2 {
        return bad(d, d.line_of("Use separate write segment"), "a separate write segment needs at least 2 segments");
    }
    let cache = CacheParams {
        enabled,
        segments,
        segment_sectors,
        write_segments,
        dedicated_write_segment: dedicated,
        read_ahead,
        min_read_ahead: min_ra,
        max_read_ahead: max_ra,
        over_requested: match d.int_or("Read-ahead over requested", -1, 1, 1)? {
            -1 => OverRequested::Drop,
            0 => OverRequested::Keep,
            _ => OverRequested::Replace,
        },
        read_ahead_on_idle_hit: d.flag_or("Read-ahead on idle hit", false)?,
        read_any_free: d.flag_or("Read any free blocks", false)?,
        read_hits_on_write_data: d.flag_or("Allow read hits on write data", false)?,
        fast_write,
        combine_writes: d.flag_or("Combine seq writes", false)?,
        almost_read_hits: d.flag_or("Allow almost read hits", false)?,
        stop_prefetch_in_sector: d.flag_or("Stop prefetch in sector", false)?,
        write_hit_stops_prefetch: d.flag_or("Write hit stop prefetch", false)?,
        immediate_partial_transfer: d.flag_or("Immed transfer partial hit", false)?,
        immediate_read: opts.zero_latency && d.flag_or("Immediate buffer read", false)?,
        immediate_write: opts.zero_latency && d.flag_or("Immediate buffer write", false)?,
    };
    for k in ["Immediate buffer read", "Immediate buffer write"] {
        if d.flag_or(k, false)? && !opts.zero_latency {
            report.warnings.push(format!(
                "'{k}' = 1 ({}:{}): zero-latency access is not done, as DiskSim 4.0 never does it (its drive \
                 models were fitted that way); ask for it with zero_latency = true ([disk]) or --zero-latency",
                d.file,
                d.line_of(k)
            ));
        }
    }
    if cache.read_any_free {
        report.notes.push(
            "'Read any free blocks' = 1: sectors passing under the head before a read's first sector are buffered, \
             as the manual describes (DiskSim 4.0 does not do it); no service time changes"
                .into(),
        );
    }
    // Values whose effect needs requests queued inside the drive, which
    // iolab never has (the engine keeps the queue and the drive serves one
    // request at a time).
    for k in ["Allow sneaky intermediate read hits", "Preseeking level"] {
        if d.num_or(k, 0.0)? != 0.0 {
            report.notes.push(format!(
                "'{k}' = {} ({}:{}) only matters with requests queued inside the drive; iolab's drive serves one at a time",
                d.num(k)?,
                d.file,
                d.line_of(k)
            ));
        }
    }
    if !d.flag_or("Read directly to buffer", true)? {
        report.warnings.push(format!(
            "'Read directly to buffer' = 0 ({}:{}) is not modelled: a sector always needs room in the buffer before it is read",
            d.file,
            d.line_of("Read directly to buffer")
        ));
    }
    if !d.flag_or("Calc sector by sector", true)? {
        report.notes.push("'Calc sector by sector' = 0 changes nothing (DiskSim 4.0 ignores it too)".into());
    }
    report.notes.push(
        "not used for timing: 'Scheduler' and 'Max queue length' (the engine's elevator and disk.queue_depth decide), \
         'Avg sectors per cylinder' (a hint for DiskSim's own schedulers), 'Print stats'"
            .into(),
    );
    report.cache = format!(
        "{segments} segment(s) of {segment_sectors} sectors{}{}, read-ahead {:?} (min {min_ra}, max {max_ra}), \
         write-back {fast_write:?}, bus {} / {} ms per block read / written{}",
        if dedicated { ", one for writes" } else { "" },
        if enabled { "" } else { ", caching off" },
        read_ahead,
        controller.bus_read_block_ms,
        controller.bus_write_block_ms,
        if bulk > 0.0 { format!(" (disk's own bulk time {bulk})") } else { String::new() }
    );
    report.model = format!(
        "{} (dm_disk at {}): {} cylinders x {} surfaces, {} zone(s), {} sectors, mapping {:?}, {}; {seek_desc}, {rpm} rpm",
        model.name,
        at(model),
        layout.cylinders,
        layout.surfaces,
        layout.zones.len(),
        layout.capacity(),
        layout.mapping,
        layout.sparing.describe()
    );
    report.notes.extend(notes);
    Ok(HddParams { name: d.name.clone(), rpm, layout, mechanics, controller, cache })
}

const MODEL_KEYS: &[&str] = &["Block count", "Number of data surfaces", "Number of cylinders", "Mechanical Model", "Layout Model"];
const LAYOUT_KEYS: &[&str] = &["LBN-to-PBN mapping scheme", "Sparing scheme used", "Rangesize for sparing", "Skew units", "Zones"];
const ZONE_KEYS: &[&str] = &[
    "First cylinder number",
    "Last cylinder number",
    "Blocks per track",
    "Offset of first block",
    "Skew units",
    "Empty space at zone front",
    "Skew for track switch",
    "Skew for cylinder switch",
    "Number of spares",
    "slips",
    "defects",
];

/// "Skew units": true for revolutions.
fn skew_units(b: &Block, default: bool) -> Result<bool> {
    match b.get("Skew units").map(|p| (&p.value, p.line)) {
        None => Ok(default),
        Some((Value::Word(w), _)) if w == "revolutions" => Ok(true),
        Some((Value::Word(w), _)) if w == "sectors" => Ok(false),
        Some((_, line)) => bad(b, line, "'Skew units' must be 'sectors' or 'revolutions'"),
    }
}

fn layout(model: &Block, notes: &mut Vec<String>) -> Result<Layout> {
    check_keys(model, MODEL_KEYS)?;
    let surfaces = model.int("Number of data surfaces", 1, 1 << 16)? as u32;
    let cylinders = model.int("Number of cylinders", 1, 1 << 30)? as u32;
    let blocks = model.int("Block count", 1, i64::MAX)? as u64;
    let l = model.block("Layout Model")?;
    if l.kind != "dm_layout_g1" {
        return bad(l, l.line, format!("layout '{}' is not supported (only dm_layout_g1)", l.kind));
    }
    check_keys(l, LAYOUT_KEYS)?;
    let mapping = match l.int("LBN-to-PBN mapping scheme", 0, 2)? {
        0 => Mapping::Conventional,
        1 => Mapping::SerpentineZone,
        _ => Mapping::SerpentineDisk,
    };
    let scheme = l.int("Sparing scheme used", 0, 10)?;
    let range = l.int_or("Rangesize for sparing", 1, 1 << 30, 1)? as u32;
    let sparing = Sparing::from_scheme(scheme, range).expect("0..=10 checked");
    let revs_default = skew_units(l, false)?;
    let (items, line) = l.list("Zones")?;
    let mut zones = Vec::new();
    let mut truncated = false;
    for it in items {
        let Value::Block(z) = it else { return bad(l, line, "'Zones' must list dm_layout_g1_zone blocks") };
        check_keys(z, ZONE_KEYS)?;
        let spt = z.int("Blocks per track", 1, 1 << 24)? as u32;
        let revs = skew_units(z, revs_default)?;
        // DiskSim keeps angles in whole sectors when given in sectors.
        let mut angle = |k: &str, need: bool| -> Result<f64> {
            let v = if need { z.num(k)? } else { z.num_or(k, 0.0)? };
            if v < 0.0 {
                return bad(z, z.line_of(k), format!("'{k}' must be >= 0, not {v} (a skew of -k sectors is one of spt-k)"));
            }
            Ok(if revs {
                v * spt as f64
            } else {
                if v.fract() != 0.0 {
                    truncated = true;
                }
                v.trunc()
            })
        };
        let offset = angle("Offset of first block", true)?;
        let track_skew = angle("Skew for track switch", false)?;
        let cyl_skew = angle("Skew for cylinder switch", false)?;
        let whole = |k: &str| -> Result<Vec<u64>> {
            match z.get(k) {
                None => Ok(Vec::new()),
                Some(p) => {
                    let v = z.nums(k)?;
                    if v.iter().any(|x| *x < 0.0 || x.fract() != 0.0) {
                        return bad(z, p.line, format!("'{k}' must list whole numbers >= 0"));
                    }
                    Ok(v.into_iter().map(|x| x as u64).collect())
                }
            }
        };
        let defects = whole("defects")?;
        if defects.len() % 2 != 0 {
            return bad(z, z.line_of("defects"), "'defects' lists pairs: defective location, then where it is remapped");
        }
        zones.push(Zone {
            first_cyl: z.int("First cylinder number", 0, 1 << 30)? as u32,
            last_cyl: z.int("Last cylinder number", 0, 1 << 30)? as u32,
            sectors_per_track: spt,
            offset,
            deadspace: z.int("Empty space at zone front", 0, 1 << 40)? as u64,
            track_skew,
            cyl_skew,
            spares: z.int_or("Number of spares", 0, 1 << 40, 0)? as u64,
            slips: whole("slips")?,
            defects: defects.chunks(2).map(|p| (p[0], p[1])).collect(),
            first_lbn: 0,
            lbns: 0,
        });
    }
    if truncated {
        notes.push(format!("{}: fractional skews or offsets in sectors are truncated to whole sectors, as DiskSim does", l.file));
    }
    let what = format!("{}:{}: {}", model.file, model.line, model.name);
    Layout::new(&what, surfaces, cylinders, mapping, sparing, zones, Some(blocks), notes)
}

const MECH_KEYS: &[&str] = &[
    "Access time type",
    "Constant access time",
    "Seek type",
    "Average seek time",
    "Constant seek time",
    "Single cylinder seek time",
    "Full strobe seek time",
    "Full seek curve",
    "Add. write settling delay",
    "Head switch time",
    "Rotation speed (in rpms)",
    "Percent error in rpms",
    "First ten seek times",
    "HPL seek equation values",
];

fn mechanics(m: &Block, cylinders: u32, report: &mut BuildReport) -> Result<(Mechanics, f64, String)> {
    if m.kind != "dm_mech_g1" {
        return bad(m, m.line, format!("mechanical model '{}' is not supported (only dm_mech_g1)", m.kind));
    }
    check_keys(m, MECH_KEYS)?;
    let (acc, line) = m.word("Access time type")?;
    if acc != "trackSwitchPlusRotation" {
        return bad(
            m,
            line,
            format!("access time type '{acc}' is not modelled (only trackSwitchPlusRotation: seek and rotation both timed)"),
        );
    }
    let (kind, kline) = m.word("Seek type")?;
    let seek = match kind {
        "constant" => SeekCurve::Constant(m.nonneg("Constant seek time")?),
        "linear" | "curve" => {
            let one = m.nonneg("Single cylinder seek time")?;
            let avg = m.nonneg("Average seek time")?;
            let full = m.nonneg("Full strobe seek time")?;
            report.notes.push(format!(
                "seek type '{kind}' ({}:{kline}): the three-point form as DiskSim's manual gives it; DiskSim 4.0's code \
                 differs (its 'linear' returns the full-strobe time for every seek of 2 or more cylinders, its 'curve' \
                 uses the three times as raw coefficients)",
                m.file
            ));
            if kind == "linear" {
                SeekCurve::ThreePoint { one, avg, full, cylinders }
            } else {
                SeekCurve::lee(one, avg, full, cylinders)
            }
        }
        "hpl" | "hplplus10" => {
            let v = m.nums("HPL seek equation values")?;
            let vline = m.line_of("HPL seek equation values");
            if v.len() != 6 {
                return bad(m, vline, format!("expected 6 values, found {}", v.len()));
            }
            if v[..5].iter().any(|x| *x < 0.0) || (v[5] < 0.0 && v[5] != -1.0) || v[0].fract() != 0.0 {
                return bad(m, vline, "V1 is a whole number of cylinders, V2..V5 are >= 0 ms, V6 is >= 0 ms or -1");
            }
            let first_ten = if kind == "hplplus10" {
                let t = m.nums("First ten seek times")?;
                let tline = m.line_of("First ten seek times");
                if t.iter().any(|x| *x < 0.0) {
                    return bad(m, tline, "seek times must be >= 0");
                }
                let arr: [f64; 10] = t.try_into().or_else(|t: Vec<f64>| bad(m, tline, format!("expected 10 values, found {}", t.len())))?;
                Some(arr)
            } else if v[5] != -1.0 {
                // V6 other than -1: distance 1 costs V6; the rest follow
                // the equation.
                let mut arr = [0.0; 10];
                for (i, a) in arr.iter_mut().enumerate() {
                    let d = (i + 1) as f64;
                    *a = if i == 0 { v[5] } else if d < v[0] { v[1] + v[2] * d.sqrt() } else { v[3] + v[4] * d };
                }
                Some(arr)
            } else {
                None
            };
            SeekCurve::TwoPiece {
                linear_from: v[0].max(1.0) as u32,
                sqrt_a: v[1],
                sqrt_b: v[2],
                lin_a: v[3],
                lin_b: v[4],
                first_ten,
            }
        }
        "extracted" => {
            let (file, fline) = m.word("Full seek curve")?;
            let dir = Path::new(&m.file).parent().unwrap_or(Path::new(""));
            seek_table(&dir.join(file)).map_err(|e| match e {
                Error::Io { path, source } => Error::Line {
                    file: m.file.clone(),
                    line: fline,
                    message: format!("Full seek curve {}: {source}", path.display()),
                },
                other => other,
            })?
        }
        other => {
            return bad(
                m,
                kline,
                format!("seek type '{other}' is not one DiskSim defines (constant, linear, curve, hpl, hplplus10, extracted)"),
            )
        }
    };
    let rpm = m.num("Rotation speed (in rpms)")?;
    if !(rpm > 0.0 && rpm <= 1e6) {
        return bad(m, m.line_of("Rotation speed (in rpms)"), format!("rotation speed must be in (0, 1e6] rpm, not {rpm}"));
    }
    let err = m.nonneg_or("Percent error in rpms", 0.0)?;
    if err != 0.0 {
        report.notes.push(format!(
            "'Percent error in rpms' = {err} ({}:{}) is ignored, as DiskSim 4.0 ignores it (its rpm randomisation is disabled)",
            m.file,
            m.line_of("Percent error in rpms")
        ));
    }
    let mech = Mechanics {
        seek: seek.clone(),
        head_switch_ms: m.nonneg("Head switch time")?,
        write_settle_ms: m.num_or("Add. write settling delay", 0.0)?,
    };
    mech.check(&format!("{}:{}", m.file, m.line))?;
    let desc = match &seek {
        SeekCurve::Table(p) => format!("seek curve of {} points", p.len()),
        _ => format!("seek type {kind}"),
    };
    let desc = format!(
        "{desc}, head switch {} ms, write settle {} ms",
        mech.head_switch_ms, mech.write_settle_ms
    );
    Ok((mech, rpm, desc))
}

/// A DiskSim `.seek` file: an optional header line ("Seek distances
/// measured: N"), then one `distance, ms` pair per line (a third value,
/// the standard deviation some files give, is ignored as DiskSim ignores
/// it).
pub fn seek_table(path: &Path) -> Result<SeekCurve> {
    let text = read_text_file(path, MAX_PARAM_FILE)?;
    let file = path.display().to_string();
    let mut pts = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line.contains(':') {
            continue;
        }
        let f: Vec<&str> = line.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).collect();
        let parsed = match f.as_slice() {
            [d, t] | [d, t, _] => d.parse::<u32>().ok().zip(t.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0)),
            _ => None,
        };
        match parsed {
            Some((0, _)) => {}
            Some(p) => pts.push(p),
            None => {
                return Err(Error::Line {
                    file,
                    line: n + 1,
                    message: format!("expected 'distance, ms' (whole distance, time >= 0), found '{line}'"),
                })
            }
        }
    }
    let curve = SeekCurve::Table(pts);
    curve.check(&file)?;
    Ok(curve)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::hdd::Hdd;
    use crate::disk::Disk;

    pub(crate) fn data(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/disksim").join(name)
    }

    #[test]
    fn loads_the_hp_c2247a_and_says_what_it_built() {
        let (p, r) = load_with_report(&data("hp_c2247a.parv"), &Options::default()).unwrap();
        assert_eq!(p.name, "HP_C2247A_validate");
        assert_eq!(p.rpm, 5400.0);
        assert_eq!(p.layout.capacity(), 2_054_864);
        assert_eq!(p.layout.zones.len(), 8);
        assert_eq!(p.layout.zones[0].slips.len(), 12);
        assert_eq!((p.controller.bus_read_block_ms, p.controller.bus_write_block_ms), (0.17010, 0.18686));
        assert!(p.controller.extra_disconnect.is_some());
        assert_eq!(p.mechanics.seek.ms(1), 2.89);
        assert!((p.mechanics.seek.ms(300) - (7.75 + 0.0059 * 300.0)).abs() < 1e-12);
        assert_eq!(p.cache.fast_write, FastWrite::Off);
        assert_eq!((p.cache.segment_sectors, p.cache.max_read_ahead, p.cache.segments), (256, 128, 2));
        assert!(r.disk.contains("the disk this file instantiates as disk0"), "{}", r.disk);
        assert!(r.bus.starts_with("BUS1 (disksim_bus at"), "{}", r.bus);
        assert!(r.bus.contains("0.1701 ms per block read, 0.18686 ms written"), "{}", r.bus);
        // The bare .diskspecs has no bus: the report says so.
        let (q, r) = load_with_report(&data("hp_c2247a.diskspecs"), &Options::default()).unwrap();
        assert_eq!(q.controller.bus_read_block_ms, 0.0);
        assert!(r.bus.starts_with("none"), "{}", r.bus);
        let d = Hdd::new(p).unwrap();
        assert_eq!(d.capacity_sectors(), 2_054_864);
        // LBN 0 sits after 17 reserved tracks (1632 / 96): cylinder 1, head 4.
        let loc = d.layout().locate(0);
        assert_eq!((loc.cyl, loc.head, loc.sector), (1, 4, 0));
    }

    /// The locate memo (`Layout::locate_memo`) gives what `locate` gives,
    /// and `cylinder_of` its cylinder,
    /// bit for bit, on every drive of the validation suite (their zones,
    /// sparing schemes, slips and defects), for LBNs visited in the orders
    /// a drive visits them: sequential runs, jumps, backwards steps, and
    /// around every zone boundary, slip and defect.
    #[test]
    fn locate_memo_agrees_with_locate_on_every_validation_drive() {
        use std::cell::Cell;
        for name in ["atlas10k", "barracuda", "dec_rz26", "hp_c2247a", "hp_c2490a", "ibm18es"] {
            let p = load(&data(&format!("{name}.parv"))).unwrap();
            let l = &p.layout;
            let mapped = l.zones.last().map(|z| z.first_lbn + z.lbns).unwrap();
            let mut visit: Vec<u64> = Vec::new();
            let mut around = |x: u64, n: u64| visit.extend(x.saturating_sub(n)..(x + n).min(mapped + 2));
            for z in &l.zones {
                around(z.first_lbn, 400);
                around(z.first_lbn + z.lbns / 2, 400);
                for &sl in z.slips.iter().chain(z.defects.iter().map(|d| &d.0)) {
                    // Slips and defects are zone positions, near their LBNs.
                    around(z.first_lbn + sl.min(z.lbns), 300);
                }
            }
            let mut x = 12345u64;
            for _ in 0..3000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let at = (x >> 11) % mapped;
                visit.extend(at..(at + (x & 255)).min(mapped));
                visit.push(at.saturating_sub(x & 7));
            }
            let memo = Cell::new(None);
            for &lbn in &visit {
                let (a, b) = (l.locate_memo(lbn, &memo), l.locate(lbn));
                assert_eq!(a, b, "{name}: LBN {lbn}");
                assert_eq!(a.angle.to_bits(), b.angle.to_bits(), "{name}: LBN {lbn}");
                assert_eq!(l.cylinder_of(lbn), b.cyl, "{name}: LBN {lbn}");
            }
        }
    }

    /// A fresh scratch directory for one test.
    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("iolab-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn malformed_files_name_the_line() {
        let dir = scratch("ds");
        let f = dir.join("bad.diskspecs");
        std::fs::write(&f, "disksim_disk D {\n  Model = source missing.model,\n}\n").unwrap();
        let e = load(&f).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:2: source", f.display())), "{e}");
        let model = std::fs::read_to_string(data("hp_c2247a_validate.model")).unwrap();
        std::fs::write(dir.join("m.model"), model.replace("Sparing scheme used = 1", "Sparing scheme used = 11"))
            .unwrap();
        let specs = std::fs::read_to_string(data("hp_c2247a.diskspecs")).unwrap();
        std::fs::write(&f, specs.replace("hp_c2247a_validate.model", "m.model")).unwrap();
        let e = load(&f).unwrap_err().to_string();
        assert!(e.contains("m.model:7: 'Sparing scheme used' must be a whole number in 0..=10, not 11"), "{e}");
        std::fs::write(dir.join("m.model"), &model).unwrap();
        let specs = specs.replace("hp_c2247a_validate.model", "m.model");
        std::fs::write(&f, specs.replace("Segment size (in blks) = 256", "Segment size (in blks) = big")).unwrap();
        let e = load(&f).unwrap_err().to_string();
        assert!(e.ends_with("bad.diskspecs:36: 'Segment size (in blks)' must be a number"), "{e}");
        std::fs::write(&f, specs.replace("Print stats = 1,", "Print stats = 1,\n   Flux capacitor = 3,")).unwrap();
        let e = load(&f).unwrap_err().to_string();
        assert!(e.ends_with("bad.diskspecs:17: 'Flux capacitor' is not a parameter of disksim_disk in DiskSim 4.0"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_bus_times_and_skews_are_refused() {
        let dir = scratch("bus");
        for f in ["hp_c2247a.diskspecs", "hp_c2247a_validate.model"] {
            std::fs::copy(data(f), dir.join(f)).unwrap();
        }
        let parv = std::fs::read_to_string(data("hp_c2247a.parv")).unwrap();
        let p = dir.join("x.parv");
        for (bad, want) in [
            ("Read block transfer time = nan", "x.parv:93: 'Read block transfer time' must be a finite number, not NaN"),
            ("Read block transfer time = -0.1", "x.parv:93: 'Read block transfer time' must be >= 0, not -0.1"),
        ] {
            std::fs::write(&p, parv.replace("Read block transfer time = 0.17010", bad)).unwrap();
            let e = load(&p).unwrap_err().to_string();
            assert!(e.ends_with(want), "{e}");
        }
        let model = std::fs::read_to_string(data("hp_c2247a_validate.model")).unwrap();
        std::fs::write(dir.join("hp_c2247a_validate.model"), model.replacen("Skew for track switch = 9", "Skew for track switch = -9", 1))
            .unwrap();
        std::fs::write(&p, &parv).unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("'Skew for track switch' must be >= 0, not -9"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn reads_seek_tables() {
        let dir = scratch("seek");
        let f = dir.join("x.seek");
        std::fs::write(&f, "Seek distances measured: 3\n0, 0.0\n1, 1.0\n10, 2.0, 0.1\n").unwrap();
        assert_eq!(seek_table(&f).unwrap().ms(10), 2.0);
        std::fs::write(&f, "1, 1.0\n10 two\n").unwrap();
        assert!(seek_table(&f).unwrap_err().to_string().contains("x.seek:2:"));
        std::fs::write(&f, "1, 1.0\n10, -2\n").unwrap();
        assert!(seek_table(&f).unwrap_err().to_string().contains("x.seek:2:"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
