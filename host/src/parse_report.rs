//! What a reply holds, for a person to read: the calls found (arguments
//! checked and coerced against the declared tools where a declaration
//! exists; calls to undeclared tools kept and flagged), the prose left, and
//! every warning with where in the reply it points. `toolhost parse` and
//! the console's Parse panel both show this.

use crate::arguments;
use crate::call::{TEXT_INPUT_KEY, ToolCall};
use crate::manifest::ToolSpec;
use crate::protocol::{Declared, ProtocolId, Warning};
use crate::suggest::unknown_tool;
use serde::Serialize;
use serde_json::{Map, Value};

/// The calls, prose and warnings of one reply.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ParseReport {
    /// The calls, in the order the reply makes them.
    pub calls: Vec<FoundCall>,
    /// The reply without its calls.
    pub content: String,
    /// What the parser repaired or dropped, then, in call order, calls
    /// whose arguments do not check and calls to undeclared tools, each
    /// with its byte offset.
    pub warnings: Vec<Warning>,
}

/// One call found in a reply.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FoundCall {
    /// The tool's name as written.
    pub name: String,
    /// The arguments: coerced to the declared types when the tool is
    /// declared with parameters, else as written.
    pub arguments: Map<String, Value>,
    /// The input the model gave as one text (`Action Input: Paris`) where
    /// no declared parameters say which one it is for; a declared tool's
    /// checked arguments hold it instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_input: Option<String>,
    /// No tool of that name is declared: the pipeline answers it with the
    /// closest names and runs nothing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub undeclared: bool,
    /// Where the call stands in the reply, in bytes: `[start, end)`.
    pub span: [usize; 2],
}

impl ParseReport {
    /// Parse `reply` in `protocol` against the tools `specs` declare (their
    /// arguments checked and coerced) and the bare `names` (taken as
    /// written). With nothing declared at all, every call is taken as
    /// written; otherwise a call to a tool neither declares is flagged.
    /// A call whose arguments do not check is left out, with a warning.
    pub fn of(reply: &str, protocol: ProtocolId, specs: &[&ToolSpec], names: &[String]) -> Self {
        let declared = Declared::new(specs.iter().map(|t| t.name.clone()).chain(names.iter().cloned()));
        let parsed = protocol.protocol().parse(reply, &declared);
        let mut warnings = parsed.warnings.clone();
        let nothing_declared = specs.is_empty() && names.is_empty();
        let mut calls = Vec::new();
        for (call, tool_call) in parsed.calls.iter().zip(ToolCall::from_reply(reply, &parsed.calls)) {
            let span = [call.span.start, call.span.end];
            let text_input = call.reserved.get(TEXT_INPUT_KEY).and_then(Value::as_str).map(str::to_owned);
            let found = |arguments: Map<String, Value>, text_input: Option<String>, undeclared: bool| FoundCall {
                name: call.name.clone(),
                arguments,
                text_input,
                undeclared,
                span,
            };
            if specs.iter().any(|t| t.name == call.name) {
                match arguments::check(&tool_call, specs) {
                    Ok(checked) => calls.push(found(checked.args, None, false)),
                    Err(error) => warnings.push(Warning { offset: call.span.start, message: error.to_string() }),
                }
            } else if nothing_declared || names.contains(&call.name) {
                calls.push(found(call.arguments.clone(), text_input, false));
            } else {
                let mut known: Vec<&str> = specs.iter().map(|t| t.name.as_str()).collect();
                known.extend(names.iter().map(String::as_str));
                warnings.push(Warning { offset: call.span.start, message: unknown_tool(&call.name, &known) });
                calls.push(found(call.arguments.clone(), text_input, true));
            }
        }
        ParseReport { calls, content: parsed.content, warnings }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{ParamSpec, ParamType};

    fn calculate() -> ToolSpec {
        let mut spec = ToolSpec::new("calculate", "calc", "");
        spec.params.push(ParamSpec { name: "x".into(), ty: ParamType::Integer, description: String::new(), required: true });
        spec
    }

    #[test]
    fn declared_calls_are_coerced_undeclared_ones_flagged_and_bad_ones_warned_at_their_offset() {
        let reply = "Sure. <tool_call>{\"name\": \"calculate\", \"arguments\": {\"x\": \"42\"}}</tool_call> \
                     <tool_call>{\"name\": \"calculat\", \"arguments\": {}}</tool_call> \
                     <tool_call>{\"name\": \"calculate\", \"arguments\": {\"x\": \"many\"}}</tool_call>";
        let spec = calculate();
        let report = ParseReport::of(reply, ProtocolId::Auto, &[&spec], &[]);
        assert_eq!(report.calls.len(), 2, "{report:?}");
        assert_eq!(report.calls[0].arguments["x"], 42, "coerced to the declared integer");
        assert_eq!(&reply[report.calls[0].span[0]..report.calls[0].span[0] + 11], "<tool_call>");
        assert!(report.calls[1].undeclared);
        assert_eq!(report.warnings.len(), 2, "{:?}", report.warnings);
        assert!(report.warnings[0].message.contains("calculate"), "the closest name: {:?}", report.warnings[0]);
        let bad_at = reply.rfind("<tool_call>").unwrap();
        assert_eq!(report.warnings[1].offset, bad_at, "the bad call's warning points at it");
        assert!(report.content.starts_with("Sure."));
    }

    #[test]
    fn with_nothing_declared_every_call_is_taken_as_written() {
        let reply = "<tool_call>{\"name\": \"anything\", \"arguments\": {\"a\": 1}}</tool_call>";
        let report = ParseReport::of(reply, ProtocolId::Auto, &[], &[]);
        assert_eq!(report.calls.len(), 1);
        assert!(!report.calls[0].undeclared);
        assert!(report.warnings.is_empty());
    }
}
