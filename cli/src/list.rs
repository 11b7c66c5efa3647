use super::GlobalOptions;
use super::output;
use serde_json::json;
use std::process::ExitCode;
use toolhost::LoadedPlugin;
use toolhost::ToolSpec;

/// List the loaded tools and what their plugins are granted.
///
/// List the loaded tools: name (and the plugin's own name for it, when the
/// policy renamed it), plugin@version, permission (and the plugin's own
/// level, when its grants raise it), params and the capabilities granted
/// to their plugin.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost list\n  toolhost --plugins target/plugins/examples list\n  toolhost list --json"
)]
pub(super) struct ListCommand {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

impl ListCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let registry = global.registry().await?;
        let catalog = registry.catalog();
        if self.json {
            let tools: Vec<_> = catalog
                .tools()
                .map(|(plugin, tool)| {
                    json!({
                        "name": tool.name,
                        "declared_name": plugin.declared_name(&tool.name),
                        "plugin": plugin.name(),
                        "version": plugin.manifest.version.to_string(),
                        "description": tool.description,
                        "permission": tool.permission,
                        "declared_permission": tool.declared_permission,
                        "result_approval": tool.result_approval,
                        "agent_callable": tool.agent_callable,
                        "distributed_exposed": tool.distributed_exposed,
                        "params": tool.params,
                        "grants": plugin.grants,
                    })
                })
                .collect();
            output::json(&tools)?;
            return Ok(ExitCode::SUCCESS);
        }
        let mut rows = vec![["TOOL", "PLUGIN", "PERMISSION", "AGENTS", "PARAMS", "GRANTED"].map(String::from)];
        for (plugin, tool) in catalog.tools() {
            let declared = plugin.declared_name(&tool.name);
            rows.push([
                if declared == tool.name { tool.name.clone() } else { format!("{} (declared {declared})", tool.name) },
                plugin.label(),
                permission_cell(tool),
                // Whether a model may be offered the tool at all; the
                // others are for people and direct calls only.
                if tool.agent_callable { "callable" } else { "-" }.to_owned(),
                params_cell(tool),
                grants_cell(plugin),
            ]);
        }
        output::table(&rows)?;
        Ok(ExitCode::SUCCESS)
    }
}

/// `moderate (declared public) +result`: the level the host holds the
/// tool to, and the plugin's own when it is lower.
fn permission_cell(tool: &ToolSpec) -> String {
    let mut cell = tool.permission.as_str().to_owned();
    if tool.declared_permission != tool.permission {
        cell.push_str(&format!(" (declared {})", tool.declared_permission.as_str()));
    }
    if tool.result_approval {
        cell.push_str(" +result");
    }
    cell
}

/// `expression: string, zone?: string`
pub(super) fn params_cell(tool: &ToolSpec) -> String {
    let params: Vec<String> =
        tool.params.iter().map(|p| format!("{}{}: {}", p.name, if p.required { "" } else { "?" }, p.ty.as_str())).collect();
    if params.is_empty() { "-".into() } else { params.join(", ") }
}

/// `dir /workspace=/srv/ws (read-write), env HOME, http example.com`
pub(super) fn grants_cell(plugin: &LoadedPlugin) -> String {
    let parts = plugin.grants.described();
    if parts.is_empty() { "none".into() } else { parts.join(", ") }
}
