//! File descriptors across all calls.
//!
//! Each call is held to its own open-files and HTTP-requests limits, but
//! many calls at once could still take every descriptor the process may
//! open, and then the host itself could not open a plugin or a socket. So
//! calls together may hold at most [`SHARE_FOR_PLUGINS_PERCENT`] of the
//! process's soft descriptor limit, as it is when the first sandbox
//! starts; an open past that ends the call with an outcome naming the
//! limit. The library never changes the limit itself: a program that wants
//! more calls' files open at once calls [`raise_open_file_limit`] first
//! (the `toolhost` command does).

use rustix::process::{Resource, getrlimit, setrlimit};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The share of the process's descriptors that plugin calls may hold.
pub(crate) const SHARE_FOR_PLUGINS_PERCENT: usize = 75;
/// When the process's limit cannot be read.
const ASSUMED_PROCESS_LIMIT: usize = 1_024;

/// Descriptors all calls hold now.
static HELD: AtomicUsize = AtomicUsize::new(0);
static LIMIT: OnceLock<usize> = OnceLock::new();

/// Raise this process's soft descriptor limit (`RLIMIT_NOFILE`) to its
/// hard limit, and return the soft limit now in force. A process-wide
/// change, so the library never makes it on its own: a program calls this
/// before its first sandbox starts, if it wants to.
///
/// # Errors
///
/// The error `setrlimit` gave.
pub fn raise_open_file_limit() -> std::io::Result<u64> {
    let mut limit = getrlimit(Resource::Nofile);
    if let (Some(current), Some(maximum)) = (limit.current, limit.maximum)
        && current < maximum
    {
        limit.current = Some(maximum);
        setrlimit(Resource::Nofile, limit)?;
    }
    Ok(getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX))
}

/// The process's soft descriptor limit (`RLIMIT_NOFILE`), as it was when
/// first asked (when the first sandbox starts, or a door first listens):
/// what the shares of it are taken from.
pub fn open_file_limit() -> usize {
    *LIMIT
        .get_or_init(|| getrlimit(Resource::Nofile).current.map_or(ASSUMED_PROCESS_LIMIT, |n| n.min(usize::MAX as u64) as usize))
}

/// The share of the process's descriptors all calls may hold.
pub(crate) fn share_for_plugins() -> usize {
    open_file_limit() / 100 * SHARE_FOR_PLUGINS_PERCENT
}

/// The descriptors one call holds toward the shared budget; given back
/// when dropped.
#[derive(Debug, Default)]
pub(crate) struct Descriptors {
    held: usize,
}

impl Descriptors {
    /// Take one, or return the shared limit that stops it.
    pub(crate) fn take(&mut self) -> Result<(), usize> {
        let limit = share_for_plugins();
        let previous = HELD.fetch_add(1, Ordering::AcqRel);
        if previous >= limit {
            HELD.fetch_sub(1, Ordering::AcqRel);
            return Err(limit);
        }
        self.held += 1;
        Ok(())
    }

    /// Give back `count` the call no longer holds.
    pub(crate) fn give_back(&mut self, count: usize) {
        let count = count.min(self.held);
        self.held -= count;
        HELD.fetch_sub(count, Ordering::AcqRel);
    }
}

impl Drop for Descriptors {
    fn drop(&mut self) {
        self.give_back(self.held);
    }
}
