//! Calls after a prefix: Mistral's `[TOOL_CALLS]` (`[{…}]`, `name{…}`,
//! `name[ARGS]{…}`, the same with the tokens stripped ([`scan_stripped`]), and Mistral Small 3.2's and Devstral's
//! `name[CALL_ID]ID[ARGS]{…}`, whose id the result answers) and Llama 3's `<|python_tag|>` (`{"name", "parameters"}`,
//! and its built-in tools' `brave_search.call(query="…")`, several with `;`
//! between them). A prefix quoted
//! in inline code starts nothing; in a fenced block, only a declared tool's
//! call.

use super::super::ParsedCall;
use super::super::json_call::{self, Trust};
use super::super::lenient_json;
use super::super::scan::Collector;
use super::{Scope, indented_as_code, name_len_before, pythonic, starts_line};
use crate::manifest::MAX_TOOL_NAME_LEN;
use serde_json::{Map, Value};

/// Mistral's prefix before its calls.
pub(crate) const TOOL_CALLS: &str = "[TOOL_CALLS]";
/// Llama 3's prefix before a call.
pub(crate) const PYTHON_TAG: &str = "<|python_tag|>";
/// Between a Mistral call's name (or id) and its arguments.
const ARGS: &str = "[ARGS]";
/// Between a Mistral call's name and its id.
const CALL_ID: &str = "[CALL_ID]";
/// Between a Llama 3 built-in tool's name and its keyword arguments.
const BUILT_IN_CALL: &str = ".call(";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 2] = [TOOL_CALLS, PYTHON_TAG];

/// Every `[TOOL_CALLS]` outside reasoning.
pub(super) fn scan_tool_calls(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let mut at = 0;
    while let Some(found) = scope.markers.find(at, TOOL_CALLS) {
        at = if scope.reasoning.contains(found) { found + TOOL_CALLS.len() } else { read(scope, found, TOOL_CALLS, out) };
    }
}

/// Mistral's calls once a server strips its special tokens: `name{…}` or
/// `name[ARGS]{…}` with the `[TOOL_CALLS]` before them gone, one after
/// another (`get_weather{…}now{}`). With no token to mark them, they are
/// calls only of declared tools, on a line of their own, and only as far
/// as the line ends with them.
pub(super) fn scan_stripped(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut at = 0;
    while let Some(open) = scope.markers.find(at, "{") {
        at = open + 1;
        let Some(start) =
            stripped_head(scope, open).filter(|&start| starts_line(reply, start) && !indented_as_code(reply, start))
        else {
            continue;
        };
        if scope.reasoning.contains(start) || scope.markup_trust(start).is_none() {
            continue;
        }
        let mut run = Collector::new(reply);
        let (mut start, mut open) = (start, open);
        // The calls glued together on the line, read to where they end.
        let end = loop {
            let (arguments, used, repairs) = match lenient_json::parse_prefix(&reply[open..]) {
                Ok((Value::Object(arguments), used, repairs)) => (arguments, used, repairs),
                // Past what failed to read, so that the time stays linear.
                Ok((_, used, _)) => break Err(open + used.max(1)),
                Err(error) => break Err(open + error.offset.max(1)),
            };
            let end = open + used;
            json_call::report(&repairs, open, &mut run);
            let name = reply[start..start + name_length(&reply[start..])].to_owned();
            run.call(ParsedCall { id: None, name, arguments, reserved: Map::new(), span: start..end });
            match stripped_head_ahead(scope, end) {
                Some(next_open) => (start, open) = (end, next_open),
                None => break Ok(end),
            }
        };
        at = match end {
            Ok(end) => {
                let rest = reply[end..].trim_start_matches([' ', '\t']);
                if rest.is_empty() || rest.starts_with(['\n', '\r']) || end >= scope.turn_end() {
                    let (calls, warnings) = run.calls_and_warnings();
                    for call in calls {
                        out.call(call);
                    }
                    for warning in warnings {
                        out.warn(warning.offset, warning.message);
                    }
                }
                end
            }
            Err(stopped) => stopped,
        };
    }
}

/// Where the declared tool's name before the `{` at `open` starts, `[ARGS]`
/// between them or not; `None` when no declared name stands there.
fn stripped_head(scope: &Scope<'_>, open: usize) -> Option<usize> {
    let before = &scope.reply[..open];
    let before = before.strip_suffix(ARGS).unwrap_or(before);
    let name_len = name_len_before(before, MAX_TOOL_NAME_LEN + 1, false);
    let start = before.len() - name_len;
    (name_len > 0 && name_len <= MAX_TOOL_NAME_LEN && scope.declared.contains(&before[start..])).then_some(start)
}

/// Where the arguments of a stripped call of a declared tool starting at
/// `at` open, if one does.
fn stripped_head_ahead(scope: &Scope<'_>, at: usize) -> Option<usize> {
    let name_end = at + name_length(&scope.reply[at..]);
    let args = if scope.reply[name_end..].starts_with(ARGS) { name_end + ARGS.len() } else { name_end };
    (name_end > at && scope.reply[args..].starts_with('{') && stripped_head(scope, args) == Some(at)).then_some(args)
}

/// The call after `marker` at `found`; returns where reading stopped.
pub(super) fn read(scope: &Scope<'_>, found: usize, marker: &str, out: &mut Collector<'_>) -> usize {
    let reply = scope.reply;
    let after = found + marker.len();
    let Some(trust) = scope.markup_trust(found) else { return after };
    let start = after + (reply[after..].len() - reply[after..].trim_start().len());
    if reply[start..].starts_with('[') && pythonic::opens_call(&reply[start..]) {
        // Llama 3.2's pythonic list, as Meta's prompt format shows it after
        // the tag: read as a list of declared tools' calls, the tag with it.
        let before = out.len();
        let stopped = pythonic::list(reply, start, scope.declared, |_| true, out);
        if out.len() == before {
            return after;
        }
        out.markup(found..start);
        return stopped;
    }
    if reply[start..].starts_with(['[', '{']) {
        return match lenient_json::parse_prefix(&reply[start..]) {
            Ok((value, used, repairs)) => {
                json_call::report(&repairs, start, out);
                let (value, end) = objects_after(reply, value, start + used, out);
                json_call::collect_value(value, found..end, trust, scope.declared, out);
                end
            }
            Err(e) => {
                out.warn(start + e.offset, format!("the call after {marker} is not JSON: {}", e.message));
                after
            }
        };
    }
    // `name{…}`, `name[ARGS]{…}` or `name.call(k=v, …)`.
    let name_end = start + name_length(&reply[start..]);
    let name = &reply[start..name_end];
    let trusted = trust == Trust::Explicit || scope.declared.contains(name);
    if !name.is_empty() && reply[name_end..].starts_with(BUILT_IN_CALL) {
        return if trusted { built_in_calls(scope, found, start, trust, out) } else { after };
    }
    let mut args_at = name_end;
    let mut id = None;
    if let Some((call_id, id_end)) = call_id(reply, args_at) {
        id = Some(call_id.to_owned());
        args_at = id_end;
    }
    if reply[args_at..].starts_with(ARGS) {
        args_at += ARGS.len();
    }
    if name.is_empty() || !reply[args_at..].starts_with('{') {
        out.warn(found, format!("nothing recognisable follows {marker}"));
        return after;
    }
    if !trusted {
        return after;
    }
    if let Ok((Value::Object(arguments), used, repairs)) = lenient_json::parse_prefix(&reply[args_at..]) {
        json_call::report(&repairs, args_at, out);
        out.call(ParsedCall { id, name: name.to_owned(), arguments, reserved: Map::new(), span: found..args_at + used });
        args_at + used
    } else {
        out.warn(args_at, format!("the arguments of `{name}` are not a JSON object"));
        after
    }
}

/// `first`, read up to `end`, with the objects that follow it each after a
/// comma, as Mistral models write several calls without the list's
/// brackets (`[TOOL_CALLS]{…}, {…}`): an array of them all, and where they
/// end. Anything but an object that names a call ends them before the
/// comma.
fn objects_after(reply: &str, first: Value, mut end: usize, out: &mut Collector<'_>) -> (Value, usize) {
    if !first.is_object() {
        return (first, end);
    }
    let mut items = vec![first];
    while let Some(next) = reply[end..].trim_start().strip_prefix(',').map(str::trim_start).filter(|next| next.starts_with('{')) {
        let at = reply.len() - next.len();
        let Ok((Value::Object(item), used, repairs)) = lenient_json::parse_prefix(next) else { break };
        if !json_call::names_a_call(&item) {
            break;
        }
        let item = Value::Object(item);
        json_call::report(&repairs, at, out);
        items.push(item);
        end = at + used;
    }
    match items.len() {
        1 => (items.pop().unwrap_or_default(), end),
        _ => (Value::Array(items), end),
    }
}

/// Llama 3's built-in tools' calls from `start` (after the tag at
/// `found`), `name.call(k=v, …)` each, `;` between them; returns where
/// reading stopped. A call after a `;` is read under the tag's trust.
fn built_in_calls(scope: &Scope<'_>, found: usize, mut start: usize, trust: Trust, out: &mut Collector<'_>) -> usize {
    let reply = scope.reply;
    // The first call's span holds the tag; each next one's, the `;` before it.
    let mut span_start = found;
    loop {
        let name_end = start + name_length(&reply[start..]);
        let name = &reply[start..name_end];
        let end = match pythonic::keyword_arguments(reply, name_end + BUILT_IN_CALL.len(), name, pythonic::Strings::Loose, out) {
            Ok((arguments, end)) => {
                out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: span_start..end });
                end
            }
            Err(stopped) => {
                // The first call's warning points at the tag, a later one's at its name.
                let at = if span_start == found { found } else { start };
                out.warn(at, format!("`{name}{BUILT_IN_CALL}…)` is cut off or not keyword arguments; it is not a call"));
                return stopped;
            }
        };
        let Some(next) = reply[end..].trim_start().strip_prefix(';').map(str::trim_start) else { return end };
        let next_name = &next[..name_length(next)];
        let next_trusted = trust == Trust::Explicit || scope.declared.contains(next_name);
        if next_name.is_empty() || !next[next_name.len()..].starts_with(BUILT_IN_CALL) || !next_trusted {
            return end;
        }
        (span_start, start) = (end, reply.len() - next.len());
    }
}

/// The length of the tool name `text` starts with.
fn name_length(text: &str) -> usize {
    text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(text.len())
}

/// `[CALL_ID]ID` at `at`, followed by `[ARGS]`: the id and where it ends.
fn call_id(reply: &str, at: usize) -> Option<(&str, usize)> {
    let start = at + CALL_ID.len();
    reply[at..].starts_with(CALL_ID).then_some(())?;
    let end = start + name_length(&reply[start..]);
    (end > start && reply[end..].starts_with(ARGS)).then(|| (&reply[start..end], end))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, warnings};
    use serde_json::{Value, json};

    #[test]
    fn mistral_calls_with_ids() {
        let reply = "[TOOL_CALLS]get_weather[CALL_ID]a5Bc7dE9f[ARGS]{\"city\": \"Paris\"}";
        let parsed = parse(reply);
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parsed.calls[0].id.as_deref(), Some("a5Bc7dE9f"), "the result answers the id");
        assert_eq!((parsed.content.as_str(), parsed.warnings.len()), ("", 0));
        let several = "I'll check both.[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]now[CALL_ID]def456UVW[ARGS]{}";
        assert_eq!(calls(several), vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))]);
        assert_eq!(parse(several).content, "I'll check both.");
        let no_id = "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]now[ARGS]{}";
        assert_eq!(calls(no_id).len(), 2);
        let typed = "[TOOL_CALLS]forecast[CALL_ID]x1[ARGS]{\"city\": \"Rome\", \"days\": 3, \"ratio\": 0.5, \"metric\": true, \"options\": {\"a\": null}}";
        assert_eq!(
            Value::Object(checked(typed)),
            json!({"city": "Rome", "days": 3, "ratio": 0.5, "metric": true, "options": {"a": null}})
        );
        let reasoned = "<think>Weather first.</think>[TOOL_CALLS]now[CALL_ID]q[ARGS]{}";
        assert_eq!(calls(reasoned), one("now", json!({})));
        let magistral = "[THINK]Maybe [TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"} first? No.[/THINK]The time, then.[TOOL_CALLS]now[ARGS]{}";
        assert_eq!(calls(magistral), one("now", json!({})), "Magistral's [THINK] is reasoning");
        assert_eq!(
            parse(magistral).content,
            "[THINK]Maybe [TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"} first? No.[/THINK]The time, then."
        );
    }

    #[test]
    fn mistral_calls_as_objects_apart_by_commas_without_the_list() {
        let reply = "[TOOL_CALLS]{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"now\", \"arguments\": {}}";
        assert_eq!(calls(reply), vec![("get_weather".to_owned(), json!({"city": "Paris"})), ("now".to_owned(), json!({}))]);
        assert_eq!((parse(reply).content.as_str(), warnings(reply)), ("", vec![]));
        let then_prose = "[TOOL_CALLS]{\"name\": \"now\", \"arguments\": {}}, and then I will answer.";
        assert_eq!(calls(then_prose), one("now", json!({})));
        assert_eq!(parse(then_prose).content, ", and then I will answer.");
        let with_id = "[TOOL_CALLS]{\"name\": \"now\", \"arguments\": {}}, {\"id\": \"abc123\", \"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
        assert_eq!(calls(with_id), vec![("now".to_owned(), json!({})), ("get_weather".to_owned(), json!({"city": "Paris"}))]);
        // An object that is no call ends them, and stays in the content.
        let note = "[TOOL_CALLS]{\"name\": \"now\", \"arguments\": {}}, {\"note\": \"x\"}";
        assert_eq!(calls(note), one("now", json!({})));
        assert_eq!(parse(note).content, ", {\"note\": \"x\"}");
    }

    #[test]
    fn mistral_calls_whose_tokens_a_server_stripped() {
        let paris = one("get_weather", json!({"city": "Paris"}));
        for reply in
            ["get_weather{\"city\": \"Paris\"}", "get_weather[ARGS]{\"city\": \"Paris\"}", "  get_weather{\"city\": \"Paris\"}\n"]
        {
            assert_eq!(calls(reply), paris, "{reply}");
            assert_eq!(parse(reply).content, "", "{reply}");
        }
        let after_prose = "I will check.\nget_weather{\"city\": \"Paris\"}now[ARGS]{}";
        assert_eq!(calls(after_prose), vec![("get_weather".to_owned(), json!({"city": "Paris"})), ("now".to_owned(), json!({}))]);
        assert_eq!(parse(after_prose).content, "I will check.");
        no_calls(&[
            // An undeclared tool, prose before it or after it on its line,
            // inline code, reasoning.
            "delete_all{\"path\": \"/\"}",
            "Call get_weather{\"city\": \"Paris\"}",
            "get_weather{\"city\": \"Paris\"} would tell us.",
            "`get_weather{\"city\": \"Paris\"}`",
            "<think>\nget_weather{\"city\": \"Paris\"}\n</think>",
            // A glued run that prose ends, and code indented as Markdown does.
            "get_weather{\"city\": \"Paris\"}now{} would tell us.",
            "For example:\n\n    get_weather{\"city\": \"Paris\"}\n\nruns it.",
        ]);
    }

    #[test]
    fn a_cut_off_mistral_call_is_a_warning_not_a_call() {
        let cut = "[TOOL_CALLS]now[CALL_ID]abc[ARGS]{}[TOOL_CALLS]get_weather[CALL_ID]def[ARGS]{\"city\": \"Par";
        assert_eq!(calls(cut), one("now", json!({})));
        assert_eq!(warnings(cut), ["the arguments of `get_weather` are not a JSON object"]);
        assert_eq!(calls("[TOOL_CALLS]get_weather[CALL_ID]"), vec![]);
        no_calls(&[
            "Mistral writes `[TOOL_CALLS]delete_all[CALL_ID]x[ARGS]{}`.",
            "<think>[TOOL_CALLS]now[CALL_ID]q[ARGS]{}</think>",
        ]);
    }

    #[test]
    fn llama_3_2_pythonic_list_after_the_python_tag() {
        // As Meta's prompt format for Llama 3.2 shows it: the tag is no
        // content, and no warning says the list is not JSON.
        let reply = "<|python_tag|>[get_weather(city=\"Paris\"), now()]<|eom_id|>";
        assert_eq!(calls(reply), vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))]);
        assert_eq!((parse(reply).content.as_str(), warnings(reply)), ("", vec![]));
        let after_prose = "Let me check.\n<|python_tag|>[now()]";
        assert_eq!((calls(after_prose), parse(after_prose).content), (one("now", json!({})), "Let me check.".to_owned()));
        // A list of a tool nobody declared stays text, as a bare one does.
        let undeclared = "<|python_tag|>[delete_all()]";
        assert_eq!((calls(undeclared), parse(undeclared).content), (vec![], undeclared.to_owned()));
    }

    #[test]
    fn llama_built_in_tools_after_the_python_tag() {
        let search = "<|python_tag|>brave_search.call(query=\"current weather in Menlo Park, California\")<|eom_id|>";
        assert_eq!(calls(search), one("brave_search", json!({"query": "current weather in Menlo Park, California"})));
        let code = "<|python_tag|>python.call(code=\"print('hey')\")";
        assert_eq!(calls(code), one("python", json!({"code": "print('hey')"})));
        let after_prose =
            "Let me look that up.\n\n<|python_tag|>wolfram_alpha.call(query='solve x^2 = 4', max_results=3, exact=True)";
        assert_eq!(calls(after_prose), one("wolfram_alpha", json!({"query": "solve x^2 = 4", "max_results": 3, "exact": true})));
        assert_eq!(parse(after_prose).content, "Let me look that up.");
        let reasoned = "<think>A search is needed.</think><|python_tag|>now.call()";
        assert_eq!(calls(reasoned), one("now", json!({})));
    }

    #[test]
    fn built_in_calls_one_after_another_under_one_tag() {
        let both = "Both.<|python_tag|>brave_search.call(query=\"a\");wolfram_alpha.call(query='b') ;\n now.call()<|eom_id|>";
        assert_eq!(
            calls(both),
            vec![
                ("brave_search".into(), json!({"query": "a"})),
                ("wolfram_alpha".into(), json!({"query": "b"})),
                ("now".into(), json!({}))
            ]
        );
        assert_eq!((parse(both).content.as_str(), parse(both).warnings.len()), ("Both.", 0));
        // What follows a `;` that is no call stays text.
        let then_prose = "<|python_tag|>now.call(); then I will answer.";
        assert_eq!(calls(then_prose), one("now", json!({})));
        assert_eq!(parse(then_prose).content, "; then I will answer.");
        // A second call cut off: the first stands, the second is a warning.
        let cut = "<|python_tag|>now.call(); brave_search.call(query=\"weath";
        assert_eq!(calls(cut), one("now", json!({})));
        assert_eq!(warnings(cut).len(), 1, "{:?}", warnings(cut));
    }

    #[test]
    fn built_in_call_values_are_typed_by_the_declaration() {
        let reply = "<|python_tag|>forecast.call(city=\"Oslo\", days=\"3\", ratio=0.5, metric=\"true\", options='{\"a\": 1}')";
        assert_eq!(
            Value::Object(checked(reply)),
            json!({"city": "Oslo", "days": 3, "ratio": 0.5, "metric": true, "options": {"a": 1}})
        );
    }

    #[test]
    fn a_cut_off_built_in_call_is_a_warning_not_a_call() {
        let cut = "<|python_tag|>brave_search.call(query=\"weather in";
        assert_eq!(calls(cut), vec![]);
        assert_eq!(warnings(cut), ["`brave_search.call(…)` is cut off or not keyword arguments; it is not a call"]);
        assert_eq!(calls("<|python_tag|>brave_search.call(\"weather\")"), vec![], "keyword arguments only");
    }

    #[test]
    fn prefixes_quoted_as_code_are_not_calls() {
        no_calls(&[
            "Llama writes `<|python_tag|>brave_search.call(query=\"x\")` for a search.",
            "`<|python_tag|>{\"name\": \"delete_all\", \"parameters\": {}}`",
            "Mistral starts with `[TOOL_CALLS]delete_all{}`.",
            "```\n<|python_tag|>delete_all.call(path=\"/\")\n```",
            "<think><|python_tag|>now.call()</think>",
        ]);
        let fenced = "```\n<|python_tag|>now.call(zone=\"UTC\")\n```";
        assert_eq!(calls(fenced), one("now", json!({"zone": "UTC"})), "in a fence, a declared tool's call");
    }
}
