//! The filesystem calls toolhost answers itself instead of WASI's own:
//!
//! - `open-at` opens without blocking (`O_NONBLOCK`), so a FIFO in a
//!   granted directory cannot hang a host thread, and hands out only
//!   regular files and directories: FIFOs, sockets and devices are refused
//!   with `access`. It also counts the files a call holds open and ends the
//!   call when it would pass its open-files limit.
//! - `symlink-at` refuses a link whose target is absolute or climbs with
//!   `..`: the sandbox never follows such links, but they would stay on disk
//!   for other programs to follow out of the grant.
//! - `read-via-stream`, `write-via-stream` and `append-via-stream` count
//!   toward the open-files limit too: a stream keeps its file open after
//!   the descriptor is dropped.
//! - `read-directory` reads the whole directory on a blocking thread, where
//!   the host-memory allocator cannot see whose it is; its size is
//!   estimated first and counted against the host-memory limit while the
//!   stream lives.
//!
//! Everything else (permissions, path resolution inside the grant) is the
//! same as WASI's: paths are resolved by `cap-primitives`, which never
//! leaves the directory it starts from.

use super::call::CallState;
use super::host_work::HostLimit;
use super::linking::WASI_FILESYSTEM_TYPES;
use cap_primitives::fs::{FollowSymlinks, OpenOptions};
use std::collections::HashMap;
use std::path::{Component, Path};
use std::sync::Arc;
use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime_wasi::filesystem::{Descriptor, Dir, File, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsResult, ReaddirIterator};
use wasmtime_wasi::OpenMode;

/// What one directory entry costs the host in a listing, beyond its name.
const LISTING_BYTES_PER_ENTRY: usize = 64;

/// Replace the functions above in `linker`, which already holds WASI's
/// filesystem.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(WASI_FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store, (fd, path_flags, path, oflags, flags): (Resource<Descriptor>, PathFlags, String, OpenFlags, DescriptorFlags)| {
            Box::new(async move { open_at(store.data_mut(), fd, path_flags, path, oflags, flags).await.map(|r| (r,)) })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store, (fd, target, link): (Resource<Descriptor>, String, String)| {
            Box::new(async move { Ok((symlink_at(store.data_mut(), fd, target, link).await,)) })
        },
    )?;
    types.func_wrap("[method]descriptor.read-via-stream", |mut store, (fd, offset): (Resource<Descriptor>, u64)| {
        let state = store.data_mut();
        state.open_files.reserve(&state.table)?;
        let stream = state.filesystem().read_via_stream(fd, offset);
        state.open_files.opened(stream, Handle::Input)
    })?;
    types.func_wrap("[method]descriptor.write-via-stream", |mut store, (fd, offset): (Resource<Descriptor>, u64)| {
        let state = store.data_mut();
        state.open_files.reserve(&state.table)?;
        let stream = state.filesystem().write_via_stream(fd, offset);
        state.open_files.opened(stream, Handle::Output)
    })?;
    types.func_wrap("[method]descriptor.append-via-stream", |mut store, (fd,): (Resource<Descriptor>,)| {
        let state = store.data_mut();
        state.open_files.reserve(&state.table)?;
        let stream = state.filesystem().append_via_stream(fd);
        state.open_files.opened(stream, Handle::Output)
    })?;
    types.func_wrap_async("[method]descriptor.read-directory", |mut store, (fd,): (Resource<Descriptor>,)| {
        Box::new(async move { read_directory(store.data_mut(), fd).await })
    })?;
    linker.allow_shadowing(false);
    Ok(())
}

/// What keeps a file open: its descriptor, or a stream over it.
#[derive(Debug, Clone, Copy)]
enum Handle {
    Descriptor,
    Input,
    Output,
}

/// The files one call holds open, to hold it to its open-files limit.
pub(crate) struct OpenFiles {
    limit: usize,
    /// Table slots of the handles it opened; a slot whose handle was
    /// dropped is pruned when the count nears the limit. A reused slot is
    /// the same key, so nothing is counted twice.
    handles: HashMap<u32, Handle>,
}

impl OpenFiles {
    pub(crate) fn new(limit: usize) -> Self {
        OpenFiles { limit, handles: HashMap::new() }
    }

    /// Make room for one more, or say which limit stops it.
    fn reserve(&mut self, table: &ResourceTable) -> Result<(), HostLimit> {
        if self.handles.len() >= self.limit {
            self.handles.retain(|&rep, handle| match handle {
                Handle::Descriptor => table.get(&Resource::<Descriptor>::new_borrow(rep)).is_ok(),
                Handle::Input => table.get(&Resource::<DynInputStream>::new_borrow(rep)).is_ok(),
                Handle::Output => table.get(&Resource::<DynOutputStream>::new_borrow(rep)).is_ok(),
            });
        }
        if self.handles.len() >= self.limit {
            return Err(HostLimit::OpenFiles { limit: self.limit });
        }
        Ok(())
    }

    /// Count a stream WASI opened, and give its result the WIT shape.
    fn opened<T: 'static>(
        &mut self,
        stream: FsResult<Resource<T>>,
        handle: Handle,
    ) -> wasmtime::Result<(Result<Resource<T>, ErrorCode>,)> {
        match stream {
            Ok(stream) => {
                self.handles.insert(stream.rep(), handle);
                Ok((Ok(stream),))
            }
            Err(error) => Ok((Err(error.downcast()?),)),
        }
    }
}

/// The directory listings one call holds, with their estimated sizes.
#[derive(Default)]
pub(crate) struct Listings {
    live: HashMap<u32, usize>,
}

impl Listings {
    /// The estimated bytes of the listings still open.
    pub(crate) fn held(&mut self, table: &ResourceTable) -> usize {
        if self.live.is_empty() {
            return 0;
        }
        self.live.retain(|&rep, _| table.get(&Resource::<ReaddirIterator>::new_borrow(rep)).is_ok());
        self.live.values().sum()
    }
}

async fn read_directory(
    state: &mut CallState,
    fd: Resource<Descriptor>,
) -> wasmtime::Result<(Result<Resource<ReaddirIterator>, ErrorCode>,)> {
    let dir = match state.table.get(&fd)? {
        Descriptor::Dir(dir) => Arc::clone(&dir.dir),
        Descriptor::File(_) => return Ok((Err(ErrorCode::NotDirectory),)),
    };
    // Count before WASI reads it all, so a huge directory is refused
    // before the host holds its listing.
    let estimate = tokio::task::spawn_blocking(move || -> std::io::Result<usize> {
        let mut bytes = 0;
        for entry in cap_primitives::fs::read_base_dir(&dir)? {
            bytes += LISTING_BYTES_PER_ENTRY + entry?.file_name().len();
        }
        Ok(bytes)
    })
    .await?;
    let estimate = match estimate {
        Ok(bytes) => bytes,
        Err(error) => return Ok((Err(ErrorCode::from(error)),)),
    };
    let limit = state.limits.host_memory_bytes;
    if state.work.memory.held() + state.listings.held(&state.table) + estimate > limit {
        return Err(HostLimit::HostMemory { limit }.into());
    }
    match state.filesystem().read_directory(fd).await {
        Ok(stream) => {
            state.listings.live.insert(stream.rep(), estimate);
            Ok((Ok(stream),))
        }
        Err(error) => Ok((Err(error.downcast()?),)),
    }
}

async fn open_at(
    state: &mut CallState,
    fd: Resource<Descriptor>,
    path_flags: PathFlags,
    path: String,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> wasmtime::Result<Result<Resource<Descriptor>, ErrorCode>> {
    let dir = match state.table.get(&fd)? {
        Descriptor::Dir(dir) => dir.clone(),
        Descriptor::File(_) => return Ok(Err(ErrorCode::NotDirectory)),
    };
    let (options, open_mode) = match open_options(&dir, path_flags, oflags, flags) {
        Ok(found) => found,
        Err(code) => return Ok(Err(code)),
    };
    state.open_files.reserve(&state.table)?;
    let parent = Arc::clone(&dir.dir);
    let plugin = state.plugin.clone();
    let opened = tokio::task::spawn_blocking(move || -> Result<Opened, ErrorCode> {
        let file = cap_primitives::fs::open(&parent, Path::new(&path), &options)?;
        let kind = file.metadata()?.file_type();
        if kind.is_dir() {
            Ok(Opened::Dir(file))
        } else if kind.is_file() {
            if oflags.contains(OpenFlags::DIRECTORY) {
                return Err(ErrorCode::NotDirectory);
            }
            Ok(Opened::File(file))
        } else {
            tracing::warn!(plugin, path, "refused to open a FIFO, socket or device in a granted directory");
            Err(ErrorCode::Access)
        }
    })
    .await?;
    let descriptor = match opened {
        Ok(Opened::Dir(file)) => Descriptor::Dir(Dir::new(file, dir.perms, open_mode, false)),
        Ok(Opened::File(file)) => Descriptor::File(File::new(file, dir.perms, open_mode, false)),
        Err(code) => return Ok(Err(code)),
    };
    let resource = state.table.push(descriptor)?;
    state.open_files.handles.insert(resource.rep(), Handle::Descriptor);
    Ok(Ok(resource))
}

enum Opened {
    Dir(std::fs::File),
    File(std::fs::File),
}

/// WASI's open flags as `cap-primitives` options, always non-blocking, and
/// the mode the descriptor records; refused where the grant is read-only.
fn open_options(
    dir: &Dir,
    path_flags: PathFlags,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> Result<(OpenOptions, OpenMode), ErrorCode> {
    let mut options = OpenOptions::new();
    let mut mode = OpenMode::empty();
    let creates = oflags.contains(OpenFlags::CREATE);
    if creates {
        if oflags.contains(OpenFlags::EXCLUSIVE) {
            options.create_new(true);
        } else {
            options.create(true);
        }
        options.write(true);
        mode |= OpenMode::WRITE;
    }
    if oflags.contains(OpenFlags::TRUNCATE) {
        options.truncate(true).write(true);
        mode |= OpenMode::WRITE;
    }
    if flags.contains(DescriptorFlags::READ) {
        options.read(true);
        mode |= OpenMode::READ;
    }
    if flags.contains(DescriptorFlags::WRITE) {
        options.write(true);
        mode |= OpenMode::WRITE;
    } else {
        // Opened for reading; the grant's permissions still refuse writes.
        options.read(true);
        mode |= OpenMode::READ;
    }
    let follow = if path_flags.contains(PathFlags::SYMLINK_FOLLOW) { FollowSymlinks::Yes } else { FollowSymlinks::No };
    options._cap_fs_ext_follow(follow);
    // A FIFO opened for reading would wait for a writer: never block.
    options._cap_fs_ext_nonblock(true);
    let sync = DescriptorFlags::FILE_INTEGRITY_SYNC | DescriptorFlags::DATA_INTEGRITY_SYNC | DescriptorFlags::REQUESTED_WRITE_SYNC;
    if flags.intersects(sync) {
        return Err(ErrorCode::Unsupported);
    }
    if oflags.contains(OpenFlags::DIRECTORY) && (creates || oflags.contains(OpenFlags::EXCLUSIVE) || oflags.contains(OpenFlags::TRUNCATE)) {
        return Err(ErrorCode::Invalid);
    }
    if dir.perms.write_not_permitted() && mode.contains(OpenMode::WRITE) {
        return Err(ErrorCode::NotPermitted);
    }
    Ok((options, mode))
}

async fn symlink_at(state: &mut CallState, fd: Resource<Descriptor>, target: String, link: String) -> Result<(), ErrorCode> {
    let dir = match state.table.get(&fd) {
        Ok(Descriptor::Dir(dir)) => dir.clone(),
        Ok(Descriptor::File(_)) => return Err(ErrorCode::NotDirectory),
        Err(_) => return Err(ErrorCode::BadDescriptor),
    };
    if dir.perms.write_not_permitted() {
        return Err(ErrorCode::NotPermitted);
    }
    if !stays_inside(&target) {
        tracing::warn!(plugin = state.plugin, target, "refused a symlink whose target leaves the grant");
        return Err(ErrorCode::NotPermitted);
    }
    let parent = Arc::clone(&dir.dir);
    tokio::task::spawn_blocking(move || cap_primitives::fs::symlink_contents(&target, &parent, Path::new(&link)))
        .await
        .map_err(|_| ErrorCode::Io)?
        .map_err(ErrorCode::from)
}

/// Whether a link target resolves below the link's own directory: relative
/// and never climbing.
fn stays_inside(target: &str) -> bool {
    !target.is_empty()
        && Path::new(target).components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_targets_that_never_climb_stay_inside() {
        for inside in ["a", "a/b", "./a", "a/./b"] {
            assert!(stays_inside(inside), "{inside}");
        }
        for outside in ["", "/etc/passwd", "../x", "a/../../x", "a/.."] {
            assert!(!stays_inside(outside), "{outside}");
        }
    }
}
