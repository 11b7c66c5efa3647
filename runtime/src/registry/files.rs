//! The component files of the plugin directories.

use super::RegistryError;
use std::path::PathBuf;

/// Every `*.wasm` file in `dirs`, directory by directory, sorted by name.
///
/// # Errors
///
/// [`RegistryError::ReadDir`] when a directory cannot be listed.
pub fn component_files(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, RegistryError> {
    let mut all = Vec::new();
    for dir in dirs {
        let entries = std::fs::read_dir(dir).map_err(|source| RegistryError::ReadDir { dir: dir.clone(), source })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
            .collect();
        files.sort();
        all.extend(files);
    }
    Ok(all)
}
