//! What one call holds open: files (against its open-files limit and the
//! process-wide share) and directory listings (against its host memory).

use super::descriptors::Descriptors;
use super::host_account::HostLimit;
use std::collections::HashMap;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsResult, ReaddirIterator};

/// Whether the table still holds a `T` at `rep`.
fn alive<T: 'static>(table: &ResourceTable, rep: u32) -> bool {
    table.get(&Resource::<T>::new_borrow(rep)).is_ok()
}

/// What keeps a file open: its descriptor, or a stream over it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Handle {
    Descriptor,
    Input,
    Output,
}

impl Handle {
    fn alive(self, table: &ResourceTable, rep: u32) -> bool {
        match self {
            Handle::Descriptor => alive::<Descriptor>(table, rep),
            Handle::Input => alive::<DynInputStream>(table, rep),
            Handle::Output => alive::<DynOutputStream>(table, rep),
        }
    }
}

/// The files one call holds open, to hold it to its open-files limit and
/// its part of the process-wide share.
pub(crate) struct OpenFiles {
    limit: usize,
    /// Table slots of the handles it opened; a slot whose handle was
    /// dropped is pruned when the count nears a limit. A reused slot is
    /// the same key, so nothing is counted twice.
    handles: HashMap<u32, Handle>,
    shared: Descriptors,
}

impl OpenFiles {
    pub(crate) fn new(limit: usize) -> Self {
        OpenFiles { limit, handles: HashMap::new(), shared: Descriptors::default() }
    }

    /// Make room for one more, or say which limit stops it.
    pub(super) fn reserve(&mut self, table: &ResourceTable) -> Result<(), HostLimit> {
        if self.handles.len() >= self.limit {
            self.prune(table);
        }
        if self.handles.len() >= self.limit {
            return Err(HostLimit::OpenFiles { limit: self.limit });
        }
        if self.shared.take().is_err() {
            self.prune(table);
            self.shared.take().map_err(|limit| HostLimit::OpenFilesAllCalls { limit })?;
        }
        Ok(())
    }

    fn prune(&mut self, table: &ResourceTable) {
        let before = self.handles.len();
        self.handles.retain(|&rep, handle| handle.alive(table, rep));
        self.shared.give_back(before - self.handles.len());
    }

    /// Count what was opened after [`reserve`](Self::reserve), or give the
    /// reservation back when nothing was.
    pub(super) fn record(&mut self, rep: Option<u32>, handle: Handle) {
        match rep {
            Some(rep) if self.handles.insert(rep, handle).is_none() => {}
            _ => self.shared.give_back(1),
        }
    }

    /// Count a stream WASI opened, and give its result the WIT shape.
    pub(super) fn opened<T: 'static>(
        &mut self,
        stream: FsResult<Resource<T>>,
        handle: Handle,
    ) -> wasmtime::Result<(Result<Resource<T>, ErrorCode>,)> {
        self.record(stream.as_ref().ok().map(Resource::rep), handle);
        match stream {
            Ok(stream) => Ok((Ok(stream),)),
            Err(error) => Ok((Err(error.downcast()?),)),
        }
    }
}

/// The directory listings one call holds, with their estimated sizes.
#[derive(Default)]
pub(crate) struct Listings {
    live: HashMap<u32, usize>,
    /// The sum of `live`, which may include listings since dropped until
    /// [`prune`](Self::prune) runs.
    bytes: usize,
}

impl Listings {
    /// The estimated bytes of the listings it holds, dropped ones included
    /// until pruned.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Forget the listings whose streams were dropped.
    pub(crate) fn prune(&mut self, table: &ResourceTable) {
        self.live.retain(|&rep, _| alive::<ReaddirIterator>(table, rep));
        self.bytes = self.live.values().sum();
    }

    pub(super) fn insert(&mut self, rep: u32, bytes: usize) {
        if let Some(replaced) = self.live.insert(rep, bytes) {
            self.bytes -= replaced;
        }
        self.bytes += bytes;
    }
}
