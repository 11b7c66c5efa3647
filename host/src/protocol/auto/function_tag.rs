//! `<function=name>{…}</function>`: Llama 3.1's custom-tool format.

use super::super::scan::{Collector, find};
use super::super::ParsedCall;
use super::{Scope, object_at};
use serde_json::Map;

/// Opens a `<function=name>{…}</function>` call.
pub(crate) const FUNCTION_OPEN: &str = "<function=";
/// Closes it.
pub(crate) const FUNCTION_CLOSE: &str = "</function>";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 2] = [FUNCTION_OPEN, FUNCTION_CLOSE];

/// `<function=name>{…}</function>`.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    const OPEN: &str = FUNCTION_OPEN;
    const CLOSE: &str = FUNCTION_CLOSE;
    let reply = scope.reply;
    let mut at = 0;
    while let Some(open) = find(reply, at, OPEN) {
        at = open + OPEN.len();
        if scope.reasoning.contains(open) {
            continue;
        }
        let Some(name_end) = find(reply, at, ">") else { break };
        let name = reply[at..name_end].trim();
        let body = name_end + 1;
        let Some(close) = find(reply, body, CLOSE) else {
            out.warn(open, format!("<function={name}> is not closed; it is not a call"));
            break;
        };
        let text = reply[body..close].trim();
        let arguments = if text.is_empty() {
            Some(Map::new())
        } else {
            object_at(reply, body + (reply[body..close].len() - reply[body..close].trim_start().len()), out)
        };
        if let Some(arguments) = arguments {
            out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: open..close + CLOSE.len() });
        }
        at = close + CLOSE.len();
    }
}
