use super::GlobalOptions;
use super::output;
use anyhow::{Context, bail};
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost::ProtocolId;
use toolhost::{
    PromptCache, ToolCallConfig,
    prompt::{unknown_template_tools, visible_tools},
    protocol::suggest::did_you_mean,
};

/// Print the system prompt that tells a model about the tools.
///
/// Print the system prompt that tells a model about the tools, rendered in
/// a protocol; its token estimate goes to stderr. A tool whose plugin asks
/// for a directory or HTTP host the policy does not grant is left out
/// (said on stderr), unless an agent's `tool_toggles` turns it on by name. Control characters are
/// shown escaped on a terminal and written as they are to a pipe or a file.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost prompt\n  toolhost prompt --protocol json-block\n  toolhost prompt --agent coder --template prompt.md"
)]
pub(super) struct PromptCommand {
    /// The protocol [default: the agent's, else vcp]
    ///
    /// The protocol: vcp, json-block, xml-tag or native [default: the agent's,
    /// else vcp].
    #[arg(long)]
    protocol: Option<ProtocolId>,
    /// An agent from `[agents.NAME]`: its tool toggles apply
    ///
    /// An agent from `[agents.NAME]` in the policy: its tool toggles apply.
    /// Without it, every agent-callable tool is offered.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// A template file, `{{tools}}` substituted [default: `{{tools}}`]
    ///
    /// A template file; `{{tools}}` and `{{tool:NAME}}` are substituted. Default:
    /// `{{tools}}`.
    #[arg(long, value_name = "FILE")]
    template: Option<PathBuf>,
}

impl PromptCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let policy = global.policy()?;
        let registry = global.registry_over(&policy).await?;
        let (agent, config) = match &self.agent {
            Some(name) => (name.clone(), super::model::named_agent(&policy, name)?),
            None => ("default".to_owned(), ToolCallConfig::on()),
        };
        let protocol = self.protocol.unwrap_or(config.protocol);
        if protocol == ProtocolId::Auto {
            bail!("`auto` only reads replies; a prompt is written in one protocol: vcp, json-block, xml-tag or native");
        }
        let template = match &self.template {
            Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
            None => "{{tools}}".to_owned(),
        };
        let catalog = registry.catalog();
        if !config.enabled {
            output::note(format_args!(
                "warning: agent `{agent}` has tool calling off, so the prompt offers no tools; set enabled = true in [agents.{agent}]"
            ));
        }
        // A tool that would fail for want of a grant is not taught, unless
        // the agent turns it on by name.
        let mut config = config;
        let left_out: Vec<String> = catalog
            .tools()
            .filter(|(plugin, tool)| plugin.missing_grants().next().is_some() && config.offers(tool))
            .filter(|(_, tool)| config.tool_toggles.get(&tool.name) != Some(&true))
            .map(|(_, tool)| tool.name.clone())
            .collect();
        config.tool_toggles.extend(left_out.iter().map(|tool| (tool.clone(), false)));
        let offered = visible_tools(&catalog, &config);
        let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
        if !left_out.is_empty() {
            output::note(format_args!(
                "left out: {}: their plugin asks for a directory or HTTP host the policy does not grant (`toolhost check` names it)",
                left_out.join(", ")
            ));
        }
        for unknown in unknown_template_tools(&template, &offered) {
            output::note(format_args!(
                "warning: {{{{tool:{unknown}}}}} names no tool offered to agent `{agent}`, so it renders as nothing{}",
                did_you_mean(unknown, &names)
            ));
        }
        let prompt = PromptCache::new().render(&catalog, &agent, &config, protocol, &template);
        // The estimate goes to stderr even when stdout's reader stopped
        // early (`toolhost prompt | head`), which it is there to go with.
        let written = output::data(&prompt.text);
        output::note(format_args!(
            "{} tokens (o200k_base), {} bytes, protocol {}",
            prompt.tokens(),
            prompt.text.len(),
            protocol.as_str()
        ));
        written?;
        Ok(ExitCode::SUCCESS)
    }
}
