use super::GlobalOptions;
use super::confirm::confirm;
use super::output;
use anyhow::{Context, bail};
use std::process::ExitCode;
use toolhost::{
    Registry,
    registry::{LoadError, LockFile, component_files},
};
use toolhost_support::digest::sha256_hex;

/// Pin every component's SHA-256 in the lock file.
///
/// Pin the SHA-256 of every component in the plugin directories into the
/// lock file, each by its path relative to the lock file's directory. Once
/// it exists, a component that is not pinned, or whose bytes changed, is
/// refused with both digests, and a policy section without `file` or
/// `sha256` grants only to pinned components.
///
/// First it shows each component as new, changed (old → new digest),
/// unchanged or removed. It writes nothing when two components claim one
/// plugin name or one tool name, or when there is no component to pin.
/// Pinning a new or changed component trusts it: on a terminal it asks
/// first; otherwise pass --yes.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "Examples:\n  toolhost lock\n  toolhost --plugins plugins lock --yes")]
pub(super) struct LockCommand {
    /// Pin new and changed components without asking.
    #[arg(long, short)]
    yes: bool,
}

impl LockCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let policy = global.policy()?;
        let old = LockFile::read(&policy.lock_file)?;
        let mut pins = Vec::new();
        for path in component_files(&policy.plugin_dirs)? {
            let bytes = toolhost_support::regular_file::read_regular_file(&path, toolhost::registry::MAX_COMPONENT_BYTES)
                .with_context(|| format!("reading {}", path.display()))?;
            pins.push((LockFile::key(&policy.lock_file, &path), sha256_hex(&bytes)));
        }
        if pins.is_empty() {
            // An empty lock would refuse every component added later.
            let dirs: Vec<String> = policy.plugin_dirs.iter().map(|d| d.display().to_string()).collect();
            bail!(
                "{} was not written: there is nothing to pin — no components (*.wasm) in {}; an empty lock file \
                 would refuse every plugin added later. Check plugin_dirs (or --plugins), then lock again",
                policy.lock_file.display(),
                if dirs.is_empty() { "any plugin directory (none is configured)".to_owned() } else { dirs.join(", ") }
            );
        }
        let lock = LockFile::new(pins);
        let changes = lock.changes(old.as_ref());
        for change in &changes {
            output::line(change)?;
        }

        let mut conflicts = false;
        let lock_file = policy.lock_file.clone();
        let survey = Registry::new(policy)?.survey(&|_| {}).await.context("loading plugins")?;
        for refusal in &survey.refused {
            let claim = matches!(refusal.error, LoadError::DuplicatePlugin { .. } | LoadError::Collision { .. });
            conflicts |= claim;
            let (prefix, suffix) = if claim { ("refused", "") } else { ("warning", " (pinned, but it does not load)") };
            output::note(format_args!("{prefix}: {}{suffix}", refusal.error));
        }
        if conflicts {
            bail!(
                "{} was not written: the components refused above claim a name another one claims; \
                 remove the ones you do not trust, then lock again",
                lock_file.display()
            );
        }

        let trusted = changes.iter().filter(|c| c.trusts_new_bytes()).count();
        if trusted > 0
            && !self.yes
            && !confirm(format_args!("pin {trusted} new or changed components in {}?", lock_file.display()))?
        {
            bail!(
                "{} was not written: {trusted} new or changed components; check them above, then run \
                 `toolhost lock --yes` to pin them",
                lock_file.display()
            );
        }
        lock.write(&lock_file)?;
        output::note(format_args!("pinned {} components in {}", lock.pins.len(), lock_file.display()));
        Ok(ExitCode::SUCCESS)
    }
}
