//! `standin-llm SCRIPT.json [-- COMMAND ARG…]`: serve a scripted model on a
//! free local port. Alone, it prints its base URL on the first line of
//! stdout and answers until killed. With a command, it runs the command
//! with `OPENAI_BASE_URL` set to that URL, stops when the command ends and
//! exits with its status, so one line of a README can chat with it. The
//! script is a JSON array of responses (see the library's `Response`).

use anyhow::Context;
use toolhost_standin::{Response, StandIn};

/// What `--help` says beside the usage line.
const HELP: &str = "A scripted stand-in for an OpenAI-compatible model server, on a free local port.

Alone, it prints its base URL on the first line of stdout and answers until
killed. With `-- COMMAND ARG…`, it runs the command with OPENAI_BASE_URL set
to that URL and exits with its status when it ends.

SCRIPT.json is a JSON array of responses, one per request, in order:
  {\"reply\": {\"text\": \"…\"}}            a reply (`{{last_message}}` quotes the request)
  {\"reply\": {\"tool_calls\": [{\"id\": …, \"name\": …, \"arguments\": \"{…}\"}]}}
  {\"error\": {\"status\": 503}}             an HTTP error
  {\"stream\": [{\"chunk\": {…}}, \"done\"]}     exactly these SSE frames
A request with \"stream\": false gets the reply as one JSON completion.";

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<std::process::ExitCode> {
    let mut args = std::env::args().skip(1).peekable();
    let usage = "usage: standin-llm SCRIPT.json [-- COMMAND ARG…]";
    if args.peek().is_some_and(|first| matches!(first.as_str(), "-h" | "--help")) {
        println!("{usage}\n\n{HELP}");
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if args.peek().is_some_and(|first| first == "--version") {
        println!("standin-llm {}", env!("CARGO_PKG_VERSION"));
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let path = args.next().context(usage)?;
    let command: Vec<String> = match args.next().as_deref() {
        None => Vec::new(),
        Some("--") => args.collect(),
        Some(other) => anyhow::bail!("unexpected `{other}`; {usage}"),
    };
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let script: Vec<Response> = serde_json::from_str(&text).with_context(|| format!("{path} is not a script"))?;
    let server = StandIn::start(script).await?;
    let Some((program, rest)) = command.split_first() else {
        println!("{}", server.base_url());
        tokio::signal::ctrl_c().await.ok();
        return Ok(std::process::ExitCode::SUCCESS);
    };
    // A blocking wait on its own thread, so the server goes on answering.
    let mut child = std::process::Command::new(program);
    child.args(rest).env("OPENAI_BASE_URL", server.base_url());
    let status = tokio::task::spawn_blocking(move || child.status()).await?.with_context(|| format!("running {program}"))?;
    let code = status.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1);
    Ok(std::process::ExitCode::from(code))
}
