use super::GlobalOptions;
use super::output;
use anyhow::Context;
use serde_json::json;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost::{Declared, ProtocolId, ToolCall, Turn};

/// Run the tool calls in a model's reply and print the results.
///
/// Run every call in a model's finished reply — checked, approved and
/// executed as the agent's settings say — and print what the model should
/// see next. Calls that need approval ask on a terminal, run with `--yes`,
/// and are denied otherwise; the exit code is 0 whenever the run itself
/// worked, whatever became of the calls. A summary goes to stderr.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost run reply.txt\n  toolhost run --agent coder --yes reply.txt\n  toolhost run --json - < reply.txt"
)]
pub(super) struct RunCommand {
    /// The protocol the reply is in [default: the agent's, else auto]
    ///
    /// The protocol the reply is written in: vcp, json-block, xml-tag, native or
    /// auto [default: the agent's, else auto]. Results come back in it; for auto,
    /// in the protocol the reply's calls are written in (vcp, json-block or
    /// xml-tag), else in vcp, which `toolhost prompt` teaches by default.
    #[arg(long)]
    protocol: Option<ProtocolId>,
    /// The agent whose reply this is (`[agents.NAME]`)
    ///
    /// The agent whose reply this is (`[agents.NAME]`): which tools it may call,
    /// its timeout, parallelism and confirmation settings. Without one, any loaded
    /// tool may be called, one call after another, each within its plugin's limits
    /// only.
    #[arg(long)]
    agent: Option<String>,
    /// Allow calls that need approval without asking
    ///
    /// Allow calls that need approval without asking (deny rules still apply).
    #[arg(long)]
    yes: bool,
    /// Print the outcomes and messages as JSON
    ///
    /// Print `{"outcomes": […], "messages": […]}` instead of the messages' text.
    #[arg(long)]
    json: bool,
    /// The reply; `-` or nothing for stdin.
    file: Option<PathBuf>,
}

/// The protocols whose results a reply read by `auto` is answered in, when
/// its calls are written in one of them.
const ANSWERED_IN: [ProtocolId; 3] = [ProtocolId::Vcp, ProtocolId::JsonBlock, ProtocolId::XmlTag];

impl RunCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let reply = match self.file.as_deref().filter(|f| f.as_os_str() != "-") {
            Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
            None => {
                let mut text = String::new();
                std::io::stdin().read_to_string(&mut text).context("reading the reply from stdin")?;
                text
            }
        };
        let policy = global.policy()?;
        let mut turn = match &self.agent {
            Some(name) => Turn::for_agent(name, super::model::named_agent(&policy, name)?),
            None => Turn::direct(ProtocolId::Auto),
        };
        if let Some(protocol) = self.protocol {
            turn.protocol = protocol;
        }
        let pipeline = global.pipeline(&policy, self.yes).await?;
        let catalog = pipeline.executor().registry().catalog();
        let declared = Declared::new(catalog.tools().map(|(_, tool)| tool.name.clone()));
        let parsed = turn.protocol.protocol().parse(&reply, &declared);
        if turn.protocol == ProtocolId::Auto {
            turn.protocol = ANSWERED_IN
                .into_iter()
                .find(|protocol| !protocol.protocol().parse(&reply, &declared).calls.is_empty())
                .unwrap_or(ProtocolId::Vcp);
        }
        for warning in &parsed.warnings {
            output::note(format_args!("warning: {warning}"));
        }
        let result = pipeline.run(&turn, ToolCall::from_reply(&reply, &parsed.calls)).await;
        if self.json {
            output::json(&json!({ "outcomes": result.outcomes, "messages": result.messages() }))?;
        } else {
            for message in &result.messages() {
                output::data(&message.content)?;
            }
        }
        let summary = result.summary();
        if !summary.is_empty() {
            output::note_lines(&summary);
        }
        Ok(ExitCode::SUCCESS)
    }
}
