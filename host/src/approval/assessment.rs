//! What approval makes of a call: [`Assessment`] before any person sees
//! it, [`Settled`] once a person's answer is in.

use super::{AskReason, DecidedBy};

/// What becomes of a call before any person sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
// Exhaustive: a program running its own approval step must handle every
// assessment; a new one must not fall into a wildcard that runs the call.
pub enum Assessment {
    /// It runs.
    Run {
        /// Who or what let it.
        by: DecidedBy,
    },
    /// A person must decide.
    Ask(AskReason),
    /// It does not run; `reason` reaches the model.
    Deny {
        /// Who or what refused it.
        by: DecidedBy,
        /// Why, in words for the model.
        reason: String,
    },
}

/// How approval of an asked call ends once it is answered: what
/// [`Approvals::settle`](super::Approvals::settle) makes of an answer. Only the two outcomes an
/// answer can have: nobody matches an "ask" that cannot come. Where a
/// record holds an [`Assessment`] (the audit log's, a paused turn's), it
/// converts into one.
#[derive(Debug, Clone, PartialEq, Eq)]
// Exhaustive, as `Assessment` is: a new outcome must not fall into a
// wildcard that runs the call.
pub enum Settled {
    /// It runs.
    Run {
        /// Who or what let it.
        by: DecidedBy,
    },
    /// It does not run; `reason` reaches the model.
    Deny {
        /// Who or what refused it.
        by: DecidedBy,
        /// Why, in words for the model.
        reason: String,
    },
}

/// A settled call is assessed as it ended: run or deny, by the same.
impl From<Settled> for Assessment {
    fn from(settled: Settled) -> Self {
        match settled {
            Settled::Run { by } => Assessment::Run { by },
            Settled::Deny { by, reason } => Assessment::Deny { by, reason },
        }
    }
}
