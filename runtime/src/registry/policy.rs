//! The part of the policy the registry runs by: where plugins live, the
//! cache and the lock file, the default limits, each plugin's section and
//! the sandbox's size. The doors' sections (approval, agents, the LLM
//! client, VCP, MCP, the console) are not here: `config::Policy` assembles
//! them with this part, above the registry.

use crate::config_error::ConfigError;
use crate::home_paths::{default_cache_dir, default_cache_key};
use crate::manifest::{MAX_TOOL_NAME_LEN, is_valid_name};
use crate::sandbox::{Allowance, DirSection, LimitOverrides, Limits, SandboxSize};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The lock file's name when the policy names none.
pub const DEFAULT_LOCK_FILE: &str = "toolhost.lock";

/// What the registry is loaded with; a `config::Policy` converts into it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RuntimePolicy {
    /// Directories scanned for `*.wasm` components.
    pub plugin_dirs: Vec<PathBuf>,
    /// Where compiled artifacts are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// The file holding the per-user secret key that authenticates cached
    /// artifacts; made on first use. `None` only when there is no home
    /// directory to default to.
    pub cache_key: Option<PathBuf>,
    /// The lock file holding sha-256 pins.
    pub lock_file: PathBuf,
    /// Limits for plugins without their own.
    pub limits: Limits,
    /// Per plugin, by plugin name.
    pub plugins: BTreeMap<String, PluginPolicy>,
    /// How much the sandbox reserves: calls at once and engines. A
    /// registry made over a shared sandbox (`Registry::with_sandbox`) does
    /// not use it.
    pub sandbox: SandboxSize,
}

impl Default for RuntimePolicy {
    /// No plugin directories, the default limits, nothing allowed, the
    /// user cache directory, `toolhost.lock` in the working directory, a
    /// sandbox sized for this machine.
    fn default() -> Self {
        RuntimePolicy {
            plugin_dirs: Vec::new(),
            cache_dir: default_cache_dir(),
            cache_key: default_cache_key(),
            lock_file: PathBuf::from(DEFAULT_LOCK_FILE),
            limits: Limits::default(),
            plugins: BTreeMap::new(),
            sandbox: SandboxSize::for_machine(),
        }
    }
}

impl RuntimePolicy {
    /// The section `[plugins.NAME]` as written, or the defaults and
    /// nothing allowed. Whether its allowance applies to a component is the
    /// registry's to decide, by the section's [`Binding`].
    pub fn for_plugin(&self, name: &str) -> PluginPolicy {
        self.plugins.get(name).cloned().unwrap_or_else(|| PluginPolicy {
            limits: self.limits,
            allowance: Allowance::default(),
            binding: Binding::default(),
            rename: BTreeMap::new(),
            tool_prefix: None,
        })
    }
}

/// The policy for one plugin; by default, the default limits and nothing
/// allowed, bound to a pinned component.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct PluginPolicy {
    /// Its limits: the defaults with its overrides applied.
    pub limits: Limits,
    /// What it may be granted.
    pub allowance: Allowance,
    /// Which component the allowance is for.
    pub binding: Binding,
    /// `rename = { calculate = "misc_calculate" }`: by declared name, the
    /// name the host gives a tool instead, in full. Unlike the allowance,
    /// it follows the plugin's name whatever the binding (see
    /// `registry::names`).
    pub rename: BTreeMap<String, String>,
    /// `tool_prefix = "misc_"`: put before the name of every tool that
    /// `rename` does not name.
    pub tool_prefix: Option<String>,
}

/// Which component a `[plugins.NAME]` section's grants are for. A plugin
/// chooses its own name, so the name alone never earns a grant: the section
/// names the component by `file`, `sha256` or both (all given must match),
/// or, naming neither, applies only to a component pinned in the lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Binding {
    /// `file = "files.wasm"`: the component's file name in a plugin directory.
    pub file: Option<String>,
    /// `sha256 = "…"`: the component's SHA-256, lowercase hex.
    pub sha256: Option<String>,
}

/// `[plugins.NAME]` as the policy file spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSection {
    file: Option<String>,
    sha256: Option<String>,
    #[serde(default)]
    limits: LimitOverrides,
    #[serde(default)]
    dirs: BTreeMap<String, DirSection>,
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    http_hosts: Vec<String>,
    #[serde(default)]
    rename: BTreeMap<String, String>,
    tool_prefix: Option<String>,
}

impl PluginSection {
    /// The section of plugin `name` checked, its limits over `defaults`,
    /// its paths resolved; a bad value names its key, `plugins.NAME.…`.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for a limit out of range, a `file` that is not a
    /// bare component file name, a `sha256` that is not 64 hex digits, or a
    /// new tool name or prefix no plugin could declare.
    pub fn resolve(
        self,
        name: &str,
        defaults: Limits,
        resolve: &dyn Fn(PathBuf) -> PathBuf,
        path: &Path,
    ) -> Result<PluginPolicy, ConfigError> {
        let limits = self.limits.apply(defaults, path, &format!("plugins.{name}.limits"))?;
        let allowance = Allowance::from_section(self.dirs, self.env, self.http_hosts, resolve);
        let binding = Binding {
            file: self.file.map(|file| check_file_name(file, path, name)).transpose()?,
            sha256: self.sha256.map(|digest| check_sha256(&digest, path, name)).transpose()?,
        };
        check_tool_names(&self.rename, self.tool_prefix.as_deref(), path, name)?;
        Ok(PluginPolicy { limits, allowance, binding, rename: self.rename, tool_prefix: self.tool_prefix })
    }
}

/// `file` must be a component's bare file name, as the lock file names it:
/// a path would never match, so it is refused rather than silently unused.
fn check_file_name(file: String, path: &Path, plugin: &str) -> Result<String, ConfigError> {
    let bare = !file.contains(['/', '\\']) && file.ends_with(".wasm") && file.len() > ".wasm".len();
    if bare {
        Ok(file)
    } else {
        Err(ConfigError::Invalid {
            path: path.to_owned(),
            key: format!("plugins.{plugin}.file"),
            value: file,
            why: "expected a component's file name in a plugin directory, like \"files.wasm\"".into(),
        })
    }
}

/// `sha256` is 64 hex digits, optionally after `sha256:` as the lock file
/// writes it; kept lowercase so it compares with the registry's digests.
fn check_sha256(digest: &str, path: &Path, plugin: &str) -> Result<String, ConfigError> {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex.to_ascii_lowercase())
    } else {
        Err(ConfigError::Invalid {
            path: path.to_owned(),
            key: format!("plugins.{plugin}.sha256"),
            value: digest.to_owned(),
            why: "expected 64 hex digits, as `toolhost lock` prints them".into(),
        })
    }
}

/// Every new tool name is one a plugin could declare, no two tools are
/// given one, and a prefix is made of the same characters with room for a
/// name after it. Whether a prefixed name fits, or a new name is another
/// tool's, is known once the plugin is loaded (see `registry::names`).
fn check_tool_names(
    rename: &BTreeMap<String, String>,
    prefix: Option<&str>,
    path: &Path,
    plugin: &str,
) -> Result<(), ConfigError> {
    let invalid =
        |key: String, value: &str, why: String| ConfigError::Invalid { path: path.to_owned(), key, value: value.to_owned(), why };
    let mut given: BTreeMap<&str, &str> = BTreeMap::new();
    for (tool, name) in rename {
        let key = format!("plugins.{plugin}.rename.{tool}");
        if !is_valid_name(name) {
            return Err(invalid(
                key,
                name,
                format!("a tool name must match ^[A-Za-z0-9_-]{{1,{MAX_TOOL_NAME_LEN}}}$, as a declared one does"),
            ));
        }
        if let Some(other) = given.insert(name, tool) {
            return Err(invalid(key, name, format!("tool `{other}` is given that name too; a name belongs to one tool")));
        }
    }
    match prefix {
        Some(prefix) if !is_valid_name(prefix) || prefix.len() == MAX_TOOL_NAME_LEN => Err(invalid(
            format!("plugins.{plugin}.tool_prefix"),
            prefix,
            format!("a prefix must match ^[A-Za-z0-9_-]{{1,{}}}$, so that a name can follow it", MAX_TOOL_NAME_LEN - 1),
        )),
        _ => Ok(()),
    }
}

/// The `[plugins.files]` section whose body is `body`, over `defaults`.
#[cfg(test)]
pub(crate) fn parsed_section(body: &str, defaults: Limits) -> PluginPolicy {
    let section: PluginSection = toml::from_str(body).expect("a [plugins.NAME] section");
    section.resolve("files", defaults, &|path| path, Path::new("/etc/toolhost.toml")).expect("a valid section")
}
