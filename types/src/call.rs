//! [`ToolCall`]: one request to run a tool, however it was asked for.

use crate::manifest::json_type;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::ops::Range;

/// The reserved key that holds a call's input when the model gave it as
/// one text rather than as named arguments: ReAct's `Action Input: Paris`,
/// LangChain's `"action_input": "Paris"`. Checking the call against its
/// tool makes the text the value of the tool's one parameter, or of its one
/// required parameter, and takes the key out.
pub const TEXT_INPUT_KEY: &str = "text_input";

/// Whether a text of arguments is meant as JSON (an object, possibly
/// encoded again as a string, or broken) rather than as a text input
/// ([`TEXT_INPUT_KEY`]): what it starts with. Nothing at all is no
/// arguments, JSON's empty.
pub fn looks_like_json(text: &str) -> bool {
    text.trim_start().starts_with(['{', '[', '"']) || text.trim().is_empty()
}

/// The reserved keys of a call whose input is one text ([`TEXT_INPUT_KEY`]),
/// without the spaces, the Markdown fence, or the one pair of quotes or
/// backticks models put around it. No text, `null` or `None` (what
/// LangChain's agents give a tool of no input) is no input: none.
pub fn text_input(text: &str) -> Map<String, Value> {
    let text = text.trim();
    let fenced = text.strip_prefix("```").and_then(|rest| {
        let code = match rest.split_once('\n') {
            Some((_info, code)) => code,
            None => rest,
        };
        code.trim_end().strip_suffix("```")
    });
    let unquoted = || ['"', '\'', '`'].iter().find_map(|&quote| text.strip_prefix(quote)?.strip_suffix(quote));
    let text = fenced.map(|code| code.trim_end_matches(['\r', '\n'])).or_else(|| unquoted().map(str::trim)).unwrap_or(text);
    if matches!(text, "" | "null" | "None") {
        return Map::new();
    }
    Map::from_iter([(TEXT_INPUT_KEY.to_owned(), Value::String(text.to_owned()))])
}

/// One call found in a reply, before its arguments are checked against the
/// tool's declaration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParsedCall {
    /// The call's id where the model gave one (a native `tool_calls` id),
    /// to be used unchanged in the result message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name as written.
    pub name: String,
    /// The arguments as written (strings for VCP).
    pub arguments: Map<String, Value>,
    /// Keys a protocol reserves for itself (VCP's `archery`, `maid`, …),
    /// kept apart from the arguments.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub reserved: Map<String, Value>,
    /// Where the call stands in the reply, in bytes.
    #[serde(skip)]
    pub span: Range<usize>,
}

/// One request to run a tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolCall {
    /// Identifies the call: the id the model gave it (a native
    /// `tool_calls` id, returned unchanged with the result) unless an
    /// earlier call has it, else `call-N` ([`CallIds`]).
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments, a JSON object.
    pub args: Map<String, Value>,
    /// The text the call was parsed from, if it was written in text of
    /// its own: empty for calls written together in one array or list,
    /// which share its text (see [`ToolCall::from_reply`]).
    pub raw: String,
    /// Keys the protocol reserves for itself (VCP's `maid`, `archery`, …),
    /// kept apart from the arguments.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub reserved: Map<String, Value>,
    /// Why the arguments given to [`ToolCall::new`] are not a JSON object,
    /// if they are not: the call then fails its check and never runs.
    #[serde(skip)]
    pub(crate) unusable_args: Option<String>,
}

impl ToolCall {
    /// A call with `id` to `tool` with `args`, not parsed from text. The
    /// arguments are anything that serializes to a JSON object: a
    /// `serde_json::Map`, `json!({"expression": "6*7"})`, a struct with
    /// `#[derive(Serialize)]`; `()` or `null` means none. Anything else
    /// (an array, a number) makes a call that never runs: its outcome is
    /// [`Status::InvalidArgs`](crate::Status::InvalidArgs), saying what it was.
    pub fn new(id: impl Into<String>, tool: impl Into<String>, args: impl Serialize) -> Self {
        let (args, unusable_args) = match serde_json::to_value(args) {
            Ok(Value::Object(map)) => (map, None),
            Ok(Value::Null) => (Map::new(), None),
            Ok(other) => (Map::new(), Some(format!("the arguments must be a JSON object, not {}", json_type(&other)))),
            Err(error) => (Map::new(), Some(format!("the arguments cannot be written as JSON: {error}"))),
        };
        ToolCall { unusable_args, ..ToolCall::with_map(id, tool, args) }
    }

    /// A call whose arguments are already an object: what [`ToolCall::new`]
    /// makes, without serializing them again (the doors' hot paths).
    pub fn with_map(id: impl Into<String>, tool: impl Into<String>, args: Map<String, Value>) -> Self {
        ToolCall { id: id.into(), tool: tool.into(), args, raw: String::new(), reserved: Map::new(), unusable_args: None }
    }

    /// The calls parsed from `reply`, in order: each keeps the model's id
    /// where it gave one not given before (else `call-N`, N counting from
    /// 1), the text it was written as, and its reserved keys. A call whose
    /// text overlaps another's keeps none: calls written together in one
    /// array share its text, and a copy each held the reply once per call
    /// (8 000 calls in a reply of 224 KB took 1.78 GB). What is kept is
    /// never more than the reply.
    pub fn from_reply(reply: &str, parsed: &[ParsedCall]) -> Vec<ToolCall> {
        Self::from_reply_in(reply, parsed, &mut CallIds::new())
    }

    /// [`from_reply`](Self::from_reply) for a reply of a conversation
    /// whose ids so far `ids` holds.
    pub fn from_reply_in(reply: &str, parsed: &[ParsedCall], ids: &mut CallIds) -> Vec<ToolCall> {
        let own = written_alone(parsed);
        parsed
            .iter()
            .zip(own)
            .map(|(call, alone)| ToolCall {
                id: ids.assign(call.id.as_deref()),
                tool: call.name.clone(),
                args: call.arguments.clone(),
                raw: if alone { reply.get(call.span.clone()).unwrap_or_default().to_owned() } else { String::new() },
                reserved: call.reserved.clone(),
                unusable_args: None,
            })
            .collect()
    }

    /// This call with `raw` as the text it was written as.
    #[must_use]
    pub fn with_raw(self, raw: impl Into<String>) -> Self {
        ToolCall { raw: raw.into(), ..self }
    }

    /// This call with `reserved` as the keys its protocol reserves.
    #[must_use]
    pub fn with_reserved(self, reserved: Map<String, Value>) -> Self {
        ToolCall { reserved, ..self }
    }

    /// This call with `args` as its arguments. A call whose arguments could
    /// not be used when it was made ([`ToolCall::new`] of something that
    /// is not an object) stays unusable.
    #[must_use]
    pub fn with_args(self, args: Map<String, Value>) -> Self {
        ToolCall { args, ..self }
    }

    /// Why this call's arguments cannot be used, if they cannot.
    pub fn unusable_args(&self) -> Option<&str> {
        self.unusable_args.as_deref()
    }
}

/// Gives the calls of a conversation their ids, each unique in it: the
/// model's own where it gave one that no earlier call has, else the first
/// `call-N` not taken. Models reuse ids (`call_0` every round) or leave
/// them out; results are matched to calls by id, so two calls must never
/// share one.
#[derive(Debug, Clone, Default)]
pub struct CallIds {
    taken: HashSet<String>,
    next: usize,
}

impl CallIds {
    /// Ids for a conversation with no calls yet.
    pub fn new() -> Self {
        CallIds::default()
    }

    /// Ids for a conversation whose calls so far have `taken`.
    pub fn after<S: Into<String>>(taken: impl IntoIterator<Item = S>) -> Self {
        CallIds { taken: taken.into_iter().map(Into::into).collect(), next: 0 }
    }

    /// Mark `id` taken: a call the conversation already has.
    pub fn take(&mut self, id: &str) {
        if !self.taken.contains(id) {
            self.taken.insert(id.to_owned());
        }
    }

    /// The id of the next call, which the model gave as `given`.
    pub fn assign(&mut self, given: Option<&str>) -> String {
        if let Some(given) = given.filter(|id| !id.is_empty())
            && self.taken.insert(given.to_owned())
        {
            return given.to_owned();
        }
        loop {
            self.next += 1;
            let id = format!("call-{}", self.next);
            if self.taken.insert(id.clone()) {
                return id;
            }
        }
    }
}

/// For each of `parsed`, whether its span overlaps no other call's. In
/// the order of their starts, a span overlaps an earlier one when it
/// starts before the furthest end so far, a later one when the next
/// starts before its end.
fn written_alone(parsed: &[ParsedCall]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..parsed.len()).collect();
    order.sort_by_key(|&i| parsed[i].span.start);
    let mut alone = vec![true; parsed.len()];
    let mut furthest_end = 0;
    for (at, &i) in order.iter().enumerate() {
        let span = &parsed[i].span;
        let after_earlier = at == 0 || span.start >= furthest_end;
        let before_next = order.get(at + 1).is_none_or(|&next| parsed[next].span.start >= span.end);
        alone[i] = after_earlier && before_next;
        furthest_end = furthest_end.max(span.end);
    }
    alone
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_anything_that_serializes_to_an_object() {
        #[derive(Serialize)]
        struct Add {
            a: i32,
            b: i32,
        }
        let expected: Map<String, Value> = json!({ "a": 1, "b": 2 }).as_object().unwrap().clone();
        for call in [
            ToolCall::new("1", "add", json!({ "a": 1, "b": 2 })),
            ToolCall::new("1", "add", expected.clone()),
            ToolCall::new("1", "add", Add { a: 1, b: 2 }),
        ] {
            assert_eq!((&call.args, call.unusable_args()), (&expected, None));
        }
        assert!(ToolCall::new("1", "clock", ()).args.is_empty());
        let array = ToolCall::new("1", "add", json!([1, 2]));
        assert_eq!(array.unusable_args(), Some("the arguments must be a JSON object, not an array"));
    }

    #[test]
    fn only_a_call_written_alone_keeps_its_text_and_what_is_kept_is_never_more_than_the_reply() {
        let reply = "a(1) [b(2), c(3)] d(4) e(5)";
        let at = |span: Range<usize>| ParsedCall {
            id: None,
            name: reply[span.clone()].to_owned(),
            arguments: Map::new(),
            reserved: Map::new(),
            span,
        };
        // `b` and `c` share their list's span; `d`'s span runs into
        // `e`'s; `a` stands alone, as does a call listed out of order.
        let parsed = [at(0..4), at(5..17), at(5..17), at(18..25), at(23..27), at(0..4)];
        let raws: Vec<String> = ToolCall::from_reply(reply, &parsed[..5]).into_iter().map(|call| call.raw).collect();
        assert_eq!(raws, ["a(1)", "", "", "", ""]);
        let reordered = [parsed[3].clone(), parsed[0].clone(), parsed[4].clone()];
        let raws: Vec<String> = ToolCall::from_reply(reply, &reordered).into_iter().map(|call| call.raw).collect();
        assert_eq!(raws, ["", "a(1)", ""]);
        let twice = ToolCall::from_reply(reply, &parsed[5..].iter().chain(&parsed[..1]).cloned().collect::<Vec<_>>());
        assert!(twice.iter().all(|call| call.raw.is_empty()), "two calls with one span keep neither");

        // A batch of many calls in one array keeps no copy of it per call.
        let batch = format!("[{}]", vec!["f()"; 10_000].join(","));
        let shared: Vec<ParsedCall> = (0..10_000).map(|_| ParsedCall { span: 0..batch.len(), ..at(0..1) }).collect();
        let kept: usize = ToolCall::from_reply(&batch, &shared).iter().map(|call| call.raw.len()).sum();
        assert!(kept <= batch.len(), "{kept} bytes kept for a reply of {}", batch.len());
    }

    #[test]
    fn ids_are_the_models_until_taken_then_the_first_free_number() {
        let mut ids = CallIds::after(["call_0", "call-1"]);
        let assigned: Vec<String> =
            [Some("call_0"), None, Some("x"), Some("x"), Some(""), Some("call-3")].map(|given| ids.assign(given)).into();
        assert_eq!(assigned, ["call-2", "call-3", "x", "call-4", "call-5", "call-6"]);
    }
}
