//! The host's own time per request, outside the disk: a measured input for
//! simulating a particular machine (`[disk] host_overhead_us`).
//!
//! On a real system a request also costs the host: the completion interrupt,
//! waking the process, its next system call, the block layer, the driver.
//! At queue depth 1 the device gets no new request meanwhile, and a
//! synchronous process cannot issue its next one before. `iolab kernel
//! compare` measures this time for its QEMU guest on a zero-latency
//! emulated disk (docs/kernel.md) and gives it to the simulator here; it is
//! never fitted to a result.
//!
//! Modelled as time charged after each request's service, as part of it
//! (in `total_ns` and `overhead_ns`): the next request starts that much
//! later, and the completion is seen that much later. The disk model
//! itself is served at the true instants, so its rotation follows the clock.

use super::{Disk, Service};
use crate::cost::PositionCost;
use crate::error::{Error, Result};
use crate::request::Request;
use crate::time::SimTime;
use std::sync::Arc;

/// The largest accepted value, in µs: a second per request is no longer a
/// host's overhead.
pub const MAX_US: f64 = 1e6;

/// A disk whose every request also takes `overhead_ns` of host time.
pub struct HostOverhead {
    inner: Box<dyn Disk>,
    overhead_ns: u64,
}

impl HostOverhead {
    /// Wrap `inner`; `us` is checked (finite, 0 to [`MAX_US`]).
    pub fn wrap(inner: Box<dyn Disk>, us: f64) -> Result<Box<dyn Disk>> {
        if !(us.is_finite() && (0.0..=MAX_US).contains(&us)) {
            return Err(Error::invalid(
                "disk.host_overhead_us",
                format!("{us} is outside [0, {MAX_US}] µs"),
            ));
        }
        if us == 0.0 {
            return Ok(inner);
        }
        Ok(Box::new(HostOverhead { inner, overhead_ns: (us * 1e3).round() as u64 }))
    }
}

impl Disk for HostOverhead {
    fn describe(&self) -> String {
        format!("{} + host {:.1} us per request", self.inner.describe(), self.overhead_ns as f64 / 1e3)
    }
    fn capacity_sectors(&self) -> u64 {
        self.inner.capacity_sectors()
    }
    fn service(&mut self, rq: &Request, now: SimTime) -> Service {
        let mut s = self.inner.service(rq, now);
        s.total_ns += self.overhead_ns;
        s.overhead_ns += self.overhead_ns;
        s
    }
    /// A flush is the drive's own business (no host time is added).
    fn flush(&mut self, now: SimTime) -> Service {
        self.inner.flush(now)
    }
    fn positioning_ns(&self, rq: &Request, now: SimTime) -> u64 {
        self.inner.positioning_ns(rq, now)
    }
    fn position_cost(&self) -> Arc<dyn PositionCost> {
        self.inner.position_cost()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::fixed::FixedDisk;
    use crate::request::Dir;

    fn read() -> Request {
        Request { id: 0, pid: 0, sector: 0, nr_sectors: 8, dir: Dir::Read, sync: true, arrival: SimTime::ZERO }
    }

    #[test]
    fn adds_the_hosts_time_to_every_request() {
        let mut d = HostOverhead::wrap(Box::new(FixedDisk::new(2.0).unwrap()), 150.0).unwrap();
        let s = d.service(&read(), SimTime::ZERO);
        assert_eq!((s.total_ns, s.overhead_ns), (2_150_000, 150_000));
        assert_eq!(s.transfer_ns, 2_000_000);
        assert!(d.describe().ends_with("+ host 150.0 us per request"));
    }

    #[test]
    fn zero_leaves_the_disk_alone_and_bad_values_are_refused() {
        let d = HostOverhead::wrap(Box::new(FixedDisk::new(2.0).unwrap()), 0.0).unwrap();
        assert!(!d.describe().contains("host"));
        for bad in [-1.0, f64::NAN, 2e6] {
            let e = HostOverhead::wrap(Box::new(FixedDisk::new(2.0).unwrap()), bad).err().unwrap();
            assert!(e.to_string().contains("disk.host_overhead_us"), "{e}");
        }
    }
}
