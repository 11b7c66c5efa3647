use super::{GlobalOptions, findings, output};
use std::process::ExitCode;
use toolhost::{Approvals, unscoped_rules};

/// Load the policy and every plugin as any command would, and fail if
/// anything is amiss: a refused component, a policy section that does not
/// apply, a key that does nothing (a section for no plugin, a grant never
/// asked for, a toggle or `{{tool:NAME}}` naming no tool, an agent with
/// tool calling off, a rule naming a plugin not loaded), a
/// remembered-approvals file that cannot be read. Each finding is a line
/// on stdout; the exit code is 0 only with none, so CI can hold a policy
/// to it. An `info:` line says which plugins' tools each approval rule
/// that names no plugin matches; it is not a finding.
#[derive(Debug, clap::Args)]
pub(super) struct CheckCommand {}

impl CheckCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let file = global.config_file();
        let registry = global.load(global.policy()?).await?;
        let approvals = Approvals::new(&registry.policy().approval);
        let mut findings = findings(&registry);
        findings.extend(approvals.take_warnings().into_iter().map(|w| format!("warning: {w}")));
        for finding in &findings {
            output::line(finding)?;
        }
        let catalog = registry.catalog();
        for scope in unscoped_rules(registry.policy(), &catalog) {
            output::line(format_args!("info: {scope}"))?;
        }
        let source = file.map_or_else(|| "no policy file".to_owned(), |f| f.display().to_string());
        let summary = format!(
            "{} plugins, {} tools, {} refused ({source}): {}",
            catalog.plugins.len(),
            catalog.tools().count(),
            catalog.refused.len(),
            if findings.is_empty() { "ok".to_owned() } else { format!("{} findings", findings.len()) }
        );
        output::note(summary);
        Ok(if findings.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
    }
}
