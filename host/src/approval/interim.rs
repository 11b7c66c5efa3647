//! A stand-in for the approval policy while the full module (rules,
//! remembered decisions, audit log, adapters) is merged: levels and
//! `require_confirmation` only.

use super::{AskReason, Approver, CallDecision, ResultDecision, PendingCall};
use crate::manifest::{Permission, ToolSpec};
use crate::outcome::ToolOutcome;
use serde_json::{Map, Value};

/// Who or what decided a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecidedBy {
    /// The tool's permission level.
    Level,
    /// A person.
    Person,
}

/// What a call needs before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assessment {
    /// It runs.
    Run {
        /// Why.
        by: DecidedBy,
    },
    /// A person decides.
    Ask(AskReason),
    /// It does not run.
    Deny {
        /// Why.
        by: DecidedBy,
        /// Words for the model.
        reason: String,
    },
}

/// The approval policy.
#[derive(Debug, Default)]
pub struct Approvals;

impl Approvals {
    /// What `tool` needs.
    pub fn assess(
        &self,
        _agent: &str,
        require_confirmation: bool,
        _plugin: &str,
        _plugin_sha256: &str,
        tool: &ToolSpec,
        _args: &Map<String, Value>,
    ) -> Assessment {
        if require_confirmation {
            return Assessment::Ask(AskReason::RequireConfirmation);
        }
        match tool.permission {
            Permission::Public => Assessment::Run { by: DecidedBy::Level },
            Permission::Moderate => Assessment::Ask(AskReason::Moderate),
            Permission::Sensitive => Assessment::Ask(AskReason::Sensitive),
        }
    }
}

impl Approvals {
    /// Remember "allow always" for a moderate tool.
    pub fn remember(&self, _agent: &str, _plugin: &str, _plugin_sha256: &str, _tool: &str) {}
}

/// Denies everything that needs approval.
pub struct DenyAll;

#[async_trait::async_trait]
impl Approver for DenyAll {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        calls.iter().map(|_| CallDecision::Deny { reason: Some("approval needed, and nobody is attached to give it".into()) }).collect()
    }

    async fn approve_result(&self, _outcome: &ToolOutcome, _tool: &ToolSpec) -> ResultDecision {
        ResultDecision::Reject { reason: Some("result approval needed, and nobody is attached to give it".into()) }
    }
}

/// Allows everything (`--yes`).
pub struct AllowAll;

#[async_trait::async_trait]
impl Approver for AllowAll {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        calls.iter().map(|_| CallDecision::AllowOnce).collect()
    }

    async fn approve_result(&self, _outcome: &ToolOutcome, _tool: &ToolSpec) -> ResultDecision {
        ResultDecision::Pass
    }
}
