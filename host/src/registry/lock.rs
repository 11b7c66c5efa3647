//! Pins: the lock file maps each component's file name to its SHA-256.
//! `toolhost lock` writes it; loading refuses a component whose digest
//! differs from its pin, or that has no pin while a lock file exists.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// The lock file's format version.
const LOCK_VERSION: u32 = 1;

/// The parsed lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    /// The format version, currently 1.
    pub version: u32,
    /// File name → `sha256:<hex>`.
    pub pins: BTreeMap<String, String>,
}

/// An error reading or writing the lock file.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// I/O failed.
    #[error("lock file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid lock file.
    #[error("lock file {path} is malformed: {message}")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl LockFile {
    /// Read `path`; `Ok(None)` when it does not exist.
    pub fn read(path: &Path) -> Result<Option<Self>, LockError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(LockError::Io { path: path.display().to_string(), source }),
        };
        let lock: LockFile = toml::from_str(&text)
            .map_err(|e| LockError::Malformed { path: path.display().to_string(), message: e.to_string() })?;
        if lock.version != LOCK_VERSION {
            return Err(LockError::Malformed {
                path: path.display().to_string(),
                message: format!("version {} is not the supported {LOCK_VERSION}", lock.version),
            });
        }
        Ok(Some(lock))
    }

    /// A lock with `pins` (file name → hex digest).
    pub fn new(pins: impl IntoIterator<Item = (String, String)>) -> Self {
        LockFile {
            version: LOCK_VERSION,
            pins: pins.into_iter().map(|(name, hex)| (name, format!("sha256:{hex}"))).collect(),
        }
    }

    /// The pinned hex digest of `file_name`.
    pub fn pin(&self, file_name: &str) -> Option<&str> {
        self.pins.get(file_name).map(|pin| pin.strip_prefix("sha256:").unwrap_or(pin))
    }

    /// How each pin of `self` differs from `old` (the lock file as it was,
    /// if there was one), in file-name order.
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
        changes.extend(old.pins.keys().filter(|file| !self.pins.contains_key(*file)).map(|file| {
            PinChange::Removed { file: file.clone(), sha256: old.pin(file).unwrap_or_default().to_owned() }
        }));
        changes.sort_by(|a, b| a.file().cmp(b.file()));
        changes
    }

    /// Write atomically to `path`.
    pub fn write(&self, path: &Path) -> Result<(), LockError> {
        let io = |source| LockError::Io { path: path.display().to_string(), source };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        let body = toml::to_string(self).expect("a lock file serializes");
        file.write_all(b"# Written by `toolhost lock`: the SHA-256 of each plugin component.\n")
            .and_then(|()| file.write_all(body.as_bytes()))
            .map_err(io)?;
        file.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

/// How one pin differs between the lock file and the components on disk.
/// Displayed as the line `toolhost lock` shows for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinChange {
    /// A component the lock file does not pin yet.
    New {
        /// Its file name.
        file: String,
        /// Its digest, hex.
        sha256: String,
    },
    /// A component whose bytes differ from its pin.
    Changed {
        /// Its file name.
        file: String,
        /// The pinned digest.
        old: String,
        /// The digest of the file now.
        new: String,
    },
    /// A component that matches its pin.
    Unchanged {
        /// Its file name.
        file: String,
        /// Its digest.
        sha256: String,
    },
    /// A pin whose component is gone.
    Removed {
        /// Its file name.
        file: String,
        /// The pinned digest.
        sha256: String,
    },
}

impl PinChange {
    /// The component's file name.
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
    fn round_trips_and_rejects_other_versions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.lock");
        assert_eq!(LockFile::read(&path).unwrap(), None);
        let lock = LockFile::new([("calc.wasm".to_string(), "ab12".to_string())]);
        lock.write(&path).unwrap();
        let read = LockFile::read(&path).unwrap().unwrap();
        assert_eq!(read.pin("calc.wasm"), Some("ab12"));
        std::fs::write(&path, "version = 2\n[pins]\n").unwrap();
        assert!(LockFile::read(&path).unwrap_err().to_string().contains("version 2"));
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
