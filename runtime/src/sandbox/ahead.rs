//! Fresh instances made ahead of their calls. Instantiating a component
//! and returning its pool slot afterwards were most of a fresh call's
//! time (8 of 12.5 µs), spent while the caller waited. Here, after a call
//! of a plugin that ran alone, one task drops its store and then makes an
//! instance of the plugin for its next call: the next call takes an
//! instance that is ready, which no call has used.
//!
//! What holds: each instance serves one call, then is dropped; one made
//! for other limits than the call's is dropped unused, as are those of a
//! plugin reloaded or unloaded (they live in its `Prepared`, linked for
//! its grants); at most one waits per plugin and engine, and at most
//! [`SandboxSize::ahead`](super::SandboxSize::ahead) in all, each holding
//! memories and tables the pool reserved beside the calls' (so an
//! instance waiting never makes a call wait); making an instance runs the
//! component's start functions outside any call, so a plugin granted
//! anything (a directory, a variable, a host) gets none; an instance is
//! made only while no call runs and a slot is free, within 200 ms, after a
//! call that succeeded, under the plugin's own limits; one that fails to be
//! made is simply not there (its call makes one and reports what went
//! wrong).

use super::bindings::ReadyPlugin;
use super::call::{STDIO_CAPTURE_BYTES, begin_call};
use super::call_state::CallState;
use super::capture::Capture;
use super::pool_share::{Needs, Share};
use super::{EPOCH_TICK, Grants, Limits, MEMORIES_PER_CALL, Prepared, Sandbox, TABLES_PER_CALL};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime::component::Instance;

/// The longest an instance may take to be made ahead; one that takes
/// longer is not kept (its call makes its own, under its own time).
const MAKING_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(200);

/// An instance made for a call under `limits`, never used.
pub(crate) struct ReadyInstance {
    pub(crate) store: Store<CallState>,
    pub(crate) instance: Instance,
    pub(crate) stdout: Capture,
    pub(crate) stderr: Capture,
    pub(crate) share: Option<Share>,
    limits: Limits,
    /// Its place among the sandbox's instances kept ready.
    _kept: OwnedSemaphorePermit,
}

/// One plugin's instances kept ready: at most one per engine.
pub(crate) struct AheadSlots {
    slots: Vec<Mutex<Slot>>,
}

/// Where one engine's instance of a plugin stands.
enum Slot {
    Empty,
    /// Being made: nobody else starts one.
    Making,
    Ready(Box<ReadyInstance>),
}

impl AheadSlots {
    pub(crate) fn new(engines: usize) -> Self {
        AheadSlots { slots: (0..engines).map(|_| Mutex::new(Slot::Empty)).collect() }
    }

    /// The instance ready in `shard` for a call under `limits`; one made
    /// for other limits is dropped unused.
    pub(crate) fn take(&self, shard: usize, limits: &Limits, counts: &AheadCounts) -> Option<ReadyInstance> {
        let mut slot = self.slot(shard);
        if !matches!(*slot, Slot::Ready(_)) {
            return None; // empty, or still being made: leave it
        }
        let Slot::Ready(ready) = std::mem::replace(&mut *slot, Slot::Empty) else { return None };
        drop(slot);
        if ready.limits != *limits {
            counts.discarded.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        counts.taken.fetch_add(1, Ordering::Relaxed);
        Some(*ready)
    }

    /// Claim `shard`'s slot for an instance to be made; false when one is
    /// there or being made.
    fn claim(&self, shard: usize) -> bool {
        let mut slot = self.slot(shard);
        let empty = matches!(*slot, Slot::Empty);
        if empty {
            *slot = Slot::Making;
        }
        empty
    }

    /// What was being made in `shard`: `ready`, or nothing.
    fn made(&self, shard: usize, ready: Option<ReadyInstance>) {
        *self.slot(shard) = ready.map_or(Slot::Empty, |ready| Slot::Ready(Box::new(ready)));
    }

    fn slot(&self, shard: usize) -> std::sync::MutexGuard<'_, Slot> {
        self.slots[shard].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What the instances kept ready have done, since the sandbox began.
#[derive(Default)]
pub(crate) struct AheadCounts {
    made: AtomicU64,
    taken: AtomicU64,
    discarded: AtomicU64,
    failed: AtomicU64,
}

/// The sandbox's instances kept ready, now and since it began
/// ([`Sandbox::instances_ahead`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct InstancesAhead {
    /// Ready now or being made, each holding its memories.
    pub held: u32,
    /// The most that may be ready at once ([`SandboxSize::ahead`](super::SandboxSize::ahead)).
    pub limit: u32,
    /// Made ahead of a call.
    pub made: u64,
    /// Taken by a call.
    pub taken: u64,
    /// Dropped unused: made for other limits than the call's.
    pub discarded: u64,
    /// That could not be made (their call made its own).
    pub failed: u64,
}

impl Sandbox {
    /// The instances kept ready: how many now, and what they have done.
    pub fn instances_ahead(&self) -> InstancesAhead {
        let count = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let counts = &self.ahead_counts;
        InstancesAhead {
            held: self.size.ahead.saturating_sub(self.ahead_kept.available_permits() as u32),
            limit: self.size.ahead,
            made: count(&counts.made),
            taken: count(&counts.taken),
            discarded: count(&counts.discarded),
            failed: count(&counts.failed),
        }
    }

    /// An order to make an instance of `prepared` ready in `shard` for its
    /// next call under `limits`, for the caller to carry out off the
    /// call's path; none when one is there, none may be kept, the plugin
    /// is granted anything, or its memories and tables are more than an
    /// average call's (see the module's notes). Placing the order is only
    /// checks and reference counts: the work, and the future that does it,
    /// are made where it is carried out.
    pub(crate) fn order_ahead(
        self: &Arc<Self>,
        prepared: &Prepared,
        shard: usize,
        pre: &ReadyPlugin,
        plugin: &str,
        grants: &Grants,
        limits: &Limits,
    ) -> Option<AheadOrder> {
        // Making an instance runs the component's start functions with its
        // grants, outside any call: only a plugin granted nothing (no
        // directory, whose descriptors it would hold between calls; no
        // variable; no host) gets instances made ahead.
        if !grants.dirs.is_empty() || !grants.env.is_empty() || !grants.http_hosts.is_empty() {
            return None;
        }
        let average = Needs::new(MEMORIES_PER_CALL as usize, TABLES_PER_CALL as usize);
        let needs = prepared.needs.filter(|needs| needs.within(&average))?;
        let kept = self.ahead_kept.clone().try_acquire_owned().ok()?;
        let making = Making::claim(&prepared.ahead, shard)?;
        Some(AheadOrder {
            sandbox: self.clone(),
            making,
            needs,
            kept,
            pre: pre.clone(),
            plugin: plugin.to_owned(),
            limits: *limits,
        })
    }
}

/// An instance to be made ahead ([`Sandbox::order_ahead`]): its slot is
/// claimed and its place among those kept is held.
pub(crate) struct AheadOrder {
    sandbox: Arc<Sandbox>,
    making: Making,
    needs: Needs,
    kept: OwnedSemaphorePermit,
    pre: ReadyPlugin,
    plugin: String,
    limits: Limits,
}

impl AheadOrder {
    /// Make the instance, unless a call runs or no slot or pool share is
    /// free: instances kept ready never hold back a call, for a slot or
    /// for memories.
    pub(crate) async fn carry_out(self) {
        let AheadOrder { sandbox, making, needs, kept, pre, plugin, limits } = self;
        if sandbox.calls_running() {
            return;
        }
        let shard = making.shard;
        let share = match &sandbox.shards[shard].pool {
            Some(pool) => pool.take_now(needs).map(Some),
            None => Some(None),
        };
        let (Some(_slot), Some(share)) = (sandbox.call_slot_now(), share) else {
            return;
        };
        let (stdout, stderr) = (Capture::new(STDIO_CAPTURE_BYTES), Capture::new(STDIO_CAPTURE_BYTES));
        // Granted nothing, as `order_ahead` checked.
        let store =
            sandbox.new_store(shard, &plugin, &Grants::none(), &limits, stdout.clone(), stderr.clone(), CancellationToken::new());
        let made = match store {
            Ok(mut store) => {
                let meter = store.data().work.memory.meter();
                // Its own deadline, short: making an instance is not what
                // a plugin's time is for.
                store.data_mut().set_deadline(MAKING_TIMEOUT.min(limits.timeout));
                let within = MAKING_TIMEOUT.min(limits.timeout) + 2 * EPOCH_TICK;
                let instantiated = tokio::time::timeout(within, meter.around(pre.instantiate(&mut store))).await;
                match instantiated {
                    Ok(Ok(instance)) => Some(ReadyInstance { store, instance, stdout, stderr, share, limits, _kept: kept }),
                    Ok(Err(error)) => {
                        tracing::debug!("an instance of {plugin} could not be made ahead: {error:#}");
                        None
                    }
                    Err(_) => None,
                }
            }
            Err(error) => {
                tracing::debug!("a store for {plugin} could not be made ahead: {error:#}");
                None
            }
        };
        let counter = if made.is_some() { &sandbox.ahead_counts.made } else { &sandbox.ahead_counts.failed };
        counter.fetch_add(1, Ordering::Relaxed);
        making.done(made);
    }
}

/// A plugin's slot in one engine, claimed for an instance being made. One
/// whose making ends unfinished, as when its task is dropped with the
/// runtime it was spawned on, is left empty for the next call to fill.
struct Making {
    slots: Option<Arc<AheadSlots>>,
    shard: usize,
}

impl Making {
    /// `shard`'s slot in `slots`, unless an instance is there or being made.
    fn claim(slots: &Arc<AheadSlots>, shard: usize) -> Option<Self> {
        slots.claim(shard).then(|| Making { slots: Some(slots.clone()), shard })
    }

    /// What was made: `ready`, or nothing.
    fn done(mut self, ready: Option<ReadyInstance>) {
        if let Some(slots) = self.slots.take() {
            slots.made(self.shard, ready);
        }
    }
}

impl Drop for Making {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            slots.made(self.shard, None);
        }
    }
}

impl ReadyInstance {
    /// Ready for a call that may be cancelled by `cancel`: its fuel and
    /// time start now.
    pub(crate) fn begin(&mut self, cancel: &CancellationToken) -> wasmtime::Result<()> {
        begin_call(&mut self.store, &self.limits, cancel.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_making_dropped_unfinished_leaves_its_slot_for_the_next() {
        let slots = Arc::new(AheadSlots::new(2));
        let making = Making::claim(&slots, 1).expect("an empty slot");
        assert!(Making::claim(&slots, 1).is_none(), "one instance at a time per engine");
        drop(Making::claim(&slots, 0).expect("each engine's slot is its own"));
        // As when the runtime its task was spawned on shuts down.
        drop(making);
        let again = Making::claim(&slots, 1).expect("an unfinished making gives its slot back");
        again.done(None);
        assert!(Making::claim(&slots, 1).is_some(), "nothing made: empty again");
    }
}
