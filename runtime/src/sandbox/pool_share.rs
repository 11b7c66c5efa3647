//! A call's share of its engine's pool: the linear memories and tables its
//! component creates, taken before it is instantiated.
//!
//! The pool holds [`MEMORIES_PER_CALL`](super::MEMORIES_PER_CALL) memories
//! per call on average, while one component may create up to
//! [`MAX_MEMORIES_PER_CALL`](super::MAX_MEMORIES_PER_CALL). Admission
//! counted in calls alone let a few calls near that limit take every
//! memory, and another plugin's call then failed with a pool error. Taken
//! as weights, that call waits for its memories as any call waits for a
//! slot (the queue is first come, first served, so a large share is not
//! passed over by small ones). Core instances are only counted by the
//! pool, not reserved, so the pool is sized for every call at the
//! instances limit instead of weighing them.

use super::{Limits, owned_permits_unless_cancelled};
use crate::failure::CallFailure;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use wasmtime::component::Component;

/// What a component creates when it is instantiated, known before it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Needs {
    memories: usize,
    tables: usize,
}

impl Needs {
    pub(crate) fn new(memories: usize, tables: usize) -> Self {
        Needs { memories, tables }
    }

    /// Whether these are no more than `other`, in both counts.
    pub(crate) fn within(&self, other: &Needs) -> bool {
        self.memories <= other.memories && self.tables <= other.tables
    }
    /// `component`'s needs; `None` when they depend on a core module it
    /// imports, which no plugin's linker provides.
    pub(crate) fn of(component: &Component) -> Option<Self> {
        let required = component.resources_required()?;
        Some(Needs { memories: required.num_memories as usize, tables: required.num_tables as usize })
    }

    /// The count limit in `limits` this component breaks: the host's own
    /// count, so the call is refused before anything is made, naming the
    /// limit (wasmtime would say it only in words, and a byte limit the
    /// memories reached on the way could be blamed instead).
    pub(crate) fn refused_by(&self, limits: &Limits) -> Option<CallFailure> {
        if self.memories > limits.memories {
            return Some(CallFailure::ResourceLimit { what: "memories", limit: limits.memories });
        }
        (self.tables > limits.tables).then_some(CallFailure::ResourceLimit { what: "tables", limit: limits.tables })
    }

    /// What a call under `limits` may take: its needs, or where unknown as
    /// much as its limits allow.
    pub(crate) fn weighed(needs: Option<Needs>, limits: &Limits) -> Needs {
        needs.unwrap_or(Needs { memories: limits.memories, tables: limits.tables })
    }
}

/// One engine's pooled memories and tables, as permits.
pub(crate) struct PoolShares {
    memories: Arc<Semaphore>,
    tables: Arc<Semaphore>,
    memories_total: usize,
    tables_total: usize,
}

/// The memories and tables one instance holds until its store is gone
/// (the call's, or one kept ready for a call).
pub(crate) struct Share {
    _memories: Option<OwnedSemaphorePermit>,
    _tables: Option<OwnedSemaphorePermit>,
}

impl PoolShares {
    /// A pool of `memories` linear memories and `tables` tables.
    pub(crate) fn new(memories: usize, tables: usize) -> Self {
        PoolShares {
            memories: Arc::new(Semaphore::new(memories)),
            tables: Arc::new(Semaphore::new(tables)),
            memories_total: memories,
            tables_total: tables,
        }
    }

    /// Wait for `needs`, or `None` when `cancel` fires first. Memories are
    /// always taken before tables, so two waiting calls never hold what
    /// the other waits for. A need larger than the whole pool takes all
    /// of it; the instantiation then fails and says which pool ran out.
    pub(crate) async fn take(&self, needs: Needs, cancel: &CancellationToken) -> Option<Share> {
        let memories = take(&self.memories, needs.memories.min(self.memories_total), cancel).await?;
        let tables = take(&self.tables, needs.tables.min(self.tables_total), cancel).await?;
        Some(Share { _memories: memories, _tables: tables })
    }

    /// `needs` if free now, without waiting: for an instance made ahead
    /// of its call, which never makes a call wait.
    pub(crate) fn take_now(&self, needs: Needs) -> Option<Share> {
        let now = |pool: &Arc<Semaphore>, count: usize| match u32::try_from(count).ok()? {
            0 => Some(None),
            count => pool.clone().try_acquire_many_owned(count).ok().map(Some),
        };
        let memories = now(&self.memories, needs.memories)?;
        let tables = now(&self.tables, needs.tables)?;
        Some(Share { _memories: memories, _tables: tables })
    }
}

/// `count` permits of `pool` (`Some(None)` for none), or `None` when
/// `cancel` fires first.
async fn take(pool: &Arc<Semaphore>, count: usize, cancel: &CancellationToken) -> Option<Option<OwnedSemaphorePermit>> {
    match u32::try_from(count).unwrap_or(u32::MAX) {
        0 => Some(None),
        count => owned_permits_unless_cancelled(pool, count, cancel).await.map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_call_waits_for_the_memories_another_holds_and_runs_once_they_are_back() {
        let pool = PoolShares::new(16, 64);
        let never = CancellationToken::new();
        let large = pool.take(Needs { memories: 8, tables: 1 }, &never).await.expect("free");
        let second = pool.take(Needs { memories: 8, tables: 1 }, &never).await.expect("free");
        let small = pool.take(Needs { memories: 1, tables: 1 }, &never);
        tokio::pin!(small);
        assert!(tokio::time::timeout(Duration::from_millis(50), small.as_mut()).await.is_err(), "no memory is free");
        drop(large);
        assert!(small.await.is_some(), "a memory came back");
        drop(second);
    }

    #[tokio::test]
    async fn a_waiting_call_is_cancelled_and_a_need_past_the_pool_takes_all_of_it() {
        let pool = PoolShares::new(16, 4);
        let cancel = CancellationToken::new();
        let all = pool.take(Needs { memories: 40, tables: 9 }, &cancel).await.expect("clamped to the pool");
        let waiting = pool.take(Needs { memories: 1, tables: 0 }, &cancel);
        cancel.cancel();
        assert!(waiting.await.is_none());
        drop(all);
        assert_eq!(pool.memories.available_permits(), 16);
        assert_eq!(pool.tables.available_permits(), 4);
    }

    #[test]
    fn counts_past_the_limits_are_named_before_anything_is_made() {
        let limits = Limits { memories: 8, tables: 4, ..Limits::default() };
        let too_many = Needs { memories: 9, tables: 1 };
        assert_eq!(too_many.refused_by(&limits), Some(CallFailure::ResourceLimit { what: "memories", limit: 8 }));
        let tables = Needs { memories: 1, tables: 5 };
        assert_eq!(tables.refused_by(&limits), Some(CallFailure::ResourceLimit { what: "tables", limit: 4 }));
        assert_eq!(Needs { memories: 8, tables: 4 }.refused_by(&limits), None);
        assert_eq!(Needs::weighed(None, &limits), Needs { memories: 8, tables: 4 });
    }
}
