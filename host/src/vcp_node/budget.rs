//! The bytes one connection may hold: [`MAX_PENDING_BYTES`] of requests
//! running or waiting and of results not yet written. A request takes its
//! share when it arrives, or is refused at once; a result takes its share
//! before it is queued (a file's before it is read) and gives it back once
//! written.

use super::config::MAX_PENDING_BYTES;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A connection's byte budget, counted in KiB so it fits a semaphore.
#[derive(Clone)]
pub(super) struct Budget(Arc<Semaphore>);

impl Budget {
    /// The whole of [`MAX_PENDING_BYTES`].
    pub(super) fn new() -> Self {
        Budget(Arc::new(Semaphore::new(MAX_PENDING_BYTES >> 10)))
    }

    /// `bytes` of it now, if they are free.
    pub(super) fn try_take(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        self.0.clone().try_acquire_many_owned(kib(bytes)).ok()
    }

    /// `bytes` of it, once they are free (the semaphore is fair: a large
    /// share is not passed over by small ones).
    pub(super) async fn reserve(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        self.0.clone().acquire_many_owned(kib(bytes)).await.ok()
    }
}

/// `bytes` as KiB of the budget: at least one, at most all of it (a share
/// larger than the budget waits until nothing else is held).
fn kib(bytes: usize) -> u32 {
    let most = MAX_PENDING_BYTES >> 10;
    u32::try_from(bytes.div_ceil(1024).clamp(1, most)).unwrap_or(u32::MAX)
}
