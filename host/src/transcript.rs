//! A conversation, as it happened: [`Transcript`] entries for the system
//! prompt, the user, the model (with the calls it asked for) and each
//! call's result, kept in memory and appended to a JSON-lines file.
//!
//! Each entry is one line, handed as it happens to a thread that appends
//! it (the conversation loop never waits on the disk) and flushed before a
//! turn reports its end ([`Transcript::flush`]), so a crash loses at most
//! the lines of the turn under way. Reading a file back skips a torn
//! last line with a warning (and cuts it off, so that new lines start
//! clean) and never loses the lines before it. Call statuses in an
//! assistant entry are as they were when the reply arrived (pending); on
//! reading, each takes the status of the tool entry that answers it.

use crate::appender::Appender;
use crate::call::{CallIds, ToolCall};
use crate::message::{Message, NativeCall};
use crate::outcome::{Status, ToolOutcome};
use crate::protocol::ProtocolId;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where a requested call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CallStatus {
    /// Parsed, not yet decided.
    Pending,
    /// Waiting for a person.
    AwaitingApproval,
    /// Running.
    Executing,
    /// Ran and returned a result.
    Completed,
    /// Refused by a person or a rule, or its result withheld.
    Denied,
    /// Stopped before it finished.
    Cancelled,
    /// Failed: a tool error, a limit, an unknown tool, bad arguments.
    Error,
}

impl CallStatus {
    /// The status a call ends with, given its outcome.
    pub fn of(status: Status) -> Self {
        match status {
            Status::Success => CallStatus::Completed,
            Status::Denied | Status::ResultRejected => CallStatus::Denied,
            Status::Cancelled => CallStatus::Cancelled,
            _ => CallStatus::Error,
        }
    }
}

/// A call the model asked for, as its reply recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestedCall {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The arguments as parsed.
    pub arguments: Map<String, Value>,
    /// The text it was written as.
    #[serde(default)]
    pub raw: String,
    /// Where it stands.
    pub status: CallStatus,
    /// What went wrong, for a call that did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RequestedCall {
    /// The call as the model asked for it.
    pub fn from_call(call: &ToolCall) -> Self {
        RequestedCall {
            id: call.id.clone(),
            tool: call.tool.clone(),
            arguments: call.args.clone(),
            raw: call.raw.clone(),
            status: CallStatus::Pending,
            error: None,
        }
    }

    /// Back to a call to run.
    pub fn to_call(&self) -> ToolCall {
        ToolCall::with_map(&self.id, &self.tool, self.arguments.clone()).with_raw(self.raw.clone())
    }
}

/// One entry of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Entry {
    /// The system prompt as it was sent when the conversation began.
    System {
        /// Its text.
        content: String,
    },
    /// What the person wrote.
    User {
        /// Its text.
        content: String,
    },
    /// A reply of the model and the calls it asked for.
    Assistant {
        /// The reply's text.
        content: String,
        /// Its reasoning, shown to people, never parsed.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reasoning: String,
        /// The calls it asked for.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        calls: Vec<RequestedCall>,
    },
    /// The result of one call.
    Tool {
        /// The id of the call it answers.
        call_id: String,
        /// The tool.
        tool: String,
        /// How the call ended.
        status: Status,
        /// How long it took, in milliseconds.
        duration_ms: f64,
        /// The fuel it burned.
        #[serde(default)]
        fuel_used: u64,
        /// The arguments as the model wrote them (as run, when a person
        /// edited them).
        #[serde(default)]
        arguments: String,
        /// What the tool returned, or what went wrong.
        output: String,
    },
    /// Something the loop says for the record (a limit reached, an error):
    /// never sent to the model.
    Note {
        /// Its text.
        content: String,
    },
}

impl Entry {
    /// The result entry of `outcome`, answering `call`. It keeps all of
    /// the outcome the model is shown ([`Entry::outcome`] gives it back),
    /// so a resumed conversation sends the model what it was sent.
    pub fn tool(call: &ToolCall, outcome: &ToolOutcome) -> Self {
        Entry::Tool {
            call_id: outcome.id.clone(),
            tool: outcome.tool.clone(),
            status: outcome.status,
            duration_ms: outcome.duration.as_micros() as f64 / 1000.0,
            fuel_used: outcome.fuel_used,
            arguments: call_text(call),
            output: outcome.output.clone(),
        }
    }

    /// The outcome a tool entry records; `None` for other entries.
    pub fn outcome(&self) -> Option<ToolOutcome> {
        let Entry::Tool { call_id, tool, status, duration_ms, fuel_used, output, .. } = self else { return None };
        let mut outcome = ToolOutcome::without_running(call_id, tool, *status, output.clone());
        outcome.duration = Duration::from_secs_f64(duration_ms / 1000.0);
        outcome.fuel_used = *fuel_used;
        Some(outcome)
    }
}

/// A call's arguments as text: as the model wrote them, else as JSON.
pub(crate) fn call_text(call: &ToolCall) -> String {
    if call.raw.is_empty() { Value::Object(call.args.clone()).to_string() } else { call.raw.clone() }
}

/// Why a transcript file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// Reading or writing the file failed.
    #[error("transcript {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line other than the last is not an entry.
    #[error("transcript {}: line {line} is not a transcript entry: {message}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What the parser said.
        message: String,
    },
    /// A new transcript would overwrite an existing one.
    #[error("transcript {} exists; resume it, or choose another file", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
}

/// A conversation's entries, in memory and, when it has one, in its file.
#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    file: Option<(PathBuf, Appender)>,
    formatted: Formatted,
    /// The ids its calls and results have taken, kept as entries come.
    ids: CallIds,
    /// The replies with calls since the person last wrote, counted as
    /// entries come: counting back every round made a round's cost grow
    /// with the turn before it.
    rounds: u32,
}

/// The conversation as messages in one protocol, kept from one round to
/// the next so that a round formats only the entries added since the last:
/// a long chat is not formatted again from its start every round.
#[derive(Debug, Default)]
struct Formatted {
    protocol: Option<ProtocolId>,
    /// The system prompt, then the entries' messages.
    messages: Vec<Message>,
    /// The entries before this one are formatted for good: a run of results
    /// at the end is formatted again, as more results may join it.
    settled: usize,
    /// The messages that stand for the settled entries, system prompt included.
    settled_messages: usize,
}

/// The thread that appends to `file`, at `path`: after a failed write it
/// opens the file again.
fn appender(path: &Path, file: File) -> (PathBuf, Appender) {
    let (mut first, to) = (Some(file), path.to_owned());
    let open = move || match first.take() {
        Some(file) => Ok(file),
        None => OpenOptions::new().append(true).open(&to),
    };
    (path.to_owned(), Appender::new("toolhost-transcript", Box::new(open)))
}

impl Transcript {
    /// A transcript kept in memory only.
    pub fn in_memory() -> Self {
        Transcript::default()
    }

    /// A new transcript written to `path`, which must not exist.
    ///
    /// # Errors
    ///
    /// [`TranscriptError::Exists`] when `path` exists; [`TranscriptError::Io`]
    /// when it cannot be created.
    pub fn create(path: &Path) -> Result<Self, TranscriptError> {
        let io = |source| TranscriptError::Io { path: path.to_owned(), source };
        let file = OpenOptions::new().append(true).create_new(true).open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => TranscriptError::Exists { path: path.to_owned() },
            _ => io(e),
        })?;
        Ok(Transcript { file: Some(appender(path, file)), ..Transcript::default() })
    }

    /// The transcript saved in `path`, to continue, and the warnings met
    /// reading it (a torn last line, skipped and cut off).
    ///
    /// # Errors
    ///
    /// [`TranscriptError::Io`] when the file cannot be read or cut;
    /// [`TranscriptError::Corrupt`] when a line other than the last is not an
    /// entry.
    pub fn resume(path: &Path) -> Result<(Self, Vec<String>), TranscriptError> {
        let io = |source| TranscriptError::Io { path: path.to_owned(), source };
        let mut file = OpenOptions::new().read(true).append(true).open(path).map_err(io)?;
        let mut entries = Vec::new();
        let mut warnings = Vec::new();
        let mut good_bytes = 0u64;
        // Offsets are counted on the bytes as read: a lossily decoded
        // line can be longer than the bytes it came from.
        let lines: Vec<Vec<u8>> = BufReader::new(&file).split(b'\n').collect::<Result<_, _>>().map_err(io)?;
        let count = lines.len();
        for (index, bytes) in lines.iter().enumerate() {
            let whole = index + 1 < count || file_ends_with_newline(&mut file).map_err(io)?;
            let line = String::from_utf8_lossy(bytes);
            if line.trim().is_empty() {
                good_bytes += bytes.len() as u64 + u64::from(whole);
                continue;
            }
            match serde_json::from_str::<Entry>(&line) {
                Ok(entry) if whole => {
                    entries.push(entry);
                    good_bytes += bytes.len() as u64 + 1;
                }
                // The last line, cut short by a crash while it was written.
                Ok(_) | Err(_) if index + 1 == count => {
                    warnings.push(format!(
                        "the last line of {} was cut short (a crash while it was written); it is skipped",
                        path.display()
                    ));
                }
                Err(error) => {
                    return Err(TranscriptError::Corrupt { path: path.to_owned(), line: index + 1, message: error.to_string() });
                }
                Ok(_) => unreachable!("only the last line can lack its newline"),
            }
        }
        file.set_len(good_bytes).map_err(io)?;
        file.seek(std::io::SeekFrom::End(0)).map_err(io)?;
        let mut transcript = Transcript { file: Some(appender(path, file)), ..Transcript::default() };
        for entry in &entries {
            transcript.take_in(entry);
        }
        transcript.entries = entries;
        transcript.settle_statuses();
        Ok((transcript, warnings))
    }

    /// Each requested call takes the status of the result that answers it
    /// (the first result after the reply that asked for it; ids may repeat
    /// across replies).
    fn settle_statuses(&mut self) {
        let mut answers = Vec::new();
        let mut reply = None;
        for (index, entry) in self.entries.iter().enumerate() {
            match entry {
                Entry::Assistant { .. } => reply = Some(index),
                Entry::Tool { call_id, status, output, .. } => {
                    if let Some(reply) = reply {
                        answers.push((reply, call_id.clone(), *status, output.clone()));
                    }
                }
                _ => {}
            }
        }
        for (reply, id, status, output) in answers {
            let Entry::Assistant { calls, .. } = &mut self.entries[reply] else { unreachable!("found above") };
            if let Some(call) = calls.iter_mut().find(|c| c.id == id && c.status == CallStatus::Pending) {
                call.status = CallStatus::of(status);
                call.error = (status != Status::Success).then_some(output);
            }
        }
    }

    /// Append `entry`, handing it to the file's writer. Fails when an
    /// earlier entry could not be written (since the last flush).
    ///
    /// # Errors
    ///
    /// [`TranscriptError::Io`] when an earlier entry could not be written.
    pub fn push(&mut self, entry: Entry) -> Result<(), TranscriptError> {
        if let Some((path, appender)) = &self.file {
            let line = serde_json::to_string(&entry).expect("an entry serializes");
            appender.append(&line).map_err(|source| TranscriptError::Io { path: path.clone(), source })?;
        }
        self.take_in(&entry);
        self.entries.push(entry);
        Ok(())
    }

    /// What `entry` adds to what is kept of the entries: the ids it takes,
    /// and the rounds of this turn.
    fn take_in(&mut self, entry: &Entry) {
        match entry {
            Entry::User { .. } => self.rounds = 0,
            Entry::Assistant { calls, .. } => {
                calls.iter().for_each(|call| self.ids.take(&call.id));
                if !calls.is_empty() {
                    self.rounds = self.rounds.saturating_add(1);
                }
            }
            Entry::Tool { call_id, .. } => self.ids.take(call_id),
            _ => {}
        }
    }

    /// Rounds of calls (replies that asked for any) since the person last
    /// wrote.
    pub fn rounds_this_turn(&self) -> u32 {
        self.rounds
    }

    /// Wait until every entry pushed so far is in the file. Dropping the
    /// transcript also writes them, blocking until it has.
    ///
    /// # Errors
    ///
    /// [`TranscriptError::Io`] when an entry could not be written.
    pub async fn flush(&self) -> Result<(), TranscriptError> {
        match &self.file {
            Some((path, appender)) => appender.flush().await.map_err(|source| TranscriptError::Io { path: path.clone(), source }),
            None => Ok(()),
        }
    }

    /// Set the status of the requested call `id` in memory (the file keeps
    /// the reply as it came; results settle statuses when it is read).
    pub fn set_status(&mut self, id: &str, status: CallStatus, error: Option<String>) {
        let calls = self.entries.iter_mut().rev().find_map(|entry| match entry {
            Entry::Assistant { calls, .. } if calls.iter().any(|c| c.id == id) => Some(calls),
            _ => None,
        });
        if let Some(call) = calls.and_then(|calls| calls.iter_mut().find(|c| c.id == id)) {
            call.status = status;
            call.error = error;
        }
    }

    /// The entries so far.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The file it is written to, if any.
    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|(path, _)| path.as_path())
    }

    /// The calls of the last reply that no result answers yet.
    pub fn unanswered(&self) -> Vec<RequestedCall> {
        let Some(last) = self.entries.iter().rposition(|e| matches!(e, Entry::Assistant { .. })) else { return Vec::new() };
        let Entry::Assistant { calls, .. } = &self.entries[last] else { unreachable!("found above") };
        let answered: Vec<&str> = self.entries[last..]
            .iter()
            .filter_map(|e| match e {
                Entry::Tool { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect();
        calls.iter().filter(|c| !answered.contains(&c.id.as_str())).cloned().collect()
    }

    /// The ids of the calls so far, to give new calls ids none of them
    /// has. An id it hands out stays taken, whether or not a call with it
    /// is pushed, so no two calls of the conversation ever share one.
    pub fn call_ids(&mut self) -> &mut CallIds {
        &mut self.ids
    }

    /// The conversation as messages for the model in `protocol`, after
    /// `system`: system entries and notes are not sent; results are
    /// formatted as the protocol formats them, a run of them at a time.
    /// Only what was added since the last call in the same protocol is
    /// formatted.
    pub fn messages(&mut self, system: &str, protocol: ProtocolId) -> &[Message] {
        let formatted = &mut self.formatted;
        if formatted.protocol != Some(protocol) {
            *formatted =
                Formatted { protocol: Some(protocol), messages: vec![Message::system(system)], settled: 0, settled_messages: 1 };
        }
        formatted.messages.truncate(formatted.settled_messages);
        if formatted.messages[0].content != system {
            formatted.messages[0] = Message::system(system);
        }
        let mut results: Vec<ToolOutcome> = Vec::new();
        let flush = |results: &mut Vec<ToolOutcome>, messages: &mut Vec<Message>| {
            if !results.is_empty() {
                messages.extend(protocol.protocol().format_results(results));
                results.clear();
            }
        };
        for (at, entry) in self.entries.iter().enumerate().skip(formatted.settled) {
            if let Some(outcome) = entry.outcome() {
                results.push(outcome);
                continue;
            }
            flush(&mut results, &mut formatted.messages);
            match entry {
                Entry::User { content } => formatted.messages.push(Message::user(content.clone())),
                Entry::Assistant { content, calls, .. } => {
                    let native = if protocol == ProtocolId::Native {
                        calls
                            .iter()
                            .map(|c| NativeCall { id: c.id.clone(), name: c.tool.clone(), arguments: native_arguments(c) })
                            .collect()
                    } else {
                        Vec::new()
                    };
                    formatted.messages.push(Message::assistant(content.clone(), native));
                }
                Entry::System { .. } | Entry::Note { .. } | Entry::Tool { .. } => {}
            }
            formatted.settled = at + 1;
            formatted.settled_messages = formatted.messages.len();
        }
        flush(&mut results, &mut formatted.messages);
        &formatted.messages
    }
}

/// A native call's arguments as JSON text: as written when it was JSON.
fn native_arguments(call: &RequestedCall) -> String {
    if serde_json::from_str::<Value>(&call.raw).is_ok_and(|v| v.is_object()) {
        call.raw.clone()
    } else {
        Value::Object(call.arguments.clone()).to_string()
    }
}

/// Whether the file's last byte is a newline (so its last line is whole).
fn file_ends_with_newline(file: &mut File) -> std::io::Result<bool> {
    use std::io::Read;
    let length = file.metadata()?.len();
    if length == 0 {
        return Ok(true);
    }
    let position = file.stream_position()?;
    file.seek(std::io::SeekFrom::Start(length - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    file.seek(std::io::SeekFrom::Start(position))?;
    Ok(last[0] == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;

    fn call(id: &str) -> ToolCall {
        ToolCall::new(id, "calculate", json!({"expression": "1+1"}).as_object().unwrap().clone())
            .with_raw(r#"{"expression":"1+1"}"#)
    }

    fn sample(transcript: &mut Transcript) {
        transcript.push(Entry::User { content: "what is 1+1?".into() }).unwrap();
        transcript
            .push(Entry::Assistant {
                content: "let me see".into(),
                reasoning: String::new(),
                calls: vec![RequestedCall::from_call(&call("c1"))],
            })
            .unwrap();
        let outcome = ToolOutcome::without_running("c1", "calculate", Status::Success, "2".into());
        transcript.push(Entry::tool(&call("c1"), &outcome)).unwrap();
        transcript.push(Entry::Assistant { content: "2".into(), reasoning: String::new(), calls: vec![] }).unwrap();
    }

    #[tokio::test]
    async fn entries_are_written_by_the_flush_and_read_back_with_settled_statuses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut transcript = Transcript::create(&path).unwrap();
        sample(&mut transcript);
        transcript.flush().await.unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 4, "one line per entry, flushed");
        assert!(matches!(Transcript::create(&path), Err(TranscriptError::Exists { .. })));
        let (read, warnings) = Transcript::resume(&path).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(read.entries().len(), 4);
        let Entry::Assistant { calls, .. } = &read.entries()[1] else { panic!() };
        assert_eq!(calls[0].status, CallStatus::Completed);
    }

    #[test]
    fn a_torn_last_line_is_skipped_cut_off_and_nothing_before_it_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut transcript = Transcript::create(&path).unwrap();
        sample(&mut transcript);
        drop(transcript);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"role":"user","content":"half a li"#).unwrap();
        let (mut read, warnings) = Transcript::resume(&path).unwrap();
        assert_eq!(read.entries().len(), 4);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        read.push(Entry::User { content: "again".into() }).unwrap();
        drop(read);
        let (again, warnings) = Transcript::resume(&path).unwrap();
        assert!(warnings.is_empty(), "new lines start clean: {warnings:?}");
        assert_eq!(again.entries().len(), 5);
        std::fs::write(&path, "{\"role\":\"user\"\n{\"role\":\"user\",\"content\":\"x\"}\n").unwrap();
        assert!(matches!(Transcript::resume(&path), Err(TranscriptError::Corrupt { line: 1, .. })));
    }

    #[test]
    fn a_torn_line_after_invalid_utf8_is_cut_off_at_its_own_first_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        // Each invalid byte decodes to U+FFFD, three bytes: offsets counted
        // on the decoded text would land inside the torn line.
        let mut bytes = b"{\"role\":\"user\",\"content\":\"caf\xe9 \xff\xfe\"}\n".to_vec();
        let whole = bytes.len();
        bytes.extend_from_slice(br#"{"role":"user","content":"half a li"#);
        std::fs::write(&path, &bytes).unwrap();
        let (mut read, warnings) = Transcript::resume(&path).unwrap();
        assert_eq!((read.entries().len(), warnings.len()), (1, 1), "{warnings:?}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes[..whole], "the torn line is cut off, the line before kept byte for byte");
        read.push(Entry::User { content: "again".into() }).unwrap();
        drop(read);
        let (again, warnings) = Transcript::resume(&path).unwrap();
        assert!(warnings.is_empty(), "new lines start clean: {warnings:?}");
        assert_eq!(again.entries().len(), 2);
    }

    /// The messages of `entries`, formatted from the start.
    fn afresh(entries: &[Entry], system: &str, protocol: ProtocolId) -> Vec<Message> {
        let mut fresh = Transcript::in_memory();
        for entry in entries {
            fresh.push(entry.clone()).unwrap();
        }
        fresh.messages(system, protocol).to_vec()
    }

    #[test]
    fn messages_kept_from_round_to_round_are_those_formatted_afresh() {
        let mut kept = Transcript::in_memory();
        let check = |kept: &mut Transcript, system: &str, protocol: ProtocolId| {
            let expected = afresh(kept.entries(), system, protocol);
            let entries = kept.entries().len();
            assert_eq!(kept.messages(system, protocol), expected, "{protocol:?} after {entries} entries");
        };
        kept.push(Entry::User { content: "add twice".into() }).unwrap();
        check(&mut kept, "sys", ProtocolId::Vcp);
        let calls = [call("c1"), call("c2")];
        let requested = calls.iter().map(RequestedCall::from_call).collect();
        kept.push(Entry::Assistant { content: "two calls".into(), reasoning: String::new(), calls: requested }).unwrap();
        let first = ToolOutcome::without_running("c1", "calculate", Status::Success, "2".into());
        kept.push(Entry::tool(&calls[0], &first)).unwrap();
        check(&mut kept, "sys", ProtocolId::Vcp);
        // A result joins the run formatted last time: the run is formatted again, whole.
        let second = ToolOutcome::without_running("c2", "calculate", Status::Success, "4".into());
        kept.push(Entry::tool(&calls[1], &second)).unwrap();
        check(&mut kept, "sys", ProtocolId::Vcp);
        kept.push(Entry::Note { content: "noted".into() }).unwrap();
        kept.push(Entry::Assistant { content: "2 and 4".into(), reasoning: String::new(), calls: vec![] }).unwrap();
        check(&mut kept, "sys", ProtocolId::Vcp);
        // Another system prompt (the tools changed), then another protocol.
        check(&mut kept, "other sys", ProtocolId::Vcp);
        check(&mut kept, "other sys", ProtocolId::Native);
        kept.push(Entry::User { content: "thanks".into() }).unwrap();
        check(&mut kept, "other sys", ProtocolId::Native);
        check(&mut kept, "sys", ProtocolId::JsonBlock);
    }

    #[test]
    fn call_ids_stay_unique_across_rounds_and_a_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut transcript = Transcript::create(&path).unwrap();
        let mut given = Vec::new();
        for _ in 0..3 {
            let id = transcript.call_ids().assign(None);
            let requested = RequestedCall::from_call(&call(&id));
            transcript
                .push(Entry::Assistant { content: String::new(), reasoning: String::new(), calls: vec![requested] })
                .unwrap();
            given.push(id);
        }
        // An id the model chose that the conversation already has is not given again.
        assert_ne!(transcript.call_ids().assign(Some(&given[0])), given[0]);
        drop(transcript);
        let (mut resumed, _) = Transcript::resume(&path).unwrap();
        let next = resumed.call_ids().assign(None);
        assert!(!given.contains(&next), "{next} was given before the resume: {given:?}");
    }

    #[test]
    fn rounds_this_turn_count_replies_with_calls_since_the_user_also_after_a_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut transcript = Transcript::create(&path).unwrap();
        assert_eq!(transcript.rounds_this_turn(), 0);
        sample(&mut transcript);
        assert_eq!(transcript.rounds_this_turn(), 1, "the answer without calls is no round");
        transcript.push(Entry::User { content: "and 2+2?".into() }).unwrap();
        assert_eq!(transcript.rounds_this_turn(), 0, "the person wrote");
        for id in ["c2", "c3"] {
            let requested = RequestedCall::from_call(&call(id));
            transcript
                .push(Entry::Assistant { content: String::new(), reasoning: String::new(), calls: vec![requested] })
                .unwrap();
            transcript.push(Entry::Note { content: "a note is no round".into() }).unwrap();
        }
        assert_eq!(transcript.rounds_this_turn(), 2);
        drop(transcript);
        let (resumed, _) = Transcript::resume(&path).unwrap();
        assert_eq!(resumed.rounds_this_turn(), 2, "counted again from the file");
    }

    #[test]
    fn messages_follow_the_protocol_and_skip_notes() {
        let mut transcript = Transcript::in_memory();
        sample(&mut transcript);
        transcript.push(Entry::Note { content: "for the record".into() }).unwrap();
        let native = transcript.messages("sys", ProtocolId::Native).to_vec();
        let roles: Vec<_> = native.iter().map(|m| m.role).collect();
        use crate::message::Role::*;
        assert_eq!(roles, [System, User, Assistant, Tool, Assistant]);
        assert_eq!(native[2].tool_calls[0].arguments, r#"{"expression":"1+1"}"#);
        assert_eq!(native[3].tool_call_id.as_deref(), Some("c1"));
        let vcp = transcript.messages("sys", ProtocolId::Vcp).to_vec();
        assert!(vcp[3].content.starts_with("<!-- VCP_TOOL_PAYLOAD -->"));
        assert!(vcp.iter().all(|m| m.tool_calls.is_empty()));
        assert_eq!(transcript.unanswered(), vec![]);
    }
}
