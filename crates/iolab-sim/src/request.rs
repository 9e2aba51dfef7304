//! Block requests as the scheduling layer sees them.

use crate::time::SimTime;
use serde::Serialize;

/// Bytes per sector: the simulator's unit of position and size.
pub const SECTOR_BYTES: u64 = 512;

/// Index of a request within one run (dense, from 0).
pub type RequestId = u32;
/// Identifier of a simulated process (its I/O context), dense from 0.
pub type ProcessId = u32;

/// Data direction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Read,
    Write,
}

impl Dir {
    pub fn index(self) -> usize {
        match self {
            Dir::Read => 0,
            Dir::Write => 1,
        }
    }
}

/// One block request. Small and `Copy`: schedulers keep their own copies in
/// their sort trees and FIFOs, exactly as Linux elevators keep `struct
/// request` pointers, and hand one back on dispatch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: RequestId,
    /// The process (I/O context) that issued it.
    pub pid: ProcessId,
    /// First sector (512-byte units).
    pub sector: u64,
    /// Length in sectors (at least 1).
    pub nr_sectors: u32,
    pub dir: Dir,
    /// The issuer's sync flag (Linux `REQ_RW_SYNC`, set from `BIO_RW_SYNC`:
    /// O_DIRECT and O_SYNC writes, `WRITE_SYNC`). Whether the schedulers
    /// treat a request as sync is [`Request::is_sync`], not this flag: a
    /// read is sync whatever the flag says.
    pub sync: bool,
    /// When it was inserted into the scheduler.
    pub arrival: SimTime,
}

impl Request {
    /// First sector after the request.
    pub fn end_sector(&self) -> u64 {
        self.sector + self.nr_sectors as u64
    }
    pub fn bytes(&self) -> u64 {
        self.nr_sectors as u64 * SECTOR_BYTES
    }
    /// Linux 2.6.20 `rq_is_sync` (include/linux/blkdev.h): every read, and
    /// a write flagged `REQ_RW_SYNC`. This is what AS and CFQ call "sync"
    /// (AS's "read" direction, CFQ's per-process queue, the think-time and
    /// seek history); the issuer's own `sync` flag only decides it for
    /// writes.
    pub fn is_sync(&self) -> bool {
        self.dir == Dir::Read || self.sync
    }
    /// AS's notion of direction (`rq_is_sync` as an index): sync (index 0)
    /// or async (index 1).
    pub fn sync_index(&self) -> usize {
        if self.is_sync() {
            0
        } else {
            1
        }
    }
}

/// An I/O priority class (`IOPRIO_CLASS_*`, include/uapi/linux/ioprio.h).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoClass {
    /// Real time: served before everything else.
    Rt,
    /// Best effort: the class of every ordinary task.
    Be,
    /// Idle: served only when nobody else needs the disk.
    Idle,
}

/// A process's I/O priority, as `ionice -c CLASS -n LEVEL` sets it.
///
/// A task that never called `ioprio_set` has class NONE; the block layer
/// turns that into best effort at `(nice + 20) / 5`, level 4 for nice 0
/// (`__get_task_ioprio` in block/ioprio.c, `task_nice_ioprio` in
/// include/linux/ioprio.h), so NONE is not a separate value here.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct IoPrio {
    pub class: IoClass,
    /// 0 (highest) to 7 (`IOPRIO_NR_LEVELS` = 8); 0 for the idle class.
    pub level: u8,
}

impl Default for IoPrio {
    /// Best effort, level 4 (`IOPRIO_NORM`).
    fn default() -> Self {
        IoPrio { class: IoClass::Be, level: 4 }
    }
}

impl IoPrio {
    /// Parse `rt/N`, `be/N` or `idle` (N from 0 to 7), as ionice names them.
    pub fn parse(text: &str) -> std::result::Result<IoPrio, String> {
        let t = text.trim().to_ascii_lowercase();
        let (class, level) = match t.split_once('/') {
            Some((c, l)) => (c.to_string(), Some(l.to_string())),
            None => (t.clone(), None),
        };
        let class = match class.as_str() {
            "rt" | "realtime" => IoClass::Rt,
            "be" | "best-effort" => IoClass::Be,
            "idle" => IoClass::Idle,
            _ => return Err(format!("'{text}': expected rt/N, be/N or idle (N from 0 to 7)")),
        };
        let level = match (class, level) {
            (IoClass::Idle, None) => 0,
            (IoClass::Idle, Some(_)) => return Err(format!("'{text}': the idle class has no level")),
            (_, None) => 4,
            (_, Some(l)) => match l.parse::<u8>() {
                Ok(n) if n < 8 => n,
                _ => return Err(format!("'{text}': the level must be 0 to 7")),
            },
        };
        Ok(IoPrio { class, level })
    }
}

impl std::fmt::Display for IoPrio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.class {
            IoClass::Rt => write!(f, "rt/{}", self.level),
            IoClass::Be => write!(f, "be/{}", self.level),
            IoClass::Idle => write!(f, "idle"),
        }
    }
}

impl Serialize for IoPrio {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for IoPrio {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        IoPrio::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rq(dir: Dir, sync: bool) -> Request {
        Request { id: 0, pid: 0, sector: 0, nr_sectors: 8, dir, sync, arrival: SimTime::ZERO }
    }

    /// Issue 9: `rq_is_sync` is "every read, plus writes flagged sync",
    /// not the issuer's flag alone.
    #[test]
    fn rq_is_sync_is_every_read_plus_flagged_writes() {
        assert!(rq(Dir::Read, true).is_sync());
        assert!(rq(Dir::Read, false).is_sync(), "a read is sync whatever its flag");
        assert!(rq(Dir::Write, true).is_sync(), "WRITE_SYNC (O_DIRECT, O_SYNC)");
        assert!(!rq(Dir::Write, false).is_sync(), "write-back");
        assert_eq!(rq(Dir::Read, false).sync_index(), 0);
        assert_eq!(rq(Dir::Write, false).sync_index(), 1);
    }

    #[test]
    fn ioprio_parses_as_ionice_names_it() {
        assert_eq!(IoPrio::parse("be/4").unwrap(), IoPrio::default());
        assert_eq!(IoPrio::parse("RT/0").unwrap(), IoPrio { class: IoClass::Rt, level: 0 });
        assert_eq!(IoPrio::parse("be").unwrap().level, 4);
        assert_eq!(IoPrio::parse("idle").unwrap(), IoPrio { class: IoClass::Idle, level: 0 });
        for bad in ["be/8", "be/-1", "idle/3", "low", "rt/x"] {
            assert!(IoPrio::parse(bad).is_err(), "{bad}");
        }
        let p: IoPrio = serde_json::from_str("\"rt/2\"").unwrap();
        assert_eq!(serde_json::to_string(&p).unwrap(), "\"rt/2\"");
    }
}
