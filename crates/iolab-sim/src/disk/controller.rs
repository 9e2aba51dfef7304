//! The drive's controller: command processing overheads and the host bus.
//!
//! A SCSI drive handles a command like this (DiskSim 4.0's disk model,
//! whose parameter names are quoted): it spends a command overhead that
//! depends on the request, on whether the buffer serves it, and on the
//! previous request ("Read hit over. after read", "Read miss over. after
//! write", ...); the mechanism may start moving only when that overhead is
//! done. A read the buffer cannot serve at once disconnects from the bus
//! ("Read disconnect afterread/afterwrite"), reads from the media into its
//! buffer, and reconnects ("First reselect overhead", then "Data
//! preparation overhead") once enough is buffered ("High (read) water
//! mark", a fraction of the request or of the segment); it then sends
//! blocks at the bus rate, never ahead of the media, and either holds the
//! bus while waiting for more ("Hold bus entire read xfer") or disconnects
//! and reconnects at the watermark again. Last comes "Read completion
//! overhead". A write takes its data over the bus first, disconnects
//! ("Write disconnect overhead"), writes the media, reconnects and
//! completes ("Write completion overhead"); with write-back ("Fast write
//! level") it completes once the data is buffered. A drive that "Never
//! disconnect"s keeps the bus throughout. When the previous request was a
//! write and this write does not continue it, the HP C2247A disconnects
//! once more before taking the data ("Extra write disconnect" and the
//! "Extradisc ..." values); its measured trace marks those writes "Trip",
//! the others "Doub".

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
/// on the previous request's direction, and the bus. Every value already
/// includes "Time scale for overheads".
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
    /// "Per-request overhead time": before anything else.
    pub per_request_ms: f64,
    /// Host bus time per 512-byte block, reading and writing: the slower
    /// of the disk's bus and the disk's own "Bulk sector transfer time".
    pub bus_read_block_ms: f64,
    pub bus_write_block_ms: f64,
    /// Fraction (of the request or of the segment, `watermark_by_request`)
    /// buffered before a read reconnects, and left before a write does.
    pub read_watermark: f64,
    pub write_watermark: f64,
    pub watermark_by_request: bool,
    /// "Minimum seek delay": a write's positioning takes at least this
    /// long, even on the track the head is on.
    pub min_write_seek_ms: f64,
    pub never_disconnect: bool,
    pub hold_bus_read: bool,
    pub hold_bus_write: bool,
    /// A read hit may send its data while the mechanism serves something
    /// else ("Allow sneaky full/partial read hits").
    pub sneaky_full_read_hits: bool,
    pub sneaky_partial_read_hits: bool,
    /// A write may fill a buffer segment while the mechanism serves
    /// something else ("Allow write prebuffering").
    pub write_prebuffering: bool,
    /// A prefetch interrupted while seeking or in a sector cannot be cut
    /// short: the new request waits for it ("Disconnect write if seek").
    pub wait_for_prefetch_step: bool,
}

impl Controller {
    /// A controller with one overhead for every command, no disconnect
    /// costs, the bus held during transfers, and the given bus time per
    /// block: the "controller overhead" of Ruemmler & Wilkes's model.
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
            per_request_ms: 0.0,
            bus_read_block_ms: bus_block_ms,
            bus_write_block_ms: bus_block_ms,
            read_watermark: 0.0,
            write_watermark: 0.0,
            watermark_by_request: true,
            min_write_seek_ms: 0.0,
            never_disconnect: false,
            hold_bus_read: true,
            hold_bus_write: true,
            sneaky_full_read_hits: false,
            sneaky_partial_read_hits: false,
            write_prebuffering: false,
            wait_for_prefetch_step: false,
        }
    }

    /// All values must be finite and non-negative; the watermarks in [0, 1].
    pub fn check(&self, what: &str) -> crate::error::Result<()> {
        let mut v: Vec<(&str, f64)> = Vec::new();
        for (name, a) in [
            ("read hit overhead", self.read_hit_ms),
            ("read miss overhead", self.read_miss_ms),
            ("write hit overhead", self.write_hit_ms),
            ("write miss overhead", self.write_miss_ms),
            ("read disconnect overhead", self.read_disconnect_ms),
        ] {
            v.extend(a.iter().map(|x| (name, *x)));
        }
        v.extend([
            ("read completion overhead", self.read_complete_ms),
            ("write completion overhead", self.write_complete_ms),
            ("data preparation overhead", self.data_prep_ms),
            ("first reselect overhead", self.reselect_first_ms),
            ("other reselect overhead", self.reselect_other_ms),
            ("write disconnect overhead", self.write_disconnect_ms),
            ("per-request overhead", self.per_request_ms),
            ("minimum seek delay", self.min_write_seek_ms),
            ("bus read block transfer time", self.bus_read_block_ms),
            ("bus write block transfer time", self.bus_write_block_ms),
        ]);
        if let Some(e) = &self.extra_disconnect {
            v.extend([
                ("extradisc command overhead", e.command_ms),
                ("extradisc disconnect overhead", e.disconnect_ms),
                ("extradisc inter-disconnect delay", e.inter_disconnect_ms),
                ("extradisc 2nd disconnect overhead", e.second_disconnect_ms),
                ("extradisc seek delta", e.seek_delta_ms),
            ]);
        }
        if let Some((name, x)) = v.iter().find(|(_, x)| !x.is_finite() || *x < 0.0) {
            return Err(crate::error::Error::invalid(what, format!("{name} must be finite and >= 0 ms, not {x}")));
        }
        for (name, w) in [("read watermark", self.read_watermark), ("write watermark", self.write_watermark)] {
            if !(0.0..=1.0).contains(&w) {
                return Err(crate::error::Error::invalid(what, format!("{name} must be in [0, 1], not {w}")));
            }
        }
        Ok(())
    }
}
