//! One call's account of the host's work for it: the host memory held,
//! the bytes still to charge, and the host-side limit that ended it.

use super::host_memory::HostMemory;
use crate::units::human_bytes;

/// A host-side limit that ended a call. Raised as a trap where a host
/// function refuses (open files), recorded by the hook where it cannot
/// (host memory); named by the outcome either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HostLimit {
    /// The host held more memory for the call than allowed.
    #[error("host memory limit {} exceeded", human_bytes(*limit))]
    HostMemory { limit: usize },
    /// The call tried to hold more files open than allowed.
    #[error("open files limit {limit} exceeded")]
    OpenFiles { limit: usize },
    /// A poll list longer than the call can have pollables.
    #[error("poll list limit {limit} exceeded")]
    PollList { limit: usize },
    /// All calls together hold the process's share of descriptors.
    #[error("open files of all calls limit {limit} exceeded")]
    OpenFilesAllCalls { limit: usize },
}

/// One call's host work: its host-memory account and what is charged.
pub(crate) struct HostWork {
    pub(crate) memory: HostMemory,
    /// `memory.allocated()` when fuel was last charged for it.
    pub(super) charged_allocations: u64,
    /// Bytes read or estimated for the guest since fuel was last charged.
    pub(crate) pending_bytes: u64,
    /// The host-memory overrun the hook found, for the outcome.
    pub(crate) exceeded: Option<HostLimit>,
}

impl HostWork {
    /// `None` when no account is free (more calls at once than the
    /// allocator has accounts for).
    pub(crate) fn new() -> Option<Self> {
        Some(HostWork { memory: HostMemory::open()?, charged_allocations: 0, pending_bytes: 0, exceeded: None })
    }
}
