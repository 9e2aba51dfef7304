//! The locks, condition variables and threads of the queue: the standard
//! library's, or `loom`'s when the crate is built for the model checks
//! (`--features loom`, `tests/loom.rs`), so that the model checker runs the
//! very writer, syncers, recycler and callers the queue runs, not a copy.
//!
//! The `loom` feature is for those checks only: loom's primitives work
//! only inside `loom::model`, so a queue built with it cannot be used
//! anywhere else.
//!
//! Poisoning is ignored on purpose (`lock`, `wait`, `wait_timeout`): a
//! thread of the queue that panics marks the queue failed before it ends
//! (`Inner::died`), and every caller then gets that error; a panic of its
//! own in every later caller would add nothing but a crash.

use std::sync::{LockResult, PoisonError};
use std::time::Duration;

#[cfg(feature = "loom")]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(feature = "loom")]
pub(crate) use loom::thread::JoinHandle;
#[cfg(not(feature = "loom"))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(feature = "loom"))]
pub(crate) use std::thread::JoinHandle;

/// Locks `m`, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv`, poisoned or not.
pub(crate) fn wait<'a, T>(cv: &Condvar, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(g).unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv` for at most `d`, poisoned or not. (Under loom a timed wait
/// never times out: the models prove that no wait needs its timer to be
/// woken, see `tests/loom.rs`.)
pub(crate) fn wait_timeout<'a, T>(cv: &Condvar, g: MutexGuard<'a, T>, d: Duration) -> MutexGuard<'a, T> {
    let r: LockResult<_> = cv.wait_timeout(g, d);
    r.unwrap_or_else(PoisonError::into_inner).0
}

/// Starts a named thread.
pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<JoinHandle<()>> {
    #[cfg(feature = "loom")]
    let builder = loom::thread::Builder::new();
    #[cfg(not(feature = "loom"))]
    let builder = std::thread::Builder::new();
    builder.name(format!("fastqueue-{name}")).spawn(f)
}
