//! `standin-llm SCRIPT.json`: serve a scripted model on a free local port,
//! print its base URL on the first line of stdout, and answer until
//! killed. The script is a JSON array of responses (see the library's
//! `Response`).

use anyhow::Context;
use toolhost_standin::{Response, StandIn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let path = std::env::args().nth(1).context("usage: standin-llm SCRIPT.json")?;
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let script: Vec<Response> = serde_json::from_str(&text).with_context(|| format!("{path} is not a script"))?;
    let server = StandIn::start(script).await?;
    println!("{}", server.base_url());
    tokio::signal::ctrl_c().await.ok();
    Ok(())
}
