//! The contract between the host and its plugins, the WIT package
//! `toolhost:plugin`, built into the library: the very file the host's
//! bindings are generated from. A tool author's toolchain (componentize-py,
//! componentize-qjs, `wit-bindgen c`, `wit-bindgen go`) reads it from a
//! directory, which `toolhost wit --out DIR` and `toolhost new` write.

use std::path::{Path, PathBuf};

/// The WIT text of `toolhost:plugin`.
pub const PLUGIN_WIT: &str = include_str!("../wit/plugin.wit");
/// The file name the package is written under in a `wit/` directory.
pub const PLUGIN_WIT_FILE: &str = "plugin.wit";
/// The world a plugin targets (`--world plugin`).
pub const PLUGIN_WORLD: &str = "plugin";

/// Write the package into `dir` (made if missing) as [`PLUGIN_WIT_FILE`];
/// returns the file's path.
///
/// # Errors
///
/// The I/O error when `dir` cannot be made or the file cannot be written.
pub fn write_wit(dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let file = dir.join(PLUGIN_WIT_FILE);
    std::fs::write(&file, PLUGIN_WIT)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::HOST_API_VERSION;

    #[test]
    fn the_embedded_package_is_the_api_version_the_host_loads() {
        let package = format!("package toolhost:plugin@{HOST_API_VERSION};");
        assert!(PLUGIN_WIT.lines().any(|line| line == package), "the WIT does not declare {package}");
        assert!(PLUGIN_WIT.contains(&format!("world {PLUGIN_WORLD} {{")), "no world {PLUGIN_WORLD}");
    }

    #[test]
    fn write_wit_makes_the_directory_and_writes_the_package() {
        let dir = tempfile::tempdir().unwrap();
        let file = write_wit(&dir.path().join("nested/wit")).unwrap();
        assert_eq!(file, dir.path().join("nested/wit").join(PLUGIN_WIT_FILE));
        assert_eq!(std::fs::read_to_string(file).unwrap(), PLUGIN_WIT);
    }
}
