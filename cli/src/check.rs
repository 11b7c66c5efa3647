use super::{GlobalOptions, findings, output};
use std::process::ExitCode;
use toolhost::{
    Approvals,
    policy_check::{missing_grants, unscoped_rules},
};

/// Check the policy against the loaded plugins; fail on any finding.
///
/// Load the policy and every plugin as any command would, and fail if
/// anything is amiss: a refused component, a policy section that does not
/// apply, a key that does nothing (a section for no plugin, a grant never
/// asked for, a toggle or `{{tool:NAME}}` naming no tool, an agent with
/// tool calling off, a rule naming a plugin not loaded), tools offered to
/// models whose plugin asks for a directory or HTTP host the policy
/// withholds (prompts leave them out), a remembered-approvals file that
/// cannot be read. Each finding is a line on stdout; the exit code is 0
/// only with none, so CI can hold a policy to it. An `info:` line says
/// which plugins' tools each approval rule that names no plugin matches;
/// it is not a finding.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "Examples:\n  toolhost check\n  toolhost --config ci/toolhost.toml check")]
pub(super) struct CheckCommand {}

impl CheckCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let file = global.config_file();
        let policy = global.policy()?;
        let registry = global.load(&policy).await?;
        let approvals = Approvals::new(&policy.approval);
        let mut findings = findings(&registry, &policy);
        findings.extend(missing_grants(&registry.catalog()).into_iter().map(|w| format!("warning: {w}")));
        findings.extend(approvals.take_warnings().into_iter().map(|w| format!("warning: {w}")));
        for finding in &findings {
            output::line(finding)?;
        }
        let catalog = registry.catalog();
        for scope in unscoped_rules(&policy, &catalog) {
            output::line(format_args!("info: {scope}"))?;
        }
        let source = file.map_or_else(|| "no policy file".to_owned(), |f| f.display().to_string());
        let summary = format!(
            "{} plugins, {} tools, {} refused ({source}): {}",
            catalog.plugins.len(),
            catalog.tools().count(),
            catalog.refused.len(),
            match findings.len() {
                0 => "ok".to_owned(),
                1 => "1 finding".to_owned(),
                n => format!("{n} findings"),
            }
        );
        output::note(summary);
        Ok(if findings.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
    }
}
