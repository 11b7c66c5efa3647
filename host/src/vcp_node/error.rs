//! [`NodeError`]: why the node could not start, connect or stay connected.
//! Each names the server (never with its key), the environment variable
//! the key came from, or the limit that was reached.

use std::path::PathBuf;
use std::time::Duration;

/// Why the node could not start, connect, or stay connected. Connection
/// errors are retried with backoff; the last one is in the status.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// The key's environment variable is not set or empty.
    #[error("no VCP key: the environment variable {env} is not set (set it, or name another with [vcp] key_env or --key-env)")]
    KeyMissing {
        /// The variable.
        env: String,
    },
    /// The key cannot be sent as the server compares it.
    #[error("the VCP key in {env} cannot be used: {why}")]
    KeyInvalid {
        /// The variable.
        env: String,
        /// What is wrong with it (the key itself is not shown).
        why: &'static str,
    },
    /// No connection could be made (refused, unreachable, TLS failed).
    #[error("cannot connect to the VCP server {server}: {message}")]
    Connect {
        /// The server, without the key.
        server: String,
        /// What failed.
        message: String,
    },
    /// The server closed the connection before the WebSocket upgrade
    /// completed, as a VCP server does with a wrong key.
    #[error(
        "the VCP server {server} closed the connection before the WebSocket upgrade completed: the key in {env} is \
         probably wrong (a VCP server drops a wrong key without an answer)"
    )]
    Dropped {
        /// The server, without the key.
        server: String,
        /// The variable the key came from.
        env: String,
    },
    /// The server answered the upgrade with an HTTP error.
    #[error("the VCP server {server} refused the WebSocket upgrade with HTTP {status}")]
    Http {
        /// The server, without the key.
        server: String,
        /// The HTTP status.
        status: u16,
    },
    /// The server took longer than a fixed limit.
    #[error("the VCP server {server} did not {what} within {} ({limit_name})", humantime::format_duration(*limit))]
    Timeout {
        /// The server, without the key.
        server: String,
        /// What it did not do, e.g. `send connection_ack`.
        what: &'static str,
        /// The limit's name, e.g. `ACK_TIMEOUT`.
        limit_name: &'static str,
        /// Its value.
        limit: Duration,
    },
    /// The connection ended.
    #[error("the connection to the VCP server {server} was lost: {message}")]
    Lost {
        /// The server, without the key.
        server: String,
        /// How.
        message: String,
    },
    /// Nothing came from the server for too long: the connection is taken
    /// for half-open.
    #[error(
        "the VCP server {server} sent nothing, not even a pong, for {} ({intervals} ping intervals of {}): taken for a \
         half-open connection",
        humantime::format_duration(*silent),
        humantime::format_duration(*interval)
    )]
    Silent {
        /// The server, without the key.
        server: String,
        /// How long it was silent.
        silent: Duration,
        /// The ping interval.
        interval: Duration,
        /// How many intervals of silence end a connection.
        intervals: u32,
    },
    /// The status file could not be written or read.
    #[error("the node status file {}: {message}", path.display())]
    StatusFile {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}
