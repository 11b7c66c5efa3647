//! One call: a fresh store and instance, the limits armed, the export
//! called, and whatever happened turned into an [`Invocation`].

use super::bindings::GuestManifest;
use super::call_state::CallState;
use super::capability::{Grants, HttpGate};
use super::capture::Capture;
use super::host_account::{HostLimit, HostWork};
use super::host_work;
use super::limits::{CallLimiter, Limits, Refusal};
use super::linking::NotGranted;
use super::open_files::{Listings, OpenFiles};
use super::plugin_log::LogBudget;
use super::wasmtime_words::{self, LimitInWords};
use super::{EPOCH_TICK, FUEL_YIELD_INTERVAL, Prepared, STACK_LIMIT_BYTES, Sandbox};
use crate::error_chain::error_chain;
use crate::failure::{CallFailure, SharedError, ToolFailure, ToolOutput};
use crate::printable::printable;
use crate::units::human_bytes;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::component::{ResourceTable, ResourceTableError};
use wasmtime::{CallHook, Store, Trap, UpdateDeadline};
use wasmtime_wasi::I32Exit;
use wasmtime_wasi_http::WasiHttpCtx;

/// Guest stdout and stderr kept per call; more is counted and dropped.
pub(crate) const STDIO_CAPTURE_BYTES: usize = 64 << 10;
/// Lines of each captured stream written to the host's debug log.
const STDIO_LOG_LINES: usize = 64;
/// The longest captured line written to the host's debug log.
const STDIO_LOG_LINE_BYTES: usize = 1 << 10;
/// Host memory one host call may receive from the guest at once (strings,
/// lists it passes), at most: wasmtime's default is 128 MiB per call,
/// outside every other limit.
const MAX_HOSTCALL_BYTES: usize = 16 << 20;
/// Component-model handles (guest-defined resources) a call may hold.
const MAX_COMPONENT_HANDLES: usize = 10_000;
/// Random bytes one `get-random-bytes` call may ask the host for (WASI's
/// default is 64 MiB, allocated on the host).
const MAX_RANDOM_BYTES: u64 = 1 << 20;

/// Which export a call runs.
pub(crate) enum Export<'a> {
    Manifest,
    /// `in_batch`: more calls of a parallel batch may follow in the
    /// caller's task, which goes on with them at once rather than waiting.
    Invoke {
        tool: &'a str,
        args_json: &'a str,
        in_batch: bool,
    },
}

/// What an export returned.
pub(crate) enum Returned {
    Manifest(GuestManifest),
    Invoke(Result<ToolOutput, ToolFailure>),
}

/// The host's own `error`, as the failure of a call.
pub(crate) fn host_failure(error: wasmtime::Error) -> CallFailure {
    CallFailure::Host { message: error_chain(&*error), source: Some(SharedError::new(error)) }
}

/// `failure`, keeping `error` as its source where it is the host's and has
/// none yet.
fn caused_by(failure: CallFailure, error: wasmtime::Error) -> CallFailure {
    match failure {
        CallFailure::Host { message, source: None } => CallFailure::Host { message, source: Some(SharedError::new(error)) },
        other => other,
    }
}

/// Raised by the epoch check when a call's token is cancelled.
#[derive(Debug, thiserror::Error)]
#[error("the call was cancelled")]
struct CancelledByToken;

impl Sandbox {
    /// Run `export` in a fresh store and instance of `prepared`, in shard
    /// `shard`, under `limits` with exactly `grants`. Never panics on guest
    /// behaviour; every trap and limit becomes a [`CallFailure`]. A
    /// cancelled `cancel` stops the call within one epoch tick, also while
    /// it waits in the host.
    #[allow(clippy::too_many_arguments, reason = "one call's every input, each used once")]
    pub(crate) async fn run(
        self: &Arc<Self>,
        prepared: &Prepared,
        shard: usize,
        plugin: &str,
        grants: &Grants,
        limits: &Limits,
        export: Export<'_>,
        cancel: &CancellationToken,
    ) -> (Result<Returned, CallFailure>, u64, Duration) {
        let start = Instant::now();
        let Some(slot) = self.call_slot(cancel).await else {
            return (Err(CallFailure::Cancelled), 0, start.elapsed());
        };
        let running = self.running();
        let (shard, pre) = self.ready_in(prepared, shard).await;
        let invoking = matches!(export, Export::Invoke { .. });
        let in_batch = matches!(export, Export::Invoke { in_batch: true, .. });
        let ready = if invoking { prepared.ahead.take(shard, limits, &self.ahead_counts) } else { None };
        let (mut store, made, share, stdout, stderr) = match ready {
            Some(mut ready) => {
                if let Err(e) = ready.begin(cancel) {
                    return (Err(host_failure(e)), 0, start.elapsed());
                }
                (ready.store, Some(ready.instance), ready.share, ready.stdout, ready.stderr)
            }
            None => {
                let share = match self.pool_share(prepared, shard, limits, cancel).await {
                    Err(failure) => return (Err(failure), 0, start.elapsed()),
                    Ok(share) => share,
                };
                let (stdout, stderr) = (Capture::new(STDIO_CAPTURE_BYTES), Capture::new(STDIO_CAPTURE_BYTES));
                match self.new_store(shard, plugin, grants, limits, stdout.clone(), stderr.clone(), cancel.clone()) {
                    Ok(store) => (store, None, share, stdout, stderr),
                    Err(e) => return (Err(host_failure(e)), 0, start.elapsed()),
                }
            }
        };

        let meter = store.data().work.memory.meter();
        let reading_manifest = matches!(export, Export::Manifest);
        let mut instantiated = made.is_some();
        let call = async {
            let instance = match made {
                Some(instance) => instance,
                None => pre.instantiate(&mut store).await?,
            };
            instantiated = true;
            match export {
                Export::Manifest => pre.call_manifest(&instance, &mut store).await.map(Returned::Manifest),
                Export::Invoke { tool, args_json, .. } => {
                    pre.call_invoke(&instance, &mut store, tool, args_json).await.map(Returned::Invoke)
                }
            }
        };
        // The epoch deadline stops guest code; this stops a guest that is
        // waiting inside a host call (a sleep, a slow HTTP response). Most
        // calls never wait: they finish in their first poll, and need
        // neither a timer nor a place among the token's waiters (about
        // 0.1 µs of an idle host's 3.6 µs call). Guest code checks the
        // token at every epoch tick either way.
        let timeout_at = tokio::time::Instant::now() + limits.timeout + 2 * EPOCH_TICK;
        let outcome = {
            let mut call = std::pin::pin!(meter.around(call));
            // A call cancelled since its slot was taken does not start.
            let first = if cancel.is_cancelled() {
                Poll::Ready(None)
            } else {
                std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx).map(Some))).await
            };
            match first {
                Poll::Ready(None) => None,
                Poll::Ready(Some(returned)) => Some(Ok(returned)),
                Poll::Pending => tokio::select! {
                    biased;
                    () = cancel.cancelled() => None,
                    outcome = tokio::time::timeout_at(timeout_at, call) => Some(outcome),
                },
            }
        };

        let fuel_used = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let result = match outcome {
            None => Err(CallFailure::Cancelled),
            Some(Err(_elapsed)) => Err(CallFailure::TimedOut { limit: limits.timeout }),
            Some(Ok(Err(error))) => {
                Err(caused_by(classify(&error, store.data(), &stderr, reading_manifest, instantiated), error))
            }
            Some(Ok(Ok(returned))) => Ok(returned),
        };
        let result = result.and_then(|returned| check_returned(returned, store.data()));
        emit_stdio(plugin, &stdout, &stderr);
        let elapsed = start.elapsed();
        // With instances made ahead and the host otherwise idle, returning
        // this instance to the pool and making the next one are work the
        // caller need not wait for (its slot and memories are held until
        // the instance is gone). On a host where other calls ran meanwhile,
        // or in a batch whose next call follows at once, it is done here,
        // as it was: a loaded host does no more work per call, and no
        // finished call's slot waits for a busy thread to drop it.
        let alone = running.ends_alone();
        if !invoking || self.size.ahead == 0 || in_batch || !alone {
            drop(store);
            drop((share, slot));
        } else {
            // After a failure the next call may well fail as this one did.
            // One task for both: a worker runs the task it spawned last
            // before any other, without waking another thread for it. It
            // yields first, so that the tasks the answer wakes (a door
            // writing it out) run before it: on one thread, `toolhost mcp`
            // answered 186-197 µs against 196-213 µs without the yield.
            let next = if result.is_ok() { self.order_ahead(prepared, shard, pre, plugin, grants, limits) } else { None };
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                drop(store);
                drop((share, slot));
                if let Some(next) = next {
                    // Boxed: the task spawned on the call's path stays small.
                    Box::pin(next.carry_out()).await;
                }
            });
        }
        (result, fuel_used, elapsed)
    }

    #[allow(clippy::too_many_arguments, reason = "one store's every input, each used once")]
    pub(crate) fn new_store(
        &self,
        shard: usize,
        plugin: &str,
        grants: &Grants,
        limits: &Limits,
        stdout: Capture,
        stderr: Capture,
        cancel: CancellationToken,
    ) -> wasmtime::Result<Store<CallState>> {
        let mut table = ResourceTable::new();
        table.set_max_capacity(limits.resources);
        let work = HostWork::new().ok_or_else(|| {
            wasmtime::format_err!("more than {} calls at once: no host-memory account is free", super::host_memory::SLOTS)
        })?;
        let state = CallState {
            wasi: grants.wasi_ctx(stdout, stderr, MAX_RANDOM_BYTES)?,
            http: WasiHttpCtx::new(),
            table,
            http_gate: HttpGate::new(grants.http_hosts.clone(), limits.http_requests),
            limiter: CallLimiter::new(*limits),
            limits: *limits,
            plugin: plugin.to_owned(),
            log: LogBudget::new(),
            open_files: OpenFiles::new(limits.open_files),
            listings: Listings::default(),
            cancel: cancel.clone(),
            deadline: Instant::now() + limits.timeout,
            work,
        };
        let mut store = Store::new(self.engine_of(shard), state);
        store.limiter(|state| &mut state.limiter);
        store.set_hostcall_fuel(hostcall_bytes(limits));
        store.set_max_component_handles(MAX_COMPONENT_HANDLES);
        store.call_hook(|store, hook| match hook {
            CallHook::ReturningFromHost => host_work::after_host_call(store),
            _ => Ok(()),
        });
        store.fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL))?;
        begin_call(&mut store, limits, cancel)?;
        // Every tick, guest code checks whether its call was cancelled or
        // its time is up, and gives its thread back through tokio's yield,
        // which waits for the runtime to look at its I/O and its other
        // threads' wake-ups. Wasmtime's own yield (the fuel interval's)
        // puts the call straight back in line: a one-thread runtime (`mcp`
        // over stdio, where a lone call runs on the thread that reads the
        // requests) would look at stdin only every 61 slices.
        store.epoch_deadline_callback(|store| {
            let state = store.data();
            if state.cancel.is_cancelled() {
                return Err(CancelledByToken.into());
            }
            Ok(if Instant::now() >= state.deadline {
                UpdateDeadline::Interrupt
            } else {
                UpdateDeadline::YieldCustom(1, Box::pin(tokio::task::yield_now()))
            })
        });
        Ok(store)
    }

    /// Instantiate once and call `invoke` `times` times on the same
    /// instance: the floor a fresh instance per call is measured against.
    /// With no `idle`, back to back, their total time; with one, each call
    /// after the thread has idled that long (yielding, as a caller between
    /// a model's calls would), each call's time. For benchmarks only;
    /// toolhost never reuses an instance.
    pub(crate) async fn invoke_reused(
        &self,
        prepared: &Prepared,
        grants: &Grants,
        tool: &str,
        args_json: &str,
        times: u32,
        idle: Option<Duration>,
    ) -> wasmtime::Result<Vec<Duration>> {
        let limits = Limits { fuel: u64::MAX / 2, ..Limits::default() };
        let slot = self.call_slot(&CancellationToken::new()).await;
        let pipe = || Capture::new(STDIO_CAPTURE_BYTES);
        let (shard, pre) = self.ready_in(prepared, 0).await;
        let mut store = self.new_store(shard, "bench", grants, &limits, pipe(), pipe(), CancellationToken::new())?;
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = pre.instantiate(&mut store).await?;
        let Some(idle) = idle else {
            let start = Instant::now();
            pre.call_invoke_repeatedly(&instance, &mut store, tool, args_json, times).await?;
            return Ok(vec![start.elapsed()]);
        };
        // Idling as a caller between calls does: holding no slot.
        drop(slot);
        let mut took = Vec::with_capacity(times as usize);
        for _ in 0..times {
            let until = Instant::now() + idle;
            while Instant::now() < until {
                tokio::task::yield_now().await;
            }
            let start = Instant::now();
            let _slot = self.call_slot(&CancellationToken::new()).await;
            pre.call_invoke_repeatedly(&instance, &mut store, tool, args_json, 1).await?;
            took.push(start.elapsed());
        }
        Ok(took)
    }
}

/// Start a call in `store` under `limits`, cancelled by `cancel`: its fuel
/// is full and its time runs from now (also for an instance made ahead,
/// whose making had fuel and time of its own).
pub(crate) fn begin_call(store: &mut Store<CallState>, limits: &Limits, cancel: CancellationToken) -> wasmtime::Result<()> {
    let state = store.data_mut();
    state.cancel = cancel;
    state.set_deadline(limits.timeout);
    store.set_fuel(limits.fuel)?;
    store.set_epoch_deadline(1);
    Ok(())
}

/// A returned value can still break a limit: the output cap (which an
/// error message is held to as well), or an HTTP denial the plugin turned
/// into its own error.
fn check_returned(returned: Returned, state: &CallState) -> Result<Returned, CallFailure> {
    let limit = state.limits.output_bytes;
    if let Some(exceeded) = state.work.exceeded {
        // The last host call went over; the guest returned before its next
        // instruction could trap.
        return Err(exceeded.into());
    }
    let Returned::Invoke(Err(mut failure)) = returned else {
        return match returned {
            Returned::Invoke(Ok(output)) if output.as_str().len() > limit => {
                Err(CallFailure::OutputTooLarge { size: output.as_str().len(), limit })
            }
            returned => Ok(returned),
        };
    };
    if failure.message.len() > limit {
        let size = failure.message.len();
        failure.message.truncate(failure.message.floor_char_boundary(limit));
        failure.message.push_str(&format!(
            " … [the plugin's error message of {} was cut at the output limit of {}]",
            human_bytes(size),
            human_bytes(limit)
        ));
    }
    // A refused request explains the failure that followed; the plugin's
    // own words stay, as context.
    if state.http_gate.refused() {
        return Err(CallFailure::HttpDenied {
            plugin: state.plugin.clone(),
            hosts: state.http_gate.denied_hosts(),
            plugin_error: failure.message,
        });
    }
    if state.http_gate.out_of_requests {
        return Err(CallFailure::HttpRequestsLimit { limit: state.limits.http_requests, plugin_error: failure.message });
    }
    Ok(Returned::Invoke(Err(failure)))
}

impl From<HostLimit> for CallFailure {
    fn from(limit: HostLimit) -> Self {
        match limit {
            HostLimit::HostMemory { limit } => CallFailure::HostMemoryLimit { limit },
            HostLimit::OpenFiles { limit } => CallFailure::ResourceLimit { what: "open files", limit },
            HostLimit::OpenFilesAllCalls { limit } => CallFailure::ResourceLimit { what: "open files of all calls", limit },
            HostLimit::PollList { limit } => CallFailure::ResourceLimit { what: "poll list", limit },
        }
    }
}

/// Name what ended a failed call: the error itself says so (a trap, a
/// host limit, a refused grant, an exit); a growth the limiter refused
/// earlier only explains a trap that has no other cause.
fn classify(
    error: &wasmtime::Error,
    state: &CallState,
    stderr: &Capture,
    reading_manifest: bool,
    instantiated: bool,
) -> CallFailure {
    let limits = &state.limits;
    if let Some(&limit) = error.downcast_ref::<HostLimit>() {
        return limit.into();
    }
    if let Some(refused) = error.downcast_ref::<NotGranted>() {
        return CallFailure::NotGranted {
            plugin: state.plugin.clone(),
            reading_manifest,
            capability: refused.capability,
            function: refused.function.clone(),
        };
    }
    if error.downcast_ref::<CancelledByToken>().is_some() {
        return CallFailure::Cancelled;
    }
    if let Some(exit) = error.downcast_ref::<I32Exit>() {
        return CallFailure::Exited { status: exit.0 };
    }
    if let Some(ResourceTableError::Full) = error.downcast_ref::<ResourceTableError>() {
        return CallFailure::ResourceLimit { what: "resources", limit: limits.resources };
    }
    if let Some(exhausted) = error.downcast_ref::<wasmtime::PoolConcurrencyLimitError>() {
        return CallFailure::Host { message: format!("the sandbox's pool is exhausted: {exhausted}"), source: None };
    }
    match error.downcast_ref::<Trap>() {
        // The hook takes the fuel of a call over its host-memory limit.
        Some(Trap::OutOfFuel) if state.work.exceeded.is_some() => state.work.exceeded.map(CallFailure::from).expect("checked"),
        Some(Trap::OutOfFuel) => CallFailure::OutOfFuel { limit: limits.fuel },
        Some(Trap::Interrupt) => CallFailure::TimedOut { limit: limits.timeout },
        Some(Trap::StackOverflow) => CallFailure::StackOverflow { limit: STACK_LIMIT_BYTES },
        // A guest whose allocation failed after a refused growth aborts
        // with `unreachable`: that is the limit, whatever the guest printed
        // on its way out (its output is its own to forge). Any other trap
        // is reported as itself, the refusal as context.
        Some(Trap::UnreachableCodeReached) if state.limiter.refused.is_some() => match state.limiter.refused {
            Some(Refusal::Memory { limit }) => CallFailure::MemoryLimit { limit },
            _ => CallFailure::ResourceLimit { what: "table elements", limit: limits.table_elements },
        },
        Some(trap) => CallFailure::Trapped {
            trap: trap.to_string(),
            stderr: tail(&stderr.contents()),
            refused: state.limiter.refused.map(refusal_note),
        },
        // Not a trap, before the instance existed: a refused growth is why
        // instantiation failed.
        None if !instantiated && state.limiter.refused.is_some() => match state.limiter.refused {
            Some(Refusal::Memory { limit }) => CallFailure::MemoryLimit { limit },
            _ => CallFailure::ResourceLimit { what: "table elements", limit: limits.table_elements },
        },
        None => match wasmtime_words::limit_named_in(error) {
            Some(LimitInWords::HostCall) => CallFailure::HostCallTooLarge { limit: hostcall_bytes(limits) },
            Some(LimitInWords::Instances) => CallFailure::ResourceLimit { what: "instances", limit: limits.instances },
            Some(LimitInWords::RandomBytes) => {
                CallFailure::ResourceLimit { what: "random bytes per request", limit: MAX_RANDOM_BYTES as usize }
            }
            None => CallFailure::Host { message: error_chain(&**error), source: None },
        },
    }
}

/// What one host call may take from the guest under `limits`.
fn hostcall_bytes(limits: &Limits) -> usize {
    MAX_HOSTCALL_BYTES.min(limits.host_memory_bytes)
}

fn refusal_note(refused: Refusal) -> String {
    match refused {
        Refusal::Memory { limit } => format!("memory growth past the limit of {} was refused", human_bytes(limit)),
        Refusal::TableElements { limit } => format!("table growth past the limit of {limit} elements was refused"),
    }
}

/// The last line or so of captured output, for a trap message, with
/// control characters escaped.
fn tail(bytes: &[u8]) -> String {
    const KEEP: usize = 400;
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    let start = text.ceil_char_boundary(text.len().saturating_sub(KEEP));
    printable(&text[start..]).into_owned()
}

/// What a call printed, into the host's debug log: at most
/// [`STDIO_LOG_LINES`] records per stream, each escaped, then a count of
/// the rest, so that 64 KiB of newlines is not 65 000 log records.
fn emit_stdio(plugin: &str, stdout: &Capture, stderr: &Capture) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    for (stream, capture) in [("stdout", stdout), ("stderr", stderr)] {
        let bytes = capture.contents();
        let text = String::from_utf8_lossy(&bytes);
        let mut lines = text.lines().filter(|line| !line.trim().is_empty());
        for line in lines.by_ref().take(STDIO_LOG_LINES) {
            let line = printable(&line[..line.floor_char_boundary(STDIO_LOG_LINE_BYTES)]);
            tracing::debug!(plugin, stream, "{line}");
        }
        let more = lines.count();
        if more > 0 || capture.dropped() > 0 {
            tracing::debug!(
                plugin,
                stream,
                "… {more} more lines, and {} bytes past the {STDIO_CAPTURE_BYTES}-byte capture",
                capture.dropped()
            );
        }
    }
}
