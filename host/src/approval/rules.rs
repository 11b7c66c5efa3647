//! Approval rules: `[[approval.rules]]` in `toolhost.toml`, compiled once
//! when the policy is read, and the `[approval]` table they live in.

use super::opened_path::{CallArguments, PathReadings};
use globset::{Glob, GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

/// The remembered approvals' file name when the policy names none; it
/// sits beside the lock file.
pub const DEFAULT_MEMORY_FILE: &str = "toolhost.approvals.json";

/// The `[approval]` table: where decisions are remembered, where they are
/// audited, and the rules.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalConfig {
    /// The file of remembered "allow always" decisions. Default:
    /// [`DEFAULT_MEMORY_FILE`](crate::config::DEFAULT_MEMORY_FILE) beside the lock
    /// file.
    pub memory_file: PathBuf,
    /// Where every decision is appended as a JSON line; `None` (the
    /// default) audits nothing.
    pub audit_log: Option<PathBuf>,
    /// The rules, in file order.
    pub rules: Vec<Rule>,
    /// The host key file, which authenticates resume tokens (a paused
    /// turn finished by another process): the `cache_key` file, put here
    /// when the policy is assembled. `None` makes no tokens.
    pub key_file: Option<PathBuf>,
}

impl Default for ApprovalConfig {
    /// No rules, no audit log, the memory file in the working directory,
    /// the user's host key.
    fn default() -> Self {
        ApprovalConfig {
            memory_file: PathBuf::from(DEFAULT_MEMORY_FILE),
            audit_log: None,
            rules: Vec::new(),
            key_file: crate::home_paths::default_cache_key(),
        }
    }
}

/// What a rule does to the calls it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RuleAction {
    /// Run without asking (even a sensitive tool; not past an agent's
    /// `require_confirmation`).
    Allow,
    /// Ask a person, whatever the tool's level.
    Ask,
    /// Never run; the rule's reason reaches the model.
    Deny,
}

impl RuleAction {
    /// The lowercase name, as in `toolhost.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleAction::Allow => "allow",
            RuleAction::Ask => "ask",
            RuleAction::Deny => "deny",
        }
    }
}

/// One approval rule: an action for the calls of the tools its `tool`
/// glob matches, optionally only of one plugin, only for one agent and only
/// where every listed argument matches its glob.
///
/// A rule that names the plugin (`plugin = "files"`) applies to that
/// plugin's tools only, so another plugin cannot bring a tool under it by
/// its choice of name; `toolhost check` says which plugins' tools a rule
/// without one matches. An allow rule naming the plugin and the tool is how
/// a policy lets a tool run below the level the host holds it to.
///
/// Globs are globset's, with `*` and `?` stopping at `/` and `**` crossing
/// it, so `notes/*` is one level and `notes/**` the whole tree — and
/// `notes` itself. A string argument is matched as it is; any other value
/// as its JSON text (`5`, `true`, `{"a":1}`); a missing argument matches no
/// pattern.
///
/// Arguments are often paths, and a rule judges the path that will be
/// opened: a string is also read as a path in each of the plugin's granted
/// directories, symbolic links followed inside it. On the safe side each
/// way:
/// - a `deny` or `ask` pattern matches when the text, the text with `.`
///   and `..` resolved and `//` folded (also with `\` as a separator), or
///   any place the path leads to in a directory (relative to it, or under
///   its guest path) matches, so `notes/../secrets/key`,
///   `/workspace/secrets/key` and `alias/key` with `alias -> secrets` all
///   meet a `secrets/**` deny;
/// - an `allow` pattern matches only when the text does, has no `..`
///   component, and every place a link leads it to matches too, so
///   `notes/x` with `notes -> .git/hooks` is not under `notes/**`;
/// - a path that leaves its directory through a link (or a `..`) denies
///   the call: the rule cannot judge where it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    action: RuleAction,
    tool: Pattern,
    plugin: Option<String>,
    agent: Option<String>,
    args: Vec<(String, Pattern)>,
    reason: Option<String>,
}

/// Why a rule could not be built. `key` is the rule's own key
/// (`tool`, `args.path`, `reason`); the policy adds where the rule is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} = {value:?} is invalid: {why}")]
#[non_exhaustive]
pub struct RuleError {
    /// The key within the rule.
    pub key: String,
    /// The value given.
    pub value: String,
    /// What is wrong with it.
    pub why: String,
}

impl Rule {
    /// A rule that takes `action` on calls of the tools matching the glob
    /// `tool`, of `plugin` only and for `agent` only if given, where each
    /// `(argument, glob)` in `args` matches. `reason` is what a deny tells
    /// the model, or what an ask tells the person; an allow rule takes none.
    ///
    /// # Errors
    ///
    /// A [`RuleError`] naming the key and the value: a `tool` that is neither a
    /// tool name nor a glob, a `plugin` that is not a plugin's name, an
    /// argument glob that does not parse, or a `reason` on an allow rule.
    pub fn new(
        action: RuleAction,
        tool: &str,
        plugin: Option<String>,
        agent: Option<String>,
        args: impl IntoIterator<Item = (String, String)>,
        reason: Option<String>,
    ) -> Result<Self, RuleError> {
        let error = |key: &str, value: &str, why: String| RuleError { key: key.into(), value: value.into(), why };
        let has_glob = tool.contains(['*', '?', '[', '{', '\\']);
        if !has_glob && !crate::manifest::is_valid_name(tool) {
            return Err(error("tool", tool, "expected a tool name or a glob like \"read_*\"; \"*\" is every tool".into()));
        }
        let tool = Pattern::new(tool).map_err(|why| error("tool", tool, why))?;
        if let Some(plugin) = plugin.as_deref().filter(|p| !crate::manifest::is_valid_name(p)) {
            return Err(error("plugin", plugin, "expected a plugin's name, as it declares it".into()));
        }
        let args = args
            .into_iter()
            .map(|(name, glob)| match Pattern::new(&glob) {
                Ok(pattern) => Ok((name, pattern)),
                Err(why) => Err(error(&format!("args.{name}"), &glob, why)),
            })
            .collect::<Result<_, _>>()?;
        if let (RuleAction::Allow, Some(reason)) = (action, &reason) {
            return Err(error("reason", reason, "an allow rule gives no reason; only deny and ask rules use one".into()));
        }
        Ok(Rule { action, tool, plugin, agent, args, reason })
    }

    /// What the rule does.
    pub fn action(&self) -> RuleAction {
        self.action
    }

    /// The words it gives, if any.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The plugin it is narrowed to, if any.
    pub fn plugin(&self) -> Option<&str> {
        self.plugin.as_deref()
    }

    /// Whether it is about `tool` of `plugin`, whatever the agent and the
    /// arguments.
    pub fn covers(&self, plugin: &str, tool: &str) -> bool {
        self.plugin.as_deref().is_none_or(|p| p == plugin) && self.tool.is_match(tool)
    }

    /// Whether it is about calls of `tool` of `plugin` by `agent`, whatever
    /// their arguments.
    pub(crate) fn applies_to(&self, agent: &str, plugin: &str, tool: &str) -> bool {
        self.agent.as_deref().is_none_or(|a| a == agent) && self.covers(plugin, tool)
    }

    /// Whether the rule applies to a call of `tool` of `plugin` by `agent`
    /// with `args`, judging their text only (no directory to open them in).
    pub fn matches(&self, agent: &str, plugin: &str, tool: &str, args: &Map<String, Value>) -> bool {
        self.matches_call(agent, plugin, tool, &CallArguments::new(args, &[]))
    }

    /// Whether the rule applies to a call of `tool` of `plugin` by `agent`
    /// with `args`, paths judged where they lead in the plugin's directories.
    pub(crate) fn matches_call(&self, agent: &str, plugin: &str, tool: &str, args: &CallArguments<'_>) -> bool {
        self.applies_to(agent, plugin, tool)
            && self.args.iter().all(|(name, pattern)| {
                args.get(name).is_some_and(|value| self.arg_matches(pattern, value, args.path(name).as_deref()))
            })
    }

    /// How an argument this rule judges leaves its directory, naming the
    /// argument: a rule about paths cannot judge where such a path ends,
    /// so the call is denied. `None` when none does.
    pub(crate) fn escape(&self, args: &CallArguments<'_>) -> Option<String> {
        self.args.iter().find_map(|(name, _)| args.path(name)?.escape.as_ref().map(|why| format!("`{name}` = {why}")))
    }

    fn arg_matches(&self, pattern: &Pattern, value: &Value, path: Option<&PathReadings>) -> bool {
        let text: Cow<'_, str> = match value {
            Value::String(s) => Cow::Borrowed(s),
            other => Cow::Owned(other.to_string()),
        };
        let either = |forms: &[String; 2]| forms.iter().any(|form| pattern.is_match(form));
        match self.action {
            RuleAction::Allow => {
                !has_parent_component(&text)
                    && pattern.is_match(&text)
                    && path.is_none_or(|path| path.through_links.iter().all(either))
            }
            RuleAction::Ask | RuleAction::Deny => {
                pattern.is_match(&text)
                    || pattern.is_match(&lexically_normal(&text, &['/']))
                    || pattern.is_match(&lexically_normal(&text, &['/', '\\']))
                    || path.is_some_and(|path| path.direct.iter().chain(&path.through_links).any(either))
            }
        }
    }
}

/// `deny write_file of plugin files for agent coder where path = "secrets/**"`.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.action.as_str(), self.tool.glob.glob())?;
        if let Some(plugin) = &self.plugin {
            write!(f, " of plugin {plugin}")?;
        }
        if let Some(agent) = &self.agent {
            write!(f, " for agent {agent}")?;
        }
        for (i, (name, pattern)) in self.args.iter().enumerate() {
            let joiner = if i == 0 { " where" } else { "," };
            write!(f, "{joiner} {name} = {:?}", pattern.glob.glob())?;
        }
        Ok(())
    }
}

/// A compiled glob; equal when written alike.
#[derive(Debug, Clone)]
struct Pattern {
    glob: Glob,
    matcher: GlobMatcher,
    /// For `dir/**`, `dir` itself: the tree includes its root.
    root: Option<GlobMatcher>,
}

impl Pattern {
    fn new(text: &str) -> Result<Self, String> {
        let compile = |text: &str| GlobBuilder::new(text).literal_separator(true).build().map_err(|e| e.kind().to_string());
        let glob = compile(text)?;
        let root = match text.strip_suffix("/**") {
            Some(root) if !root.is_empty() => Some(compile(root)?.compile_matcher()),
            _ => None,
        };
        Ok(Pattern { matcher: glob.compile_matcher(), glob, root })
    }

    fn is_match(&self, text: &str) -> bool {
        self.matcher.is_match(text) || self.root.as_ref().is_some_and(|root| root.is_match(text))
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.glob == other.glob
    }
}

/// Whether `text`, read as a path, climbs with a `..` component (either
/// separator, as a plugin may treat `\` as one).
fn has_parent_component(text: &str) -> bool {
    text.split(['/', '\\']).any(|c| c == "..")
}

/// `text` as a path split at `separators`, with `.` and empty components
/// dropped and `..` taken back where it can be; the root stays.
fn lexically_normal(text: &str, separators: &[char]) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for component in text.split(separators) {
        match component {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            // Above the root is the root.
            ".." if text.starts_with(separators) => {}
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    if text.starts_with(separators) { format!("/{joined}") } else { joined }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn rule(action: RuleAction, tool: &str, arg: Option<(&str, &str)>) -> Rule {
        let args = arg.map(|(k, v)| (k.to_owned(), v.to_owned()));
        Rule::new(action, tool, None, None, args, None).unwrap()
    }

    #[test]
    fn tool_globs_and_argument_globs_match() {
        let read = rule(RuleAction::Ask, "read_*", None);
        assert!(read.matches("a", "p", "read_file", &Map::new()));
        assert!(!read.matches("a", "p", "write_file", &Map::new()));
        let notes = rule(RuleAction::Allow, "write_file", Some(("path", "notes/**")));
        assert!(notes.matches("a", "p", "write_file", &args(json!({ "path": "notes/a/b.txt" }))));
        assert!(!notes.matches("a", "p", "write_file", &args(json!({ "path": "src/main.rs" }))));
        assert!(!notes.matches("a", "p", "write_file", &Map::new()), "a missing argument does not match");
        let one_level = rule(RuleAction::Allow, "write_file", Some(("path", "notes/*")));
        assert!(!one_level.matches("a", "p", "write_file", &args(json!({ "path": "notes/a/b.txt" }))), "* stops at /");
    }

    #[test]
    fn other_json_values_match_as_their_json_text() {
        let small = rule(RuleAction::Allow, "*", Some(("count", "[0-9]")));
        assert!(small.matches("a", "p", "t", &args(json!({ "count": 7 }))));
        assert!(!small.matches("a", "p", "t", &args(json!({ "count": 12 }))));
        let yes = rule(RuleAction::Deny, "*", Some(("force", "true")));
        assert!(yes.matches("a", "p", "t", &args(json!({ "force": true }))));
        assert!(!yes.matches("a", "p", "t", &args(json!({ "force": "false" }))));
    }

    #[test]
    fn parent_components_never_widen_an_allow_and_never_escape_a_deny() {
        let allow = rule(RuleAction::Allow, "write_file", Some(("path", "notes/**")));
        for path in ["notes/../secrets/key", "notes/a/../../etc", "notes\\..\\x"] {
            assert!(!allow.matches("a", "p", "write_file", &args(json!({ "path": path }))), "{path}");
        }
        let deny = rule(RuleAction::Deny, "write_file", Some(("path", "secrets/**")));
        for path in ["secrets/key", "notes/../secrets/key", "./secrets//key", "a/b/../../secrets/key", "notes\\..\\secrets\\key"]
        {
            assert!(deny.matches("a", "p", "write_file", &args(json!({ "path": path }))), "{path}");
        }
        assert!(!deny.matches("a", "p", "write_file", &args(json!({ "path": "notes/secrets/key" }))));
        assert_eq!(lexically_normal("/../a/./b//../c", &['/']), "/a/c");
        assert_eq!(lexically_normal("../a/..", &['/']), "..");
        assert_eq!(lexically_normal("notes\\..\\secrets\\key", &['/', '\\']), "secrets/key");
    }

    #[test]
    fn a_tree_pattern_covers_its_root_in_every_spelling() {
        let deny = rule(RuleAction::Deny, "write_file", Some(("path", "secrets/**")));
        for path in ["secrets", "secrets/", "./secrets", "notes/../secrets"] {
            assert!(deny.matches("a", "p", "write_file", &args(json!({ "path": path }))), "{path}");
        }
        assert!(!deny.matches("a", "p", "write_file", &args(json!({ "path": "secretsx" }))));
        let everything = rule(RuleAction::Deny, "write_file", Some(("path", "**")));
        assert!(everything.matches("a", "p", "write_file", &args(json!({ "path": "x" }))));
    }

    #[test]
    fn agent_narrows_a_rule() {
        let coder = Rule::new(RuleAction::Deny, "*", None, Some("coder".into()), [], None).unwrap();
        assert!(coder.matches("coder", "p", "t", &Map::new()));
        assert!(!coder.matches("writer", "p", "t", &Map::new()));
    }

    #[test]
    fn plugin_narrows_a_rule() {
        let files = Rule::new(RuleAction::Allow, "write_file", Some("files".into()), None, [], None).unwrap();
        assert!(files.matches("a", "files", "write_file", &Map::new()));
        assert!(!files.matches("a", "notes", "write_file", &Map::new()), "another plugin's tool of that name");
        let error = Rule::new(RuleAction::Allow, "write_file", Some("fi*".into()), None, [], None).unwrap_err();
        assert_eq!(error.key, "plugin");
    }

    #[test]
    fn bad_rules_name_the_key() {
        let error = Rule::new(RuleAction::Allow, "write_file", None, None, [("path".into(), "notes/[".into())], None);
        let error = error.unwrap_err();
        assert_eq!(error.key, "args.path");
        assert!(error.why.contains("unclosed character class"), "{error}");
        let error = Rule::new(RuleAction::Deny, "write file", None, None, [], None).unwrap_err();
        assert_eq!(error.key, "tool");
        let error = Rule::new(RuleAction::Allow, "x", None, None, [], Some("because".into())).unwrap_err();
        assert_eq!(error.key, "reason");
    }

    #[test]
    fn a_rule_reads_as_it_was_written() {
        let rule = Rule::new(
            RuleAction::Deny,
            "write_*",
            Some("files".into()),
            Some("coder".into()),
            [("path".into(), "secrets/**".into()), ("mode".into(), "a*".into())],
            None,
        )
        .unwrap();
        assert_eq!(rule.to_string(), r#"deny write_* of plugin files for agent coder where path = "secrets/**", mode = "a*""#);
    }
}
