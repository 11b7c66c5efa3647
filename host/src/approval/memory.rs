//! Remembered "allow always" decisions: one JSON file, keyed by agent,
//! plugin, tool and the plugin's SHA-256, so a changed plugin asks again.
//!
//! ```json
//! {
//!   "version": 1,
//!   "allowed": [
//!     { "agent": "coder", "plugin": "files", "tool": "read_file",
//!       "sha256": "9f86d0…", "since": "2026-11-23T03:57:37Z" }
//!   ]
//! }
//! ```
//!
//! The file grants, so it fails closed: one that is missing, unreadable,
//! corrupt, owned by another user or writable by others is read as empty
//! (every moderate tool asks again) and reported, never read as allow.
//!
//! Every change rewrites the whole file crash-safely: a temporary file in
//! the same directory is written and fsynced, renamed over the old one, and
//! the directory is fsynced, so after a crash at any moment the file holds
//! the old state or the new one. Each read-modify-write holds a
//! process-wide lock and an exclusive `flock` on a lock file beside it
//! (`approvals.json.lock`: the memory file itself is replaced on every
//! change, so it cannot carry the lock), and starts from the file as it is
//! on disk: concurrent writers, in this process or others, lose none of
//! each other's updates.
//!
//! Reads come from a copy. The file is checked for a change (one `stat`)
//! at most every [`MEMORY_RECHECK`], not on every call, since every call
//! of a moderate tool asks: a change this handle makes is seen at once,
//! one made elsewhere (`toolhost approvals revoke` in another process)
//! within that time, or at once after [`ApprovalMemory::reload`].

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// The format version this host writes and reads.
pub const MEMORY_FORMAT_VERSION: u32 = 1;
/// How long the copy of the file is trusted before the file is checked
/// for a change again: a revocation made by another process takes effect
/// within this time.
pub const MEMORY_RECHECK: Duration = Duration::from_secs(1);
/// Mode bits that let someone other than the owner change the file.
const WRITABLE_BY_OTHERS: u32 = 0o022;

/// Held around every read-modify-write of any memory file in this process.
/// Writes are rare and short, so one lock for all files is enough.
static WRITE_LOCK: Mutex<()> = Mutex::new(());

/// One remembered "allow always".
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RememberedApproval {
    /// The agent it was given for.
    pub agent: String,
    /// The plugin that offers the tool.
    pub plugin: String,
    /// The tool.
    pub tool: String,
    /// The plugin component's SHA-256, hex: other bytes ask again.
    pub sha256: String,
    /// When it was given, RFC 3339 UTC.
    pub since: String,
}

impl RememberedApproval {
    fn is(&self, agent: &str, plugin: &str, tool: &str, sha256: &str) -> bool {
        self.agent == agent && self.plugin == plugin && self.tool == tool && self.sha256 == sha256
    }
}

/// A problem with the memory file. Reading problems are warnings: the file
/// is then read as empty.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The file exists but could not be read.
    #[error("cannot read remembered approvals {}: {source}; read as empty, so moderate tools ask again", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a memory file this host can read.
    #[error("remembered approvals {} are corrupt ({why}); read as empty, so moderate tools ask again", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// Someone other than its owner could have written the file.
    #[error("remembered approvals {} are not trusted: {why}; read as empty, so moderate tools ask again", path.display())]
    Untrusted {
        /// The file.
        path: PathBuf,
        /// Who else could write it.
        why: String,
    },
    /// A change could not be written.
    #[error("cannot write remembered approvals {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The memory file, with what it held when last read. Reads come from that
/// copy, refreshed when the file on disk has changed, checked at most every
/// [`MEMORY_RECHECK`] (see the module's docs).
#[derive(Debug)]
pub struct ApprovalMemory {
    path: PathBuf,
    cache: Mutex<Cache>,
    warnings: Mutex<Vec<MemoryError>>,
}

#[derive(Debug)]
struct Cache {
    /// The identity of the file the entries came from; `None` when it did
    /// not exist.
    stamp: Option<Stamp>,
    entries: Vec<RememberedApproval>,
    /// When the file was last compared with the stamp.
    checked: Instant,
}

impl Cache {
    fn new(stamp: Option<Stamp>, entries: Vec<RememberedApproval>) -> Self {
        Cache { stamp, entries, checked: Instant::now() }
    }
}

/// What changes whenever the file is replaced, rewritten or has its
/// owner or mode changed (the change time covers the last two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Self {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            modified: (m.mtime(), m.mtime_nsec()),
            changed: (m.ctime(), m.ctime_nsec()),
        }
    }
}

impl ApprovalMemory {
    /// The memory in `path`, read now. A file that cannot be trusted is
    /// read as empty and reported through [`take_warnings`](Self::take_warnings)
    /// and `tracing`.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        let memory = ApprovalMemory {
            path: path.into(),
            cache: Mutex::new(Cache::new(None, Vec::new())),
            warnings: Mutex::new(Vec::new()),
        };
        memory.reload();
        memory
    }

    /// Read the file again now, rather than within [`MEMORY_RECHECK`].
    pub fn reload(&self) {
        let mut cache = lock(&self.cache);
        let (stamp, entries) = self.read();
        *cache = Cache::new(stamp, entries);
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every remembered approval, sorted by agent, plugin, tool.
    pub fn entries(&self) -> Vec<RememberedApproval> {
        self.current().entries.clone()
    }

    /// Whether "allow always" is remembered for `tool` of `plugin` at
    /// `sha256`, for `agent`.
    pub fn contains(&self, agent: &str, plugin: &str, tool: &str, sha256: &str) -> bool {
        self.current().entries.iter().any(|e| e.is(agent, plugin, tool, sha256))
    }

    /// Remember "allow always" for `tool` of `plugin` at `sha256`, for
    /// `agent`. Writes the file (with fsyncs: milliseconds).
    ///
    /// # Errors
    ///
    /// A [`MemoryError`] when the file cannot be read, is not trusted, or the
    /// change cannot be written.
    pub fn remember(&self, agent: &str, plugin: &str, tool: &str, sha256: &str) -> Result<(), MemoryError> {
        self.update(|entries| {
            if entries.iter().any(|e| e.is(agent, plugin, tool, sha256)) {
                return ((), false);
            }
            entries.push(RememberedApproval {
                agent: agent.into(),
                plugin: plugin.into(),
                tool: tool.into(),
                sha256: sha256.into(),
                since: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            });
            ((), true)
        })
    }

    /// Forget every approval of `tool` (for `agent` only, if given); how
    /// many there were. Writes the file only if there were some.
    ///
    /// # Errors
    ///
    /// A [`MemoryError`] when the file cannot be read, is not trusted, or the
    /// change cannot be written.
    pub fn revoke(&self, tool: &str, agent: Option<&str>) -> Result<usize, MemoryError> {
        self.update(|entries| {
            let before = entries.len();
            entries.retain(|e| !(e.tool == tool && agent.is_none_or(|a| e.agent == a)));
            let removed = before - entries.len();
            (removed, removed > 0)
        })
    }

    /// Forget everything; how many there were. Always writes the file, so
    /// it also replaces a corrupt one.
    ///
    /// # Errors
    ///
    /// A [`MemoryError`] when the file is not trusted or cannot be written.
    pub fn clear(&self) -> Result<usize, MemoryError> {
        self.update(|entries| (std::mem::take(entries).len(), true))
    }

    /// The problems met reading the file since the last call.
    pub fn take_warnings(&self) -> Vec<MemoryError> {
        std::mem::take(&mut *lock(&self.warnings))
    }

    /// The cache, re-read first if the file changed on disk (checked at
    /// most every [`MEMORY_RECHECK`]).
    fn current(&self) -> MutexGuard<'_, Cache> {
        let mut cache = lock(&self.cache);
        if cache.checked.elapsed() < MEMORY_RECHECK {
            return cache;
        }
        let stamp = std::fs::metadata(&self.path).ok().map(|m| Stamp::of(&m));
        if stamp == cache.stamp {
            cache.checked = Instant::now();
        } else {
            let (stamp, entries) = self.read();
            *cache = Cache::new(stamp, entries);
        }
        cache
    }

    /// Read-modify-write under the process-wide lock and the file lock,
    /// starting from the file as it is now. `change` says whether it
    /// changed anything.
    fn update<T>(&self, change: impl FnOnce(&mut Vec<RememberedApproval>) -> (T, bool)) -> Result<T, MemoryError> {
        let write_error = |source| MemoryError::Write { path: self.path.clone(), source };
        let _writing = lock(&WRITE_LOCK);
        let _other_processes = lock_file(&self.path).map_err(write_error)?;
        let mut cache = lock(&self.cache);
        let (stamp, mut entries) = self.read();
        let (result, changed) = change(&mut entries);
        if !changed {
            *cache = Cache::new(stamp, entries);
            return Ok(result);
        }
        entries.sort();
        let body = MemoryFile { version: MEMORY_FORMAT_VERSION, allowed: entries };
        let mut text = serde_json::to_vec_pretty(&body).expect("remembered approvals serialize");
        text.push(b'\n');
        write_durably(&self.path, &text).map_err(write_error)?;
        let stamp = std::fs::metadata(&self.path).ok().map(|m| Stamp::of(&m));
        *cache = Cache::new(stamp, body.allowed);
        Ok(result)
    }

    /// The file's identity and entries; empty, with a warning, when it
    /// cannot be trusted. A missing file is simply empty.
    fn read(&self) -> (Option<Stamp>, Vec<RememberedApproval>) {
        match read_file(&self.path) {
            Ok(read) => read,
            Err((stamp, warning)) => {
                tracing::warn!("{warning}");
                lock(&self.warnings).push(warning);
                (stamp, Vec::new())
            }
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryFile {
    version: u32,
    allowed: Vec<RememberedApproval>,
}

type ReadResult = Result<(Option<Stamp>, Vec<RememberedApproval>), (Option<Stamp>, MemoryError)>;

fn read_file(path: &Path) -> ReadResult {
    let read_error = |source| (None, MemoryError::Read { path: path.to_owned(), source });
    // A FIFO or a device is reported, never waited on or read.
    let mut file = match crate::regular_file::open_regular_file(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, Vec::new())),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            return Err((None, MemoryError::Untrusted { path: path.to_owned(), why: "it is not a regular file".into() }));
        }
        Err(e) => return Err(read_error(e)),
    };
    // The identity and the bytes of one opened file, so a rename in
    // between cannot pair one file's stamp with another's entries.
    let metadata = file.metadata().map_err(read_error)?;
    let stamp = Some(Stamp::of(&metadata));
    let untrusted = |why: String| (stamp, MemoryError::Untrusted { path: path.to_owned(), why });
    let me = rustix::process::geteuid().as_raw();
    if metadata.uid() != me {
        return Err(untrusted(format!("it is owned by user {}, not by this user ({me})", metadata.uid())));
    }
    if metadata.mode() & WRITABLE_BY_OTHERS != 0 {
        return Err(untrusted(format!("its mode {:o} lets others write it", metadata.mode() & 0o777)));
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(|source| (stamp, MemoryError::Read { path: path.to_owned(), source }))?;
    let corrupt = |why: String| (stamp, MemoryError::Corrupt { path: path.to_owned(), why });
    let parsed: MemoryFile = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
    if parsed.version != MEMORY_FORMAT_VERSION {
        return Err(corrupt(format!("format version {}, this host reads {MEMORY_FORMAT_VERSION}", parsed.version)));
    }
    Ok((stamp, parsed.allowed))
}

/// Replace `path` with `bytes` so that a crash at any moment leaves the old
/// file or the new one: write a temporary file beside it, fsync it, rename
/// it over `path`, fsync the directory (which makes the rename durable).
/// The new file is private to its owner.
pub(crate) fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map_or_else(|| "approvals".into(), |n| n.to_string_lossy());
    let mut file = tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".tmp").tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// The lock file beside `path`, opened and locked exclusively: other
/// processes' writers wait until it is dropped (the lock goes with the
/// file descriptor, also when a process dies holding it).
pub(super) fn lock_file(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut name = path.file_name().map_or_else(|| "approvals".into(), ToOwned::to_owned);
    name.push(".lock");
    // A FIFO in its place is refused, never waited on.
    let lock_path = path.with_file_name(name);
    let not_regular =
        || std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{} is not a regular file", lock_path.display()));
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let opened = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(flags.bits() as i32)
        .open(&lock_path);
    // A FIFO without a reader refuses a non-blocking writer (ENXIO).
    let file = match opened {
        Err(_) if std::fs::symlink_metadata(&lock_path).is_ok_and(|m| !m.is_file()) => return Err(not_regular()),
        opened => opened?,
    };
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
    Ok(file)
}

/// A poisoned lock only means another thread panicked while holding it;
/// the data (a list re-read from disk on each change) is still sound.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const SHA: &str = "aa";

    #[test]
    fn remembered_approvals_persist_and_are_keyed_by_the_plugins_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.json");
        let memory = ApprovalMemory::open(&path);
        assert!(memory.entries().is_empty());
        memory.remember("coder", "files", "read_file", SHA).unwrap();
        memory.remember("coder", "files", "read_file", SHA).unwrap();
        let reopened = ApprovalMemory::open(&path);
        assert_eq!(reopened.entries().len(), 1, "remembering twice keeps one entry");
        assert!(reopened.contains("coder", "files", "read_file", SHA));
        assert!(!reopened.contains("coder", "files", "read_file", "bb"), "other bytes ask again");
        assert!(!reopened.contains("writer", "files", "read_file", SHA));
        assert!(reopened.take_warnings().is_empty());
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_change_by_another_handle_is_seen_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.json");
        let (one, two) = (ApprovalMemory::open(&path), ApprovalMemory::open(&path));
        one.remember("a", "p", "t1", SHA).unwrap();
        two.remember("a", "p", "t2", SHA).unwrap();
        assert_eq!(two.entries().len(), 2, "the second writer started from the first's file");
        assert_eq!(two.revoke("t1", None).unwrap(), 1);
        one.reload();
        assert!(!one.contains("a", "p", "t1", SHA), "a revocation elsewhere takes effect on reload");
    }

    #[test]
    fn the_file_is_checked_for_changes_at_most_every_recheck_interval() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.json");
        let (one, two) = (ApprovalMemory::open(&path), ApprovalMemory::open(&path));
        one.remember("a", "p", "t", SHA).unwrap();
        assert!(one.contains("a", "p", "t", SHA), "a handle sees its own change at once");
        two.clear().unwrap();
        assert!(one.contains("a", "p", "t", SHA), "not checked on every call");
        std::thread::sleep(MEMORY_RECHECK + Duration::from_millis(50));
        assert!(!one.contains("a", "p", "t", SHA), "seen once the interval passed");
    }

    #[test]
    fn revoke_can_be_narrowed_to_an_agent_and_clear_empties() {
        let dir = tempfile::tempdir().unwrap();
        let memory = ApprovalMemory::open(dir.path().join("approvals.json"));
        for agent in ["a", "b"] {
            memory.remember(agent, "p", "t", SHA).unwrap();
            memory.remember(agent, "p", "u", SHA).unwrap();
        }
        assert_eq!(memory.revoke("t", Some("a")).unwrap(), 1);
        assert_eq!(memory.revoke("t", Some("a")).unwrap(), 0);
        assert_eq!(memory.revoke("u", None).unwrap(), 2);
        assert_eq!(memory.clear().unwrap(), 1);
        assert!(memory.entries().is_empty());
    }

    #[test]
    fn concurrent_writers_lose_no_update() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.json");
        std::thread::scope(|scope| {
            for t in 0..8 {
                let path = &path;
                scope.spawn(move || {
                    let memory = ApprovalMemory::open(path);
                    for i in 0..5 {
                        memory.remember("a", "p", &format!("t{t}_{i}"), SHA).unwrap();
                    }
                });
            }
        });
        assert_eq!(ApprovalMemory::open(&path).entries().len(), 40);
    }

    #[test]
    fn a_corrupt_or_untrusted_file_reads_as_empty_and_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.json");
        ApprovalMemory::open(&path).remember("a", "p", "t", SHA).unwrap();
        let good = std::fs::read_to_string(&path).unwrap();

        std::fs::write(&path, &good[..good.len() / 2]).unwrap();
        let memory = ApprovalMemory::open(&path);
        assert!(!memory.contains("a", "p", "t", SHA), "a torn file is never read as allow");
        let warnings = memory.take_warnings();
        assert!(matches!(warnings[..], [MemoryError::Corrupt { .. }]), "{warnings:?}");
        assert!(warnings[0].to_string().contains("are corrupt"), "{}", warnings[0]);
        assert!(!memory.contains("a", "p", "t", SHA));
        assert!(memory.take_warnings().is_empty(), "one report per state of the file");

        std::fs::write(&path, good.replace("\"version\": 1", "\"version\": 9")).unwrap();
        let warnings = ApprovalMemory::open(&path).take_warnings();
        assert!(warnings[0].to_string().contains("format version 9"), "{warnings:?}");

        std::fs::write(&path, &good).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let memory = ApprovalMemory::open(&path);
        assert!(!memory.contains("a", "p", "t", SHA), "a file others can write grants nothing");
        let warnings = memory.take_warnings();
        assert!(warnings[0].to_string().contains("mode 666 lets others write it"), "{warnings:?}");

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        memory.reload();
        assert!(memory.contains("a", "p", "t", SHA), "a repaired file is read again");
        assert_eq!(memory.clear().unwrap(), 1);
    }

    #[test]
    fn an_unwritable_place_is_an_error_naming_the_file() {
        let path = Path::new("/nonexistent-dir/approvals.json");
        let error = ApprovalMemory::open(path).remember("a", "p", "t", SHA).unwrap_err();
        assert!(error.to_string().starts_with("cannot write remembered approvals /nonexistent-dir/approvals.json"), "{error}");
    }
}
