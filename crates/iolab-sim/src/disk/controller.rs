//! The drive's controller: command processing overheads and the host bus.
//!
//! A SCSI drive of the HP C2247A's era handles a command like this
//! (DiskSim 4.0's disk model, whose parameter names are quoted): it spends
//! a command overhead that depends on the request and on the previous one
//! ("Read hit over. after read", "Read miss over. after write", ...); the
//! mechanism may start moving only when that overhead is done. A read miss
//! then disconnects from the bus, reads from the media into its buffer, and
//! reconnects ("First reselect overhead") once a fraction of the request
//! is buffered ("High (read) water mark", by request size), then sends the
//! blocks at the bus rate ("Read block transfer time" of the bus), never
//! ahead of the media; last comes "Read completion overhead". A write
//! without write-back caching takes its data over the bus first ("Data
//! preparation overhead", then "Write block transfer time"), disconnects
//! ("Write disconnect overhead"), writes the media, reconnects and
//! completes. When the previous request was a write and this write does
//! not continue it, the HP drive disconnects once more before taking the
//! data ("Extra write disconnect" and the "Extradisc ..." values); the
//! measured trace marks those writes "Trip", the others "Doub".

/// The "Extradisc ..." values, in ms.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtraDisconnect {
    /// Command processing before the extra disconnect.
    pub command_ms: f64,
    /// The first disconnect.
    pub disconnect_ms: f64,
    /// Time off the bus before reconnecting to take the data.
    pub inter_disconnect_ms: f64,
    /// The disconnect after the data.
    pub second_disconnect_ms: f64,
    /// After the command overhead, more delay before the arm may move.
    pub seek_delta_ms: f64,
}

/// Overheads (ms), indexed `[after_read, after_write]` where they depend
/// on the previous request's direction, and the bus.
#[derive(Clone, Debug, PartialEq)]
pub struct Controller {
    pub read_hit_ms: [f64; 2],
    pub read_miss_ms: [f64; 2],
    pub write_hit_ms: [f64; 2],
    pub write_miss_ms: [f64; 2],
    pub read_complete_ms: f64,
    pub write_complete_ms: f64,
    pub data_prep_ms: f64,
    pub reselect_first_ms: f64,
    pub reselect_other_ms: f64,
    pub read_disconnect_ms: [f64; 2],
    pub write_disconnect_ms: f64,
    pub extra_disconnect: Option<ExtraDisconnect>,
    /// Host bus time per 512-byte block, reading and writing.
    pub bus_read_block_ms: f64,
    pub bus_write_block_ms: f64,
    /// Fraction of a read request buffered before the drive reconnects.
    pub read_watermark: f64,
    /// "Minimum seek delay": a write's positioning takes at least this
    /// long, even on the track the head is on (DiskSim applies it to
    /// writes that do not continue a write stream in the same instant).
    pub min_write_seek_ms: f64,
}

impl Controller {
    /// A controller with one overhead for every command, no disconnect
    /// costs and the given bus time per block: the "controller overhead"
    /// of Ruemmler & Wilkes's model.
    pub fn simple(overhead_ms: f64, bus_block_ms: f64) -> Controller {
        Controller {
            read_hit_ms: [overhead_ms; 2],
            read_miss_ms: [overhead_ms; 2],
            write_hit_ms: [overhead_ms; 2],
            write_miss_ms: [overhead_ms; 2],
            read_complete_ms: 0.0,
            write_complete_ms: 0.0,
            data_prep_ms: 0.0,
            reselect_first_ms: 0.0,
            reselect_other_ms: 0.0,
            read_disconnect_ms: [0.0; 2],
            write_disconnect_ms: 0.0,
            extra_disconnect: None,
            bus_read_block_ms: bus_block_ms,
            bus_write_block_ms: bus_block_ms,
            read_watermark: 0.0,
            min_write_seek_ms: 0.0,
        }
    }

    /// All values must be finite and non-negative; the watermark in [0, 1].
    pub fn check(&self, what: &str) -> crate::error::Result<()> {
        let mut v: Vec<f64> = Vec::new();
        for a in [self.read_hit_ms, self.read_miss_ms, self.write_hit_ms, self.write_miss_ms] {
            v.extend(a);
        }
        v.extend(self.read_disconnect_ms);
        v.extend([
            self.read_complete_ms,
            self.write_complete_ms,
            self.data_prep_ms,
            self.reselect_first_ms,
            self.reselect_other_ms,
            self.write_disconnect_ms,
            self.min_write_seek_ms,
            self.bus_read_block_ms,
            self.bus_write_block_ms,
        ]);
        if let Some(e) = &self.extra_disconnect {
            v.extend([
                e.command_ms,
                e.disconnect_ms,
                e.inter_disconnect_ms,
                e.second_disconnect_ms,
                e.seek_delta_ms,
            ]);
        }
        if v.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(crate::error::Error::invalid(what, "overheads must be finite and >= 0"));
        }
        if !(0.0..=1.0).contains(&self.read_watermark) {
            return Err(crate::error::Error::invalid(what, "read watermark must be in [0, 1]"));
        }
        Ok(())
    }
}
