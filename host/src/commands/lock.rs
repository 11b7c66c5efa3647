use super::GlobalOptions;
use crate::registry::{LockFile, component_files, sha256_hex};
use anyhow::Context;
use std::process::ExitCode;

/// Pin the SHA-256 of every component in the plugin directories into the
/// lock file. Once it exists, a component that is not pinned, or whose bytes
/// changed, is refused with both digests.
#[derive(Debug, clap::Args)]
pub(super) struct LockCommand {}

impl LockCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let policy = global.policy()?;
        let mut pins = Vec::new();
        for path in component_files(&policy.plugin_dirs)? {
            let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let digest = sha256_hex(&bytes);
            println!("{name}  sha256:{digest}");
            pins.push((name, digest));
        }
        let count = pins.len();
        LockFile::new(pins).write(&policy.lock_file)?;
        eprintln!("pinned {count} components in {}", policy.lock_file.display());
        Ok(ExitCode::SUCCESS)
    }
}
