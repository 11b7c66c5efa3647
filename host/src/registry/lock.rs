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
}
