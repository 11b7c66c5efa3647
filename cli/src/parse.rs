use super::GlobalOptions;
use super::output;
use anyhow::Context;
use serde_json::{Value, json};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost::{ParseReport, ProtocolId, Registry, ToolSpec, protocol::native::tools_from_schema};

/// Find the tool calls in a model's reply and print them as JSON.
///
/// Find the tool calls in a model's finished reply and print them as JSON:
/// `{"calls": [{"name", "arguments"}], "content", "warnings"}`; a call to a
/// tool that is not declared is listed with `"undeclared": true` and a
/// warning that names the closest declared tools. Loaded
/// plugins' tools and those of `--tools FILE` are declared, and their
/// calls' arguments are coerced to the declared types; an input given as
/// one text (`Action Input: Paris`) becomes the value of the one parameter
/// it can be for, and is listed as `"text_input"` where no parameters are
/// declared.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost parse reply.txt\n  toolhost parse --protocol vcp - < reply.txt\n  toolhost parse --tools tools.json reply.txt"
)]
pub(super) struct ParseCommand {
    /// The protocol: vcp, json-block, xml-tag, native or auto.
    #[arg(long, default_value = "auto")]
    protocol: ProtocolId,
    /// Declare a tool name (when no plugins are loaded); repeatable.
    #[arg(long = "tool", value_name = "NAME")]
    tools: Vec<String>,
    /// Declare the tools of an OpenAI `tools` JSON array in FILE
    ///
    /// Declare the tools of an OpenAI `tools` JSON array in FILE, with their
    /// parameters' types, to which values are coerced.
    #[arg(long = "tools", value_name = "FILE")]
    tools_file: Option<PathBuf>,
    /// The reply; `-` or nothing reads stdin.
    file: Option<PathBuf>,
}

impl ParseCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let reply = match self.file.as_deref() {
            Some(path) if path.as_os_str() != "-" => {
                std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
            }
            _ => {
                let mut text = String::new();
                std::io::stdin().read_to_string(&mut text).context("reading stdin")?;
                text
            }
        };
        let policy = global.policy()?;
        let registry = if policy.plugin_dirs.is_empty() { None } else { Some(global.registry_over(&policy).await?) };
        let catalog = registry.as_ref().map(Registry::catalog);
        let from_file = match &self.tools_file {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                let value: Value = serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
                tools_from_schema(&value).with_context(|| format!("{} is not an OpenAI tools array", path.display()))?
            }
            None => Vec::new(),
        };
        let specs: Vec<&ToolSpec> = catalog.iter().flat_map(|c| c.tools().map(|(_, t)| t)).chain(&from_file).collect();
        let report = ParseReport::of(&reply, self.protocol, &specs, &self.tools);
        let calls: Vec<Value> = report
            .calls
            .iter()
            .map(|call| {
                let mut shown = json!({ "name": call.name, "arguments": call.arguments });
                if let Some(text) = &call.text_input {
                    shown["text_input"] = text.as_str().into();
                }
                if call.undeclared {
                    shown["undeclared"] = true.into();
                }
                shown
            })
            .collect();
        let warnings: Vec<String> = report.warnings.iter().map(ToString::to_string).collect();
        let out = json!({ "calls": calls, "content": report.content, "warnings": warnings });
        output::json(&out)?;
        Ok(ExitCode::SUCCESS)
    }
}
