//! The vocabulary toolhost's crates share: what a plugin declares
//! ([`manifest`]), a request to run a tool ([`call`]), what became of it
//! ([`outcome`], [`failure`]) and the messages that go to and from a model
//! ([`message`]). Plain data: no WebAssembly runtime, no async runtime.

// A `pub` item that no path from the root reaches is `pub(crate)`, so
// that `pub` alone marks the public API.
#![warn(unreachable_pub)]
#![warn(clippy::missing_errors_doc)]

pub mod call;
pub mod failure;
pub mod manifest;
pub mod message;
pub mod outcome;
pub mod units;

pub use call::{CallIds, ParsedCall, TEXT_INPUT_KEY, ToolCall, looks_like_json, text_input};
pub use failure::{CallFailure, GrantKind, Invocation, SharedError, ToolFailure, ToolFailureKind, ToolOutput};
pub use manifest::{
    Capabilities, DirAccess, DirRequest, HOST_API_VERSION, ParamSpec, ParamType, Permission, PluginManifest, Reach, ToolSpec,
    is_valid_name,
};
pub use message::{Message, NativeCall, Role};
pub use outcome::{Failure, FailureKind, LimitHit, Status, ToolOutcome};
