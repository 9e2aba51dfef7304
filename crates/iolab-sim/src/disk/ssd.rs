//! A flash SSD: a host link, flash channels, and dies with planes, each a
//! resource that serves one operation at a time, first come first served.
//!
//! Brief overview. Logical pages are striped over the flash statically,
//! channel first, then chip (way), die and plane ("CWDP", MQSim's
//! `Plane_Allocation_Scheme`). A read of a request's pages costs, on each
//! die it touches, one page read (`read_ns`) per round of pages — pages on
//! different planes of one die are read together (a multi-plane read) —
//! then the transfer of the wanted bytes over the die's channel; the data
//! then cross the host link. A write crosses the host link into the DRAM
//! write buffer and completes there; the buffer programs each page later
//! (channel transfer, then `program_ns` on the die), and a write waits for
//! room when the buffer is full. Resources are reserved at submission, so
//! requests in service at once share channels and dies, and latency rises
//! with load (the "latency curve": see the tests).
//!
//! Parameters are MQSim's (Tavakkol et al., "MQSim: A Framework for
//! Enabling Realistic Studies of Modern Multi-Queue SSD Devices", FAST
//! 2018; CMU-SAFARI/MQSim `ssdconfig.xml` and `src/exec/*_Parameter_Set.cpp`
//! defaults), each named at its constant.
//!
//! Left out, as docs/disks.md says: garbage collection and wear levelling
//! (a fresh, never-full drive: sustained random writes come out
//! optimistic), the mapping-table cache (MQSim's `Ideal_Mapping_Table`),
//! read caching in the DRAM buffer, program/erase suspension, and MLC/TLC
//! page-type latencies (one read and one program latency).

use super::{CacheOutcome, Disk, Service};
use crate::cost::PositionCost;
use crate::error::{Error, Result};
use crate::request::{Dir, Request, SECTOR_BYTES};
use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

pub const NAME: &str = "ssd";

/// Everything that describes the SSD.
#[derive(Clone, Debug)]
pub struct SsdParams {
    pub name: String,
    pub channels: u32,
    pub chips_per_channel: u32,
    pub dies_per_chip: u32,
    pub planes_per_die: u32,
    pub page_bytes: u32,
    /// Page read into the die's register (tR).
    pub read_ns: u64,
    /// Page program from the register (tPROG).
    pub program_ns: u64,
    /// Bytes per second on one flash channel.
    pub channel_bytes_per_s: f64,
    /// Bytes per second on the host link.
    pub host_bytes_per_s: f64,
    /// DRAM write buffer; 0 = writes complete only when programmed.
    pub write_buffer_bytes: u64,
    /// Logical capacity in 512-byte sectors.
    pub capacity_sectors: u64,
}

/// The MQSim default SSD (src/exec defaults and `ssdconfig.xml`).
pub fn mqsim_params() -> SsdParams {
    let (channels, chips, dies, planes) = (8, 4, 2, 2); // Flash_Channel_Count, Chip_No_Per_Channel, Die_No_Per_Chip, Plane_No_Per_Die
    let page_bytes = 8192u32; // Page_Capacity
    // Block_No_Per_Plane 2048 × Page_No_Per_Block 256 pages per plane:
    // 512 GiB of flash; Overprovisioning_Ratio 0.07 keeps 7% for the FTL.
    let raw_bytes = (channels * chips * dies * planes) as u64 * 2048 * 256 * page_bytes as u64;
    let user_bytes = (raw_bytes as f64 * 0.93) as u64 / page_bytes as u64 * page_bytes as u64;
    SsdParams {
        name: NAME.into(),
        channels,
        chips_per_channel: chips,
        dies_per_chip: dies,
        planes_per_die: planes,
        page_bytes,
        // Page_Read_Latency_{LSB,CSB,MSB} = 75000 ns.
        read_ns: 75_000,
        // Page_Program_Latency_{LSB,MSB} = 750000 ns in Flash_Parameter_Set.cpp
        // (the CSB value there, and every value in one version of
        // ssdconfig.xml, is 75000: we take the MLC program time of 750 µs).
        program_ns: 750_000,
        // Channel_Transfer_Rate 333 MT/s × Flash_Channel_Width 1 byte.
        channel_bytes_per_s: 333e6,
        // PCIe_Lane_Bandwidth 0.4 GB/s × PCIe_Lane_Count 4.
        host_bytes_per_s: 1.6e9,
        // Data_Cache_Capacity 256 MiB, used as a write buffer.
        write_buffer_bytes: 256 << 20,
        capacity_sectors: user_bytes / SECTOR_BYTES,
    }
}

/// Busy intervals of a shared bus (a channel, the host link), so that a
/// transfer whose data are ready early can use a gap before one reserved
/// for later: the bus serves whatever is ready, not submission order.
#[derive(Default)]
struct Timeline {
    /// Disjoint [start, end) in ns, sorted by start.
    busy: Vec<(u64, u64)>,
}

impl Timeline {
    /// Reserve `dur` ns at the earliest instant from `ready` on; returns
    /// the end of the reservation.
    fn reserve(&mut self, ready: u64, dur: u64) -> u64 {
        let mut start = ready;
        let mut at = self.busy.len();
        for (i, &(s, e)) in self.busy.iter().enumerate() {
            if e <= start {
                continue;
            }
            if s >= start + dur {
                at = i;
                break;
            }
            start = start.max(e);
        }
        if dur > 0 {
            self.busy.insert(at, (start, start + dur));
        }
        start + dur
    }

    /// Forget intervals over by `t`.
    fn retire(&mut self, t: u64) {
        let n = self.busy.iter().take_while(|&&(_, e)| e <= t).count();
        self.busy.drain(..n);
    }
}

pub struct Ssd {
    p: SsdParams,
    /// Per channel, its transfers.
    chan: Vec<Timeline>,
    /// Per die (channel-major): free from this instant. A die works
    /// through its operations in arrival order (MQSim's per-chip queues).
    die_free: Vec<u64>,
    host: Timeline,
    /// Buffered writes not yet programmed: (programmed at, bytes).
    dirty: BinaryHeap<Reverse<(u64, u64)>>,
    dirty_bytes: u64,
}

impl Ssd {
    pub fn new(p: SsdParams) -> Result<Ssd> {
        let field = |f: &str| format!("{}: {f}", p.name);
        for (v, f) in [
            (p.channels, "channels"),
            (p.chips_per_channel, "chips_per_channel"),
            (p.dies_per_chip, "dies_per_chip"),
            (p.planes_per_die, "planes_per_die"),
            (p.page_bytes, "page_bytes"),
        ] {
            if v == 0 {
                return Err(Error::invalid(field(f), "must be at least 1"));
            }
        }
        for (v, f) in [(p.channel_bytes_per_s, "channel_bytes_per_s"), (p.host_bytes_per_s, "host_bytes_per_s")] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::invalid(field(f), "must be a positive rate"));
            }
        }
        if p.capacity_sectors == 0 {
            return Err(Error::invalid(field("capacity_sectors"), "must be at least 1"));
        }
        let dies = (p.channels * p.chips_per_channel * p.dies_per_chip) as usize;
        Ok(Ssd {
            chan: (0..p.channels).map(|_| Timeline::default()).collect(),
            die_free: vec![0; dies],
            host: Timeline::default(),
            dirty: BinaryHeap::new(),
            dirty_bytes: 0,
            p,
        })
    }

    fn xfer_ns(bytes: u64, rate: f64) -> u64 {
        (bytes as f64 / rate * 1e9).round() as u64
    }

    /// Where a logical page lives: (channel, die index, plane), CWDP order.
    fn place(&self, lpn: u64) -> (u32, u32, u32) {
        let p = &self.p;
        let c = (lpn % p.channels as u64) as u32;
        let rest = lpn / p.channels as u64;
        let w = (rest % p.chips_per_channel as u64) as u32;
        let rest = rest / p.chips_per_channel as u64;
        let d = (rest % p.dies_per_chip as u64) as u32;
        let plane = ((rest / p.dies_per_chip as u64) % p.planes_per_die as u64) as u32;
        let die = (c * p.chips_per_channel + w) * p.dies_per_chip + d;
        (c, die, plane)
    }

    /// Group the request's pages by die: (die, channel, bytes per round),
    /// where round r holds the r-th page of each plane of the die.
    fn group_pages(&self, rq: &Request) -> Vec<(u32, u32, Vec<u64>)> {
        let page = self.p.page_bytes as u64;
        let start = rq.sector * SECTOR_BYTES;
        let end = start + rq.bytes();
        // (die, channel, bytes per page in plane order)
        let mut by_die: Vec<(u32, u32, Vec<Vec<u64>>)> = Vec::new();
        let mut lpn = start / page;
        while lpn * page < end {
            let lo = start.max(lpn * page);
            let hi = end.min((lpn + 1) * page);
            let (c, die, plane) = self.place(lpn);
            let entry = match by_die.iter().position(|e| e.0 == die) {
                Some(i) => &mut by_die[i],
                None => {
                    by_die.push((die, c, vec![Vec::new(); self.p.planes_per_die as usize]));
                    by_die.last_mut().expect("just pushed")
                }
            };
            entry.2[plane as usize].push(hi - lo);
            lpn += 1;
        }
        // Rounds per die: round r holds the r-th page of every plane.
        by_die
            .into_iter()
            .map(|(die, c, planes)| {
                let n = planes.iter().map(Vec::len).max().unwrap_or(0);
                let rounds = (0..n).map(|r| planes.iter().filter_map(|pl| pl.get(r)).sum()).collect();
                (die, c, rounds)
            })
            .collect()
    }

    /// Drop buffered writes programmed by `t`.
    fn retire(&mut self, t: u64) {
        while let Some(Reverse((done, bytes))) = self.dirty.peek().copied() {
            if done > t {
                break;
            }
            self.dirty.pop();
            self.dirty_bytes -= bytes;
        }
    }

    /// Reserve the flash for a read arriving at `t`; returns when the last
    /// byte reached the controller.
    fn read_flash(&mut self, rq: &Request, t: u64) -> u64 {
        let mut done = t;
        for (die, c, rounds) in self.group_pages(rq) {
            let (die, c) = (die as usize, c as usize);
            let mut at = t.max(self.die_free[die]);
            for bytes in rounds {
                let read_end = at + self.p.read_ns;
                let x_end = self.chan[c].reserve(read_end, Self::xfer_ns(bytes, self.p.channel_bytes_per_s));
                // The die's register holds the data until it is sent.
                at = x_end;
            }
            self.die_free[die] = at;
            done = done.max(at);
        }
        done
    }

    /// Reserve the flash to program a write whose data is in the
    /// controller at `t`; returns when the last page is programmed.
    fn program_flash(&mut self, rq: &Request, t: u64) -> u64 {
        let mut done = t;
        for (die, c, rounds) in self.group_pages(rq) {
            let (die, c) = (die as usize, c as usize);
            let mut at = t;
            for bytes in rounds {
                // Data go over the channel into the die's register, which
                // must be free, then the die programs.
                let ready = at.max(self.die_free[die]);
                let x_end = self.chan[c].reserve(ready, Self::xfer_ns(bytes, self.p.channel_bytes_per_s));
                self.die_free[die] = x_end + self.p.program_ns;
                at = self.die_free[die];
            }
            done = done.max(at);
        }
        done
    }
}

struct NoSeek;

impl PositionCost for NoSeek {
    fn seek_ns(&self, _from: u64, _to: u64) -> u64 {
        0
    }
    fn mean_rotation_ns(&self) -> u64 {
        0
    }
}

impl Disk for Ssd {
    fn describe(&self) -> String {
        let p = &self.p;
        format!(
            "{}: {} channels x {} chips x {} dies x {} planes, {} KiB pages, read {} us, program {} us, {:.1} GiB",
            p.name,
            p.channels,
            p.chips_per_channel,
            p.dies_per_chip,
            p.planes_per_die,
            p.page_bytes / 1024,
            p.read_ns / 1000,
            p.program_ns / 1000,
            (p.capacity_sectors * SECTOR_BYTES) as f64 / (1u64 << 30) as f64
        )
    }

    fn capacity_sectors(&self) -> u64 {
        self.p.capacity_sectors
    }

    fn service(&mut self, rq: &Request, now: SimTime) -> Service {
        let t = now.ns();
        self.retire(t);
        self.host.retire(t);
        self.chan.iter_mut().for_each(|c| c.retire(t));
        let host_ns = Self::xfer_ns(rq.bytes(), self.p.host_bytes_per_s);
        let end = match rq.dir {
            Dir::Read => {
                let in_ctrl = self.read_flash(rq, t);
                self.host.reserve(in_ctrl, host_ns)
            }
            Dir::Write => {
                let bytes = rq.bytes();
                let buffered = self.p.write_buffer_bytes >= bytes;
                // Room in the buffer: wait for the oldest programs to end.
                let mut room_at = t;
                while buffered && self.dirty_bytes + bytes > self.p.write_buffer_bytes {
                    let Reverse((done, b)) = self.dirty.pop().expect("dirty bytes are in the heap");
                    self.dirty_bytes -= b;
                    room_at = room_at.max(done);
                }
                let in_ctrl = self.host.reserve(room_at, host_ns);
                let programmed = self.program_flash(rq, in_ctrl);
                if buffered {
                    self.dirty.push(Reverse((programmed, bytes)));
                    self.dirty_bytes += bytes;
                    in_ctrl
                } else {
                    programmed
                }
            }
        };
        let total_ns = end - t;
        Service { total_ns, transfer_ns: total_ns, cache: CacheOutcome::Miss, ..Service::default() }
    }

    fn positioning_ns(&self, _rq: &Request, _now: SimTime) -> u64 {
        0
    }

    fn position_cost(&self) -> Arc<dyn PositionCost> {
        Arc::new(NoSeek)
    }

    /// As many as the host sends: contention is inside the model.
    fn max_in_service(&self) -> usize {
        usize::MAX
    }

    fn rotational(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Dir;

    fn rq(id: u32, sector: u64, kib: u32, dir: Dir) -> Request {
        Request { id, pid: 0, sector, nr_sectors: kib * 2, dir, sync: dir == Dir::Read, arrival: SimTime::ZERO }
    }

    fn ssd() -> Ssd {
        Ssd::new(mqsim_params()).unwrap()
    }

    #[test]
    fn a_bus_fills_gaps_before_later_reservations() {
        let mut t = Timeline::default();
        assert_eq!(t.reserve(100, 10), 110);
        assert_eq!(t.reserve(0, 50), 50, "fits before");
        assert_eq!(t.reserve(60, 50), 160, "does not fit in [50, 100): after 110");
        assert_eq!(t.reserve(50, 50), 100, "fits exactly in [50, 100)");
        assert_eq!(t.busy, vec![(0, 50), (50, 100), (100, 110), (110, 160)]);
        t.retire(100);
        assert_eq!(t.busy, vec![(100, 110), (110, 160)]);
        assert_eq!(t.reserve(0, 0), 0);
    }

    #[test]
    fn mqsim_geometry_and_capacity() {
        let p = mqsim_params();
        // 512 GiB of flash, 7% over-provisioned.
        let gib = (p.capacity_sectors * 512) as f64 / (1u64 << 30) as f64;
        assert!((gib - 512.0 * 0.93).abs() < 0.01, "{gib}");
        let d = ssd();
        assert!(!d.rotational());
        assert_eq!(d.positioning_ns(&rq(0, 0, 4, Dir::Read), SimTime::ZERO), 0);
        assert!(d.describe().contains("8 channels x 4 chips x 2 dies x 2 planes"));
    }

    #[test]
    fn pages_stripe_channel_first() {
        let d = ssd();
        assert_eq!(d.place(0), (0, 0, 0));
        assert_eq!(d.place(1), (1, 8, 0), "next channel, its first die");
        assert_eq!(d.place(8), (0, 2, 0), "after 8 channels: the next chip");
        assert_eq!(d.place(32), (0, 1, 0), "after 4 chips: the next die");
        assert_eq!(d.place(64), (0, 0, 1), "after 2 dies: the next plane");
    }

    #[test]
    fn an_idle_4k_read_costs_tr_plus_two_transfers() {
        let mut d = ssd();
        let s = d.service(&rq(0, 0, 4, Dir::Read), SimTime(1000));
        let chan = (4096.0 / 333e6 * 1e9_f64).round() as u64;
        let host = (4096.0 / 1.6e9 * 1e9_f64).round() as u64;
        assert_eq!(s.total_ns, 75_000 + chan + host);
    }

    #[test]
    fn pages_on_two_planes_of_one_die_are_read_together() {
        let d = ssd();
        // 1 MiB = 128 pages: every one of the 64 dies holds two, on its
        // two planes: one round (one tR) each, 16 KiB over the channel.
        let g = d.group_pages(&rq(0, 0, 1024, Dir::Read));
        assert_eq!(g.len(), 64);
        assert!(g.iter().all(|(_, _, rounds)| rounds == &vec![16384]));
        // 2 MiB: two pages per plane, two rounds per die.
        let g = d.group_pages(&rq(1, 0, 2048, Dir::Read));
        assert!(g.iter().all(|(_, _, rounds)| rounds == &vec![16384, 16384]));
        // A 4 KiB read in the middle of a page transfers only its 4 KiB.
        let g = d.group_pages(&rq(2, 8, 4, Dir::Read));
        assert_eq!(g, vec![(0, 0, vec![4096])]);
    }

    #[test]
    fn a_large_read_uses_every_channel() {
        let mut d = ssd();
        // 128 KiB = 16 pages over 8 channels, 2 chips each: one round per die.
        let s = d.service(&rq(0, 0, 128, Dir::Read), SimTime::ZERO);
        let chan = (8192.0 / 333e6 * 1e9_f64).round() as u64;
        let host = (131072.0 / 1.6e9 * 1e9_f64).round() as u64;
        // Two dies share each channel: the second waits for the first's
        // transfer.
        assert_eq!(s.total_ns, 75_000 + 2 * chan + host);
    }

    #[test]
    fn requests_on_one_die_queue_behind_each_other() {
        let mut d = ssd();
        let a = d.service(&rq(0, 0, 4, Dir::Read), SimTime::ZERO).total_ns;
        // Page 128: channel 0, die 0, plane 0 again (after 2 planes).
        let b = d.service(&rq(1, 128 * 16, 4, Dir::Read), SimTime::ZERO).total_ns;
        assert!(b > a + 70_000, "{a} {b}");
        // Another die is free: no wait.
        let c = d.service(&rq(2, 16, 4, Dir::Read), SimTime::ZERO).total_ns;
        assert!(c < a + 10_000, "{a} {c}");
    }

    #[test]
    fn buffered_writes_complete_at_the_host_transfer_until_the_buffer_fills() {
        let mut p = mqsim_params();
        p.write_buffer_bytes = 64 << 10;
        let mut d = Ssd::new(p).unwrap();
        let host = (32768.0 / 1.6e9 * 1e9_f64).round() as u64;
        let w1 = d.service(&rq(0, 0, 32, Dir::Write), SimTime::ZERO).total_ns;
        assert_eq!(w1, host);
        let w2 = d.service(&rq(1, 64, 32, Dir::Write), SimTime(w1)).total_ns;
        assert_eq!(w2, host);
        // The buffer (64 KiB) is full: the third waits for a program.
        let w3 = d.service(&rq(2, 128, 32, Dir::Write), SimTime(w1 + w2)).total_ns;
        assert!(w3 > 700_000, "{w3}");
        // Without a buffer a write completes when programmed.
        let mut p = mqsim_params();
        p.write_buffer_bytes = 0;
        let mut d = Ssd::new(p).unwrap();
        assert!(d.service(&rq(0, 0, 4, Dir::Write), SimTime::ZERO).total_ns > 750_000);
    }

    #[test]
    fn a_read_waits_for_a_program_on_its_die() {
        let mut d = ssd();
        d.service(&rq(0, 0, 4, Dir::Write), SimTime::ZERO);
        let r = d.service(&rq(1, 0, 4, Dir::Read), SimTime(10_000)).total_ns;
        assert!(r > 750_000, "{r}");
    }

    /// The latency curve: random 4 KiB reads kept `n` deep. Throughput
    /// grows with depth until a resource saturates — here the host link,
    /// 1.6 GB/s / 4 KiB = 390,625 IOPS (64 dies could do about 730,000,
    /// 8 channels about 650,000) — then latency grows instead (Little's
    /// law).
    fn closed_loop_random_reads(depth: usize) -> (f64, f64) {
        let mut d = ssd();
        let mut rng = 12345u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % (d_cap() / 8)) * 8
        };
        fn d_cap() -> u64 {
            mqsim_params().capacity_sectors
        }
        // Each slot: completes at; reissue at completion.
        let mut slots: Vec<u64> = vec![0; depth];
        let (mut n, mut lat_sum) = (0u64, 0u64);
        let mut id = 0;
        while n < 20_000 {
            let (i, &t) = slots.iter().enumerate().min_by_key(|(_, &t)| t).unwrap();
            let s = d.service(&rq(id, next(), 4, Dir::Read), SimTime(t));
            id += 1;
            slots[i] = t + s.total_ns;
            lat_sum += s.total_ns;
            n += 1;
        }
        let end = *slots.iter().max().unwrap() as f64;
        (n as f64 / (end / 1e9), lat_sum as f64 / n as f64 / 1e3)
    }

    #[test]
    fn latency_rises_with_queue_depth_once_the_dies_are_busy() {
        let (iops1, lat1) = closed_loop_random_reads(1);
        let (iops32, lat32) = closed_loop_random_reads(32);
        let (iops256, lat256) = closed_loop_random_reads(256);
        // Measured: depth 1: 11,128 IOPS, 89.9 µs; 32: 262,497, 121.8 µs;
        // 256: 389,544, 653 µs.
        // Depth 1: one tR plus transfers, about 90 µs.
        assert!((lat1 - 90.0).abs() < 5.0, "{lat1}");
        assert!(iops32 > 20.0 * iops1, "{iops1} {iops32}");
        // Depth 256: the host link is saturated and the extra depth waits.
        assert!((iops256 / 390_625.0 - 1.0).abs() < 0.02, "{iops256}");
        assert!(lat256 > 5.0 * lat32, "{lat32} {lat256}");
    }
}
