//! Readers of trace files.

pub mod disksim_validation;
