//! What each operation costs on the emulated disk: the one place where an
//! NBD command becomes a call on the `iolab-sim` disk model. The server
//! charges requests through it, and the log replay (`iolab emu --check`)
//! charges them again through the same code.

use iolab_sim::disk::{self, CacheOutcome, Disk, DiskSpec, Service};
use iolab_sim::request::{Dir, Request, SECTOR_BYTES};
use iolab_sim::time::SimTime;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// An operation the emulated disk serves.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Read,
    Write,
    Flush,
    Trim,
    WriteZeroes,
}

impl Op {
    pub const ALL: [Op; 5] = [Op::Read, Op::Write, Op::Flush, Op::Trim, Op::WriteZeroes];

    /// The name used in the log.
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
            Op::Trim => "trim",
            Op::WriteZeroes => "write_zeroes",
        }
    }

    pub fn parse(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }
}

/// The sectors a byte range touches: first sector and count. A request
/// that is not sector-aligned costs what the whole sectors under it cost
/// (the drive reads or writes whole sectors). Any range a client can send
/// is described, also one that runs past 2^64 bytes (refused, but logged):
/// the end is computed in 128 bits, and a count is at most 2^23 + 1 for a
/// 32-bit NBD length.
pub fn sectors(offset: u64, length: u64) -> (u64, u64) {
    if length == 0 {
        return (offset / SECTOR_BYTES, 0);
    }
    let first = offset / SECTOR_BYTES;
    let end = (offset as u128 + length as u128).div_ceil(SECTOR_BYTES as u128);
    (first, (end - first as u128) as u64)
}

/// The emulated disk's timing: an `iolab-sim` disk model, or none at all
/// (zero latency: every operation takes 0 ns, to measure what a client
/// itself spends per request).
pub struct Model {
    disk: Box<dyn Disk>,
    zero_latency: bool,
    /// The spec it was built from (kept for the log's header).
    spec: DiskSpec,
}

impl Model {
    /// Builds the disk `spec` describes (relative DiskSim paths resolve
    /// from `base_dir`). The capacity is the model's even with
    /// `zero_latency`.
    pub fn build(spec: &DiskSpec, zero_latency: bool, base_dir: &Path) -> crate::Result<Model> {
        if spec.queue_depth != 1 {
            return Err(crate::Error::Config {
                option: "queue_depth",
                message: format!(
                    "the emulator serves one request at a time (got {})",
                    spec.queue_depth
                ),
            });
        }
        Ok(Model {
            disk: disk::build(spec, base_dir)?,
            zero_latency,
            spec: spec.clone(),
        })
    }

    pub fn spec(&self) -> &DiskSpec {
        &self.spec
    }

    pub fn zero_latency(&self) -> bool {
        self.zero_latency
    }

    /// The model's own description, and the timing mode.
    pub fn describe(&self) -> String {
        if self.zero_latency {
            format!("zero latency (capacity of {})", self.disk.describe())
        } else {
            self.disk.describe()
        }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.disk.capacity_sectors() * SECTOR_BYTES
    }

    /// Whether the model has rotating media (reported to NBD clients).
    pub fn rotational(&self) -> bool {
        !self.zero_latency && self.spec.preset.as_deref() != Some(disk::fixed::NAME)
    }

    /// Serves `op` on the model starting at model time `start_ns`, with
    /// the disk otherwise idle, and returns what it cost:
    /// - read, write: the model's service of the sectors the byte range
    ///   touches;
    /// - write zeroes: a write of those sectors (the drive writes the
    ///   zeros: SCSI WRITE SAME, ATA has no cheaper command);
    /// - flush: the model's flush (the wait for write-back to reach the
    ///   media; nothing on a write-through drive);
    /// - trim: nothing (disk drives have no TRIM; the emulator accepts it
    ///   as the hint it is and changes nothing);
    /// - FUA on a write: the write, then a flush at its completion, added
    ///   to it (the overhead field takes the flush's wait).
    pub fn charge(
        &mut self,
        op: Op,
        offset: u64,
        length: u64,
        fua: bool,
        start_ns: u64,
    ) -> Service {
        if self.zero_latency {
            return Service::default();
        }
        let now = SimTime(start_ns);
        let (sector, nr) = sectors(offset, length);
        let rq = |dir| Request {
            id: 0,
            pid: 0,
            sector,
            nr_sectors: nr.clamp(1, u32::MAX as u64) as u32,
            dir,
            sync: true,
            arrival: now,
        };
        match op {
            Op::Read => self.disk.service(&rq(Dir::Read), now),
            Op::Write | Op::WriteZeroes => {
                let mut s = self.disk.service(&rq(Dir::Write), now);
                if fua {
                    let f = self.disk.flush(now + s.total_ns);
                    s.total_ns += f.total_ns;
                    s.overhead_ns += f.total_ns;
                }
                s
            }
            Op::Flush => self.disk.flush(now),
            Op::Trim => Service::default(),
        }
    }
}

/// The log's name of a cache outcome.
pub fn cache_name(c: CacheOutcome) -> &'static str {
    match c {
        CacheOutcome::Miss => "miss",
        CacheOutcome::Hit => "hit",
        CacheOutcome::Partial => "partial",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: &str) -> DiskSpec {
        DiskSpec {
            preset: Some(name.into()),
            ..DiskSpec::default()
        }
    }

    #[test]
    fn byte_ranges_cover_whole_sectors() {
        assert_eq!(sectors(0, 4096), (0, 8));
        assert_eq!(sectors(1, 1), (0, 1));
        assert_eq!(sectors(511, 2), (0, 2));
        assert_eq!(sectors(1024, 0), (2, 0));
        // A refused write past 2^64 bytes (issue 27: logged with a count
        // of 18410715276690587650 sectors, which `--check` then refused).
        assert_eq!(sectors(u64::MAX - 99, 512), (u64::MAX / 512, 2));
    }

    #[test]
    fn charges_follow_the_disk_model() {
        let mut m = Model::build(&preset("hp97560"), false, Path::new(".")).unwrap();
        let mut d = disk::build(&preset("hp97560"), Path::new(".")).unwrap();
        let rq = Request {
            id: 0,
            pid: 0,
            sector: 123_456,
            nr_sectors: 8,
            dir: Dir::Read,
            sync: true,
            arrival: SimTime(0),
        };
        assert_eq!(
            m.charge(Op::Read, 123_456 * 512, 4096, false, 5_000_000),
            d.service(&rq, SimTime(5_000_000))
        );
        assert_eq!(
            m.charge(Op::Trim, 0, 4096, false, 9_000_000),
            Service::default()
        );
        assert_eq!(m.charge(Op::Flush, 0, 0, false, 9_000_000).total_ns, 0);
        assert!(m.rotational());
        assert_eq!(m.capacity_bytes(), 1962 * 19 * 72 * 512);
    }

    #[test]
    fn fua_adds_the_flush_of_a_write_back_drive() {
        let mut a = Model::build(&preset("modern7200"), false, Path::new(".")).unwrap();
        let mut b = Model::build(&preset("modern7200"), false, Path::new(".")).unwrap();
        let plain = a.charge(Op::Write, 1 << 30, 1 << 20, false, 0);
        let fua = b.charge(Op::Write, 1 << 30, 1 << 20, true, 0);
        assert!(
            fua.total_ns > plain.total_ns + 1_000_000,
            "{plain:?} {fua:?}"
        );
        assert_eq!(
            fua.total_ns - plain.total_ns,
            fua.overhead_ns - plain.overhead_ns
        );
    }

    #[test]
    fn zero_latency_costs_nothing_but_keeps_the_capacity() {
        let mut m = Model::build(&preset("hp97560"), true, Path::new(".")).unwrap();
        assert_eq!(m.charge(Op::Read, 0, 4096, false, 0), Service::default());
        assert_eq!(m.capacity_bytes(), 1962 * 19 * 72 * 512);
        assert!(!m.rotational());
        assert!(m.describe().starts_with("zero latency"));
    }

    #[test]
    fn a_deeper_queue_is_refused() {
        let spec = DiskSpec {
            queue_depth: 4,
            ..preset("hp97560")
        };
        let e = Model::build(&spec, false, Path::new(".")).err().unwrap();
        assert!(e.to_string().contains("one request at a time"), "{e}");
    }
}
