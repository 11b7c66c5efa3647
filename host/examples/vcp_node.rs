//! Join a VCP server as a distributed node: the tools the policy exposes
//! are offered to the server, and each call it sends runs through the same
//! pipeline as a chat's (checked, approved, sandboxed). Calls that need a
//! person are decided by `[vcp.unattended]`; Ctrl-C leaves the server.
//!
//! ```sh
//! VCP_KEY=… cargo run --release -p toolhost --example vcp_node -- toolhost.toml
//! ```
//!
//! The policy needs a `[vcp]` section (`server`, `node_name`).

use std::sync::Arc;
use toolhost::vcp::{UnattendedApprover, VcpNode};
use toolhost::{Approvals, CancellationToken, Executor, Pipeline, Policy, Registry};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let policy = std::env::args().nth(1).unwrap_or_else(|| "toolhost.toml".into());
    let policy = Policy::load(policy.as_ref())?;
    let config = policy.vcp.clone().ok_or_else(|| anyhow::anyhow!("the policy has no [vcp] section"))?;
    let registry = Arc::new(Registry::load(policy.runtime()).await?);
    let approvals = Arc::new(Approvals::new(&policy.approval));
    let approver = Arc::new(UnattendedApprover::new(config.unattended));
    let pipeline = Pipeline::new(Executor::new(registry), approvals, approver);
    let node = VcpNode::from_env(config, pipeline)?;

    let shutdown = CancellationToken::new();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            let _ = tokio::signal::ctrl_c().await;
            shutdown.cancel();
        }
    });
    let mut status = node.watch();
    let running = node.run(shutdown);
    tokio::pin!(running);
    loop {
        tokio::select! {
            () = &mut running => break,
            Ok(()) = status.changed() => {
                let now = status.borrow_and_update().clone();
                eprintln!("{:?}: {} tools registered, {} calls served", now.state, now.registered.len(), now.calls_served);
            }
        }
    }
    Ok(())
}
