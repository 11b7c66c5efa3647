//! The console: one local web page to see what the model sees and to
//! supervise it — the loaded tools (toggle them for the agent), the
//! rendered system prompt per protocol with its token count, a parser for
//! pasted replies, a form to run any tool, a chat with the agent's model,
//! the remembered approvals and the audit log — and the approval desk for
//! calls arriving through every door (the chat, an MCP client, a VCP
//! server).
//!
//! The page (HTML, CSS and script) is embedded in the binary; nothing is
//! loaded from anywhere else. The console binds loopback by default; every
//! request needs its token (the printed URL sets a cookie), and a request
//! that changes anything must come from its own page (see `access`).
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolhost::{AllowAll, Approvals, Console, Executor, Pipeline, Policy, Registry, console::ConsoleOptions};
//!
//! # async fn demo() -> anyhow::Result<()> {
//! let policy = Policy::load("toolhost.toml".as_ref())?;
//! let registry = Arc::new(Registry::load(policy.runtime()).await?);
//! let approvals = Arc::new(Approvals::new(&policy.approval));
//! let pipeline = Pipeline::new(Executor::new(registry.clone()), approvals, Arc::new(AllowAll));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let console = Console::new(pipeline, ConsoleOptions::default(), listener.local_addr()?);
//! println!("open {}", console.url());
//! console.serve(listener, toolhost::CancellationToken::new()).await?;
//! # Ok(())
//! # }
//! ```

// The `[console]` section is plain data, in every build; the console is
// the `console` feature.
#[cfg(feature = "console")]
mod access;
#[cfg(feature = "console")]
mod agents;
#[cfg(feature = "console")]
mod announce;
#[cfg(feature = "console")]
mod chat;
mod config;
#[cfg(feature = "console")]
mod desk;
#[cfg(feature = "console")]
mod doors;
#[cfg(feature = "console")]
mod feed;
#[cfg(feature = "console")]
mod json_body;
#[cfg(feature = "console")]
mod page;
#[cfg(feature = "console")]
mod records;
#[cfg(feature = "console")]
mod remote;
#[cfg(feature = "console")]
mod serve;
#[cfg(feature = "console")]
mod workbench;

#[cfg(feature = "console")]
pub use announce::{Announcement, announcement_path};
pub(crate) use config::ConsoleSection;
pub use config::{
    ConsoleConfig, DEFAULT_APPROVAL_TIMEOUT, DEFAULT_CONSOLE_LISTEN, DEFAULT_MAX_CHAT_BYTES, DEFAULT_MAX_WAITING_BYTES,
};
#[cfg(feature = "console")]
pub use desk::ConsoleApprover;
#[cfg(feature = "console")]
pub use remote::{RemoteApprover, RemoteDesk};
#[cfg(feature = "console")]
pub use serve::{Console, ConsoleOptions, DEFAULT_CONSOLE_AGENT};
// What the children of this module share with the door itself.
#[cfg(feature = "console")]
use serve::*;
