//! The host policy, `toolhost.toml`: where plugins live, the default limits,
//! and per plugin its limits and what it may be granted. The file is strict:
//! an unknown key is an error that names the key.
//!
//! ```toml
//! plugin_dirs = ["plugins"]          # relative to this file
//! cache_dir = ".toolhost/cache"      # compiled artifacts; default: the user cache dir
//! cache_key = "keys/cache.key"       # authenticates them; default: the user state dir
//! lock_file = "toolhost.lock"        # sha-256 pins; default: beside this file
//!
//! [limits]                           # every plugin's defaults
//! fuel = 1_000_000_000
//! timeout_ms = 30_000
//! memory_mib = 64                    # all of a call's linear memories together
//! output_kib = 1024
//! host_memory_mib = 32               # what the host holds for a call
//! resources = 1000
//! open_files = 128
//! http_requests = 64
//!
//! [sandbox]                          # what the sandbox reserves; default: from the machine
//! calls = 64                         # calls at once (the pool's slots, in each engine)
//! engines = 2                        # engines side by side; default: the cores, up to 4
//!
//! [plugins.files]
//! file = "files.wasm"                # the component these grants are for (and/or sha256 = "…")
//! limits = { timeout_ms = 5_000 }
//! env = ["HOME"]
//! http_hosts = ["example.com"]
//! dirs = { "/workspace" = { host = "./workspace", access = "read-write" } }
//!
//! [plugins.misc]                     # tool names, for two plugins declaring one
//! rename = { calculate = "misc_calculate" }  # a tool's new name, in full
//! tool_prefix = "misc_"              # before the name of every tool not renamed
//!
//! [agents.coder]                     # see `agent::ToolCallConfig`
//! enabled = true
//! protocol = "json-block"
//! tool_toggles = { write_file = false }
//!
//! [approval]                         # see `approval`
//! memory_file = "toolhost.approvals.json"  # remembered "allow always"; default: beside the lock file
//! audit_log = "audit.jsonl"          # one JSON line per call; default: none
//! [[approval.rules]]                 # deny, then ask, then allow rules are tried
//! action = "allow"                   # allow | ask | deny
//! tool = "write_file"                # a tool name or a glob: "read_*", "*"
//! plugin = "files"                   # only this plugin's tools; default: any plugin's
//! agent = "coder"                    # only for this agent; default: every agent
//! args = { path = "notes/**" }       # every listed argument must match its glob
//! reason = "…"                       # deny and ask only: the words the model or the person gets
//!
//! [vcp]                              # joining a VCP server as a node; see `vcp_node::VcpConfig`
//! server = "ws://127.0.0.1:6005"
//!
//! [mcp]                              # serving the tools to MCP clients; see `mcp::McpConfig`
//! tools = ["calculate"]
//!
//! [console]                          # the browser console; see `console::ConsoleConfig`
//! listen = "127.0.0.1:7800"
//! ```

use crate::agent::ToolCallConfig;
use crate::approval::{ApprovalConfig, Rule, RuleAction};
use crate::console::{ConsoleConfig, ConsoleSection};
use crate::llm::LlmProfile;
use crate::manifest::{DirAccess, MAX_TOOL_NAME_LEN, is_valid_name};
use crate::mcp::{McpConfig, McpSection};
use crate::sandbox::{Allowance, Limits, MAX_CONCURRENT_CALLS, MAX_MEMORY_BYTES, MAX_SHARDS, MAX_TABLE_ELEMENTS, SandboxSize};
use crate::vcp_node::{VcpConfig, VcpSection};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) use crate::home_paths::expanded;

/// The name looked for in the working directory when `--config` is absent.
pub const DEFAULT_CONFIG_FILE: &str = "toolhost.toml";
/// The lock file's name when the policy names none.
pub const DEFAULT_LOCK_FILE: &str = "toolhost.lock";
pub use crate::approval::DEFAULT_MEMORY_FILE;

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

/// The resolved host policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
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
    /// How each agent uses tools, by agent name (`[agents.NAME]`).
    pub agents: BTreeMap<String, ToolCallConfig>,
    /// Approval rules, remembered decisions and the audit log (`[approval]`).
    pub approval: ApprovalConfig,
    /// Joining a VCP server as a node (`[vcp]`, see [`VcpConfig`]); `None`
    /// without that section.
    pub vcp: Option<VcpConfig>,
    /// Serving the tools to MCP clients (`[mcp]`, see [`McpConfig`]).
    pub mcp: McpConfig,
    /// The browser console (`[console]`, see [`ConsoleConfig`]).
    pub console: ConsoleConfig,
    /// Model endpoints, by profile name (`[llm.NAME]`).
    pub llm: BTreeMap<String, LlmProfile>,
    /// How much the sandbox reserves (`[sandbox]`): calls at once and
    /// engines; default [`SandboxSize::for_machine`]. A registry made over
    /// a shared sandbox (`Registry::with_sandbox`) does not use it.
    pub sandbox: SandboxSize,
}

/// The policy for one plugin.
#[derive(Debug, Clone, PartialEq)]
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
pub struct Binding {
    /// `file = "files.wasm"`: the component's file name in a plugin directory.
    pub file: Option<String>,
    /// `sha256 = "…"`: the component's SHA-256, lowercase hex.
    pub sha256: Option<String>,
}

impl Default for Policy {
    /// No plugin directories, the default limits, nothing allowed, the
    /// user cache directory, `toolhost.lock` and `toolhost.approvals.json`
    /// in the working directory, no approval rules, no audit log.
    fn default() -> Self {
        Policy {
            plugin_dirs: Vec::new(),
            cache_dir: default_cache_dir(),
            cache_key: default_cache_key(),
            lock_file: PathBuf::from(DEFAULT_LOCK_FILE),
            limits: Limits::default(),
            plugins: BTreeMap::new(),
            agents: BTreeMap::new(),
            llm: BTreeMap::new(),
            approval: ApprovalConfig::default(),
            vcp: None,
            mcp: McpConfig::default(),
            console: ConsoleConfig::default(),
            sandbox: SandboxSize::for_machine(),
        }
    }
}

impl Policy {
    /// The policy when there is no policy file: the defaults over the
    /// per-user plugin directory ([`user_plugin_dir`]), pinned by the lock
    /// file in it, so that what `toolhost add` installed loads from any
    /// working directory. Without a home directory, the defaults.
    pub fn user() -> Self {
        let Some(dir) = user_plugin_dir() else { return Policy::default() };
        let mut policy = Policy { lock_file: dir.join(DEFAULT_LOCK_FILE), ..Policy::default() };
        policy.approval.memory_file = dir.join(DEFAULT_MEMORY_FILE);
        policy.plugin_dirs = vec![dir];
        policy
    }

    /// Read and check `path`. Relative paths inside are relative to the
    /// file's directory; a leading `~`, `$HOME` or `$XDG_*_HOME` expands.
    /// The per-user policy file ([`user_config_file`]) that names no
    /// `plugin_dirs` or `lock_file` has those of [`Policy::user`], so a
    /// grant written there applies to what `toolhost add` installed.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the file and, for a bad value, its key: the
    /// file cannot be read, the TOML is malformed or has an unknown key, a
    /// value is of the wrong form or out of range, or a granted directory does
    /// not exist.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        let policy = Self::parse(&text, path)?;
        policy.check_grant_dirs(path)?;
        Ok(policy)
    }

    /// Every directory a grant maps must exist on this machine: a missing
    /// one would look granted and fail only at call time.
    fn check_grant_dirs(&self, path: &Path) -> Result<(), ConfigError> {
        for (name, plugin) in &self.plugins {
            for (guest, (host, _)) in &plugin.allowance.dirs {
                let why = match std::fs::metadata(host) {
                    Ok(meta) if meta.is_dir() => continue,
                    Ok(_) => format!("{} is not a directory", host.display()),
                    Err(error) => format!("the directory {} cannot be used: {error}", host.display()),
                };
                return Err(ConfigError::Invalid {
                    path: path.to_owned(),
                    key: format!("plugins.{name}.dirs.\"{guest}\".host"),
                    value: host.display().to_string(),
                    why,
                });
            }
        }
        Ok(())
    }

    /// Parse the text of `path` (used for error messages and to resolve
    /// relative paths).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the file and, for a bad value, its key: the
    /// TOML is malformed or has an unknown key, or a value is of the wrong form
    /// or out of range. Granted directories are not checked here
    /// ([`Policy::load`] checks them).
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let file: ConfigFile = toml::from_str(text)
            .map_err(|e| ConfigError::Parse { path: path.to_owned(), message: e.to_string().trim().to_owned() })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
        let limits = file.limits.apply(Limits::default(), path, "limits")?;
        let mut plugins = BTreeMap::new();
        for (name, plugin) in file.plugins {
            let limits = plugin.limits.apply(limits, path, &format!("plugins.{name}.limits"))?;
            let allowance = Allowance {
                dirs: plugin.dirs.into_iter().map(|(guest, dir)| (guest, (resolve(dir.host), dir.access))).collect(),
                env: plugin.env,
                http_hosts: plugin.http_hosts,
            };
            let binding = Binding {
                file: plugin.file.map(|file| check_file_name(file, path, &name)).transpose()?,
                sha256: plugin.sha256.map(|digest| check_sha256(&digest, path, &name)).transpose()?,
            };
            check_tool_names(&plugin.rename, plugin.tool_prefix.as_deref(), path, &name)?;
            let (rename, tool_prefix) = (plugin.rename, plugin.tool_prefix);
            plugins.insert(name, PluginPolicy { limits, allowance, binding, rename, tool_prefix });
        }
        // The per-user policy is written over what `toolhost add` installed:
        // what it does not name is the per-user directory and its lock.
        let user_dir = is_user_config_file(path).then(user_plugin_dir).flatten();
        let lock_file = match (file.lock_file, &user_dir) {
            (Some(lock_file), _) => resolve(lock_file),
            (None, Some(dir)) => dir.join(DEFAULT_LOCK_FILE),
            (None, None) => resolve(PathBuf::from(DEFAULT_LOCK_FILE)),
        };
        let plugin_dirs = match user_dir {
            Some(dir) if file.plugin_dirs.is_empty() => vec![dir],
            _ => file.plugin_dirs.into_iter().map(resolve).collect(),
        };
        let approval = file.approval.resolve(&lock_file, &resolve, path)?;
        let llm = file
            .llm
            .into_iter()
            .map(|(name, section)| Ok((name.clone(), section.resolve(&name, path)?)))
            .collect::<Result<BTreeMap<_, _>, ConfigError>>()?;
        let mut agents = file.agents;
        for (name, agent) in &mut agents {
            check_agent(name, agent, &llm, path)?;
            agent.system_prompt_file = agent.system_prompt_file.take().map(&resolve);
        }
        let vcp = file.vcp.map(|section| section.resolve(path, &resolve)).transpose()?;
        for (name, profile) in &llm {
            check_vcp_server(name, profile, vcp.as_ref(), path)?;
        }
        Ok(Policy {
            plugin_dirs,
            cache_dir: file.cache_dir.map(resolve).or_else(default_cache_dir),
            cache_key: file.cache_key.map(resolve).or_else(default_cache_key),
            lock_file,
            limits,
            plugins,
            agents,
            approval,
            vcp,
            mcp: file.mcp.resolve(path)?,
            console: file.console.resolve(path)?,
            llm,
            sandbox: file.sandbox.map_or_else(|| Ok(SandboxSize::for_machine()), |section| section.resolve(path))?,
        })
    }

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

/// An agent's numbers are in range, its model profile exists, and its
/// system prompt is given one way at most.
fn check_agent(name: &str, agent: &ToolCallConfig, llm: &BTreeMap<String, LlmProfile>, path: &Path) -> Result<(), ConfigError> {
    in_range(path, &format!("agents.{name}.timeout_ms"), agent.timeout_ms, 1..=MAX_TIMEOUT_MS)?;
    in_range(path, &format!("agents.{name}.max_iterations"), agent.max_iterations.into(), 1..=u32::MAX.into())?;
    if let Some(profile) = agent.llm.as_deref().filter(|p| !llm.contains_key(*p)) {
        let names: Vec<&str> = llm.keys().map(String::as_str).collect();
        return Err(ConfigError::Invalid {
            path: path.to_owned(),
            key: format!("agents.{name}.llm"),
            value: profile.to_owned(),
            why: format!("the name of an [llm.NAME] profile{}", crate::suggest::did_you_mean(profile, &names)),
        });
    }
    if agent.system_prompt.is_some() && agent.system_prompt_file.is_some() {
        return Err(ConfigError::Invalid {
            path: path.to_owned(),
            key: format!("agents.{name}.system_prompt_file"),
            value: agent.system_prompt_file.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
            why: "either system_prompt or system_prompt_file, not both".into(),
        });
    }
    Ok(())
}

/// An `[llm.NAME]` profile's `vcp_server` must name the server `[vcp]`
/// joins: the one whose node runs this host's tools.
fn check_vcp_server(name: &str, profile: &LlmProfile, vcp: Option<&VcpConfig>, path: &Path) -> Result<(), ConfigError> {
    let Some(server) = &profile.vcp_server else { return Ok(()) };
    let why = match vcp {
        Some(vcp) if vcp.is_server(server) => return Ok(()),
        Some(vcp) => format!("expected the server [vcp] joins ({}): a chat hands its calls only to that one", vcp.server),
        None => "expected a [vcp] section joining that server, the node through which it runs this host's tools".to_owned(),
    };
    Err(ConfigError::Invalid { path: path.to_owned(), key: format!("llm.{name}.vcp_server"), value: server.clone(), why })
}

/// `$XDG_CACHE_HOME/toolhost`, else `$HOME/.cache/toolhost`.
fn default_cache_dir() -> Option<PathBuf> {
    user_dir("XDG_CACHE_HOME", ".cache").map(|dir| dir.join("toolhost"))
}

/// `$XDG_STATE_HOME/toolhost/cache.key`, else
/// `$HOME/.local/state/toolhost/cache.key`: state of this user on this
/// machine, apart from the cache it authenticates (a copied or shared
/// cache directory does not bring its key along) and from configuration,
/// which people publish.
fn default_cache_key() -> Option<PathBuf> {
    user_dir("XDG_STATE_HOME", ".local/state").map(|dir| dir.join("toolhost").join("cache.key"))
}

/// The per-user plugin directory, where `toolhost add` installs and which
/// toolhost loads when there is no policy file:
/// `$XDG_DATA_HOME/toolhost/plugins`, else
/// `$HOME/.local/share/toolhost/plugins`. `None` without a home directory.
pub fn user_plugin_dir() -> Option<PathBuf> {
    user_dir("XDG_DATA_HOME", ".local/share").map(|dir| dir.join("toolhost").join("plugins"))
}

/// The per-user policy file: `$XDG_CONFIG_HOME/toolhost/toolhost.toml`,
/// else `$HOME/.config/toolhost/toolhost.toml`. `None` without a home
/// directory.
pub fn user_config_file() -> Option<PathBuf> {
    user_dir("XDG_CONFIG_HOME", ".config").map(|dir| dir.join("toolhost").join(DEFAULT_CONFIG_FILE))
}

/// Whether `path` is the per-user policy file, however it is spelled.
fn is_user_config_file(path: &Path) -> bool {
    let Some(user) = user_config_file() else { return false };
    user == path || std::fs::canonicalize(&user).is_ok_and(|user| std::fs::canonicalize(path).is_ok_and(|path| user == path))
}

/// The policy file that applies in `dir`, found as cargo finds its
/// manifest: `toolhost.toml` in `dir` or the nearest directory above it,
/// else the per-user one ([`user_config_file`]) when it exists.
pub fn find_config_file(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().map(|dir| dir.join(DEFAULT_CONFIG_FILE)).chain(user_config_file()).find(|file| file.is_file())
}

/// The XDG base directory `$var`, else `$HOME/fallback`.
fn user_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    let xdg = std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    xdg.or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(fallback)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default, deserialize_with = "expanded")]
    plugin_dirs: Vec<PathBuf>,
    #[serde(default, deserialize_with = "expanded")]
    cache_dir: Option<PathBuf>,
    #[serde(default, deserialize_with = "expanded")]
    cache_key: Option<PathBuf>,
    #[serde(default, deserialize_with = "expanded")]
    lock_file: Option<PathBuf>,
    #[serde(default)]
    limits: LimitOverrides,
    #[serde(default)]
    plugins: BTreeMap<String, PluginSection>,
    #[serde(default)]
    agents: BTreeMap<String, ToolCallConfig>,
    #[serde(default)]
    approval: ApprovalSection,
    vcp: Option<VcpSection>,
    #[serde(default)]
    mcp: McpSection,
    #[serde(default)]
    console: ConsoleSection,
    #[serde(default)]
    llm: BTreeMap<String, LlmSection>,
    sandbox: Option<SandboxSection>,
}

/// `[sandbox]` as the file spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SandboxSection {
    calls: Option<u64>,
    engines: Option<u64>,
}

impl SandboxSection {
    /// The machine's default with the keys given applied, each in range.
    fn resolve(self, path: &Path) -> Result<SandboxSize, ConfigError> {
        let default = SandboxSize::for_machine();
        let calls = match self.calls {
            Some(calls) => in_range(path, "sandbox.calls", calls, 1..=u64::from(MAX_CONCURRENT_CALLS))? as u32,
            None => default.calls,
        };
        let engines = match self.engines {
            Some(engines) => in_range(path, "sandbox.engines", engines, 1..=MAX_SHARDS as u64)? as usize,
            None => default.engines,
        };
        Ok(SandboxSize::pooled(calls, engines))
    }
}

/// `[llm.NAME]` as the file spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LlmSection {
    base_url: String,
    model: String,
    api_key_env: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    extra_body: toml::Table,
    idle_timeout_ms: Option<u64>,
    connect_timeout_ms: Option<u64>,
    retries: Option<u32>,
    max_reply_kib: Option<u64>,
    max_line_kib: Option<u64>,
    max_call_argument_kib: Option<u64>,
    max_calls_per_reply: Option<u64>,
    request_timeout_ms: Option<u64>,
    vcp_server: Option<String>,
}

impl LlmSection {
    fn resolve(self, name: &str, path: &Path) -> Result<LlmProfile, ConfigError> {
        let invalid = |key: &str, value: String, why: &str| ConfigError::Invalid {
            path: path.to_owned(),
            key: format!("llm.{name}.{key}"),
            value,
            why: why.to_owned(),
        };
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(invalid("base_url", self.base_url, "an http:// or https:// URL, e.g. http://127.0.0.1:8080/v1"));
        }
        let mut profile = LlmProfile::new(self.base_url, self.model);
        profile.api_key_env = self.api_key_env;
        profile.headers = self.headers;
        profile.extra_body = match serde_json::to_value(&self.extra_body) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => return Err(invalid("extra_body", format!("{:?}", self.extra_body), "a table of JSON-representable values")),
        };
        let millis = |key: &str, value: Option<u64>, default: Duration| match value {
            None => Ok(default),
            Some(ms @ 1..=3_600_000) => Ok(Duration::from_millis(ms)),
            Some(ms) => Err(invalid(key, ms.to_string(), "1 to 3600000 milliseconds")),
        };
        profile.idle_timeout = millis("idle_timeout_ms", self.idle_timeout_ms, profile.idle_timeout)?;
        profile.connect_timeout = millis("connect_timeout_ms", self.connect_timeout_ms, profile.connect_timeout)?;
        profile.request_timeout = millis("request_timeout_ms", self.request_timeout_ms, profile.request_timeout)?;
        if let Some(retries) = self.retries {
            if retries > MAX_LLM_RETRIES {
                return Err(invalid("retries", retries.to_string(), &format!("0 to {MAX_LLM_RETRIES}")));
            }
            profile.retry.retries = retries;
        }
        let kib = |key: &str, value: Option<u64>, default: usize| match value {
            None => Ok(default),
            Some(kib) => Ok((in_range(path, &format!("llm.{name}.{key}"), kib, 1..=MAX_REPLY_KIB)? as usize) << 10),
        };
        profile.max_reply_bytes = kib("max_reply_kib", self.max_reply_kib, profile.max_reply_bytes)?;
        profile.max_line_bytes = kib("max_line_kib", self.max_line_kib, profile.max_line_bytes)?;
        profile.max_call_argument_bytes =
            kib("max_call_argument_kib", self.max_call_argument_kib, profile.max_call_argument_bytes)?;
        if let Some(calls) = self.max_calls_per_reply {
            let key = format!("llm.{name}.max_calls_per_reply");
            profile.max_calls_per_reply = in_range(path, &key, calls, 1..=MAX_CALLS_PER_REPLY)? as usize;
        }
        profile.vcp_server = self.vcp_server;
        Ok(profile)
    }
}

/// The most retries an `[llm.NAME]` profile may ask for.
const MAX_LLM_RETRIES: u32 = 10;
/// The largest reply, line or arguments cap an `[llm.NAME]` profile may
/// set: 1 GiB.
const MAX_REPLY_KIB: u64 = 1 << 20;
/// The most calls per reply an `[llm.NAME]` profile may allow.
const MAX_CALLS_PER_REPLY: u64 = 4096;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ApprovalSection {
    #[serde(default, deserialize_with = "expanded")]
    memory_file: Option<PathBuf>,
    #[serde(default, deserialize_with = "expanded")]
    audit_log: Option<PathBuf>,
    #[serde(default)]
    rules: Vec<RuleSection>,
}

impl ApprovalSection {
    /// Paths resolved, the memory file beside the lock file unless named,
    /// every rule compiled; a bad rule names its place, `approval.rules[i].key`.
    fn resolve(self, lock_file: &Path, resolve: &dyn Fn(PathBuf) -> PathBuf, path: &Path) -> Result<ApprovalConfig, ConfigError> {
        let rules = self.rules.into_iter().enumerate().map(|(i, rule)| {
            Rule::new(rule.action, &rule.tool, rule.plugin, rule.agent, rule.args, rule.reason).map_err(|e| {
                ConfigError::Invalid {
                    path: path.to_owned(),
                    key: format!("approval.rules[{i}].{}", e.key),
                    value: e.value,
                    why: e.why,
                }
            })
        });
        Ok(ApprovalConfig {
            memory_file: self.memory_file.map_or_else(|| lock_file.with_file_name(DEFAULT_MEMORY_FILE), resolve),
            audit_log: self.audit_log.map(resolve),
            rules: rules.collect::<Result<_, _>>()?,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSection {
    action: RuleAction,
    tool: String,
    plugin: Option<String>,
    agent: Option<String>,
    #[serde(default)]
    args: BTreeMap<String, String>,
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginSection {
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DirSection {
    #[serde(deserialize_with = "expanded")]
    host: PathBuf,
    #[serde(default = "read_only")]
    access: DirAccess,
}

fn read_only() -> DirAccess {
    DirAccess::Read
}

/// The longest `timeout_ms` a plugin's limits or an agent may set: a day.
const MAX_TIMEOUT_MS: u64 = 24 * 3600 * 1000;

/// `value` of `key` when it lies in `range`, else the error naming both.
pub(crate) fn in_range(path: &Path, key: &str, value: u64, range: std::ops::RangeInclusive<u64>) -> Result<u64, ConfigError> {
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

/// Limits as the file spells them, each optional.
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct LimitOverrides {
    fuel: Option<u64>,
    timeout_ms: Option<u64>,
    memory_mib: Option<u64>,
    output_kib: Option<u64>,
    instances: Option<u64>,
    tables: Option<u64>,
    memories: Option<u64>,
    table_elements: Option<u64>,
    host_memory_mib: Option<u64>,
    resources: Option<u64>,
    open_files: Option<u64>,
    http_requests: Option<u64>,
}

impl LimitOverrides {
    fn apply(self, base: Limits, path: &Path, section: &str) -> Result<Limits, ConfigError> {
        let range = |key: &str, value: u64, min: u64, max: u64| in_range(path, &format!("{section}.{key}"), value, min..=max);
        let mut limits = base;
        if let Some(v) = self.fuel {
            limits.fuel = range("fuel", v, 1, u64::MAX / 2)?;
        }
        if let Some(v) = self.timeout_ms {
            limits.timeout = Duration::from_millis(range("timeout_ms", v, 1, MAX_TIMEOUT_MS)?);
        }
        if let Some(v) = self.memory_mib {
            limits.memory_bytes = (range("memory_mib", v, 1, (MAX_MEMORY_BYTES >> 20) as u64)? as usize) << 20;
        }
        if let Some(v) = self.output_kib {
            limits.output_bytes = (range("output_kib", v, 1, 1 << 20)? as usize) << 10;
        }
        if let Some(v) = self.instances {
            limits.instances = range("instances", v, 1, 64)? as usize;
        }
        if let Some(v) = self.tables {
            limits.tables = range("tables", v, 1, 64)? as usize;
        }
        if let Some(v) = self.memories {
            limits.memories = range("memories", v, 1, 16)? as usize;
        }
        if let Some(v) = self.table_elements {
            limits.table_elements = range("table_elements", v, 1, MAX_TABLE_ELEMENTS as u64)? as usize;
        }
        if let Some(v) = self.host_memory_mib {
            limits.host_memory_bytes = (range("host_memory_mib", v, 1, 4096)? as usize) << 20;
        }
        if let Some(v) = self.resources {
            limits.resources = range("resources", v, 1, 1_000_000)? as usize;
        }
        if let Some(v) = self.open_files {
            limits.open_files = range("open_files", v, 0, 65_536)? as usize;
        }
        if let Some(v) = self.http_requests {
            limits.http_requests = range("http_requests", v, 0, 65_536)? as usize;
        }
        Ok(limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Policy, ConfigError> {
        Policy::parse(text, Path::new("/etc/toolhost/toolhost.toml"))
    }

    #[test]
    fn a_reply_cap_is_read_in_kib_and_range_checked() {
        let path = Path::new("toolhost.toml");
        let text = "[llm.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\nmax_reply_kib = 64\n";
        assert_eq!(Policy::parse(text, path).unwrap().llm["local"].max_reply_bytes, 64 << 10);
        let error = Policy::parse(&text.replace("= 64", "= 0"), path).unwrap_err().to_string();
        assert!(error.contains("llm.local.max_reply_kib"), "{error}");
    }

    #[test]
    fn the_limits_on_a_model_server_are_read_and_range_checked() {
        let path = Path::new("toolhost.toml");
        let text = "[llm.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\nmax_line_kib = 8\n\
                    max_call_argument_kib = 4\nmax_calls_per_reply = 3\nrequest_timeout_ms = 1500\n";
        let profile = &Policy::parse(text, path).unwrap().llm["local"];
        assert_eq!((profile.max_line_bytes, profile.max_call_argument_bytes, profile.max_calls_per_reply), (8 << 10, 4 << 10, 3));
        assert_eq!(profile.request_timeout, Duration::from_millis(1500));
        let defaults = crate::llm::LlmProfile::new("http://x", "m");
        assert_eq!(defaults.max_calls_per_reply, crate::llm::DEFAULT_MAX_CALLS_PER_REPLY);
        for (key, bad) in [("max_line_kib = 8", "max_line_kib = 0"), ("max_calls_per_reply = 3", "max_calls_per_reply = 5000")] {
            let error = Policy::parse(&text.replace(key, bad), path).unwrap_err().to_string();
            assert!(error.contains(&format!("llm.local.{}", &bad[..bad.find(' ').unwrap()])), "{error}");
        }
    }

    #[test]
    fn a_path_that_does_not_expand_is_refused_naming_its_key() {
        for (text, key) in [
            ("lock_file = \"$PWD/toolhost.lock\"", "lock_file"),
            ("[plugins.files]\ndirs = { \"/workspace\" = { host = \"~bob/ws\" } }", "host"),
            ("[agents.a]\nsystem_prompt_file = \"$TMP/p.md\"", "system_prompt_file"),
            ("[vcp]\nserver = \"ws://127.0.0.1:6005\"\nserve_dirs = [\"${HOME\"]", "serve_dirs"),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(key) && (error.contains("expands") || error.contains("unclosed")), "{text}: {error}");
        }
    }

    #[test]
    fn a_full_policy_parses_and_resolves_paths() {
        let policy = parse(
            r#"
            plugin_dirs = ["plugins", "/opt/tools"]
            cache_key = "keys/cache.key"
            [limits]
            fuel = 5
            timeout_ms = 250
            [plugins.files]
            file = "files.wasm"
            sha256 = "sha256:ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
            limits = { memory_mib = 8 }
            env = ["HOME"]
            dirs = { "/workspace" = { host = "ws", access = "read-write" } }
            "#,
        )
        .unwrap();
        assert_eq!(policy.plugin_dirs, [PathBuf::from("/etc/toolhost/plugins"), PathBuf::from("/opt/tools")]);
        assert_eq!(policy.lock_file, PathBuf::from("/etc/toolhost/toolhost.lock"));
        assert_eq!(policy.cache_key, Some(PathBuf::from("/etc/toolhost/keys/cache.key")));
        let files = policy.for_plugin("files");
        assert_eq!(files.limits.fuel, 5, "plugin limits start from the global ones");
        assert_eq!(files.limits.timeout, Duration::from_millis(250));
        assert_eq!(files.limits.memory_bytes, 8 << 20);
        assert_eq!(files.allowance.dirs["/workspace"], (PathBuf::from("/etc/toolhost/ws"), DirAccess::ReadWrite));
        assert_eq!(
            files.binding,
            Binding {
                file: Some("files.wasm".into()),
                sha256: Some("abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789".into()),
            }
        );
        assert_eq!(policy.for_plugin("other").allowance, Allowance::default());
        assert_eq!(policy.for_plugin("other").binding, Binding::default());
    }

    #[test]
    fn bindings_are_checked_and_named() {
        let error = parse("[plugins.files]\nfile = \"plugins/files.wasm\"\n").unwrap_err().to_string();
        assert_eq!(
            error,
            "/etc/toolhost/toolhost.toml: plugins.files.file = \"plugins/files.wasm\" is invalid: \
             expected a component's file name in a plugin directory, like \"files.wasm\""
        );
        let error = parse("[plugins.files]\nsha256 = \"abc\"\n").unwrap_err().to_string();
        assert!(error.contains("plugins.files.sha256 = \"abc\" is invalid: expected 64 hex digits"), "{error}");
        let error = parse("[plugins.files]\nfiles = \"files.wasm\"\n").unwrap_err().to_string();
        assert!(error.contains("unknown field `files`, expected one of `file`, `sha256`"), "{error}");
    }

    #[test]
    fn tool_names_are_checked_and_named() {
        let policy = parse("[plugins.calc]\nrename = { calculate = \"misc_calculate\" }\ntool_prefix = \"misc_\"\n").unwrap();
        let calc = policy.for_plugin("calc");
        assert_eq!(calc.rename["calculate"], "misc_calculate");
        assert_eq!(calc.tool_name("calculate"), "misc_calculate", "a rename is the full name: no prefix");
        assert_eq!(calc.tool_name("convert"), "misc_convert");
        assert_eq!(policy.for_plugin("other").tool_name("convert"), "convert");

        let refused = |text: &str, says: &str| {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(says), "{error}");
        };
        refused(
            "[plugins.calc]\nrename = { calculate = \"<tool_call>\" }\n",
            "plugins.calc.rename.calculate = \"<tool_call>\" is invalid: a tool name must match ^[A-Za-z0-9_-]{1,64}$, \
             as a declared one does",
        );
        refused(&format!("[plugins.calc]\nrename = {{ calculate = \"{}\" }}\n", "a".repeat(65)), "plugins.calc.rename.calculate");
        refused(
            "[plugins.calc]\nrename = { add = \"sum\", plus = \"sum\" }\n",
            "plugins.calc.rename.plus = \"sum\" is invalid: tool `add` is given that name too; a name belongs to one tool",
        );
        refused(
            "[plugins.calc]\ntool_prefix = \"misc.\"\n",
            "plugins.calc.tool_prefix = \"misc.\" is invalid: a prefix must match ^[A-Za-z0-9_-]{1,63}$",
        );
        refused(&format!("[plugins.calc]\ntool_prefix = \"{}\"\n", "a".repeat(64)), "plugins.calc.tool_prefix");
        refused("[plugins.calc]\ntool_prefix = \"\"\n", "plugins.calc.tool_prefix = \"\" is invalid");
        refused("[plugins.calc]\nrenames = {}\n", "unknown field `renames`");
        refused("[plugins.calc]\nrename = { calculate = 3 }\n", "invalid type: integer `3`, expected a string");
    }

    #[test]
    fn agents_are_parsed_strictly() {
        let policy =
            parse("[agents.coder]\nenabled = true\nprotocol = \"xml-tag\"\ntool_toggles = { calculate = false }\n").unwrap();
        let coder = &policy.agents["coder"];
        assert!(coder.enabled);
        assert_eq!(coder.protocol, crate::protocol::ProtocolId::XmlTag);
        assert_eq!(coder.max_iterations, 5, "unset fields keep their defaults");
        let error = parse("[agents.coder]\nenable = true\n").unwrap_err().to_string();
        assert!(error.contains("unknown field `enable`"), "{error}");
    }

    #[test]
    fn unknown_keys_are_named() {
        let error = parse("[limits]\nfuell = 3\n").unwrap_err().to_string();
        assert!(error.contains("unknown field `fuell`"), "{error}");
        let error = parse("[plugins.calc]\nenvs = []\n").unwrap_err().to_string();
        assert!(error.contains("unknown field `envs`"), "{error}");
        let error = parse("[plugins.calc.dirs]\n\"/x\" = { host = \"a\", acess = \"read\" }\n").unwrap_err().to_string();
        assert!(error.contains("unknown field `acess`"), "{error}");
    }

    #[test]
    fn the_approval_table_resolves_paths_and_compiles_rules() {
        let policy = parse(
            r#"
            lock_file = "state/toolhost.lock"
            [approval]
            audit_log = "logs/audit.jsonl"
            [[approval.rules]]
            action = "deny"
            tool = "write_*"
            agent = "coder"
            args = { path = "secrets/**" }
            reason = "secrets stay put"
            [[approval.rules]]
            action = "allow"
            tool = "read_file"
            "#,
        )
        .unwrap();
        let approval = &policy.approval;
        assert_eq!(approval.memory_file, PathBuf::from("/etc/toolhost/state/toolhost.approvals.json"), "beside the lock file");
        assert_eq!(approval.audit_log, Some(PathBuf::from("/etc/toolhost/logs/audit.jsonl")));
        assert_eq!(approval.rules.len(), 2);
        assert_eq!(approval.rules[0].to_string(), r#"deny write_* for agent coder where path = "secrets/**""#);
        assert_eq!(approval.rules[0].reason(), Some("secrets stay put"));
        let named = parse("[approval]\nmemory_file = \"/var/lib/toolhost/approvals.json\"\n").unwrap();
        assert_eq!(named.approval.memory_file, PathBuf::from("/var/lib/toolhost/approvals.json"));
        assert_eq!(parse("").unwrap().approval.memory_file, PathBuf::from("/etc/toolhost/toolhost.approvals.json"));
    }

    #[test]
    fn bad_approval_rules_name_the_rule_and_key() {
        let rule =
            |body: &str| format!("[[approval.rules]]\naction = \"allow\"\ntool = \"calculate\"\n[[approval.rules]]\n{body}");
        let error = parse(&rule("action = \"allow\"\ntool = \"write_file\"\nargs = { path = \"notes/[a\" }\n")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/etc/toolhost/toolhost.toml: approval.rules[1].args.path = \"notes/[a\" is invalid: unclosed character class; missing ']'"
        );
        let refused = |text: &str, says: &str| {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(says), "{error}");
        };
        refused(&rule("action = \"deny\"\ntool = \"{read,write\"\n"), "approval.rules[1].tool = \"{read,write\" is invalid");
        refused(
            &rule("action = \"allow\"\ntool = \"x\"\nreason = \"why not\"\n"),
            "approval.rules[1].reason = \"why not\" is invalid: an allow rule gives no reason",
        );
        refused(&rule("action = \"permit\"\ntool = \"x\"\n"), "unknown variant `permit`, expected one of `allow`, `ask`, `deny`");
        refused(&rule("action = \"deny\"\ntools = \"x\"\n"), "unknown field `tools`");
        refused(&rule("action = \"deny\"\n"), "missing field `tool`");
        refused(
            "[approval]\nmemory = \"x.json\"\n",
            "unknown field `memory`, expected one of `memory_file`, `audit_log`, `rules`",
        );
    }

    #[test]
    fn out_of_range_agent_values_name_the_key() {
        let error = parse("[agents.coder]\ntimeout_ms = 0\n").unwrap_err().to_string();
        assert_eq!(error, "/etc/toolhost/toolhost.toml: agents.coder.timeout_ms = 0 is out of range: expected 1 to 86400000");
        let error = parse("[agents.coder]\nmax_iterations = 0\n").unwrap_err().to_string();
        assert_eq!(
            error,
            "/etc/toolhost/toolhost.toml: agents.coder.max_iterations = 0 is out of range: expected 1 to 4294967295"
        );
    }

    #[test]
    fn out_of_range_limits_name_the_key() {
        let error = parse("[plugins.calc]\nlimits = { memory_mib = 4096 }\n").unwrap_err().to_string();
        assert_eq!(
            error,
            "/etc/toolhost/toolhost.toml: plugins.calc.limits.memory_mib = 4096 is out of range: expected 1 to 1024"
        );
    }
}
