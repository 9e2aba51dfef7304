mod basic;
mod batch;
mod corrupt;
mod crash;
mod hostile;
mod library;
mod mapped;
mod torn;
mod visibility;
mod wakeup;

pub use crate::common::{drain, key_of, payload, small_config};
