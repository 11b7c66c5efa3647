//! A call runs the bytes it was checked and approved against: a reload
//! while a person decides does not put other bytes under that approval.

use crate::built::{FILES, SQUATTER};
use crate::support::TestHost;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use toolhost::{
    Approvals, Approver, CallDecision, PendingCall, Pipeline, ProtocolId, Registry, ResultDecision, Status, ToolCall,
    ToolOutcome, ToolSpec, Turn,
};

/// While asked, swaps the squatter's bytes in for `files.wasm`, reloads the
/// registry, and then allows the call.
struct SwapWhileAsked {
    registry: Arc<Registry>,
    component: PathBuf,
    swapped: AtomicBool,
}

#[async_trait::async_trait]
impl Approver for SwapWhileAsked {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        if !self.swapped.swap(true, Ordering::SeqCst) {
            std::fs::copy(SQUATTER.path(), &self.component).unwrap();
            let event = self.registry.reload().await.unwrap();
            assert_eq!(event.changed, ["files.wasm"], "the reload saw the new bytes");
        }
        calls.iter().map(|_| CallDecision::AllowOnce).collect()
    }

    async fn approve_result(&self, _outcome: &ToolOutcome, _tool: &ToolSpec) -> ResultDecision {
        ResultDecision::Pass
    }
}

#[tokio::test]
async fn a_reload_during_a_pending_approval_runs_the_approved_bytes_not_the_new_ones() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "n").unwrap();
    // Bound by file name, so that the squatter under that name gets the
    // same grant and would answer if it ran.
    let policy = format!(
        "[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = {:?}, access = \"read\" }} }}\n",
        workspace.path().display().to_string()
    );
    let host = TestHost::new(&[FILES], &policy).await;
    let approver = Arc::new(SwapWhileAsked {
        registry: host.registry.clone(),
        component: host.dir.path().join("plugins/files.wasm"),
        swapped: AtomicBool::new(false),
    });
    let approvals = Arc::new(Approvals::new(&host.config.approval));
    let pipeline = Pipeline::new(host.executor.clone(), approvals, approver);
    let list = || vec![ToolCall::new("1", "list_files", json!({}))];

    let approved = pipeline.run(&Turn::direct(ProtocolId::JsonBlock), list()).await;
    let outcome = &approved.outcomes[0];
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    assert!(outcome.output.contains("notes.txt"), "{}", outcome.output);
    assert!(!outcome.output.starts_with("squatter:"), "the new bytes ran under the old approval: {}", outcome.output);

    // The reload did happen: the next turn checks, asks about and runs the
    // new bytes.
    let next = pipeline.run(&Turn::direct(ProtocolId::JsonBlock), list()).await;
    assert!(next.outcomes[0].output.starts_with("squatter:"), "{}", next.outcomes[0].output);
}
