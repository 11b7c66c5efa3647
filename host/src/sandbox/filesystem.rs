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
//!
//! Everything else (permissions, path resolution inside the grant) is the
//! same as WASI's: paths are resolved by `cap-primitives`, which never
//! leaves the directory it starts from.

use super::call::CallState;
use super::host_work::HostLimit;
use cap_primitives::fs::{FollowSymlinks, OpenOptions};
use std::collections::HashSet;
use std::path::{Component, Path};
use std::sync::Arc;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, Dir, File};
use wasmtime_wasi::p2::bindings::filesystem::types::{DescriptorFlags, ErrorCode, OpenFlags, PathFlags};
use wasmtime_wasi::OpenMode;

/// The interface whose functions are replaced; the version WASI links.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Replace `open-at` and `symlink-at` in `linker`, which already holds
/// WASI's filesystem.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
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
    linker.allow_shadowing(false);
    Ok(())
}

/// The descriptors one call opened, to hold it to its open-files limit.
pub(crate) struct OpenFiles {
    limit: usize,
    /// Table slots of the descriptors it opened; a slot whose descriptor
    /// was dropped is pruned when the count nears the limit.
    reps: HashSet<u32>,
}

impl OpenFiles {
    pub(crate) fn new(limit: usize) -> Self {
        OpenFiles { limit, reps: HashSet::new() }
    }

    /// Make room for one more, or say which limit stops it.
    fn reserve(&mut self, state_table: &wasmtime::component::ResourceTable) -> Result<(), HostLimit> {
        if self.reps.len() >= self.limit {
            self.reps.retain(|&rep| state_table.get(&Resource::<Descriptor>::new_borrow(rep)).is_ok());
        }
        if self.reps.len() >= self.limit {
            return Err(HostLimit::OpenFiles { limit: self.limit });
        }
        Ok(())
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
    state.open_files.reps.insert(resource.rep());
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
