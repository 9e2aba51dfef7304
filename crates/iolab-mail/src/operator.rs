//! What the queue commands (`admin.rs`) and delivery (`deliver.rs`) agree
//! on while the server runs, so that an operator's delete is final:
//! Postfix's `postsuper -d` removes a message, and its delivery agents
//! then report on nothing. A message deleted while a delivery holds it is
//! remembered here; the delivery's results are then dropped instead of
//! being stored (no bounce, no record for the deferred recipients, no
//! retry), and a delivery not yet begun is not begun. Settling a message
//! and deleting one take the same lock, so a delete never lands between
//! the records that settling stores and the acknowledgement that follows
//! them (the deferred recipients' record would outlive the delete).

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

/// The ids (of the main queue) deleted by the operator since start, and
/// the lock that settling and deleting share. The set has a lock of its
/// own, held only to look up or change it, because the delivery workers
/// (tokio tasks, which must not block) look at it; the settle lock is
/// taken on blocking threads only, and held across queue writes.
#[derive(Default)]
pub(crate) struct Operator {
    settle: Mutex<()>,
    deleted: Mutex<HashSet<u64>>,
}

impl Operator {
    /// Held while a message is settled or deleted (blocking threads only).
    pub(crate) fn hold(&self) -> MutexGuard<'_, ()> {
        self.settle.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self) -> MutexGuard<'_, HashSet<u64>> {
        self.deleted.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the operator deleted `id`.
    pub(crate) fn deleted(&self, id: u64) -> bool {
        self.set().contains(&id)
    }

    /// Whether the operator deleted `id`; forgets it (its delivery is
    /// settled now, and the queue never hands the id out again).
    pub(crate) fn take_deleted(&self, id: u64) -> bool {
        self.set().remove(&id)
    }

    /// Records ids the operator deleted (an id never taken again stays in
    /// the set, 8 bytes, until the server stops).
    pub(crate) fn mark_deleted(&self, ids: &[u64]) {
        self.set().extend(ids.iter().copied());
    }
}
