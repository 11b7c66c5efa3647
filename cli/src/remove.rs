use super::GlobalOptions;
use super::output;
use anyhow::{Context, bail};
use std::process::ExitCode;
use toolhost::registry::LockFile;

/// Remove a component `toolhost add` installed.
///
/// Remove a component `toolhost add` installed, by its plugin name: delete
/// `NAME.wasm` from the plugin directory it was installed into and drop its
/// pin from the lock file.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "Examples:\n  toolhost remove words")]
pub(super) struct RemoveCommand {
    /// The plugin's name, as `toolhost list` shows it.
    name: String,
}

impl RemoveCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let policy = global.policy()?;
        let dir = policy.plugin_dirs.first().context("no plugin directory to remove from")?;
        let file = dir.join(format!("{}.wasm", self.name));
        if self.name.contains(['/', '\\']) || !file.is_file() {
            bail!("no plugin `{}` is installed in {}", self.name, dir.display());
        }
        std::fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))?;
        let dropped = match LockFile::read(&policy.lock_file)? {
            Some(mut lock) => {
                let dropped = lock.remove_pin(&LockFile::key(&policy.lock_file, &file));
                if dropped.is_some() {
                    lock.write(&policy.lock_file)?;
                }
                dropped
            }
            None => None,
        };
        match dropped {
            Some(_) => output::note(format_args!("removed {} and its pin in {}", file.display(), policy.lock_file.display())),
            None => output::note(format_args!("removed {} (it had no pin in {})", file.display(), policy.lock_file.display())),
        }
        Ok(ExitCode::SUCCESS)
    }
}
