//! The error reading the policy file, `toolhost.toml`, and the range check
//! every section's parser shares: below the sections' owners (the sandbox,
//! the registry, approval, the LLM client, the doors), which parse their
//! own sections, and below `config`, which assembles them.

use std::path::{Path, PathBuf};

/// An error reading `toolhost.toml`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML is malformed or has an unknown key; the message names it.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said, with the key and position.
        message: String,
    },
    /// A value is not of the form its key needs.
    #[error("{path}: {key} = {value:?} is invalid: {why}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key, e.g. `plugins.files.sha256`.
        key: String,
        /// The value given.
        value: String,
        /// What it must be.
        why: String,
    },
    /// A value is out of range.
    #[error("{path}: {key} = {value} is out of range: {why}")]
    Range {
        /// The file.
        path: PathBuf,
        /// The key, e.g. `plugins.files.limits.memory_mib`.
        key: String,
        /// The value given.
        value: String,
        /// The allowed range.
        why: String,
    },
}

/// `value` of `key` when it lies in `range`, else the error naming both.
pub fn in_range(path: &Path, key: &str, value: u64, range: std::ops::RangeInclusive<u64>) -> Result<u64, ConfigError> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::Range {
            path: path.to_owned(),
            key: key.to_owned(),
            value: value.to_string(),
            why: format!("expected {} to {}", range.start(), range.end()),
        })
    }
}
