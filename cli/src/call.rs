use super::GlobalOptions;
use super::output;
use toolhost::ToolCall;
use toolhost::Executor;
use toolhost::ParamType;
use toolhost::Status;
use anyhow::{Context, bail};
use serde_json::{Map, Value};
use std::process::ExitCode;
use std::sync::Arc;

/// Call a tool once and print its output. Status, duration and fuel go to
/// stderr; the exit code is non-zero unless the call succeeded. Control
/// characters in the output are shown escaped on a terminal and written
/// as they are to a pipe or a file; in an error, always escaped.
#[derive(Debug, clap::Args)]
pub(super) struct CallCommand {
    /// The tool's name.
    tool: String,
    /// An argument as KEY=VALUE; repeatable. A value is taken as a string
    /// for string parameters and as JSON otherwise.
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
        let declared = |key: &str| catalog.tool(&self.tool).and_then(|(_, t)| t.param(key)).map(|p| p.ty);
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
                    map.insert(key.to_owned(), arg_value(declared(key), value));
                }
                map
            }
        };
        let outcome = Executor::new(registry.clone()).call(&ToolCall::new("cli-1", &self.tool, args)).await;
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

/// A string for string (or undeclared-and-not-JSON) parameters, JSON
/// otherwise.
fn arg_value(ty: Option<ParamType>, text: &str) -> Value {
    match ty {
        Some(ParamType::String) => Value::String(text.to_owned()),
        _ => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())),
    }
}
