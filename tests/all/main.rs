//! Integration tests: real components, built by `cargo xtask build-plugins`,
//! loaded into a real registry and run in the real sandbox. One binary, one
//! module per area.

mod approval;
mod chat;
mod concurrency;
mod declarations;
mod failures;
mod grants;
mod host_limits;
mod pipeline;
mod limits;
mod llm;
mod polyglot;
mod protocols;
mod registry;
mod support;
mod vcp;
mod vcp_standin;
