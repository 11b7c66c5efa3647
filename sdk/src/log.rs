//! Structured logging into the host's log.

use crate::__bindings::toolhost::plugin::host;

/// The severity of a log record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected that the plugin recovered from.
    Warn,
    /// A failure.
    Error,
}

/// Write a record into the host's log, tagged with this plugin's name. The
/// host bounds how much a single call may log.
pub fn log(level: LogLevel, message: &str) {
    let level = match level {
        LogLevel::Trace => host::LogLevel::Trace,
        LogLevel::Debug => host::LogLevel::Debug,
        LogLevel::Info => host::LogLevel::Info,
        LogLevel::Warn => host::LogLevel::Warn,
        LogLevel::Error => host::LogLevel::Error,
    };
    host::log(level, message);
}
