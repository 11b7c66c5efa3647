//! Helpers the toolhost crates and the `toolhost` command share: the
//! user's directories ([`home_paths`]), SHA-256 in hex ([`digest`]), an
//! error with its causes on one line ([`error_chain`]), plugin and model
//! text made safe to show ([`printable`]), reading a file that must be a
//! regular one ([`regular_file`]), refusing a file others may write
//! ([`trust`]), the policy file's error ([`config_error`]) and a peer's
//! JSON text read as serde_json reads it ([`json_text`]).
//!
//! Internal to toolhost and not a stable API: an embedder takes the
//! `toolhost` crate, which re-exports what it needs of these.

pub mod config_error;
pub mod digest;
pub mod error_chain;
pub mod home_paths;
pub mod json_text;
pub mod printable;
pub mod regular_file;
pub mod trust;
