use super::GlobalOptions;
use super::output;
use std::collections::BTreeSet;
use std::process::ExitCode;
use toolhost::{approval::ApprovalMemory, protocol::suggest::did_you_mean};

/// How many hex digits of a plugin's SHA-256 the list shows.
const SHORT_SHA256: usize = 12;

/// Show or forget remembered "allow always" decisions.
///
/// A moderate tool allowed always runs without asking, for that agent,
/// until its plugin's bytes change. The decisions live in `[approval]
/// memory_file` of toolhost.toml (default: toolhost.approvals.json beside
/// the lock file).
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost approvals list\n  toolhost approvals revoke read_file --agent coder\n  toolhost approvals clear"
)]
pub(super) struct ApprovalsCommand {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// List them: agent, plugin, tool, the plugin's SHA-256 (short) and
    /// since when.
    List,
    /// Forget those of TOOL, so it asks again.
    Revoke {
        /// The tool.
        tool: String,
        /// Only those given for this agent.
        #[arg(long, value_name = "AGENT")]
        agent: Option<String>,
    },
    /// Forget them all.
    Clear,
}

impl ApprovalsCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let file = global.policy()?.approval.memory_file;
        let memory = ApprovalMemory::open(&file);
        for warning in memory.take_warnings() {
            output::note(format_args!("warning: {warning}"));
        }
        let file = file.display();
        match self.action {
            Action::List => {
                let entries = memory.entries();
                if entries.is_empty() {
                    output::line(format_args!("no remembered approvals in {file}"))?;
                    return Ok(ExitCode::SUCCESS);
                }
                let mut rows = vec![["AGENT", "PLUGIN", "TOOL", "SHA256", "SINCE"].map(String::from)];
                rows.extend(entries.into_iter().map(|e| {
                    let short = e.sha256.get(..SHORT_SHA256).unwrap_or(&e.sha256).to_owned();
                    [e.agent, e.plugin, e.tool, short, e.since]
                }));
                output::table(&rows)?;
            }
            Action::Revoke { tool, agent } => {
                let removed = memory.revoke(&tool, agent.as_deref())?;
                let whose = agent.as_deref().map(|a| format!(" for agent {a}")).unwrap_or_default();
                if removed == 0 {
                    // A typo revokes nothing: say what is remembered instead.
                    let entries = memory.entries();
                    let tools: Vec<&str> = entries.iter().map(|e| e.tool.as_str()).collect::<BTreeSet<_>>().into_iter().collect();
                    let agents: Vec<&str> = entries
                        .iter()
                        .filter(|e| e.tool == tool)
                        .map(|e| e.agent.as_str())
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect();
                    let hint = match agent.as_deref() {
                        Some(agent) if tools.contains(&tool.as_str()) => did_you_mean(agent, &agents),
                        _ => did_you_mean(&tool, &tools),
                    };
                    anyhow::bail!("no remembered approval of {tool}{whose} in {file}{hint}");
                }
                output::line(format_args!("revoked {removed} remembered approval(s) of {tool}{whose} in {file}"))?;
            }
            Action::Clear => {
                let removed = memory.clear()?;
                output::line(format_args!("cleared {removed} remembered approval(s) from {file}"))?;
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
