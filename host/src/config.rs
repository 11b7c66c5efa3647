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
use crate::approval::{ApprovalConfig, ApprovalSection};
use crate::console::{ConsoleConfig, ConsoleSection};
use crate::llm::{LlmProfile, LlmSection};
use crate::mcp::{McpConfig, McpSection};
use crate::registry::PluginSection;
use crate::sandbox::{LimitOverrides, Limits, MAX_TIMEOUT_MS, SandboxSection, SandboxSize};
use crate::vcp_node::{VcpConfig, VcpSection};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config_error::in_range;
pub(crate) use crate::home_paths::expanded;
use crate::home_paths::{default_cache_dir, default_cache_key, user_dir};

/// The name looked for in the working directory when `--config` is absent.
pub const DEFAULT_CONFIG_FILE: &str = "toolhost.toml";
pub use crate::approval::DEFAULT_MEMORY_FILE;
pub use crate::config_error::ConfigError;
pub use crate::registry::{Binding, DEFAULT_LOCK_FILE, PluginPolicy, RuntimePolicy};

/// The resolved host policy: the part the registry runs by (its fields are
/// those of [`RuntimePolicy`], into which it converts) and the doors' sections.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Policy {
    // The runtime part, as in [`RuntimePolicy`] (which documents each).
    /// `plugin_dirs`: where components are found.
    pub plugin_dirs: Vec<PathBuf>,
    /// `cache_dir`: compiled artifacts; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// `cache_key`: the per-user key authenticating the cache.
    pub cache_key: Option<PathBuf>,
    /// `lock_file`: the sha-256 pins.
    pub lock_file: PathBuf,
    /// `[limits]`: for plugins without their own.
    pub limits: Limits,
    /// `[plugins.NAME]`, by plugin name.
    pub plugins: BTreeMap<String, PluginPolicy>,
    // The doors' sections.
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
    /// `[sandbox]`: what the sandbox reserves (runtime part).
    pub sandbox: SandboxSize,
}

impl Default for Policy {
    /// No plugin directories, the default limits, nothing allowed, the
    /// user cache directory, `toolhost.lock` and `toolhost.approvals.json`
    /// in the working directory, no approval rules, no audit log.
    fn default() -> Self {
        // `..`: the runtime crate may add a field, which `From<Policy>`
        // then leaves at its default until the policy file reads it.
        let RuntimePolicy { plugin_dirs, cache_dir, cache_key, lock_file, limits, plugins, sandbox, .. } =
            RuntimePolicy::default();
        Policy {
            plugin_dirs,
            cache_dir,
            cache_key,
            lock_file,
            limits,
            plugins,
            agents: BTreeMap::new(),
            llm: BTreeMap::new(),
            approval: ApprovalConfig::default(),
            vcp: None,
            mcp: McpConfig::default(),
            console: ConsoleConfig::default(),
            sandbox,
        }
    }
}

impl From<Policy> for RuntimePolicy {
    /// The part the registry runs by; the doors' sections stay with the
    /// [`Policy`].
    fn from(policy: Policy) -> Self {
        // Every field named, so that a new one is put on one side or the other.
        let Policy {
            plugin_dirs,
            cache_dir,
            cache_key,
            lock_file,
            limits,
            plugins,
            sandbox,
            agents: _,
            approval: _,
            vcp: _,
            mcp: _,
            console: _,
            llm: _,
        } = policy;
        let mut runtime = RuntimePolicy::default();
        runtime.plugin_dirs = plugin_dirs;
        runtime.cache_dir = cache_dir;
        runtime.cache_key = cache_key;
        runtime.lock_file = lock_file;
        runtime.limits = limits;
        runtime.plugins = plugins;
        runtime.sandbox = sandbox;
        runtime
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

    /// The part the registry runs by ([`RuntimePolicy`]), for
    /// `Registry::load` while this policy stays with the doors.
    pub fn runtime(&self) -> RuntimePolicy {
        self.clone().into()
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
            let plugin = plugin.resolve(&name, limits, &resolve, path)?;
            plugins.insert(name, plugin);
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
        let cache_key = file.cache_key.map(resolve).or_else(default_cache_key);
        let approval = file.approval.resolve(&lock_file, cache_key.clone(), &resolve, path)?;
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
        let mcp = file.mcp.resolve(path)?;
        let (agent, settings) = (mcp.agent.clone(), agents.get(&mcp.agent).cloned());
        let mcp = mcp.with_agent(agent, settings);
        for (name, profile) in &llm {
            check_vcp_server(name, profile, vcp.as_ref(), path)?;
        }
        Ok(Policy {
            plugin_dirs,
            cache_dir: file.cache_dir.map(resolve).or_else(default_cache_dir),
            cache_key,
            lock_file,
            limits,
            plugins,
            agents,
            approval,
            vcp,
            mcp,
            console: file.console.resolve(path)?,
            llm,
            sandbox: file.sandbox.map_or_else(|| Ok(SandboxSize::for_machine()), |section| section.resolve(path))?,
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::DirAccess;
    use crate::sandbox::Allowance;
    use std::time::Duration;

    fn parse(text: &str) -> Result<Policy, ConfigError> {
        Policy::parse(text, Path::new("/etc/toolhost/toolhost.toml"))
    }

    #[test]
    fn the_mcp_agents_settings_are_its_agent_section_or_tools_on() {
        let configured = parse("[mcp]\nagent = \"desk\"\n[agents.desk]\nenabled = false\ntimeout_ms = 5\n").unwrap();
        assert!(!configured.mcp.agent_settings.enabled);
        assert_eq!(configured.mcp.agent_settings.timeout_ms, 5);
        let unconfigured = parse("[mcp]\nagent = \"desk\"\n[agents.other]\nenabled = false\n").unwrap();
        assert!(unconfigured.mcp.agent_settings.enabled, "an agent the policy does not configure calls its tools");
        assert_eq!(unconfigured.mcp.agent_settings, Policy::default().mcp.agent_settings);
    }

    #[test]
    fn the_runtime_part_is_the_policy_without_the_doors_sections() {
        let policy =
            parse("plugin_dirs = [\"p\"]\n[limits]\nfuel = 7\n[plugins.calc]\nfile = \"calc.wasm\"\n[sandbox]\ncalls = 3\n")
                .unwrap();
        let runtime = policy.runtime();
        assert_eq!(runtime.plugin_dirs, [PathBuf::from("/etc/toolhost/p")]);
        assert_eq!((runtime.limits.fuel, runtime.sandbox.calls), (7, 3));
        assert_eq!(runtime.plugins["calc"].binding.file.as_deref(), Some("calc.wasm"));
        assert_eq!((&runtime.lock_file, &runtime.cache_dir), (&policy.lock_file, &policy.cache_dir));
        let ahead = parse(
            "[sandbox]
calls = 16
instances_ahead = 3
",
        )
        .unwrap()
        .runtime()
        .sandbox;
        assert_eq!((ahead.calls, ahead.ahead), (16, 3));
        let off = parse(
            "[sandbox]
instances_ahead = 0
",
        )
        .unwrap()
        .runtime()
        .sandbox;
        assert_eq!(off.ahead, 0);
        let bad = parse(
            "[sandbox]
instances_ahead = 65
",
        )
        .unwrap_err()
        .to_string();
        assert!(bad.contains("sandbox.instances_ahead"), "{bad}");
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
        let files = policy.runtime().for_plugin("files");
        assert_eq!(files.limits.fuel, 5, "plugin limits start from the global ones");
        assert_eq!(files.limits.timeout, Duration::from_millis(250));
        assert_eq!(files.limits.memory_bytes, 8 << 20);
        assert_eq!(files.allowance.dirs["/workspace"], (PathBuf::from("/etc/toolhost/ws"), DirAccess::ReadWrite));
        assert_eq!(
            files.binding,
            Binding::new(
                Some("files.wasm".into()),
                Some("abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789".into())
            )
        );
        assert_eq!(policy.runtime().for_plugin("other").allowance, Allowance::default());
        assert_eq!(policy.runtime().for_plugin("other").binding, Binding::default());
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
        let calc = policy.runtime().for_plugin("calc");
        assert_eq!(calc.rename["calculate"], "misc_calculate");
        assert_eq!(calc.tool_name("calculate"), "misc_calculate", "a rename is the full name: no prefix");
        assert_eq!(calc.tool_name("convert"), "misc_convert");
        assert_eq!(policy.runtime().for_plugin("other").tool_name("convert"), "convert");

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
