//! What `chat` and `console` share: the agent they work as, and the model
//! endpoint they talk to.

use anyhow::{Context, bail};
use toolhost::{Policy, ToolCallConfig, llm::LlmProfile, protocol::suggest::did_you_mean, text::printable};

/// Where the model is when nothing says: a local OpenAI-compatible server
/// (llama.cpp's `llama-server`, vLLM, Ollama's `/v1`, …).
const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080/v1";
/// The model name sent when nothing says; local servers ignore it.
const DEFAULT_MODEL: &str = "default";

/// The agent `name` (`[agents.NAME]`), or, without a name, `fallback`
/// with tool calling on and every other setting at its default.
pub(super) fn agent(policy: &Policy, name: Option<&str>, fallback: &str) -> anyhow::Result<(String, ToolCallConfig)> {
    match name {
        Some(name) => Ok((name.to_owned(), named_agent(policy, name)?)),
        None => Ok((fallback.to_owned(), ToolCallConfig::on())),
    }
}

/// The settings of agent `name` (`[agents.NAME]`); an unknown one is an
/// error that lists the agents the policy defines.
pub(super) fn named_agent(policy: &Policy, name: &str) -> anyhow::Result<ToolCallConfig> {
    policy.agents.get(name).cloned().with_context(|| {
        let names: Vec<&str> = policy.agents.keys().map(String::as_str).collect();
        match names.as_slice() {
            [] => format!("no agent `{name}` in the policy: it defines none (add an [agents.{name}] section)"),
            names => format!("no agent `{name}` in the policy{}; its agents: {}", did_you_mean(name, names), names.join(", ")),
        }
    })
}

/// The model endpoint, from a profile or the environment, with overrides.
#[derive(Debug, clap::Args)]
pub(super) struct ModelOptions {
    /// The model endpoint, an `[llm.NAME]` profile [default: the agent's].
    #[arg(long, value_name = "NAME")]
    llm: Option<String>,
    /// The endpoint's API base [default: $OPENAI_BASE_URL]
    ///
    /// The endpoint's API base, over the profile's [default: $OPENAI_BASE_URL,
    /// else http://127.0.0.1:8080/v1].
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The model name [default: $OPENAI_MODEL, else "default"]
    ///
    /// The model name, over the profile's [default: $OPENAI_MODEL, else
    /// "default"].
    #[arg(long)]
    model: Option<String>,
    /// The variable holding the API key [default: OPENAI_API_KEY]
    ///
    /// The environment variable holding the API key, over the profile's [default:
    /// OPENAI_API_KEY when it is set].
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
}

impl ModelOptions {
    /// The endpoint: the named profile (`--llm`, else the agent's) or one
    /// from the environment, with the command line's overrides.
    pub(super) fn profile(&self, policy: &Policy, config: &ToolCallConfig) -> anyhow::Result<LlmProfile> {
        let mut profile = match self.llm.as_deref().or(config.llm.as_deref()) {
            Some(name) => policy.llm.get(name).cloned().with_context(|| {
                let names: Vec<&str> = policy.llm.keys().map(String::as_str).collect();
                format!("no model profile `{name}` ([llm.{name}]) in the policy{}", did_you_mean(name, &names))
            })?,
            None => {
                let base_url = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| DEFAULT_BASE_URL.to_owned());
                let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| DEFAULT_MODEL.to_owned());
                let mut profile = LlmProfile::new(base_url, model);
                profile.api_key_env = std::env::var_os("OPENAI_API_KEY").map(|_| "OPENAI_API_KEY".to_owned());
                profile
            }
        };
        if let Some(url) = &self.base_url {
            profile.base_url.clone_from(url);
        }
        if let Some(model) = &self.model {
            profile.model.clone_from(model);
        }
        if let Some(variable) = &self.api_key_env {
            profile.api_key_env = Some(variable.clone());
        }
        if !(profile.base_url.starts_with("http://") || profile.base_url.starts_with("https://")) {
            bail!("the model's base URL `{}` is not an http:// or https:// URL", printable(&profile.base_url));
        }
        Ok(profile)
    }
}
