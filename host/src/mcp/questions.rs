//! The questions an MCP client's user is asked, as elicitation forms, and
//! how their answers read: the same in both eras, whether the form goes
//! out as a request of the server's (the handshake era) or inside an
//! `input_required` result (2026-07-28).

use crate::approval::{Answer, CallDecision, DecidedBy, PendingCall, ResultAnswer, ResultDecision};
use crate::manifest::ToolSpec;
use crate::outcome::ToolOutcome;
use crate::printable::{printable, printable_lines, to_json_pretty_excerpt};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::{Value, json};

/// How much of a result a person is shown when asked to pass it on.
const RESULT_EXCERPT_CHARS: usize = 4000;
/// The most of a call's arguments, laid out, that its question shows: a
/// peer's arguments can be laid out at a hundred times their size.
const ARGUMENTS_EXCERPT_BYTES: usize = 4000;

/// The form asking to run `call`: approve (or not, with a reason), and
/// "allow always" only where it is offered.
pub(super) fn call_form(call: &PendingCall) -> ElicitRequestParams {
    let message = format!(
        "Run `{}` (plugin {}, {})? It needs approval because {}.\n\nArguments:\n{}",
        printable(&call.tool),
        printable(&call.plugin),
        call.permission.as_str(),
        call.reason,
        to_json_pretty_excerpt(&call.args, ARGUMENTS_EXCERPT_BYTES).unwrap_or_default()
    );
    let mut properties = json!({
        "approve": {"type": "boolean", "title": "Run this call", "default": true},
        "reason": {"type": "string", "title": "Why not (if you deny it)"},
    });
    if call.offers_always() {
        properties["always"] = json!({"type": "boolean", "title": "Allow this tool from now on", "default": false});
    }
    form(message, properties, "approve")
}

/// The form asking to pass on what `tool` returned.
pub(super) fn result_form(outcome: &ToolOutcome, tool: &ToolSpec) -> ElicitRequestParams {
    let shown: String = outcome.output.chars().take(RESULT_EXCERPT_CHARS).collect();
    let cut = if shown.len() < outcome.output.len() { "\n[…]" } else { "" };
    let message = format!(
        "`{}` (plugin {}) asks that its result be approved before it goes on. Result ({}):\n{}{cut}",
        printable(&tool.name),
        printable(&tool.plugin),
        outcome.status.as_str(),
        printable_lines(&shown)
    );
    let properties = json!({
        "pass": {"type": "boolean", "title": "Pass this result on", "default": true},
        "reason": {"type": "string", "title": "Why not (if you reject it)"},
    });
    form(message, properties, "pass")
}

fn form(message: String, properties: Value, required: &str) -> ElicitRequestParams {
    let schema = json!({"type": "object", "properties": properties, "required": [required]});
    let Value::Object(schema) = schema else { unreachable!("an object literal") };
    let requested_schema = ElicitationSchema::from_json_schema(schema).expect("the approval forms are valid schemas");
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema }
}

/// What the model is told of a question the user declined.
const DECLINED: &str = "the user declined it in the MCP client";
/// And of one the user closed without answering.
const DISMISSED: &str = "the user dismissed the question in the MCP client without answering";

/// What became of a question.
pub(super) enum Reply {
    /// The user filled in the form.
    Accepted(Value),
    /// The user declined it.
    Declined,
    /// The user closed it without answering: the model is told so, not
    /// that the user said no.
    Dismissed,
    /// Nobody answered, or the answer could not be read: why.
    Unanswered(String),
}

impl Reply {
    /// The reply an elicitation result makes.
    pub(super) fn of(result: ElicitResult) -> Self {
        match result {
            ElicitResult { action: ElicitationAction::Accept, content, .. } => Reply::Accepted(content.unwrap_or(Value::Null)),
            ElicitResult { action: ElicitationAction::Cancel, .. } => Reply::Dismissed,
            // Declined, or an action of a later revision: not a yes.
            _ => Reply::Declined,
        }
    }

    /// The reply in an `input_required` retry's answer `response`, if any.
    pub(super) fn in_response(response: Option<&Value>, key: &str) -> Self {
        let Some(response) = response else {
            return Reply::Unanswered(format!("the retry carried no answer to the question `{key}`"));
        };
        match serde_json::from_value::<ElicitResult>(response.clone()) {
            Ok(result) => Reply::of(result),
            Err(e) => Reply::Unanswered(format!("the answer to `{key}` is not an elicitation result: {e}")),
        }
    }

    /// The decision on a call this reply makes. "Always" is taken as
    /// given: where the question did not offer it, settling the answer
    /// refuses it.
    pub(super) fn call_answer(self) -> Answer {
        let decision = match self {
            Reply::Accepted(content) if content["approve"] == true => {
                if content["always"] == true {
                    CallDecision::AllowAlways
                } else {
                    CallDecision::AllowOnce
                }
            }
            Reply::Accepted(content) => CallDecision::Deny {
                reason: Some(match reason(&content) {
                    Some(reason) => format!("the user denied it: {reason}"),
                    None => "the user denied it".to_owned(),
                }),
            },
            Reply::Declined => CallDecision::Deny { reason: Some(DECLINED.to_owned()) },
            Reply::Dismissed => CallDecision::Deny { reason: Some(DISMISSED.to_owned()) },
            Reply::Unanswered(why) => {
                return Answer { decision: CallDecision::Deny { reason: Some(why) }, by: DecidedBy::NoAnswer };
            }
        };
        Answer { decision, by: DecidedBy::Person }
    }

    /// The decision on a held result this reply makes.
    pub(super) fn result_answer(self) -> ResultAnswer {
        let decision = match self {
            Reply::Accepted(content) if content["pass"] == true => ResultDecision::Pass,
            Reply::Accepted(content) => ResultDecision::Reject { reason: reason(&content).map(str::to_owned) },
            Reply::Declined => ResultDecision::Reject { reason: Some(DECLINED.to_owned()) },
            Reply::Dismissed => ResultDecision::Reject { reason: Some(DISMISSED.to_owned()) },
            Reply::Unanswered(why) => {
                return ResultAnswer { decision: ResultDecision::Reject { reason: Some(why) }, by: DecidedBy::NoAnswer };
            }
        };
        ResultAnswer::by_person(decision)
    }
}

/// The reason a user gave, if any words.
fn reason(content: &Value) -> Option<&str> {
    content["reason"].as_str().map(str::trim).filter(|reason| !reason.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(action: ElicitationAction) -> Reply {
        Reply::of(ElicitResult::new(action))
    }

    #[test]
    fn a_question_shows_a_bounded_excerpt_of_the_arguments() {
        // 40 KB of nesting a peer sent, some hundred times that laid out.
        let nested = format!("{}{}{}", "[".repeat(100), "0,".repeat(20_000) + "0", "]".repeat(100));
        let mut args = serde_json::Map::new();
        args.insert("extra".into(), serde_json::from_str(&nested).unwrap());
        let call = PendingCall {
            id: "1".into(),
            agent: "mcp".into(),
            plugin: "files".into(),
            tool: "write_file".into(),
            permission: crate::manifest::Permission::Sensitive,
            args,
            reason: crate::approval::AskReason::Sensitive,
        };
        let ElicitRequestParams::FormElicitationParams { message, .. } = call_form(&call) else { panic!("a form") };
        assert!(message.len() < ARGUMENTS_EXCERPT_BYTES + 1000, "{} bytes", message.len());
        assert!(message.contains("cut: only the first"), "the person is told");
    }

    #[test]
    fn a_dismissed_question_is_not_reported_as_declined() {
        let reason = |reply: Reply| match reply.call_answer().decision {
            CallDecision::Deny { reason } => reason.unwrap_or_default(),
            decision => panic!("{decision:?}"),
        };
        assert_eq!(reason(reply(ElicitationAction::Decline)), DECLINED);
        assert_eq!(reason(reply(ElicitationAction::Cancel)), DISMISSED);
        assert!(matches!(
            reply(ElicitationAction::Cancel).result_answer().decision,
            ResultDecision::Reject { reason: Some(reason) } if reason == DISMISSED
        ));
    }
}
