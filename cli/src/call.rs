use super::{GlobalOptions, approver, output, pipeline_over};
use anyhow::{Context, bail};
use serde_json::{Map, Value};
use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;
use toolhost::{Limits, Policy, ProtocolId, Status, ToolCall, Turn, protocol::suggest::did_you_mean};

/// Call a tool once and print its output.
///
/// Call a tool once, through the same checks and approval as a model's
/// calls, and print its output. Arguments are coerced to the declared
/// types; a moderate or sensitive tool asks on a terminal, runs with
/// `--yes`, and is denied otherwise. Status, duration and fuel go to
/// stderr; the exit code is non-zero unless the call succeeded. Control
/// characters in the output are shown escaped on a terminal and written
/// as they are to a pipe or a file; in an error, always escaped.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost call calculate --arg expression=\"6*7\"\n  toolhost call write_file --yes --json '{\"path\": \"a.txt\", \"content\": \"hi\"}'\n  toolhost call dir_tree --output json"
)]
pub(super) struct CallCommand {
    /// The tool's name.
    tool: String,
    /// An argument as KEY=VALUE; repeatable
    ///
    /// An argument as KEY=VALUE; repeatable. VALUE is read as JSON when it is JSON
    /// (`2`, `true`, `[1]`) and as a string otherwise; either way it is then
    /// coerced to the parameter's declared type.
    #[arg(long = "arg", value_name = "KEY=VALUE", conflicts_with = "json")]
    args: Vec<String>,
    /// All arguments as one JSON object; `-` reads it from stdin.
    #[arg(long, value_name = "OBJECT")]
    json: Option<String>,
    /// The output's form
    ///
    /// `json`: print the whole outcome as a JSON object on stdout (id, tool,
    /// status, output, duration, fuel, and the failure as data: kind, limit,
    /// plugin) instead of the output.
    #[arg(long, value_name = "FORMAT", value_parser = ["text", "json"], default_value = "text")]
    output: String,
    /// Allow the call without asking (deny rules still apply)
    ///
    /// Allow the call without asking, where it needs approval (deny rules still
    /// apply).
    #[arg(long)]
    yes: bool,
    /// Fuel for this call, in place of the policy's
    ///
    /// Fuel for this call (roughly, WebAssembly instructions), in place of the
    /// policy's, to try a tool with more or less.
    #[arg(long, value_name = "UNITS", value_parser = clap::value_parser!(u64).range(1..=MAX_FUEL))]
    fuel: Option<u64>,
    /// Wall-clock time for this call, as `500ms`, `5s`, `2m`
    ///
    /// Wall-clock time for this call, in place of the policy's: `500ms`, `5s`,
    /// `2m`.
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    timeout: Option<Duration>,
}

/// The most fuel `--fuel` gives, as the policy's `fuel` key allows.
const MAX_FUEL: u64 = i64::MAX as u64;
/// The longest `--timeout`, as the policy's `timeout_ms` key allows.
const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

fn parse_timeout(text: &str) -> Result<Duration, String> {
    let timeout = humantime::parse_duration(text).map_err(|e| format!("{e} (write it as 500ms, 5s or 2m)"))?;
    if timeout.is_zero() || timeout > MAX_TIMEOUT {
        return Err(format!("must be more than 0 and at most {}", humantime::format_duration(MAX_TIMEOUT)));
    }
    Ok(timeout)
}

impl CallCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let stdin_text;
        let json = match self.json.as_deref() {
            Some("-") => {
                let mut text = String::new();
                std::io::stdin().read_to_string(&mut text).context("reading --json from stdin")?;
                stdin_text = text;
                Some(stdin_text.as_str())
            }
            other => other,
        };
        let args = match json {
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
                    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
                    map.insert(key.to_owned(), value);
                }
                map
            }
        };
        let mut policy = global.policy()?;
        self.override_limits(&mut policy);
        let pipeline = pipeline_over(global.registry_over(&policy).await?, &policy, approver(self.yes));
        if let Some((_, spec)) = pipeline.executor().registry().catalog().tool(&self.tool) {
            let declared: Vec<&str> = spec.params.iter().map(|p| p.name.as_str()).collect();
            for key in args.keys().filter(|k| !declared.contains(&k.as_str())) {
                output::note(format_args!(
                    "warning: `{}` declares no parameter `{key}`{}",
                    self.tool,
                    did_you_mean(key, &declared)
                ));
            }
        }
        let turn = Turn::direct(ProtocolId::JsonBlock);
        let result = pipeline.run(&turn, vec![ToolCall::new("cli-1", &self.tool, args)]).await;
        let outcome = &result.outcomes[0];
        if self.output == "json" {
            output::json(outcome)?;
        } else if outcome.status == Status::Success {
            output::data(&outcome.output)?;
        } else {
            output::alert_lines(&outcome.output);
        }
        output::note(format_args!(
            "status: {} · {:.2} ms · fuel {}",
            outcome.status,
            outcome.duration.as_secs_f64() * 1000.0,
            outcome.fuel_used
        ));
        Ok(if outcome.status == Status::Success { ExitCode::SUCCESS } else { ExitCode::FAILURE })
    }

    /// `--fuel` and `--timeout` in place of the policy's limits, for every
    /// plugin: whoever runs `call` owns the machine it runs on.
    fn override_limits(&self, policy: &mut Policy) {
        let apply = |limits: &mut Limits| {
            if let Some(fuel) = self.fuel {
                limits.fuel = fuel;
            }
            if let Some(timeout) = self.timeout {
                limits.timeout = timeout;
            }
        };
        apply(&mut policy.limits);
        policy.plugins.values_mut().for_each(|plugin| apply(&mut plugin.limits));
    }
}
