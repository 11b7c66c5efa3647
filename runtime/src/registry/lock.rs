//! Pins: the lock file maps each component, by its path relative to the
//! lock file's directory, to its SHA-256. `toolhost lock` writes it;
//! loading refuses a component whose digest differs from its pin, or that
//! has no pin while a lock file exists. Both name components with
//! [`LockFile::key`], so they agree.
//!
//! Version 1 keyed pins by file name alone, so one file name in two plugin
//! directories was ambiguous. It is still read: its pin for `calc.wasm`
//! stands for every component of that name (the digest must still match),
//! and the next `toolhost lock` rewrites it keyed by path, showing
//! unchanged digests as `unchanged`.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The lock file's format version: pins keyed by path.
const LOCK_VERSION: u32 = 2;
/// The first version, whose pins are keyed by file name; still read.
const NAME_KEYED_VERSION: u32 = 1;
/// What a pin's digest is written after.
const PIN_PREFIX: &str = "sha256:";

/// The parsed lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LockFile {
    /// The format version, currently 2.
    pub version: u32,
    /// Component key (see [`LockFile::key`]) → `sha256:<hex>`.
    pub pins: BTreeMap<String, String>,
}

/// An error reading or writing the lock file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// I/O failed.
    #[error("lock file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Someone other than this user (or root) owns or may write it: it
    /// would decide which bytes load.
    #[error("lock file {0}; fix its owner or mode (chown, chmod o-w) to trust it")]
    Untrusted(#[from] crate::trust::UntrustedFile),
    /// The file is not a valid lock file.
    #[error("lock file {path} is malformed: {message}")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// The largest lock file read: a pin is a line of about a hundred bytes.
const MAX_LOCK_FILE_BYTES: u64 = 16 << 20;

impl LockFile {
    /// Read `path`; `Ok(None)` when it does not exist. A FIFO or device
    /// in its place, or a file past 16 MiB, is an error,
    /// never waited on; so is one another user owns or may write
    /// ([`check_trusted`](crate::trust::check_trusted)).
    ///
    /// # Errors
    ///
    /// [`LockError::Untrusted`] when another user owns or may write it;
    /// [`LockError::Io`] when it cannot be read, is not a regular file or is
    /// too large; [`LockError::Malformed`] when it is not a lock file.
    pub fn read(path: &Path) -> Result<Option<Self>, LockError> {
        crate::trust::check_trusted(path)?;
        let io = |source| LockError::Io { path: path.display().to_string(), source };
        let bytes = match crate::regular_file::read_regular_file(path, MAX_LOCK_FILE_BYTES) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(io(source)),
        };
        let text = String::from_utf8(bytes).map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        let lock: LockFile = toml::from_str(&text)
            .map_err(|e| LockError::Malformed { path: path.display().to_string(), message: e.to_string() })?;
        if lock.version != LOCK_VERSION && lock.version != NAME_KEYED_VERSION {
            return Err(LockError::Malformed {
                path: path.display().to_string(),
                message: format!(
                    "version {} is not one this toolhost reads ({NAME_KEYED_VERSION} or {LOCK_VERSION}); \
                     is it from a newer toolhost?",
                    lock.version
                ),
            });
        }
        Ok(Some(lock))
    }

    /// A lock with `pins` (key, as [`LockFile::key`] names it → hex digest).
    pub fn new(pins: impl IntoIterator<Item = (String, String)>) -> Self {
        LockFile { version: LOCK_VERSION, pins: pins.into_iter().map(|(key, hex)| (key, format!("{PIN_PREFIX}{hex}"))).collect() }
    }

    /// How the lock file at `lock_file` names the component at `component`:
    /// its path relative to the lock file's directory, or its absolute path
    /// when it is not below it. Directories are resolved (symlinks, `..`),
    /// so the same file always has the same key; the file name is kept as
    /// it is listed.
    pub fn key(lock_file: &Path, component: &Path) -> String {
        let base = resolved(lock_file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")));
        let dir = resolved(component.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")));
        let full = component.file_name().map_or_else(|| dir.clone(), |name| dir.join(name));
        let key = full.strip_prefix(&base).unwrap_or(&full);
        key.to_string_lossy().into_owned()
    }

    /// The pinned hex digest of the component keyed `key`. A version-1
    /// lock pins by file name, so there the key's file name is looked up.
    pub fn pin(&self, key: &str) -> Option<&str> {
        self.pins.get(self.stored_key(key)).map(|pin| hex_digest(pin))
    }

    /// Pin the component keyed `key` to `sha256` (hex), replacing its pin.
    pub fn set_pin(&mut self, key: &str, sha256: &str) {
        let stored = self.stored_key(key).to_owned();
        self.pins.insert(stored, format!("{PIN_PREFIX}{sha256}"));
    }

    /// Drop the pin of the component keyed `key`; its digest, if it had one.
    pub fn remove_pin(&mut self, key: &str) -> Option<String> {
        let stored = self.stored_key(key).to_owned();
        self.pins.remove(&stored).map(|pin| hex_digest(&pin).to_owned())
    }

    /// The key under which this lock stores the pin for `key`.
    fn stored_key<'k>(&self, key: &'k str) -> &'k str {
        if self.version == NAME_KEYED_VERSION { key.rsplit('/').next().unwrap_or(key) } else { key }
    }

    /// How each pin of `self` differs from `old` (the lock file as it was,
    /// if there was one), in key order.
    pub fn changes(&self, old: Option<&LockFile>) -> Vec<PinChange> {
        let empty = LockFile::default();
        let old = old.unwrap_or(&empty);
        let mut changes: Vec<PinChange> = self
            .pins
            .keys()
            .map(|file| {
                let new = self.pin(file).unwrap_or_default().to_owned();
                match old.pin(file) {
                    None => PinChange::New { file: file.clone(), sha256: new },
                    Some(was) if was != new => PinChange::Changed { file: file.clone(), old: was.to_owned(), new },
                    Some(_) => PinChange::Unchanged { file: file.clone(), sha256: new },
                }
            })
            .collect();
        let kept: BTreeSet<&str> = self.pins.keys().map(|key| old.stored_key(key)).collect();
        changes.extend(
            old.pins
                .keys()
                .filter(|stored| !kept.contains(stored.as_str()))
                .map(|stored| PinChange::Removed { file: stored.clone(), sha256: hex_digest(&old.pins[stored]).to_owned() }),
        );
        changes.sort_by(|a, b| a.file().cmp(b.file()));
        changes
    }

    /// Write atomically to `path`.
    ///
    /// # Errors
    ///
    /// [`LockError::Io`] when the file cannot be written beside `path` or
    /// renamed over it.
    pub fn write(&self, path: &Path) -> Result<(), LockError> {
        let io = |source| LockError::Io { path: path.display().to_string(), source };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        let body = toml::to_string(self).expect("a lock file serializes");
        file.write_all(
            b"# Written by `toolhost lock`: the SHA-256 of each plugin component, by its path relative to this file.\n",
        )
        .and_then(|()| file.write_all(body.as_bytes()))
        .map_err(io)?;
        file.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

/// A pin's hex digest: its text after `sha256:`.
fn hex_digest(pin: &str) -> &str {
    pin.strip_prefix(PIN_PREFIX).unwrap_or(pin)
}

/// `dir` with symlinks and `..` resolved, or made absolute when it cannot
/// be (it does not exist yet), so that two spellings of one directory give
/// one key.
fn resolved(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).or_else(|_| std::path::absolute(dir)).unwrap_or_else(|_| dir.to_owned())
}

/// Where a component stands with the lock file: the one answer loading,
/// `toolhost inspect` and anything else that asks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PinState {
    /// There is no lock file, so nothing needs a pin.
    NoLockFile,
    /// A lock file exists and does not pin the component.
    NotPinned,
    /// The lock file pins the component at its digest.
    Matches,
    /// The lock file pins the component at another digest.
    Mismatch {
        /// The pinned digest, hex.
        pinned: String,
        /// The component's digest, hex.
        actual: String,
    },
}

impl PinState {
    /// The state of the component keyed `key` (see [`LockFile::key`]) with
    /// digest `sha256` under `lock` (`None`: no lock file).
    pub fn of(lock: Option<&LockFile>, key: &str, sha256: &str) -> PinState {
        match lock.map(|lock| lock.pin(key)) {
            None => PinState::NoLockFile,
            Some(None) => PinState::NotPinned,
            Some(Some(pinned)) if pinned == sha256 => PinState::Matches,
            Some(Some(pinned)) => PinState::Mismatch { pinned: pinned.to_owned(), actual: sha256.to_owned() },
        }
    }

    /// Whether the lock file pins the component at its digest.
    pub fn is_pinned(&self) -> bool {
        *self == PinState::Matches
    }
}

impl std::fmt::Display for PinState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PinState::NoLockFile => f.write_str("no lock file"),
            PinState::NotPinned => f.write_str("not pinned"),
            PinState::Matches => f.write_str("pinned, matches"),
            PinState::Mismatch { pinned, actual } => {
                write!(f, "MISMATCH: pinned sha256:{pinned}, found sha256:{actual}")
            }
        }
    }
}

/// How one pin differs between the lock file and the components on disk.
/// Displayed as the line `toolhost lock` shows for it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PinChange {
    /// A component the lock file does not pin yet.
    New {
        /// Its key in the lock file (see [`LockFile::key`]).
        file: String,
        /// Its digest, hex.
        sha256: String,
    },
    /// A component whose bytes differ from its pin.
    Changed {
        /// Its key in the lock file (see [`LockFile::key`]).
        file: String,
        /// The pinned digest.
        old: String,
        /// The digest of the file now.
        new: String,
    },
    /// A component that matches its pin.
    Unchanged {
        /// Its key in the lock file (see [`LockFile::key`]).
        file: String,
        /// Its digest.
        sha256: String,
    },
    /// A pin whose component is gone.
    Removed {
        /// Its key in the lock file (see [`LockFile::key`]).
        file: String,
        /// The pinned digest.
        sha256: String,
    },
}

impl PinChange {
    /// The component's key in the lock file.
    pub fn file(&self) -> &str {
        match self {
            PinChange::New { file, .. }
            | PinChange::Changed { file, .. }
            | PinChange::Unchanged { file, .. }
            | PinChange::Removed { file, .. } => file,
        }
    }

    /// Whether it pins bytes that were not pinned before.
    pub fn trusts_new_bytes(&self) -> bool {
        matches!(self, PinChange::New { .. } | PinChange::Changed { .. })
    }
}

impl std::fmt::Display for PinChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PinChange::New { file, sha256 } => write!(f, "new        {file}  sha256:{sha256}"),
            PinChange::Changed { file, old, new } => write!(f, "changed    {file}  sha256:{old} → sha256:{new}"),
            PinChange::Unchanged { file, sha256 } => write!(f, "unchanged  {file}  sha256:{sha256}"),
            PinChange::Removed { file, sha256 } => write!(f, "removed    {file}  sha256:{sha256}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_file_that_is_a_fifo_is_an_error_not_a_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.lock");
        rustix::fs::mkfifoat(rustix::fs::CWD, &path, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        let error = LockFile::read(&path).unwrap_err().to_string();
        assert!(error.contains("is a FIFO, not a regular file"), "{error}");
    }

    #[test]
    fn round_trips_and_rejects_other_versions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.lock");
        assert_eq!(LockFile::read(&path).unwrap(), None);
        let lock = LockFile::new([("plugins/calc.wasm".to_string(), "ab12".to_string())]);
        lock.write(&path).unwrap();
        let read = LockFile::read(&path).unwrap().unwrap();
        assert_eq!(read.pin("plugins/calc.wasm"), Some("ab12"));
        assert_eq!(read.pin("other/calc.wasm"), None, "a pin is for one path, not for a file name");
        std::fs::write(&path, "version = 3\n[pins]\n").unwrap();
        assert!(LockFile::read(&path).unwrap_err().to_string().contains("version 3 is not one this toolhost reads"));
    }

    #[test]
    fn keys_are_paths_relative_to_the_lock_files_directory_however_they_are_spelled() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("plugins/more")).unwrap();
        let lock = dir.path().join("toolhost.lock");
        assert_eq!(LockFile::key(&lock, &dir.path().join("plugins/calc.wasm")), "plugins/calc.wasm");
        assert_eq!(LockFile::key(&lock, &dir.path().join("plugins/more/../calc.wasm")), "plugins/calc.wasm");
        assert_eq!(LockFile::key(&lock, &dir.path().join("plugins/more/calc.wasm")), "plugins/more/calc.wasm");
        let elsewhere = tempfile::tempdir().unwrap();
        let outside = std::fs::canonicalize(elsewhere.path()).unwrap().join("calc.wasm");
        assert_eq!(LockFile::key(&lock, &elsewhere.path().join("calc.wasm")), outside.to_string_lossy(), "absolute");
    }

    #[test]
    fn a_version_1_lock_pins_by_file_name_and_relocking_keeps_its_digests() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.lock");
        std::fs::write(&path, "version = 1\n[pins]\n\"calc.wasm\" = \"sha256:aa\"\n\"gone.wasm\" = \"sha256:bb\"\n").unwrap();
        let old = LockFile::read(&path).unwrap().unwrap();
        assert_eq!(old.pin("plugins/calc.wasm"), Some("aa"));
        assert_eq!(old.pin("elsewhere/calc.wasm"), Some("aa"), "a name's pin stands for every file of that name");
        let new = LockFile::new([("plugins/calc.wasm".to_string(), "aa".to_string())]);
        let lines: Vec<String> = new.changes(Some(&old)).iter().map(ToString::to_string).collect();
        assert_eq!(lines, ["removed    gone.wasm  sha256:bb", "unchanged  plugins/calc.wasm  sha256:aa"]);
        assert_eq!(new.version, LOCK_VERSION, "a new lock is keyed by path");
    }

    #[test]
    fn a_pin_state_says_whether_and_how_a_component_is_pinned() {
        let lock = LockFile::new([("plugins/calc.wasm".to_string(), "aa".to_string())]);
        assert_eq!(PinState::of(None, "plugins/calc.wasm", "aa"), PinState::NoLockFile);
        assert_eq!(PinState::of(Some(&lock), "plugins/clock.wasm", "aa"), PinState::NotPinned);
        assert_eq!(PinState::of(Some(&lock), "plugins/calc.wasm", "aa"), PinState::Matches);
        let mismatch = PinState::of(Some(&lock), "plugins/calc.wasm", "bb");
        assert_eq!(mismatch.to_string(), "MISMATCH: pinned sha256:aa, found sha256:bb");
        assert!(!mismatch.is_pinned() && PinState::Matches.is_pinned());
    }

    #[test]
    fn changes_name_new_changed_unchanged_and_removed_pins() {
        let pins = |pairs: &[(&str, &str)]| LockFile::new(pairs.iter().map(|(f, d)| (f.to_string(), d.to_string())));
        let old = pins(&[("a.wasm", "aa"), ("b.wasm", "bb"), ("gone.wasm", "cc")]);
        let new = pins(&[("a.wasm", "aa"), ("b.wasm", "b2"), ("c.wasm", "c1")]);
        let lines: Vec<String> = new.changes(Some(&old)).iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "unchanged  a.wasm  sha256:aa",
                "changed    b.wasm  sha256:bb → sha256:b2",
                "new        c.wasm  sha256:c1",
                "removed    gone.wasm  sha256:cc",
            ]
        );
        assert!(new.changes(None).iter().all(PinChange::trusts_new_bytes), "without a lock file, every pin is new");
    }
}
