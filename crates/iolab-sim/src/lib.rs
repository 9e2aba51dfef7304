//! iolab-sim: a fast, deterministic simulator of the block I/O scheduling
//! layer over realistic disk models.
//!
//! Brief overview. An [`experiment::Spec`] (TOML) names a disk
//! ([`disk::DiskSpec`]), schedulers with their tunables ([`sched`]) and a
//! workload ([`workload`]). For each scheduler and seed, the [`engine`]
//! runs processes that submit [`request::Request`]s, passes them through
//! the scheduler (an [`sched::Elevator`], the same interface as Linux's
//! `elevator_mq_ops`) to the disk model ([`disk::Disk`]), and collects
//! [`metrics`]. Time is integer nanoseconds ([`time::SimTime`]); the only
//! randomness is a seeded ChaCha8 generator ([`rng::SimRng`]), so a spec and
//! a seed give the same bytes out on every run.

pub mod blk;
pub mod cost;
pub mod disk;
pub mod engine;
pub mod error;
pub mod experiment;
pub mod field;
pub mod fileop;
pub mod histogram;
pub mod input;
pub mod limits;
pub mod metrics;
pub mod pagecache;
pub mod request;
pub mod rng;
pub mod sched;
pub mod time;
pub mod trace;
pub mod validate;
pub mod workload;

pub use error::{Error, Result};

/// The library version, recorded in every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
