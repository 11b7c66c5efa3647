//! Discovery: which tools an agent sees, in what order, and the system
//! prompt that tells the model about them.
//!
//! An agent's [`ToolCallConfig`] selects the tools: only agent-callable
//! ones, each switched by its toggle or, without one, by
//! `default_tool_enabled`; ordered by plugin, then declaration. A template
//! gets them through `{{tools}}` (all, empty when tool calling is off) and
//! `{{tool:NAME}}` (one). Rendered prompts are cached under a SHA-256 of the
//! protocol, agent, configuration and template, for one registry
//! generation; a reload empties the cache.

use crate::agent::ToolCallConfig;
use crate::manifest::ToolSpec;
use crate::protocol::ProtocolId;
use crate::registry::Catalog;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The tools `config` offers, ordered by plugin name, then declaration.
pub fn visible_tools<'a>(catalog: &'a Catalog, config: &ToolCallConfig) -> Vec<&'a ToolSpec> {
    let mut plugins: Vec<_> = catalog.plugins.iter().collect();
    plugins.sort_by(|a, b| a.name().cmp(b.name()));
    plugins.into_iter().flat_map(|p| p.manifest.tools.iter()).filter(|t| config.offers(t)).collect()
}

/// A rendered system prompt and, when asked for, its size in tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RenderedPrompt {
    /// The prompt text.
    pub text: String,
    /// Counted on first use: the tokenizer takes a while to load, and
    /// most prompts are sent without anyone asking their size.
    tokens: OnceLock<usize>,
}

impl RenderedPrompt {
    /// The prompt `text`, its tokens not counted yet.
    pub fn new(text: String) -> Self {
        RenderedPrompt { text, tokens: OnceLock::new() }
    }

    /// Its length in tokens of OpenAI's `o200k_base` encoding
    /// (`count_tokens`), counted on the first call; estimated at four bytes
    /// a token when the library is built without the `tokens` feature.
    pub fn tokens(&self) -> usize {
        *self.tokens.get_or_init(|| count_tokens(&self.text))
    }
}

/// Renders prompts and keeps them per registry generation.
#[derive(Default)]
pub struct PromptCache {
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    generation: u64,
    prompts: HashMap<[u8; 32], Arc<RenderedPrompt>>,
}

impl PromptCache {
    /// An empty cache.
    pub fn new() -> Self {
        PromptCache::default()
    }

    /// The prompt for `agent` from `template`, rendered or from the cache.
    pub fn render(
        &self,
        catalog: &Catalog,
        agent: &str,
        config: &ToolCallConfig,
        protocol: ProtocolId,
        template: &str,
    ) -> Arc<RenderedPrompt> {
        self.render_tools(catalog.generation, || visible_tools(catalog, config), agent, config, protocol, template)
    }

    /// [`PromptCache::render`] for the tools `tools` yields, at registry
    /// generation `generation`; `tools` runs only on a cache miss.
    pub fn render_tools<'a>(
        &self,
        generation: u64,
        tools: impl FnOnce() -> Vec<&'a ToolSpec>,
        agent: &str,
        config: &ToolCallConfig,
        protocol: ProtocolId,
        template: &str,
    ) -> Arc<RenderedPrompt> {
        let key = cache_key(agent, config, protocol, template);
        {
            let mut state = self.state.lock().expect("prompt cache lock");
            if state.generation != generation {
                state.prompts.clear();
                state.generation = generation;
            }
            if let Some(hit) = state.prompts.get(&key) {
                return hit.clone();
            }
        }
        let text = render_template(template, &tools(), config.enabled, protocol);
        let rendered = Arc::new(RenderedPrompt::new(text));
        let mut state = self.state.lock().expect("prompt cache lock");
        if state.generation == generation {
            state.prompts.insert(key, rendered.clone());
        }
        rendered
    }

    /// How many prompts are cached.
    pub fn len(&self) -> usize {
        self.state.lock().expect("prompt cache lock").prompts.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn cache_key(agent: &str, config: &ToolCallConfig, protocol: ProtocolId, template: &str) -> [u8; 32] {
    let config = serde_json::to_string(config).expect("a config serializes");
    let mut hasher = Sha256::new();
    for part in [protocol.as_str(), agent, &config, template] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize().into()
}

/// Substitute `{{tools}}` and `{{tool:NAME}}` in `template`. Other
/// `{{…}}` placeholders are left for the host application.
pub(crate) fn render_template(template: &str, tools: &[&ToolSpec], enabled: bool, protocol: ProtocolId) -> String {
    let render = |tools: &[&ToolSpec]| protocol.protocol().render(tools);
    let mut out = String::with_capacity(template.len());
    let mut at = 0;
    for (span, name) in placeholders(template) {
        out.push_str(&template[at..span.start]);
        if name == "tools" {
            if enabled {
                out.push_str(&render(tools));
            }
        } else if let Some(tool) = name.strip_prefix("tool:") {
            if enabled && let Some(spec) = tools.iter().find(|t| t.name == tool.trim()) {
                out.push_str(&render(&[*spec]));
            }
        } else {
            out.push_str(&template[span.clone()]);
        }
        at = span.end;
    }
    out.push_str(&template[at..]);
    out
}

/// The names in `template`'s `{{tool:NAME}}` placeholders that name none
/// of `tools`: each renders as nothing, which a person should hear of.
pub fn unknown_template_tools<'a>(template: &'a str, tools: &[&ToolSpec]) -> Vec<&'a str> {
    placeholders(template)
        .filter_map(|(_, name)| name.strip_prefix("tool:").map(str::trim))
        .filter(|name| !tools.iter().any(|t| t.name == *name))
        .collect()
}

/// Each `{{…}}` in `template`: where it is, and what is inside, trimmed.
fn placeholders(template: &str) -> impl Iterator<Item = (std::ops::Range<usize>, &str)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let open = template[at..].find("{{")? + at;
        let close = template[open..].find("}}")? + open;
        at = close + 2;
        Some((open..close + 2, template[open + 2..close].trim()))
    })
}

/// Tokens of `text` in OpenAI's `o200k_base` encoding (GPT-4o and later),
/// by the tiktoken-rs tokenizer: an estimate for other models' tokenizers.
/// Without the `tokens` feature, the usual rule of thumb for English: four
/// bytes a token.
fn count_tokens(text: &str) -> usize {
    #[cfg(test)]
    tests::COUNTED.with(|counted| counted.set(counted.get() + 1));
    #[cfg(feature = "tokens")]
    {
        static BPE: OnceLock<Option<tiktoken_rs::CoreBPE>> = OnceLock::new();
        if let Some(bpe) = BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()) {
            return bpe.encode_ordinary(text).len();
        }
    }
    // With the tokenizer, unreachable: its vocabulary is compiled in.
    text.len().div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{ParamSpec, ParamType, Permission};

    thread_local! {
        /// Texts this thread gave the tokenizer.
        pub(super) static COUNTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn tool(name: &str, callable: bool) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            plugin: "p".into(),
            description: format!("does {name}"),
            params: vec![ParamSpec { name: "x".into(), ty: ParamType::String, description: "x".into(), required: true }],
            permission: Permission::Public,
            declared_permission: Permission::Public,
            result_approval: false,
            agent_callable: callable,
            distributed_exposed: false,
            tags: vec![],
            example: None,
            reach: crate::manifest::Reach::Compute,
        }
    }

    #[test]
    fn toggles_and_defaults_select_agent_callable_tools() {
        let mut config = ToolCallConfig::on();
        assert!(config.offers(&tool("a", true)));
        assert!(!config.offers(&tool("hidden", false)), "not agent-callable");
        config.tool_toggles.insert("a".into(), false);
        assert!(!config.offers(&tool("a", true)));
        config.default_tool_enabled = false;
        config.tool_toggles.insert("b".into(), true);
        assert!(config.offers(&tool("b", true)));
        assert!(!config.offers(&tool("c", true)));
    }

    #[test]
    fn templates_substitute_all_and_single_tools() {
        let (a, b) = (tool("alpha", true), tool("beta", true));
        let tools = [&a, &b];
        let all = render_template("Before\n{{tools}}\nAfter {{user}}", &tools, true, ProtocolId::Vcp);
        assert!(all.starts_with("Before\n") && all.ends_with("\nAfter {{user}}"), "{all}");
        assert!(all.contains("Tool: alpha") && all.contains("Tool: beta"));
        let one = render_template("{{tool:beta}}", &tools, true, ProtocolId::Vcp);
        assert!(one.contains("Tool: beta") && !one.contains("Tool: alpha"));
        assert_eq!(render_template("x{{tools}}y{{tool:alpha}}z", &tools, false, ProtocolId::Vcp), "xyz", "disabled means empty");
        assert_eq!(render_template("{{ open", &tools, true, ProtocolId::Vcp), "{{ open", "an unclosed brace is text");
    }

    #[test]
    fn placeholders_naming_no_tool_are_found() {
        let (a, b) = (tool("alpha", true), tool("beta", true));
        let template = "{{tool:alpha}} {{ tool: gamma }} {{tools}} {{user}} {{tool:bet}}";
        assert_eq!(unknown_template_tools(template, &[&a, &b]), ["gamma", "bet"]);
        assert!(unknown_template_tools("{{tool:beta}}", &[&a, &b]).is_empty());
    }

    #[test]
    fn rendering_counts_no_tokens_until_they_are_asked_for() {
        let (a, config) = (tool("alpha", true), ToolCallConfig::on());
        let before = COUNTED.get();
        let prompt = PromptCache::new().render_tools(1, || vec![&a], "agent", &config, ProtocolId::Vcp, "{{tools}}");
        assert_eq!(COUNTED.get(), before, "render leaves the tokenizer alone");
        let tokens = prompt.tokens();
        assert!(tokens > 0);
        assert_eq!((prompt.tokens(), COUNTED.get()), (tokens, before + 1), "counted once, when asked");
    }

    #[test]
    fn tokens_are_counted_with_a_real_tokenizer() {
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("hello world"), 2);
        assert!(count_tokens(&"word ".repeat(1000)) >= 1000);
    }
}
