//! Work the host does on a guest's behalf, charged to the call.
//!
//! Fuel meters the guest's own instructions. The host also copies and
//! keeps bytes for it — log messages, file and HTTP reads and writes,
//! strings it passes in — so every return to the guest from the host (a
//! host function, or one of wasmtime's own libcalls such as `memory.grow`)
//! charges [`HOST_CALL_FUEL`] plus [`FUEL_PER_HOST_BYTE`] for each byte the
//! host allocated for the guest (see `host_memory`) or read for it (stream
//! and file reads, which happen on other threads and are counted here), and
//! checks the bytes the host still holds for the call against its
//! host-memory limit. Either ends the call with an outcome that names it.
//!
//! The hook never fails the host call it follows, since wasmtime would then
//! drop that call's own result (an `exit`, a refusal): it takes the fuel,
//! and the guest traps out of fuel at its next instruction; a host-memory
//! overrun is recorded first so the outcome names it instead.

use super::call_state::CallState;
use super::host_account::HostLimit;
use super::wasi_versions::{WASI_FILESYSTEM_TYPES, WASI_IO_POLL, WASI_IO_STREAMS};
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::HostDescriptor;
use wasmtime_wasi::p2::bindings::io::poll::Host as PollHost;
use wasmtime_wasi::p2::bindings::io::streams::{Host as _, HostInputStream, HostOutputStream, StreamError};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable};

/// Fuel every return from the host costs, whatever it did: a host call
/// costs the host far more than one guest instruction, and a guest that
/// calls `log("")` in a loop must run out.
pub const HOST_CALL_FUEL: u64 = 1_000;
/// Fuel per byte the host copies or keeps for the guest. A tight guest
/// loop burns ~2.3e10 units/s; copying a byte costs the host roughly as
/// much as a few guest instructions, so 1 unit per byte keeps the default
/// fuel (1e9) to about 1 GB of host copying per call.
pub const FUEL_PER_HOST_BYTE: u64 = 1;

/// The call hook after every return from the host: enforce the host-memory
/// limit and charge fuel for the host's work.
pub(crate) fn after_host_call(mut store: StoreContextMut<'_, CallState>) -> wasmtime::Result<()> {
    let state = store.data_mut();
    let limit = state.limits.host_memory_bytes;
    if state.host_memory_held() > limit {
        state.listings.prune(&state.table);
    }
    if state.host_memory_held() > limit {
        state.work.exceeded = Some(HostLimit::HostMemory { limit });
        return store.set_fuel(0);
    }
    let allocated = state.work.memory.allocated();
    let bytes = allocated.saturating_sub(state.work.charged_allocations) + std::mem::take(&mut state.work.pending_bytes);
    state.work.charged_allocations = allocated;
    let charge = HOST_CALL_FUEL.saturating_add(bytes.saturating_mul(FUEL_PER_HOST_BYTE));
    let fuel = store.get_fuel()?;
    store.set_fuel(fuel.saturating_sub(charge))
}

/// Replace the functions that read for the guest with ones that count the
/// bytes, in `linker`, which already holds WASI.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut streams = linker.instance(WASI_IO_STREAMS)?;
    streams.func_wrap("[method]input-stream.read", |mut store, (stream, len): (Resource<DynInputStream>, u64)| {
        let state = store.data_mut();
        let read = state.table.read(stream, len);
        counted(state, read, |bytes| bytes.len() as u64)
    })?;
    streams.func_wrap_async(
        "[method]input-stream.blocking-read",
        |mut store, (stream, len): (Resource<DynInputStream>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                let read = state.table.blocking_read(stream, len).await;
                counted(state, read, |bytes| bytes.len() as u64)
            })
        },
    )?;
    streams.func_wrap("[method]input-stream.skip", |mut store, (stream, len): (Resource<DynInputStream>, u64)| {
        let state = store.data_mut();
        let skipped = state.table.skip(stream, len);
        counted(state, skipped, |n| *n)
    })?;
    streams.func_wrap_async(
        "[method]input-stream.blocking-skip",
        |mut store, (stream, len): (Resource<DynInputStream>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                let skipped = state.table.blocking_skip(stream, len).await;
                counted(state, skipped, |n| *n)
            })
        },
    )?;
    streams.func_wrap(
        "[method]output-stream.splice",
        |mut store, (to, from, len): (Resource<DynOutputStream>, Resource<DynInputStream>, u64)| {
            let state = store.data_mut();
            let spliced = state.table.splice(to, from, len);
            counted(state, spliced, |n| *n)
        },
    )?;
    streams.func_wrap_async(
        "[method]output-stream.blocking-splice",
        |mut store, (to, from, len): (Resource<DynOutputStream>, Resource<DynInputStream>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                let spliced = state.table.blocking_splice(to, from, len).await;
                counted(state, spliced, |n| *n)
            })
        },
    )?;
    // A poll list is lifted, then indexed in maps: as long as the call's
    // resources limit at most, since there are no more pollables than that.
    let mut poll = linker.instance(WASI_IO_POLL)?;
    poll.func_wrap_async("poll", |mut store, (pollables,): (Vec<Resource<DynPollable>>,)| {
        Box::new(async move {
            let state = store.data_mut();
            let limit = state.limits.resources;
            if pollables.len() > limit {
                return Err(HostLimit::PollList { limit }.into());
            }
            Ok((PollHost::poll(&mut state.table, pollables).await?,))
        })
    })?;
    let mut files = linker.instance(WASI_FILESYSTEM_TYPES)?;
    files.func_wrap_async("[method]descriptor.read", |mut store, (fd, len, offset): (Resource<Descriptor>, u64, u64)| {
        Box::new(async move {
            let state = store.data_mut();
            match state.filesystem().read(fd, len, offset).await {
                Ok((bytes, end)) => {
                    state.work.pending_bytes += bytes.len() as u64;
                    Ok((Ok((bytes, end)),))
                }
                Err(error) => Ok((Err(error.downcast()?),)),
            }
        })
    })?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Count what a stream call moved, and turn its error into the WIT one.
fn counted<T>(
    state: &mut CallState,
    result: Result<T, wasmtime_wasi::p2::StreamError>,
    bytes: impl Fn(&T) -> u64,
) -> wasmtime::Result<(Result<T, StreamError>,)> {
    match result {
        Ok(value) => {
            state.work.pending_bytes += bytes(&value);
            Ok((Ok(value),))
        }
        Err(error) => Ok((Err(state.table.convert_stream_error(error)?),)),
    }
}
