//! What a VCP server says it ran: its reply to a chat client shows every
//! round's text with its raw `<<<[TOOL_REQUEST]>>>` blocks, each round
//! followed by its `[本轮工具调用摘要:]` summary (`VCP-PROTOCOL.md` §5).
//! [`server_rounds`] reads the rounds, [`reported_outcomes`] the outcome
//! of each call as the summary gives it.

use crate::call::ToolCall;
use crate::outcome::{Status, ToolOutcome};

/// Opens a round's summary in a VCP server's reply.
pub const SUMMARY_START: &str = "[本轮工具调用摘要:]";
/// Closes it.
pub const SUMMARY_END: &str = "[本轮工具调用摘要结束]";

/// One round of calls as a VCP server's reply shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRound<'a> {
    /// The round's text: what the model wrote, raw blocks included.
    pub text: &'a str,
    /// The round's summary, one entry per call the server ran, in order;
    /// `None` when no summary follows (the final answer, or a round the
    /// server did not run).
    pub reported: Option<Vec<Reported>>,
}

/// One line of a round's summary: `<tool> 调用成功。`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// The tool.
    pub tool: String,
    /// The status the words stand for.
    pub status: Status,
    /// The server's words, e.g. `调用成功`.
    pub words: String,
}

/// The rounds of `reply`: each summary closes the round before it; text
/// after the last summary is a round without one.
pub fn server_rounds(reply: &str) -> Vec<ServerRound<'_>> {
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
    if !rest.trim_start().is_empty() {
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
pub fn reported_outcomes(
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
