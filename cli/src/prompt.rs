use super::GlobalOptions;
use super::output;
use toolhost::{PromptCache, ToolCallConfig};
use toolhost::ProtocolId;
use anyhow::{Context, bail};
use std::path::PathBuf;
use std::process::ExitCode;

/// Print the system prompt that tells a model about the tools, rendered in
/// a protocol; its token estimate goes to stderr. Control characters are
/// shown escaped on a terminal and written as they are to a pipe or a file.
#[derive(Debug, clap::Args)]
pub(super) struct PromptCommand {
    /// The protocol: vcp, json-block, xml-tag or native [default: the
    /// agent's, else vcp].
    #[arg(long)]
    protocol: Option<ProtocolId>,
    /// An agent from `[agents.NAME]` in the policy: its tool toggles apply.
    /// Without it, every agent-callable tool is offered.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// A template file; `{{tools}}` and `{{tool:NAME}}` are substituted.
    /// Default: `{{tools}}`.
    #[arg(long, value_name = "FILE")]
    template: Option<PathBuf>,
}

impl PromptCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let registry = global.registry().await?;
        let (agent, config) = match &self.agent {
            Some(name) => match registry.policy().agents.get(name) {
                Some(config) => (name.clone(), config.clone()),
                None => {
                    let known: Vec<&str> = registry.policy().agents.keys().map(String::as_str).collect();
                    bail!("no agent `{name}` in the policy; agents: {}", if known.is_empty() { "none".into() } else { known.join(", ") });
                }
            },
            None => ("default".to_owned(), ToolCallConfig { enabled: true, ..ToolCallConfig::default() }),
        };
        let protocol = self.protocol.unwrap_or(config.protocol);
        if protocol == ProtocolId::Auto {
            bail!("`auto` only reads replies; a prompt is written in one protocol: vcp, json-block, xml-tag or native");
        }
        let template = match &self.template {
            Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
            None => "{{tools}}".to_owned(),
        };
        let prompt = PromptCache::new().render(&registry.catalog(), &agent, &config, protocol, &template);
        output::data(&prompt.text)?;
        output::note(format_args!(
            "{} tokens (o200k_base), {} bytes, protocol {}",
            prompt.tokens,
            prompt.text.len(),
            protocol.as_str()
        ));
        Ok(ExitCode::SUCCESS)
    }
}
