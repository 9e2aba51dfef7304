//! An emulated disk: an image file served over NBD with the timing of an
//! `iolab-sim` disk model, so a QEMU guest (or any NBD client) runs on a
//! disk that behaves, request by request, like the simulator's.
//!
//! Brief overview: [`Emulator::start`] takes a [`Config`] (the disk model
//! as a [`DiskSpec`](iolab_sim::disk::DiskSpec), the image, where to
//! listen, the log). Each connection runs the NBD handshake
//! ([`nbd::handshake`]) and then queues its requests ([`nbd::request`])
//! for the one drive thread ([`drive`]), which serves them one at a time
//! in arrival order: the [`Model`] charges each at its start instant on
//! the [`ModelClock`] (real time since the start, so the platters turn
//! with the wall clock), the data moves between the request and the
//! [`Image`], and the reply leaves when the clock reaches the model's
//! completion. Every request goes to the [`RequestLog`].
//!
//! ```no_run
//! use iolab_emu::{Config, Emulator, Listen};
//! use iolab_sim::disk::DiskSpec;
//! let disk = DiskSpec { preset: Some("hp97560".into()), ..DiskSpec::default() };
//! let emu = Emulator::start(Config::new(disk, "disk.img", Listen::Unix("nbd.sock".into())))?;
//! // qemu-system-x86_64 ... -drive file=nbd:unix:nbd.sock,format=raw,if=virtio
//! let stats = emu.shutdown().unwrap();
//! # Ok::<(), iolab_emu::Error>(())
//! ```

pub mod clock;
mod drive;
pub mod error;
pub mod image;
mod listen;
pub mod log;
pub mod model;
pub mod nbd;
mod outbox;
pub mod server;
mod stats;

pub use clock::ModelClock;
pub use error::{Error, Result};
pub use image::{Image, Opened};
pub use listen::Listen;
pub use log::{Record, RequestLog};
pub use model::{Model, Op};
pub use server::{Config, Emulator};
pub use stats::{Lateness, Stats};

/// The iolab version, recorded in every log.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
