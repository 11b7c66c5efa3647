//! `standin-llm SCRIPT.json [-- COMMAND ARG…]`: serve a scripted model on a
//! free local port. Alone, it prints its base URL on the first line of
//! stdout and answers until killed. With a command, it runs the command
//! with `OPENAI_BASE_URL` set to that URL, stops when the command ends and
//! exits with its status, so one line of a README can chat with it. The
//! script is a JSON array of responses (see the library's `Response`).

use anyhow::Context;
use toolhost_standin::{Response, StandIn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<std::process::ExitCode> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: standin-llm SCRIPT.json [-- COMMAND ARG…]";
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
