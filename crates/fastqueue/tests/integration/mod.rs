mod basic;
mod batch;
mod corrupt;
mod crash;
mod hostile;
mod mapped;
mod torn;
mod visibility;

pub use crate::common::{drain, key_of, payload, small_config};
