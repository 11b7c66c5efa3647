//! The audit log: one JSON line per call as it ends, appended to
//! `[approval] audit_log`, and before a call runs, one saying it was
//! decided to (`"event":"decided"`, no status yet), written and flushed
//! before it starts, so a crash while it runs leaves it on record.
//!
//! ```json
//! {"time":"2026-11-23T03:57:37.118Z","event":"decided","agent":"coder","plugin":"files","tool":"write_file",
//!  "args_sha256":"3c9a…","decision":"run","by":"person"}
//! {"time":"2026-11-23T03:57:37.120Z","agent":"coder","plugin":"files","tool":"write_file",
//!  "args_sha256":"3c9a…","decision":"run","by":"person","status":"success","duration_ms":2,"fuel":53245}
//! ```
//!
//! The arguments are recorded by the SHA-256 of their canonical JSON (keys
//! sorted at every level, no spaces), so a log can show that two calls had
//! the same arguments without holding what may be private. Records are
//! written by a thread of the log's own (the turn never waits on the
//! disk) and flushed before a turn's result is returned
//! ([`Approvals::flush_audit`](super::Approvals::flush_audit)). A failed
//! write is logged through `tracing` and never fails the call.

use super::DecidedBy;
use super::assessment::Assessment;
use crate::appender::Appender;
use crate::outcome::{Status, ToolOutcome};
use serde::Serialize;
use serde_json::{Map, Value};
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// One call, as the audit log records it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the call ended.
    pub time: SystemTime,
    /// The agent it came from.
    pub agent: String,
    /// The plugin that offers the tool; `None` when no tool has the name.
    pub plugin: Option<String>,
    /// The tool, as called.
    pub tool: String,
    /// The SHA-256 of the arguments' canonical JSON, hex.
    pub args_sha256: String,
    /// How approval ended: run or deny, and who or which rule decided.
    /// `None` when the call never reached approval (an unknown tool,
    /// invalid arguments).
    pub approval: Option<Assessment>,
    /// How the call ended; `None` on the line written as it was decided
    /// to run, before it started.
    pub status: Option<Status>,
    /// Its wall-clock time.
    pub duration: Duration,
    /// The fuel it burned.
    pub fuel: u64,
}

impl AuditRecord {
    /// The record of `outcome`, a call by `agent` of a tool of `plugin`
    /// with `args`, approved (or not) as `approval` says, ending now.
    pub fn new(
        agent: &str,
        plugin: Option<&str>,
        args: &Map<String, Value>,
        approval: Option<&Assessment>,
        outcome: &ToolOutcome,
    ) -> Self {
        AuditRecord {
            time: SystemTime::now(),
            agent: agent.to_owned(),
            plugin: plugin.map(str::to_owned),
            // A tool nobody offers may be named at any length: a record a
            // refused call of megabytes had written whole.
            tool: toolhost_protocol::suggest::shown_name(&outcome.tool).into_owned(),
            args_sha256: args_sha256(args),
            approval: approval.cloned(),
            status: Some(outcome.status),
            duration: outcome.duration,
            fuel: outcome.fuel_used,
        }
    }

    /// The record of a call of `tool` of `plugin` by `agent` with `args`,
    /// decided as `approval` says, about to run: written before it starts.
    pub fn decided(agent: &str, plugin: &str, tool: &str, args: &Map<String, Value>, approval: Option<&Assessment>) -> Self {
        AuditRecord {
            time: SystemTime::now(),
            agent: agent.to_owned(),
            plugin: Some(plugin.to_owned()),
            tool: tool.to_owned(),
            args_sha256: args_sha256(args),
            approval: approval.cloned(),
            status: None,
            duration: Duration::ZERO,
            fuel: 0,
        }
    }

    /// The record as one JSON line, without the line break.
    pub fn to_json_line(&self) -> String {
        let (decision, by, reason) = match &self.approval {
            None => (None, None, None),
            Some(Assessment::Run { by }) => (Some("run"), Some(by), None),
            Some(Assessment::Ask(_)) => (Some("ask"), None, None),
            Some(Assessment::Deny { by, reason }) => (Some("deny"), Some(by), Some(reason.as_str())),
        };
        let line = Line {
            time: humantime::format_rfc3339_millis(self.time).to_string(),
            event: self.status.is_none().then_some("decided"),
            agent: &self.agent,
            plugin: self.plugin.as_deref(),
            tool: &self.tool,
            args_sha256: &self.args_sha256,
            decision,
            by: by.map(DecidedBy::to_string),
            reason,
            status: self.status,
            duration_ms: self.status.map(|_| u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX)),
            fuel: self.status.map(|_| self.fuel),
        };
        serde_json::to_string(&line).expect("an audit line serializes")
    }
}

#[derive(Serialize)]
struct Line<'a> {
    time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    event: Option<&'static str>,
    agent: &'a str,
    plugin: Option<&'a str>,
    tool: &'a str,
    args_sha256: &'a str,
    decision: Option<&'static str>,
    by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fuel: Option<u64>,
}

/// The SHA-256 of `args` as canonical JSON, hex.
pub(crate) fn args_sha256(args: &Map<String, Value>) -> String {
    let mut text = String::new();
    write_canonical(&mut text, &Value::Object(args.clone()));
    crate::digest::sha256_hex(text.as_bytes())
}

/// Compact JSON with every object's keys sorted: the same arguments give
/// the same text whatever order the model wrote them in.
fn write_canonical(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                write_canonical(out, value);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The audit log file, appended by its own thread; opened on the first
/// record.
#[derive(Debug)]
pub(super) struct AuditLog {
    path: PathBuf,
    appender: Appender,
}

impl AuditLog {
    /// The file it appends to.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn new(path: PathBuf) -> Self {
        let to = path.clone();
        // Whole lines in one write at a time, in append mode: lines from
        // several processes do not interleave.
        let open = Box::new(move || OpenOptions::new().create(true).append(true).mode(0o600).open(&to));
        AuditLog { appender: Appender::new("toolhost-audit", open), path }
    }

    /// Hand `record` over to be written; a failure is logged (at the latest
    /// by the next flush) and the file reopened next time.
    pub(super) fn append(&self, record: &AuditRecord) {
        let written = self.appender.append(&record.to_json_line());
        self.report(written);
    }

    /// Wait until every record handed over is written.
    pub(super) async fn flush(&self) {
        let written = self.appender.flush().await;
        self.report(written);
    }

    fn report(&self, written: std::io::Result<()>) {
        if let Err(e) = written {
            tracing::warn!("cannot write to the audit log {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome(status: Status) -> ToolOutcome {
        let mut outcome = ToolOutcome::without_running("c1", "write_file", status, String::new());
        outcome.duration = Duration::from_millis(12);
        outcome.fuel_used = 345;
        outcome
    }

    #[test]
    fn the_same_arguments_in_any_order_hash_alike() {
        let a = json!({ "b": [1, { "y": 2, "x": "é\n" }], "a": null });
        let b = json!({ "a": null, "b": [1, { "x": "é\n", "y": 2 }] });
        assert_eq!(args_sha256(a.as_object().unwrap()), args_sha256(b.as_object().unwrap()));
        let mut text = String::new();
        write_canonical(&mut text, &a);
        assert_eq!(text, r#"{"a":null,"b":[1,{"x":"é\n","y":2}]}"#);
        let c = json!({ "a": null, "b": [{ "x": "é\n", "y": 2 }, 1] });
        assert_ne!(args_sha256(a.as_object().unwrap()), args_sha256(c.as_object().unwrap()));
    }

    #[test]
    fn a_tool_named_at_any_length_is_recorded_cut() {
        let long = "x".repeat(1 << 20);
        let refused = ToolOutcome::without_running("c1", &long, Status::NotFound, String::new());
        let line = AuditRecord::new("mcp", None, &Map::new(), None, &refused).to_json_line();
        assert!(line.len() < 1_000 && line.contains("(1048576 bytes)"), "{line:.300}");
    }

    #[test]
    fn a_record_is_one_json_line_with_every_field() {
        let args = json!({ "path": "secrets/key" });
        let denied = Assessment::Deny { by: DecidedBy::Rule("approval.rules[0]: deny write_file".into()), reason: "no".into() };
        let record = AuditRecord::new("coder", Some("files"), args.as_object().unwrap(), Some(&denied), &outcome(Status::Denied));
        let line = record.to_json_line();
        assert!(!line.contains('\n'));
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["agent"], "coder");
        assert_eq!(value["plugin"], "files");
        assert_eq!(value["tool"], "write_file");
        assert_eq!(value["args_sha256"], args_sha256(args.as_object().unwrap()));
        assert_eq!(value["decision"], "deny");
        assert_eq!(value["by"], "rule approval.rules[0]: deny write_file");
        assert_eq!(value["reason"], "no");
        assert_eq!(value["status"], "denied");
        assert_eq!(value["duration_ms"], 12);
        assert_eq!(value["fuel"], 345);
        let time = value["time"].as_str().unwrap();
        assert!(humantime::parse_rfc3339(time).is_ok() && time.ends_with('Z'), "{time}");

        let unknown = AuditRecord::new("coder", None, &Map::new(), None, &outcome(Status::NotFound));
        let value: Value = serde_json::from_str(&unknown.to_json_line()).unwrap();
        assert_eq!(
            (value["plugin"].clone(), value["decision"].clone(), value["by"].clone()),
            (Value::Null, Value::Null, Value::Null)
        );
        assert!(value.get("reason").is_none());
    }

    #[tokio::test]
    async fn records_are_appended_and_a_failure_is_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        let ran = Assessment::Run { by: DecidedBy::Level };
        for _ in 0..3 {
            log.append(&AuditRecord::new("a", Some("calc"), &Map::new(), Some(&ran), &outcome(Status::Success)));
        }
        log.flush().await;
        let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.lines().all(|l| serde_json::from_str::<Value>(l).unwrap()["by"] == "level"));

        let nowhere = AuditLog::new(dir.path().join("missing/audit.jsonl"));
        nowhere.append(&AuditRecord::new("a", None, &Map::new(), None, &outcome(Status::NotFound)));
        nowhere.flush().await;
    }

    #[test]
    fn appending_never_waits_for_the_file() {
        use std::io::BufRead;
        let dir = tempfile::tempdir().unwrap();
        // Opening a FIFO for writing blocks until someone reads it: a
        // stand-in for a slow disk.
        let fifo = dir.path().join("audit.fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let log = AuditLog::new(fifo.clone());
        let record = AuditRecord::new("a", Some("calc"), &Map::new(), None, &outcome(Status::Success));
        let (returned, appended) = std::sync::mpsc::channel();
        std::thread::spawn({
            let record = record.clone();
            move || {
                log.append(&record);
                let _ = returned.send(log);
            }
        });
        let log = appended.recv_timeout(Duration::from_secs(5)).expect("append returns while nobody reads the file");
        let mut line = String::new();
        std::io::BufReader::new(std::fs::File::open(&fifo).unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim_end(), record.to_json_line(), "the record is written once the file can be");
        drop(log);
    }
}
