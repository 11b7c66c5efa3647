//! Handing execution over to a VCP server: when a chat's model endpoint
//! is the VCP server this host joined as a node, the server runs the calls
//! (this node's among them, through `execute_tool`) and the chat only
//! shows what it did. [`Handover`] says which tools the model may be told
//! about (this node's, only while it is connected to that server);
//! [`server_rounds`] reads the server's reply to a chat client: every
//! round's text with its raw `<<<[TOOL_REQUEST]>>>` blocks, each round
//! followed by its `[本轮工具调用摘要:]` summary (`VCP-PROTOCOL.md` §5).

use super::VcpNode;
use super::config::VcpConfig;
use super::status::NodeStatus;
use crate::call::ToolCall;
use crate::outcome::{Status, ToolOutcome};
use std::path::Path;
use std::time::Duration;
use tokio::sync::watch;

/// Opens a round's summary in a VCP server's reply.
pub(crate) const SUMMARY_START: &str = "[本轮工具调用摘要:]";
/// Closes it.
pub(crate) const SUMMARY_END: &str = "[本轮工具调用摘要结束]";
/// How often the status file of a node another process runs is read
/// ([`Handover::to_status_file`]): a change of that node reaches the
/// prompt within this time.
pub const STATUS_FILE_POLL: Duration = Duration::from_millis(250);

/// The VCP server a chat hands its calls to, and the node through which
/// this host's tools reach it.
///
/// The node's status arrives through a channel, so rendering a prompt
/// reads no file: from the node itself when it runs in this process, from
/// a task that reads its status file when another process runs it.
#[derive(Clone)]
pub struct Handover {
    server: String,
    status: watch::Receiver<NodeStatus>,
}

impl Handover {
    /// Calls go to `server`; the tools are those `status` says the node
    /// offers there ([`NodeStatus::tools_on`]).
    pub fn new(server: impl Into<String>, status: watch::Receiver<NodeStatus>) -> Self {
        Handover { server: server.into(), status }
    }

    /// Calls go to the server `node` joins; its tools are offered while it
    /// is connected.
    pub fn to_node(node: &VcpNode) -> Self {
        Handover::new(node.config().server.clone(), node.watch())
    }

    /// Calls go to `config.server`; the tools are those of the node that
    /// another process runs with `config` (`toolhost node`), offered while
    /// that process lives and is connected. Its status file is read now and
    /// then every [`STATUS_FILE_POLL`] on a blocking thread, by a task
    /// that ends with the last clone of this handover.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn to_status_file(config: &VcpConfig) -> Self {
        let path = config.status_file.clone();
        let read_status = {
            let nobody = NodeStatus::new(&config.node_name, &config.server);
            move |path: &Path| read_status(path).unwrap_or_else(|| nobody.clone())
        };
        let status = watch::Sender::new(read_status(&path));
        let handover = Handover::new(config.server.clone(), status.subscribe());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(STATUS_FILE_POLL);
            loop {
                tokio::select! {
                    _ = every.tick() => {}
                    () = status.closed() => return,
                }
                let (path, read_status) = (path.clone(), read_status.clone());
                let Ok(now) = tokio::task::spawn_blocking(move || read_status(&path)).await else { return };
                status.send_if_modified(|last| {
                    let changed = *last != now;
                    *last = now;
                    changed
                });
            }
        });
        handover
    }

    /// The server, as `[vcp] server` writes it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tools the model may be told about now: this node's registered
    /// tools while it is connected to the server, else none (nobody could
    /// run them).
    pub fn tools(&self) -> Vec<String> {
        self.status.borrow().tools_on(&self.server).map(<[String]>::to_vec).unwrap_or_default()
    }
}

/// The status in `path`, if a node that still lives wrote it.
fn read_status(path: &Path) -> Option<NodeStatus> {
    NodeStatus::read(path).ok().filter(|status| status.process_alive() != Some(false))
}

/// One round of calls as a VCP server's reply shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerRound<'a> {
    /// The round's text: what the model wrote, raw blocks included.
    pub text: &'a str,
    /// The round's summary, one entry per call the server ran, in order;
    /// `None` when no summary follows (the final answer, or a round the
    /// server did not run).
    pub reported: Option<Vec<Reported>>,
}

/// One line of a round's summary: `<tool> 调用成功。`
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reported {
    /// The tool.
    pub tool: String,
    /// The status the words stand for.
    pub status: Status,
    /// The server's words, e.g. `调用成功`.
    pub words: String,
}

/// The rounds of `reply`: each summary closes the round before it; text
/// after the last summary is a round without one.
pub(crate) fn server_rounds(reply: &str) -> Vec<ServerRound<'_>> {
    let mut rounds = Vec::new();
    let mut rest = reply;
    while let Some(start) = rest.find(SUMMARY_START) {
        let body_at = start + SUMMARY_START.len();
        let (body, after) = match rest[body_at..].find(SUMMARY_END) {
            Some(end) => (&rest[body_at..body_at + end], &rest[body_at + end + SUMMARY_END.len()..]),
            None => (&rest[body_at..], ""),
        };
        rounds.push(ServerRound { text: &rest[..start], reported: Some(body.lines().filter_map(reported).collect()) });
        rest = after;
    }
    if !rest.trim().is_empty() {
        rounds.push(ServerRound { text: rest, reported: None });
    }
    rounds
}

/// `calculate 调用成功。` read; `None` for a blank or unreadable line.
fn reported(line: &str) -> Option<Reported> {
    let line = line.trim().trim_end_matches(['。', '.']);
    let (tool, words) = line.rsplit_once(char::is_whitespace)?;
    let status = match words {
        "调用成功" => Status::Success,
        "调用失败" => Status::Error,
        "调用超时" => Status::TimedOut,
        "调用拒绝" => Status::Denied,
        _ => Status::Error,
    };
    Some(Reported { tool: tool.trim().to_owned(), status, words: words.to_owned() })
}

/// The outcome of each of `calls` (the blocks of one round) as the server
/// reported it: each call takes the first unclaimed summary entry of its
/// tool. A call without one was not run by the server, as far as it said;
/// a summary entry without a block comes last, with its own id.
pub(crate) fn reported_outcomes(
    calls: &[ToolCall],
    reported: Option<&[Reported]>,
    next_id: &mut dyn FnMut() -> String,
) -> Vec<ToolOutcome> {
    let reported = reported.unwrap_or_default();
    let mut claimed = vec![false; reported.len()];
    let by_server = |entry: &Reported| format!("run by the VCP server: {}", entry.words);
    let mut outcomes: Vec<ToolOutcome> = calls
        .iter()
        .map(|call| {
            let entry = reported.iter().enumerate().position(|(i, entry)| !claimed[i] && entry.tool == call.tool);
            match entry {
                Some(i) => {
                    claimed[i] = true;
                    ToolOutcome::without_running(&call.id, &call.tool, reported[i].status, by_server(&reported[i]))
                }
                None => ToolOutcome::without_running(
                    &call.id,
                    &call.tool,
                    Status::Cancelled,
                    "the VCP server did not report running it".into(),
                ),
            }
        })
        .collect();
    for (entry, _) in reported.iter().zip(&claimed).filter(|(_, claimed)| !**claimed) {
        outcomes.push(ToolOutcome::without_running(&next_id(), &entry.tool, entry.status, by_server(entry)));
    }
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPLY: &str = "Let me work.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calculate「末」\n<<<[END_TOOL_REQUEST]>>>\n\
        [本轮工具调用摘要:]\ncalculate 调用成功。\nFileOperator 调用拒绝。\n[本轮工具调用摘要结束]\nNext.\n\
        [本轮工具调用摘要:]\nslow_tool 调用超时。\n[本轮工具调用摘要结束]\nThe answer is 2.";

    #[test]
    fn a_reply_splits_into_rounds_at_each_summary() {
        let rounds = server_rounds(REPLY);
        assert_eq!(rounds.len(), 3);
        assert!(rounds[0].text.starts_with("Let me work.") && rounds[0].text.contains("<<<[END_TOOL_REQUEST]>>>"));
        let first = rounds[0].reported.as_ref().unwrap();
        assert_eq!(
            first.iter().map(|r| (r.tool.as_str(), r.status)).collect::<Vec<_>>(),
            [("calculate", Status::Success), ("FileOperator", Status::Denied)]
        );
        assert_eq!(rounds[1].reported.as_ref().unwrap()[0].status, Status::TimedOut);
        assert_eq!((rounds[2].text, &rounds[2].reported), ("\nThe answer is 2.", &None));
        assert!(server_rounds("just an answer")[0].reported.is_none());
        assert_eq!(server_rounds("").len(), 0);
    }

    #[test]
    fn each_call_takes_its_tools_first_summary_entry() {
        let calls = [
            ToolCall::new("call-1", "calculate", ()),
            ToolCall::new("call-2", "calculate", ()),
            ToolCall::new("call-3", "unreported", ()),
        ];
        let reported = [
            Reported { tool: "calculate".into(), status: Status::Success, words: "调用成功".into() },
            Reported { tool: "FileOperator".into(), status: Status::Denied, words: "调用拒绝".into() },
            Reported { tool: "calculate".into(), status: Status::Error, words: "调用失败".into() },
        ];
        let mut n = 3;
        let outcomes = reported_outcomes(&calls, Some(&reported), &mut || {
            n += 1;
            format!("call-{n}")
        });
        let seen: Vec<(&str, &str, Status)> = outcomes.iter().map(|o| (o.id.as_str(), o.tool.as_str(), o.status)).collect();
        assert_eq!(
            seen,
            [
                ("call-1", "calculate", Status::Success),
                ("call-2", "calculate", Status::Error),
                ("call-3", "unreported", Status::Cancelled),
                ("call-4", "FileOperator", Status::Denied),
            ]
        );
        assert_eq!(outcomes[1].output, "run by the VCP server: 调用失败");
    }
}
