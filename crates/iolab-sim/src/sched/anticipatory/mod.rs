//! The anticipatory scheduler family (being written).

pub mod as_policy;
pub mod batch;
pub mod choose;
pub mod hz;
pub mod io_context;
pub mod policy;
pub mod wait;

/// AS's "read" direction: sync requests (index as `Request::sync_index`).
pub const SYNC: usize = 0;
/// AS's "write" direction: async requests.
pub const ASYNC: usize = 1;
