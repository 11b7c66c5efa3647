//! Calls after a prefix: Mistral's `[TOOL_CALLS]` (`[{…}]`, `name{…}`,
//! `name[ARGS]{…}`) and Llama 3's `<|python_tag|>` (`{"name", "parameters"}`).

use super::super::json_call::{self, Trust};
use super::super::lenient_json;
use super::super::scan::{Collector, find};
use super::super::ParsedCall;
use super::Scope;
use serde_json::{Map, Value};

/// Mistral's prefix before its calls.
pub(crate) const TOOL_CALLS: &str = "[TOOL_CALLS]";
/// Llama 3's prefix before a call.
pub(crate) const PYTHON_TAG: &str = "<|python_tag|>";
/// Between a Mistral call's name and its arguments.
const ARGS: &str = "[ARGS]";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 2] = [TOOL_CALLS, PYTHON_TAG];

/// Every `[TOOL_CALLS]` outside reasoning.
pub(super) fn scan_tool_calls(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let mut at = 0;
    while let Some(found) = find(scope.reply, at, TOOL_CALLS) {
        at = if scope.reasoning.contains(found) { found + TOOL_CALLS.len() } else { read(scope, found, TOOL_CALLS, out) };
    }
}

/// The call after `marker` at `found`; returns where reading stopped.
pub(super) fn read(scope: &Scope<'_>, found: usize, marker: &str, out: &mut Collector<'_>) -> usize {
    let reply = scope.reply;
    let after = found + marker.len();
    let start = after + (reply[after..].len() - reply[after..].trim_start().len());
    if reply[start..].starts_with(['[', '{']) {
        return match lenient_json::parse_prefix(&reply[start..]) {
            Ok((value, used, repairs)) => {
                json_call::report(&repairs, start, out);
                json_call::collect_value(value, found..start + used, Trust::Explicit, scope.declared, out);
                start + used
            }
            Err(e) => {
                out.warn(start + e.offset, format!("the call after {marker} is not JSON: {}", e.message));
                after
            }
        };
    }
    // `name{…}` or `name[ARGS]{…}`.
    let name_end = start + reply[start..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(reply.len() - start);
    let name = &reply[start..name_end];
    let mut args_at = name_end;
    if reply[args_at..].starts_with(ARGS) {
        args_at += ARGS.len();
    }
    if name.is_empty() || !reply[args_at..].starts_with('{') {
        out.warn(found, format!("nothing recognisable follows {marker}"));
        return after;
    }
    if let Ok((Value::Object(arguments), used, repairs)) = lenient_json::parse_prefix(&reply[args_at..]) {
        json_call::report(&repairs, args_at, out);
        out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: found..args_at + used });
        args_at + used
    } else {
        out.warn(args_at, format!("the arguments of `{name}` are not a JSON object"));
        after
    }
}

