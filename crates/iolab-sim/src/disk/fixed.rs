//! A device whose every request takes the same time: no seek, no rotation.
//! It exists to test the engine and schedulers (as fio keeps `null.c`).

use super::{Disk, Service};
use crate::cost::PositionCost;
use crate::error::{Error, Result};
use crate::request::Request;
use crate::time::{ms_to_ns, SimTime};
use std::sync::Arc;

pub const NAME: &str = "fixed";

/// Capacity of the fixed device: 1 TiB in sectors.
const CAPACITY_SECTORS: u64 = 1 << 31;

pub struct FixedDisk {
    service_ns: u64,
}

impl FixedDisk {
    pub fn new(service_ms: f64) -> Result<FixedDisk> {
        if !(service_ms.is_finite() && service_ms > 0.0) {
            return Err(Error::invalid("disk.fixed_ms", "must be a positive number of ms"));
        }
        Ok(FixedDisk { service_ns: ms_to_ns(service_ms) })
    }
}

struct NoCost;

impl PositionCost for NoCost {
    fn seek_ns(&self, _from: u64, _to: u64) -> u64 {
        0
    }
    fn mean_rotation_ns(&self) -> u64 {
        0
    }
}

impl Disk for FixedDisk {
    fn describe(&self) -> String {
        format!("fixed service time {} ns", self.service_ns)
    }
    fn capacity_sectors(&self) -> u64 {
        CAPACITY_SECTORS
    }
    fn service(&mut self, _rq: &Request, _now: SimTime) -> Service {
        Service { total_ns: self.service_ns, transfer_ns: self.service_ns, ..Service::default() }
    }
    fn positioning_ns(&self, _rq: &Request, _now: SimTime) -> u64 {
        0
    }
    fn position_cost(&self) -> Arc<dyn PositionCost> {
        Arc::new(NoCost)
    }
}
