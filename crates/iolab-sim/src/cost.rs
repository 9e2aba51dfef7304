//! Positioning cost: what an elevator may know of the device.
//!
//! A scheduler that weighs one request against another by its cost on the
//! device (WPCAS's service-time evaluation, the 95% heuristic's benefit)
//! is given a [`PositionCost`] when it is built. The disk models implement
//! it; the elevators see only this trait, never the drive or its state
//! (Linux's elevators likewise see the request queue, not the device). It
//! lives beneath both so that neither imports the other.

/// Cost estimates a scheduler may use, derived from the disk model of the
/// experiment, independent of the model's current state.
pub trait PositionCost: Send + Sync {
    /// Seek time from the cylinder holding `from_sector` to the one holding
    /// `to_sector`, in ns (0 for the same cylinder).
    fn seek_ns(&self, from_sector: u64, to_sector: u64) -> u64;
    /// The seeks from `from_sector` to `a` and to `b`: what
    /// [`PositionCost::seek_ns`] gives for each. The heuristics weigh a
    /// queued request against the process's expected next one, both from
    /// the head; a model may find the head's cylinder once for both.
    fn seeks_from(&self, from_sector: u64, a: u64, b: u64) -> (u64, u64) {
        (self.seek_ns(from_sector, a), self.seek_ns(from_sector, b))
    }
    /// Mean rotational latency (half a revolution), in ns.
    fn mean_rotation_ns(&self) -> u64;
    /// The model's seek curve in the form kernel/'s `wpcas` takes it
    /// through its `seek_*` sysfs files, if the model has one that form
    /// can carry (None: a drive with a table of seek times, an SSD).
    fn module_seek(&self) -> Option<ModuleSeekCurve> {
        None
    }
}

/// A seek curve as the `wpcas` module's STE has it (wpcas.h): seek(d) =
/// `sqrt_a_ns + sqrt_b_ns·√d` for 0 < d < `linear_cyl` cylinders, else
/// `lin_a_ns + lin_b_ps·d / 1000`, over one cylinder size of
/// `cyl_sectors` sectors. A zoned drive's cylinders differ in size; the
/// module's model has one, so a zoned drive gives its mean (capacity over
/// cylinders, rounded up), as `iolab kernel compare` writes it into the
/// guest's sysfs files.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ModuleSeekCurve {
    pub cyl_sectors: u64,
    pub linear_cyl: u64,
    pub sqrt_a_ns: u64,
    pub sqrt_b_ns: u64,
    pub lin_a_ns: u64,
    pub lin_b_ps: u64,
}

impl ModuleSeekCurve {
    /// The tunables' names and values, as the module's sysfs files take them.
    pub fn tunables(&self) -> [(&'static str, f64); 6] {
        [
            ("seek_cyl_sectors", self.cyl_sectors as f64),
            ("seek_linear_cyl", self.linear_cyl as f64),
            ("seek_sqrt_a_ns", self.sqrt_a_ns as f64),
            ("seek_sqrt_b_ns", self.sqrt_b_ns as f64),
            ("seek_lin_a_ns", self.lin_a_ns as f64),
            ("seek_lin_b_ps", self.lin_b_ps as f64),
        ]
    }
}
