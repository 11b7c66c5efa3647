//! The filesystem calls toolhost answers itself instead of WASI's own:
//!
//! - `open-at` opens without blocking (`O_NONBLOCK`, `O_NOCTTY`), so a FIFO
//!   in a granted directory cannot hang a host thread, and hands out only
//!   regular files and directories: FIFOs, sockets and devices are refused
//!   with `access`. It counts the files a call holds open, against the
//!   call's open-files limit and the process-wide share (`descriptors`).
//! - `set-times-at` opens its target the same way before setting times on
//!   it (WASI's opens the target blocking, which waits forever on a FIFO).
//! - `symlink-at` refuses a link whose target is absolute or climbs with
//!   `..`: the sandbox never follows such links, but they would stay on disk
//!   for other programs to follow out of the grant.
//! - `read-via-stream`, `write-via-stream` and `append-via-stream` count
//!   toward the open-files limit too: a stream keeps its file open after
//!   the descriptor is dropped.
//! - `read-directory` reads the whole directory on a blocking thread, where
//!   the host-memory allocator cannot see whose it is; its size is
//!   estimated first (charged as host work, and stopped once it passes
//!   what the call may still hold) and counted against the host-memory
//!   limit while the stream lives.
//!
//! Everything else (permissions, path resolution inside the grant) is the
//! same as WASI's: paths are resolved by `cap-primitives`, which never
//! leaves the directory it starts from.

use super::call_state::CallState;
use super::host_account::HostLimit;
use super::open_files::Handle;
use super::wasi_versions::WASI_FILESYSTEM_TYPES;
use cap_primitives::fs::{FollowSymlinks, OpenOptions, OpenOptionsExt};
use rustix::fs::OFlags;
use std::path::{Component, Path};
use std::sync::Arc;
use std::time::SystemTime;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::OpenMode;
use wasmtime_wasi::filesystem::{Descriptor, Dir, File, WasiFilesystemView};
use wasmtime_wasi::p2::ReaddirIterator;
use wasmtime_wasi::p2::bindings::clocks::wall_clock::Datetime;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor, NewTimestamp, OpenFlags, PathFlags,
};

/// What one directory entry costs the host in a listing, beyond its name.
const LISTING_BYTES_PER_ENTRY: usize = 64;
/// The most of a plugin-chosen path a host log line shows.
const LOGGED_PATH_CHARS: usize = 200;

/// Replace the functions above in `linker`, which already holds WASI's
/// filesystem.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(WASI_FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store,
         (fd, path_flags, path, oflags, flags): (Resource<Descriptor>, PathFlags, String, OpenFlags, DescriptorFlags)| {
            Box::new(async move { open_at(store.data_mut(), fd, path_flags, path, oflags, flags).await.map(|r| (r,)) })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-times-at",
        |mut store, (fd, path_flags, path, accessed, modified): (Resource<Descriptor>, PathFlags, String, NewTimestamp, NewTimestamp)| {
            Box::new(async move { Ok((set_times_at(store.data_mut(), fd, path_flags, path, accessed, modified).await?,)) })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store, (fd, target, link): (Resource<Descriptor>, String, String)| {
            Box::new(async move { Ok((symlink_at(store.data_mut(), fd, target, link).await?,)) })
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

/// The directory behind `fd`, or the error code WASI gives for a file.
fn dir_of(state: &CallState, fd: &Resource<Descriptor>) -> wasmtime::Result<Result<Dir, ErrorCode>> {
    Ok(match state.table.get(fd)? {
        Descriptor::Dir(dir) => Ok(dir.clone()),
        Descriptor::File(_) => Err(ErrorCode::NotDirectory),
    })
}

/// [`dir_of`], refused where the grant is read-only.
fn writable_dir(state: &CallState, fd: &Resource<Descriptor>) -> wasmtime::Result<Result<Dir, ErrorCode>> {
    Ok(dir_of(state, fd)?.and_then(|dir| if dir.perms.write_not_permitted() { Err(ErrorCode::NotPermitted) } else { Ok(dir) }))
}

async fn open_at(
    state: &mut CallState,
    fd: Resource<Descriptor>,
    path_flags: PathFlags,
    path: String,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> wasmtime::Result<Result<Resource<Descriptor>, ErrorCode>> {
    let dir = match dir_of(state, &fd)? {
        Ok(dir) => dir,
        Err(code) => return Ok(Err(code)),
    };
    let (options, open_mode) = match open_options(&dir, path_flags, oflags, flags) {
        Ok(found) => found,
        Err(code) => return Ok(Err(code)),
    };
    state.open_files.reserve(&state.table)?;
    let descriptor = match open_plain(state, &dir, path, options, oflags.contains(OpenFlags::DIRECTORY)).await? {
        Ok(Opened::Dir(file)) => Descriptor::Dir(Dir::new(file, dir.perms, open_mode, false)),
        Ok(Opened::File(file)) => Descriptor::File(File::new(file, dir.perms, open_mode, false)),
        Err(code) => {
            state.open_files.record(None, Handle::Descriptor);
            return Ok(Err(code));
        }
    };
    let resource = state.table.push(descriptor);
    state.open_files.record(resource.as_ref().ok().map(Resource::rep), Handle::Descriptor);
    Ok(Ok(resource?))
}

enum Opened {
    Dir(std::fs::File),
    File(std::fs::File),
}

/// Open `path` under `dir` with `options` (non-blocking) on a blocking
/// thread, and keep it only if it is a regular file or a directory.
async fn open_plain(
    state: &mut CallState,
    dir: &Dir,
    path: String,
    mut options: OpenOptions,
    directory_only: bool,
) -> wasmtime::Result<Result<Opened, ErrorCode>> {
    // A FIFO opened for reading would wait for a writer, and a terminal
    // would become the controlling one: never block, never adopt.
    options.custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32);
    let parent = Arc::clone(&dir.dir);
    let shown: String = path.chars().take(LOGGED_PATH_CHARS).collect();
    let opened = tokio::task::spawn_blocking(move || -> Result<Opened, ErrorCode> {
        let file = cap_primitives::fs::open(&parent, Path::new(&path), &options)?;
        let kind = file.metadata()?.file_type();
        if kind.is_dir() {
            return Ok(Opened::Dir(file));
        }
        if !kind.is_file() {
            return Err(ErrorCode::Access);
        }
        if directory_only {
            return Err(ErrorCode::NotDirectory);
        }
        // Reads of a regular file block as WASI expects; on network
        // filesystems a non-blocking descriptor could fail with EAGAIN.
        let flags = rustix::fs::fcntl_getfl(&file).map_err(std::io::Error::from)?;
        rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK).map_err(std::io::Error::from)?;
        Ok(Opened::File(file))
    })
    .await?;
    if opened.as_ref().is_err_and(|code| *code == ErrorCode::Access) {
        state.notice(&format!("refused to open {shown}: FIFOs, sockets and devices are not handed out"));
    }
    Ok(opened)
}

/// WASI's open flags as `cap-primitives` options, and the mode the
/// descriptor records; refused where the grant is read-only.
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
    options._cap_fs_ext_follow(follow(path_flags));
    let sync =
        DescriptorFlags::FILE_INTEGRITY_SYNC | DescriptorFlags::DATA_INTEGRITY_SYNC | DescriptorFlags::REQUESTED_WRITE_SYNC;
    if flags.intersects(sync) {
        return Err(ErrorCode::Unsupported);
    }
    if oflags.contains(OpenFlags::DIRECTORY)
        && (creates || oflags.contains(OpenFlags::EXCLUSIVE) || oflags.contains(OpenFlags::TRUNCATE))
    {
        return Err(ErrorCode::Invalid);
    }
    if dir.perms.write_not_permitted() && mode.contains(OpenMode::WRITE) {
        return Err(ErrorCode::NotPermitted);
    }
    Ok((options, mode))
}

fn follow(path_flags: PathFlags) -> FollowSymlinks {
    if path_flags.contains(PathFlags::SYMLINK_FOLLOW) { FollowSymlinks::Yes } else { FollowSymlinks::No }
}

async fn set_times_at(
    state: &mut CallState,
    fd: Resource<Descriptor>,
    path_flags: PathFlags,
    path: String,
    accessed: NewTimestamp,
    modified: NewTimestamp,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    let dir = match writable_dir(state, &fd)? {
        Ok(dir) => dir,
        Err(code) => return Ok(Err(code)),
    };
    let times = match (file_time(accessed), file_time(modified)) {
        (Ok(accessed), Ok(modified)) => (accessed, modified),
        (Err(code), _) | (_, Err(code)) => return Ok(Err(code)),
    };
    let mut options = OpenOptions::new();
    options.read(true)._cap_fs_ext_follow(follow(path_flags));
    let file = match open_plain(state, &dir, path, options, false).await? {
        Ok(Opened::Dir(file) | Opened::File(file)) => file,
        Err(code) => return Ok(Err(code)),
    };
    let set = tokio::task::spawn_blocking(move || {
        let mut new = std::fs::FileTimes::new();
        if let Some(accessed) = times.0 {
            new = new.set_accessed(accessed);
        }
        if let Some(modified) = times.1 {
            new = new.set_modified(modified);
        }
        file.set_times(new)
    })
    .await?;
    Ok(set.map_err(ErrorCode::from))
}

/// A WASI timestamp as a time to set, or `None` to leave it.
fn file_time(timestamp: NewTimestamp) -> Result<Option<SystemTime>, ErrorCode> {
    match timestamp {
        NewTimestamp::NoChange => Ok(None),
        NewTimestamp::Now => Ok(Some(SystemTime::now())),
        NewTimestamp::Timestamp(Datetime { seconds, nanoseconds }) => {
            // `Duration::new` panics when the nanoseconds carry past the
            // seconds' range; the guest picks both.
            let since_epoch = std::time::Duration::from_secs(seconds)
                .checked_add(std::time::Duration::from_nanos(u64::from(nanoseconds)))
                .ok_or(ErrorCode::Overflow)?;
            SystemTime::UNIX_EPOCH.checked_add(since_epoch).map(Some).ok_or(ErrorCode::Overflow)
        }
    }
}

async fn symlink_at(
    state: &mut CallState,
    fd: Resource<Descriptor>,
    target: String,
    link: String,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    let dir = match writable_dir(state, &fd)? {
        Ok(dir) => dir,
        Err(code) => return Ok(Err(code)),
    };
    if !stays_inside(&target) {
        let shown: String = target.chars().take(LOGGED_PATH_CHARS).collect();
        state.notice(&format!("refused a symlink to {shown}, which leaves the grant"));
        return Ok(Err(ErrorCode::NotPermitted));
    }
    let parent = Arc::clone(&dir.dir);
    let made =
        tokio::task::spawn_blocking(move || cap_primitives::fs::symlink_contents(&target, &parent, Path::new(&link))).await?;
    Ok(made.map_err(ErrorCode::from))
}

/// Whether a link target resolves below the link's own directory: relative
/// and never climbing.
fn stays_inside(target: &str) -> bool {
    !target.is_empty() && Path::new(target).components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

async fn read_directory(
    state: &mut CallState,
    fd: Resource<Descriptor>,
) -> wasmtime::Result<(Result<Resource<ReaddirIterator>, ErrorCode>,)> {
    let dir = match dir_of(state, &fd)? {
        Ok(dir) => dir.dir,
        Err(code) => return Ok((Err(code),)),
    };
    let limit = state.limits.host_memory_bytes;
    state.listings.prune(&state.table);
    let room = limit.saturating_sub(state.host_memory_held());
    // Count before WASI reads it all, and stop once past the room left, so
    // a huge directory is refused before the host holds its listing.
    let estimate = tokio::task::spawn_blocking(move || -> std::io::Result<usize> {
        let mut bytes = 0;
        for entry in cap_primitives::fs::read_base_dir(&dir)? {
            bytes += LISTING_BYTES_PER_ENTRY + entry?.file_name().len();
            if bytes > room {
                break;
            }
        }
        Ok(bytes)
    })
    .await?;
    let estimate = match estimate {
        Ok(bytes) => bytes,
        Err(error) => return Ok((Err(ErrorCode::from(error)),)),
    };
    state.work.pending_bytes += estimate as u64;
    if estimate > room {
        return Err(HostLimit::HostMemory { limit }.into());
    }
    match state.filesystem().read_directory(fd).await {
        Ok(stream) => {
            state.listings.insert(stream.rep(), estimate);
            Ok((Ok(stream),))
        }
        Err(error) => Ok((Err(error.downcast()?),)),
    }
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

    #[test]
    fn timestamps_map_to_times_to_set() {
        assert_eq!(file_time(NewTimestamp::NoChange), Ok(None));
        let at = file_time(NewTimestamp::Timestamp(Datetime { seconds: 1, nanoseconds: 5 })).unwrap().unwrap();
        assert_eq!(at.duration_since(SystemTime::UNIX_EPOCH).unwrap(), std::time::Duration::new(1, 5));
        // A guest's nanoseconds that carry past the last second are an
        // overflow, not a host panic.
        let past_the_end = Datetime { seconds: u64::MAX, nanoseconds: 1_000_000_000 };
        assert_eq!(file_time(NewTimestamp::Timestamp(past_the_end)), Err(ErrorCode::Overflow));
        let far = Datetime { seconds: u64::MAX, nanoseconds: 0 };
        assert_eq!(file_time(NewTimestamp::Timestamp(far)), Err(ErrorCode::Overflow));
    }
}
