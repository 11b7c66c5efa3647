//! Integration tests: real components, built by `cargo xtask build-plugins`,
//! loaded into a real registry and run in the real sandbox. One binary, one
//! module per area.

// Host memory is counted, as in the toolhost command, so its limits are tested.
toolhost::count_host_memory!();

/// Every plugin of `plugins/` (tests/build.rs): a test names one the
/// compiler knows, and an example, hostile or other language's plugin that
/// no test here loads fails the build.
#[deny(dead_code)]
mod built {
    include!(concat!(env!("OUT_DIR"), "/plugins.rs"));
}

mod ahead;
mod approval;
mod approved;
mod chat;
mod concurrency;
mod declarations;
mod escapes;
mod failures;
mod grants;
mod host_limits;
mod hostile_model;
mod interruptions;
mod level_floor;
mod limits;
mod llm;
mod mcp_agent;
mod path_rules;
mod pipeline;
mod polyglot;
mod pooled;
mod protocols;
mod registry;
mod resumable;
mod sandbox_sharing;
mod support;
mod vcp;
mod vcp_standin;
