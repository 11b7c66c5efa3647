use super::GlobalOptions;
use super::output;
use toolhost::{Executor, ParsedCall, Status, ToolOutcome, ToolSpec, check_call};
use anyhow::{Context, bail};
use serde_json::{Map, Value};
use std::process::ExitCode;
use std::sync::Arc;

/// The id of the one call this command makes.
const CALL_ID: &str = "cli-1";

/// Call a tool once and print its output. Status, duration and fuel go to
/// stderr; the exit code is non-zero unless the call succeeded. Control
/// characters in the output are shown escaped on a terminal and written
/// as they are to a pipe or a file; in an error, always escaped.
#[derive(Debug, clap::Args)]
pub(super) struct CallCommand {
    /// The tool's name.
    tool: String,
    /// An argument as KEY=VALUE; repeatable. The value is text, converted
    /// to the parameter's declared type ("3" for an integer is 3).
    #[arg(long = "arg", value_name = "KEY=VALUE", conflicts_with = "json")]
    args: Vec<String>,
    /// All arguments as one JSON object.
    #[arg(long, value_name = "OBJECT")]
    json: Option<String>,
}

impl CallCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let registry = Arc::new(global.registry().await?);
        let catalog = registry.catalog();
        let args = match &self.json {
            Some(text) => match serde_json::from_str(text).context("--json is not valid JSON")? {
                Value::Object(map) => map,
                _ => bail!("--json must be a JSON object"),
            },
            None => {
                let mut map = Map::new();
                for pair in &self.args {
                    let Some((key, value)) = pair.split_once('=') else {
                        bail!("--arg `{pair}` is not KEY=VALUE");
                    };
                    map.insert(key.to_owned(), Value::String(value.to_owned()));
                }
                map
            }
        };
        // The library checks and coerces the arguments, as for a model's call.
        let tools: Vec<&ToolSpec> = catalog.tools().map(|(_, tool)| tool).collect();
        let parsed = ParsedCall { name: self.tool.clone(), arguments: args, reserved: Map::new(), span: 0..0 };
        let outcome = match check_call(&parsed, CALL_ID, &tools) {
            Ok(call) => Executor::new(registry.clone()).call(&call).await,
            Err(error) => {
                let status = if catalog.tool(&self.tool).is_some() { Status::Error } else { Status::NotFound };
                ToolOutcome::without_running(CALL_ID, &self.tool, status, error.message)
            }
        };
        if outcome.status == Status::Success {
            output::data(&outcome.output)?;
        } else {
            output::note_lines(&outcome.output);
        }
        output::note(format_args!(
            "status: {} · {:.2} ms · fuel {}",
            outcome.status,
            outcome.duration.as_secs_f64() * 1000.0,
            outcome.fuel_used
        ));
        Ok(if outcome.status == Status::Success { ExitCode::SUCCESS } else { ExitCode::FAILURE })
    }
}
