use super::GlobalOptions;
use super::confirm::confirm;
use super::inspect;
use super::output;
use super::progress::Progress;
use super::source::Source;
use anyhow::{Context, anyhow, bail};
use std::path::Path;
use std::process::ExitCode;
use toolhost::{Catalog, LoadedPlugin, Registry, registry::LockFile, text::printable};
use toolhost_support::digest::sha256_hex;

/// Install a component into the plugin directory and pin it.
///
/// Install a component into the plugin directory (the per-user one,
/// `$XDG_DATA_HOME/toolhost/plugins`, when there is no policy file; else
/// the policy's first) and pin its SHA-256 in the lock file.
///
/// SOURCE is a component file, an `https://` URL (with --sha256), or an OCI
/// reference, `oci://HOST/REPO:TAG` or `oci://HOST/REPO@sha256:DIGEST`
/// (a Wasm OCI artifact; plain HTTP only to a registry on loopback). The
/// component is loaded in the sandbox first and refused, with the reason,
/// if it does not load or offers a tool another installed plugin offers;
/// then what it offers and asks for is shown (each
/// tool's permission level, each capability) and, on a terminal, you are
/// asked to confirm. It is installed as `NAME.wasm`, NAME its plugin name,
/// replacing an earlier version of it.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost add dist/words.wasm\n  toolhost add https://example.com/words.wasm --sha256 9f86d0…\n  toolhost add oci://ghcr.io/me/words:0.1.0 --yes"
)]
pub(super) struct AddCommand {
    /// A file, `https://…`, or `oci://HOST/REPO:TAG` / `oci://HOST/REPO@sha256:…`.
    source: String,
    /// The SHA-256 the component must have, hex; required for https://.
    #[arg(long, value_name = "DIGEST")]
    sha256: Option<String>,
    /// Install without asking.
    #[arg(long, short)]
    yes: bool,
}

/// What a component is staged as while it is checked: not `.wasm`, so no
/// registry loads it meanwhile.
const STAGING_SUFFIX: &str = ".wasm.part";

impl AddCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let policy = global.policy()?;
        let dir = policy.plugin_dirs.first().cloned().context("no plugin directory to install into")?;
        let lock_file = policy.lock_file.clone();
        let mut lock = LockFile::read(&lock_file)?.unwrap_or_else(|| LockFile::new([]));
        let progress = Progress::start(format_args!("fetching {}", self.source));
        let bytes = Source::parse(&self.source)?.fetch(self.sha256.as_deref()).await;
        progress.finish("fetched");
        let bytes = bytes?;
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let staged = tempfile::Builder::new().prefix(".add-").suffix(STAGING_SUFFIX).tempfile_in(&dir)?;
        std::fs::write(staged.path(), &bytes)?;
        // Its text is the plugin's: one line, escaped.
        let registry = Registry::new(policy)?;
        let progress = Progress::start(format_args!("loading {} in the sandbox (compiling it)", self.source));
        let plugin = registry.inspect(staged.path()).await;
        progress.finish("loaded");
        let plugin = plugin
            // The staged file is ours; the person knows the source.
            .map_err(|e| {
                let staged_name = staged.path().file_name().unwrap_or_default().to_string_lossy();
                let why = e
                    .to_string()
                    .replace(&staged.path().display().to_string(), &self.source)
                    .replace(&*staged_name, &self.source);
                anyhow!("{} was not installed: {}", self.source, printable(&why))
            })?;
        let target = dir.join(format!("{}.wasm", plugin.manifest.name));
        inspect::show(&plugin, &target)?;
        // The staged file is not `.wasm`, so this is what is installed now.
        let progress = Progress::start("loading the installed plugins");
        let installed =
            registry.survey(&|p| progress.update(format_args!("compiling {} ({}/{})", p.file.display(), p.index, p.total))).await;
        progress.finish("loaded");
        let installed = installed.context("loading the installed plugins")?;
        if let Some(clash) = clash(&installed, &plugin, &target) {
            bail!("{} was not installed: {}", self.source, printable(&clash));
        }
        let key = LockFile::key(&lock_file, &target);
        let sha256 = sha256_hex(&bytes);
        match lock.pin(&key) {
            Some(pinned) if pinned == sha256 && target.exists() => {
                output::note(format_args!("{} is already installed, pinned at this digest", target.display()));
                return Ok(ExitCode::SUCCESS);
            }
            Some(pinned) => output::note(format_args!("replaces {} (sha256 {pinned})", target.display())),
            None => {}
        }
        if !self.yes && !confirm(format_args!("install it as {}?", target.display()))? {
            bail!("{} was not installed: pass --yes to install it without being asked", self.source);
        }
        staged.persist(&target).with_context(|| format!("installing {}", target.display()))?;
        lock.set_pin(&key, &sha256);
        lock.write(&lock_file)?;
        output::note(format_args!("installed {} (sha256 {sha256}), pinned in {}", target.display(), lock_file.display()));
        Ok(ExitCode::SUCCESS)
    }
}

/// Why `plugin`, to be installed as `target`, cannot sit beside what is
/// installed: a tool name another installed plugin offers. (Its plugin
/// name cannot clash: it names the file, so that is a replacement.)
fn clash(installed: &Catalog, plugin: &LoadedPlugin, target: &Path) -> Option<String> {
    plugin.manifest.tools.iter().find_map(|tool| {
        let (owner, _) = installed.tool(&tool.name).filter(|(owner, _)| owner.path != target)?;
        Some(format!(
            "its tool `{}` is offered already by plugin `{}` ({})",
            tool.name,
            owner.manifest.name,
            owner.path.display()
        ))
    })
}
