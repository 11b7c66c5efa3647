//! A chat loop with an approver of your own: the model's calls of public
//! tools run; a person is never asked, and everything else is refused
//! with a reason the model reads.
//!
//! ```sh
//! cargo run --release -p toolhost --example chat_with_approver -- \
//!     toolhost.toml http://localhost:8080/v1 my-model "What is 6 * 7?"
//! ```

use async_trait::async_trait;
use std::sync::Arc;
use toolhost::llm::LlmProfile;
use toolhost::transcript::Entry;
use toolhost::{
    Approvals, Approver, CallDecision, CancellationToken, Chain, ChainEvent, Executor, OpenAiClient, PendingCall, Permission,
    Pipeline, Policy, Registry, ResultDecision, ToolCallConfig, ToolOutcome, ToolSpec, Transcript,
};

/// Runs what is public, refuses the rest, passes every result on.
struct PublicOnly;

#[async_trait]
impl Approver for PublicOnly {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        calls
            .iter()
            .map(|call| match call.permission {
                Permission::Public => CallDecision::AllowOnce,
                _ => CallDecision::Deny { reason: Some(format!("`{}` needs a person, and none is here", call.tool)) },
            })
            .collect()
    }

    async fn approve_result(&self, _outcome: &ToolOutcome, _tool: &ToolSpec) -> ResultDecision {
        ResultDecision::Pass
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(policy), Some(base_url), Some(model), Some(message)) = (args.next(), args.next(), args.next(), args.next()) else {
        anyhow::bail!("usage: chat_with_approver POLICY BASE_URL MODEL MESSAGE");
    };
    let policy = Policy::load(policy.as_ref())?;
    let registry = Arc::new(Registry::load(policy.runtime()).await?);
    let approvals = Arc::new(Approvals::new(&policy.approval));
    let pipeline = Pipeline::new(Executor::new(registry), approvals, Arc::new(PublicOnly));
    let llm = Arc::new(OpenAiClient::new(LlmProfile::new(base_url, model))?);
    let config = ToolCallConfig::on();
    let chain = Chain::new(llm, pipeline, "assistant", config)?;

    let mut transcript = Transcript::in_memory();
    let show = |event: ChainEvent| match event {
        ChainEvent::Outcome { tool, status, output, .. } => eprintln!("[{tool}: {status:?}] {output}"),
        ChainEvent::Warning { message } => eprintln!("[warning] {message}"),
        _ => {}
    };
    let stop = chain.send(&mut transcript, &message, &show, &CancellationToken::new()).await?;
    let answer = transcript.entries().iter().rev().find_map(|entry| match entry {
        Entry::Assistant { content, .. } => Some(content.as_str()),
        _ => None,
    });
    println!("{}", answer.unwrap_or_default());
    eprintln!("stopped: {stop:?}");
    Ok(())
}
