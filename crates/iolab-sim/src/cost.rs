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
}
