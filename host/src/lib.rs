//! toolhost runs tools written as sandboxed WebAssembly components for any
//! LLM.
//!
//! The most interesting items:
//! - [`Registry`]: loads the components in the plugin directories, verifies
//!   them (pins, API version, names) and keeps them ready to run;
//! - [`Executor`]: runs [`ToolCall`]s, each in a fresh, capability-limited
//!   instance, and returns [`ToolOutcome`]s that name any limit that was hit;
//! - [`Policy`]: the host's `toolhost.toml`: limits and grants per plugin.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolhost::{Executor, Policy, Registry, ToolCall};
//!
//! # async fn demo() -> anyhow::Result<()> {
//! let mut policy = Policy::default();
//! policy.plugin_dirs.push("plugins".into());
//! let registry = Arc::new(Registry::load(policy).await?);
//! let executor = Executor::new(registry);
//!
//! let args = serde_json::json!({ "expression": "6 * 7" });
//! let call = ToolCall::new("call-1", "calculate", args.as_object().unwrap().clone());
//! let outcome = executor.call(&call).await;
//! println!("{}: {}", outcome.status, outcome.output);
//! # Ok(())
//! # }
//! ```

pub mod arguments;
pub mod call;
pub mod commands;
pub mod config;
pub mod discovery;
pub mod executor;
pub mod manifest;
pub mod outcome;
mod printable;
pub mod protocol;
pub mod registry;
pub mod sandbox;
pub mod suggest;

pub use call::ToolCall;
pub use config::Policy;
pub use executor::Executor;
pub use outcome::{Status, ToolOutcome};
pub use registry::Registry;
