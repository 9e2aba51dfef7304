//! Builds a drive from DiskSim 4.0 parameter files: a `.diskspecs` (or a
//! `.parv` run configuration that sources one), its `.model` with the
//! `dm_disk` geometry, g1 layout and g1 mechanics, and `.seek` tables.
//!
//! Supported, as the HP C2247A and drives described the same way need:
//! layout g1 with mapping schemes 0–2 and sparing scheme 0 (none) or 1
//! (spare tracks per zone, with slipped tracks); skews in sectors or
//! revolutions; seek types `hpl`, `hplplus10` and `extracted` (a "Full
//! seek curve" file); access time type `trackSwitchPlusRotation`; the
//! disk's overheads, cache segment and read-ahead values; the host bus
//! transfer time from `disksim_bus` blocks when the file has them (the
//! slowest bus on the way dominates). Anything else that would change the
//! timing is refused with an error naming the file and line, so a model
//! never silently differs from its parameters.

use super::cache::CacheParams;
use super::controller::{Controller, ExtraDisconnect};
use super::hdd::HddParams;
use super::layout::{Layout, Mapping, Zone};
use super::paramfile::{read_file, Block, Value};
use super::seek::{Mechanics, SeekCurve};
use crate::error::{Error, Result};
use std::path::Path;

/// Loads the drive of `path`. A file defining several disks needs one
/// named: `file.diskspecs#NAME`.
pub fn load(path: &Path) -> Result<HddParams> {
    let text = path.to_string_lossy();
    let (file, want) = match text.rsplit_once('#') {
        Some((f, n)) if !n.contains('/') => (Path::new(f).to_path_buf(), Some(n.to_string())),
        _ => (path.to_path_buf(), None),
    };
    let blocks = read_file(&file)?;
    let disks: Vec<&Block> = blocks.iter().filter(|b| b.kind == "disksim_disk").collect();
    let fname = file.display().to_string();
    let disk = match (&want, disks.as_slice()) {
        (None, [one]) => *one,
        (None, []) => return Err(Error::Spec { file: fname, message: "no disksim_disk block".into() }),
        (None, many) => {
            let names: Vec<&str> = many.iter().map(|b| b.name.as_str()).collect();
            return Err(Error::Spec {
                file: fname,
                message: format!("several disks ({}); name one as FILE#NAME", names.join(", ")),
            });
        }
        (Some(n), all) => match all.iter().find(|b| &b.name == n) {
            Some(b) => *b,
            None => return Err(Error::Spec { file: fname, message: format!("no disksim_disk named '{n}'") }),
        },
    };
    // The slowest bus the configuration declares, if any.
    let mut bus = (0.0f64, 0.0f64);
    for b in blocks.iter().filter(|b| b.kind == "disksim_bus") {
        bus.0 = bus.0.max(b.num_or("Read block transfer time", 0.0)?);
        bus.1 = bus.1.max(b.num_or("Write block transfer time", 0.0)?);
    }
    from_disk_block(disk, bus)
}

fn bad<T>(b: &Block, line: usize, m: impl Into<String>) -> Result<T> {
    Err(Error::Line { file: b.file.clone(), line, message: m.into() })
}

fn line_of(b: &Block, key: &str) -> usize {
    b.get(key).map_or(b.line, |p| p.line)
}

fn from_disk_block(d: &Block, bus: (f64, f64)) -> Result<HddParams> {
    let model = d.block("Model")?;
    let layout = layout(model)?;
    let mech_b = model.block("Mechanical Model")?;
    let (mechanics, rpm) = mechanics(mech_b)?;
    let pair = |a: &str, b: &str| -> Result<[f64; 2]> { Ok([d.num(a)?, d.num(b)?]) };
    let extra = if d.num_or("Extra write disconnect", 0.0)? != 0.0 {
        Some(ExtraDisconnect {
            command_ms: d.num("Extradisc command overhead")?,
            disconnect_ms: d.num("Extradisc disconnect overhead")?,
            inter_disconnect_ms: d.num("Extradisc inter-disconnect delay")?,
            second_disconnect_ms: d.num("Extradisc 2nd disconnect overhead")?,
            seek_delta_ms: d.num("Extradisc seek delta")?,
        })
    } else {
        None
    };
    // The disk's own "Bulk sector transfer time" applies when no bus is
    // described (DiskSim uses the slower of the two).
    let bulk = d.num_or("Bulk sector transfer time", 0.0)?;
    // "Per-request overhead time" is added to every command.
    let per_req = d.num_or("Per-request overhead time", 0.0)?;
    let add = |v: [f64; 2]| [v[0] + per_req, v[1] + per_req];
    let controller = Controller {
        read_hit_ms: add(pair("Read hit over. after read", "Read hit over. after write")?),
        read_miss_ms: add(pair("Read miss over. after read", "Read miss over. after write")?),
        write_hit_ms: add(pair("Write hit over. after read", "Write hit over. after write")?),
        write_miss_ms: add(pair("Write miss over. after read", "Write miss over. after write")?),
        read_complete_ms: d.num("Read completion overhead")?,
        write_complete_ms: d.num("Write completion overhead")?,
        data_prep_ms: d.num("Data preparation overhead")?,
        reselect_first_ms: d.num("First reselect overhead")?,
        reselect_other_ms: d.num("Other reselect overhead")?,
        read_disconnect_ms: pair("Read disconnect afterread", "Read disconnect afterwrite")?,
        write_disconnect_ms: d.num("Write disconnect overhead")?,
        extra_disconnect: extra,
        bus_read_block_ms: bus.0.max(bulk),
        bus_write_block_ms: bus.1.max(bulk),
        read_watermark: d.num_or("High (read) water mark", 0.0)?,
        min_write_seek_ms: d.num_or("Minimum seek delay", 0.0)?,
    };
    let fast = d.num_or("Fast write level", 0.0)?;
    let cache = CacheParams {
        enabled: d.num_or("Enable caching in buffer", 1.0)? != 0.0,
        segment_sectors: d.int("Segment size (in blks)", 1, u32::MAX as i64)? as u32,
        max_read_ahead: d.int("Maximum read-ahead (blks)", 0, u32::MAX as i64)? as u32,
        read_hits_on_write_data: d.num_or("Allow read hits on write data", 0.0)? != 0.0,
        write_back: fast != 0.0,
    };
    Ok(HddParams { name: d.name.clone(), rpm, layout, mechanics, controller, cache })
}

fn layout(model: &Block) -> Result<Layout> {
    let surfaces = model.int("Number of data surfaces", 1, 1 << 16)? as u32;
    let cylinders = model.int("Number of cylinders", 1, 1 << 30)? as u32;
    let blocks = model.int("Block count", 1, i64::MAX)? as u64;
    let l = model.block("Layout Model")?;
    if l.kind != "dm_layout_g1" {
        return bad(l, l.line, format!("layout '{}' is not supported (only dm_layout_g1)", l.kind));
    }
    let mapping = match l.int("LBN-to-PBN mapping scheme", 0, 2)? {
        0 => Mapping::Conventional,
        1 => Mapping::SerpentineZone,
        _ => Mapping::SerpentineDisk,
    };
    let sparing = l.int("Sparing scheme used", 0, 10)?;
    if sparing > 1 {
        return bad(
            l,
            line_of(l, "Sparing scheme used"),
            format!("sparing scheme {sparing} is not supported (0: none, 1: spare tracks per zone)"),
        );
    }
    let revs_default = match l.get("Skew units").map(|p| &p.value) {
        Some(Value::Word(w)) => w == "revolutions",
        _ => false,
    };
    let (items, line) = l.list("Zones")?;
    let mut zones = Vec::new();
    for it in items {
        let Value::Block(z) = it else { return bad(l, line, "'Zones' must list dm_layout_g1_zone blocks") };
        let spt = z.int("Blocks per track", 1, 1 << 24)? as u32;
        let revs = match z.get("Skew units").map(|p| &p.value) {
            Some(Value::Word(w)) => w == "revolutions",
            _ => revs_default,
        };
        let unit = if revs { spt as f64 } else { 1.0 };
        let (defects, dline) = z.list("defects").unwrap_or((&[], z.line));
        if !defects.is_empty() {
            return bad(z, dline, "remapped defects are not supported");
        }
        let slips: Vec<u32> = match z.get("slips") {
            Some(_) => z.nums("slips")?.into_iter().map(|x| x as u32).collect(),
            None => Vec::new(),
        };
        if sparing == 0 && !slips.is_empty() {
            return bad(z, line_of(z, "slips"), "slips need sparing scheme 1");
        }
        zones.push(Zone {
            first_cyl: z.int("First cylinder number", 0, 1 << 30)? as u32,
            last_cyl: z.int("Last cylinder number", 0, 1 << 30)? as u32,
            sectors_per_track: spt,
            offset: z.num_or("Offset of first block", 0.0)? * unit,
            deadspace: z.int("Empty space at zone front", 0, 1 << 40)? as u32,
            track_skew: z.num_or("Skew for track switch", 0.0)? * unit,
            cyl_skew: z.num_or("Skew for cylinder switch", 0.0)? * unit,
            spare_tracks: if sparing == 1 { z.int("Number of spares", 0, 1 << 30)? as u32 } else { 0 },
            slips,
            first_lbn: 0,
            lbns: 0,
        });
    }
    let what = format!("{}:{}: {}", model.file, model.line, model.name);
    Layout::new(&what, surfaces, cylinders, mapping, zones, Some(blocks))
}

fn mechanics(m: &Block) -> Result<(Mechanics, f64)> {
    let (acc, line) = m.word("Access time type")?;
    if acc != "trackSwitchPlusRotation" {
        return bad(m, line, format!("access time type '{acc}' is not supported (only trackSwitchPlusRotation)"));
    }
    let (kind, kline) = m.word("Seek type")?;
    let seek = match kind {
        "hpl" | "hplplus10" => {
            let v = m.nums("HPL seek equation values")?;
            if v.len() != 6 {
                return bad(m, line_of(m, "HPL seek equation values"), "expected 6 values");
            }
            let first_ten = if kind == "hplplus10" {
                let t = m.nums("First ten seek times")?;
                let arr: [f64; 10] = t.try_into().or_else(|_| {
                    bad(m, line_of(m, "First ten seek times"), "expected 10 values")
                })?;
                Some(arr)
            } else if v[5] != -1.0 {
                // Value 6 other than -1: distance 1 costs the "Single
                // cylinder seek time"; the rest follow the equation.
                let one = m.num("Single cylinder seek time")?;
                let mut arr = [0.0; 10];
                for (i, a) in arr.iter_mut().enumerate() {
                    let d = (i + 1) as f64;
                    *a = if i == 0 { one } else if d < v[0] { v[1] + v[2] * d.sqrt() } else { v[3] + v[4] * d };
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
            return bad(m, kline, format!("seek type '{other}' is not supported (hpl, hplplus10, extracted)"))
        }
    };
    let mech = Mechanics {
        seek,
        head_switch_ms: m.num("Head switch time")?,
        write_settle_ms: m.num_or("Add. write settling delay", 0.0)?,
    };
    let rpm = m.num("Rotation speed (in rpms)")?;
    Ok((mech, rpm))
}

/// A DiskSim `.seek` file: an optional header line ("Seek distances
/// measured: N"), then one `distance, ms` pair per line.
pub fn seek_table(path: &Path) -> Result<SeekCurve> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io { path: path.into(), source: e })?;
    let file = path.display().to_string();
    let mut pts = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line.contains(':') {
            continue;
        }
        let f: Vec<&str> = line.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).collect();
        let parsed = match f.as_slice() {
            [d, t] => d.parse::<u32>().ok().zip(t.parse::<f64>().ok()),
            _ => None,
        };
        match parsed {
            Some((0, _)) => {}
            Some(p) => pts.push(p),
            None => {
                return Err(Error::Line { file, line: n + 1, message: format!("expected 'distance, ms', found '{line}'") })
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
    use std::path::PathBuf;

    pub(crate) fn data(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/disksim").join(name)
    }

    #[test]
    fn loads_the_hp_c2247a() {
        let p = load(&data("hp_c2247a.parv")).unwrap();
        assert_eq!(p.name, "HP_C2247A_validate");
        assert_eq!(p.rpm, 5400.0);
        assert_eq!(p.layout.capacity(), 2_054_864);
        assert_eq!(p.layout.zones.len(), 8);
        assert_eq!(p.layout.zones[0].slips.len(), 12);
        assert_eq!((p.controller.bus_read_block_ms, p.controller.bus_write_block_ms), (0.17010, 0.18686));
        assert!(p.controller.extra_disconnect.is_some());
        assert_eq!(p.mechanics.seek.ms(1), 2.89);
        assert!((p.mechanics.seek.ms(300) - (7.75 + 0.0059 * 300.0)).abs() < 1e-12);
        assert!(!p.cache.write_back);
        assert_eq!((p.cache.segment_sectors, p.cache.max_read_ahead), (256, 128));
        // The bare .diskspecs has no bus.
        let q = load(&data("hp_c2247a.diskspecs")).unwrap();
        assert_eq!(q.controller.bus_read_block_ms, 0.0);
        let d = Hdd::new(p).unwrap();
        assert_eq!(d.capacity_sectors(), 2_054_864);
        // LBN 0 sits after 17 reserved tracks (1632 / 96): cylinder 1, head 4.
        let loc = d.layout().locate(0);
        assert_eq!((loc.cyl, loc.head, loc.sector), (1, 4, 0));
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
        std::fs::write(dir.join("m.model"), model.replace("Sparing scheme used = 1", "Sparing scheme used = 4"))
            .unwrap();
        let specs = std::fs::read_to_string(data("hp_c2247a.diskspecs")).unwrap();
        std::fs::write(&f, specs.replace("hp_c2247a_validate.model", "m.model")).unwrap();
        let e = load(&f).unwrap_err().to_string();
        assert!(e.contains("m.model:7: sparing scheme 4 is not supported"), "{e}");
        std::fs::write(dir.join("m.model"), &model).unwrap();
        let specs = specs.replace("hp_c2247a_validate.model", "m.model");
        std::fs::write(&f, specs.replace("Segment size (in blks) = 256", "Segment size (in blks) = big")).unwrap();
        let e = load(&f).unwrap_err().to_string();
        assert!(e.ends_with("bad.diskspecs:36: 'Segment size (in blks)' must be a number"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn reads_seek_tables() {
        let dir = scratch("seek");
        let f = dir.join("x.seek");
        std::fs::write(&f, "Seek distances measured: 3\n0, 0.0\n1, 1.0\n10, 2.0\n").unwrap();
        assert_eq!(seek_table(&f).unwrap().ms(10), 2.0);
        std::fs::write(&f, "1, 1.0\n10 two\n").unwrap();
        assert!(seek_table(&f).unwrap_err().to_string().contains("x.seek:2:"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
