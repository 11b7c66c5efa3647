//! Calls in `<function…>` tags:
//!
//! - Qwen3-Coder: `<function=NAME>`, then `<parameter=KEY>value</parameter>`
//!   for each argument, then `</function>`; usually inside `<tool_call>`,
//!   which then belongs to the call; Seed-OSS writes the same calls inside
//!   `<seed:tool_call>` (its reasoning is `<seed:think>…</seed:think>`);
//! - Llama 3.1's custom tools: `<function=NAME>{…}</function>`;
//! - `<function name="NAME">{…}</function>`;
//! - a Hermes `<tool_call>` whose body is `<function>NAME</function>` and
//!   the JSON arguments ([`hermes_named`]);
//! - MiMo-V2-Flash's Qwen3-Coder calls with some `<parameter=KEY>` written
//!   inside the `<tool_call>` before the `<function=NAME>` they belong to
//!   (vLLM's MiMo parser reads them), which then start the call.
//!
//! A Qwen3-Coder value is raw text: the line breaks the template writes
//! around it are dropped, everything else (`->`, `<`, quotes, blank lines)
//! is kept. Without a declaration it is typed as the engines type it
//! ([`markup_value`](super::super::markup_value)); the check step coerces
//! it to the declared type (back to its text for a string parameter, JSON
//! for json parameters, `True` for booleans).

use super::super::ParsedCall;
use super::super::lenient_json;
use super::super::markup_value;
use super::super::scan::{Collector, Forward, find};
use super::super::xml_tag::TOOL_CALL;
use super::{Scope, attribute_name, markup_name, object_at};
use serde_json::{Map, Value};

/// Opens a call: `<function=NAME>`.
pub(crate) const FUNCTION_OPEN: &str = "<function=";
/// Opens a call: `<function name="NAME">`.
pub(crate) const FUNCTION_NAMED: &str = "<function name=";
/// Opens a Hermes call's name: `<function>NAME</function>`.
pub(crate) const FUNCTION_NAME_OPEN: &str = "<function>";
/// Closes a call, or a Hermes call's name.
pub(crate) const FUNCTION_CLOSE: &str = "</function>";
/// Opens a Qwen3-Coder argument: `<parameter=KEY>`.
pub(crate) const PARAMETER_OPEN: &str = "<parameter=";
/// Closes it.
pub(crate) const PARAMETER_CLOSE: &str = "</parameter>";
/// Opens a Qwen3-Coder argument as its models also spell it: `<param=KEY>`.
pub(crate) const PARAM_OPEN: &str = "<param=";
/// Opens a MiniCPM 5 argument: `<param name="KEY">`.
pub(crate) const PARAM_NAMED: &str = "<param name=";
/// Closes either.
pub(crate) const PARAM_CLOSE: &str = "</param>";
/// Opens a Doubao Seed 2.0 argument: `<parameter name="KEY" string="true">`.
const PARAMETER_NAMED: &str = "<parameter name=";
/// Every way an argument is tagged: its opening, up to the key, and its
/// closing tag.
const PARAMETER_TAGS: [(&str, &str); 4] = [
    (PARAMETER_OPEN, PARAMETER_CLOSE),
    (PARAM_OPEN, PARAM_CLOSE),
    (PARAM_NAMED, PARAM_CLOSE),
    (PARAMETER_NAMED, PARAMETER_CLOSE),
];
/// Around a MiniCPM 5 value whose text is kept as it is, markup and all.
const CDATA: (&str, &str) = ("<![CDATA[", "]]>");
/// Seed-OSS's element around a call, open and close.
pub(crate) const SEED_TOOL_CALL: (&str, &str) = ("<seed:tool_call>", "</seed:tool_call>");
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 11] = [
    FUNCTION_OPEN,
    FUNCTION_NAMED,
    FUNCTION_NAME_OPEN,
    FUNCTION_CLOSE,
    PARAMETER_OPEN,
    PARAMETER_CLOSE,
    PARAM_OPEN,
    PARAM_NAMED,
    PARAM_CLOSE,
    SEED_TOOL_CALL.0,
    SEED_TOOL_CALL.1,
];
/// The elements a call may stand in, which then belong to it.
const WRAPPERS: [(&str, &str); 2] = [TOOL_CALL, SEED_TOOL_CALL];

/// What every `<function…` tag starts with.
const ANCHOR: &str = "<function";
/// How far a tag's name (or a parameter's key) is looked for its `>`.
const MAX_HEAD: usize = 256;

/// Whether `text` starts with a call this module reads on its own, so the
/// `<tool_call>` around it is left to [`scan`]: text that runs to `limit`
/// in the reply and starts at `start` there.
pub(crate) fn opens_call(reply: &str, start: usize, limit: usize) -> bool {
    let text = &reply[start..limit];
    text.starts_with(FUNCTION_OPEN)
        || text.starts_with(FUNCTION_NAMED)
        || (text.starts_with(PARAMETER_OPEN) && parameters_before_function(reply, start, limit).is_some())
}

/// MiMo-V2-Flash's `<parameter=KEY>value</parameter>` written before the
/// `<function=NAME>` they belong to: the arguments of such a run from
/// `start`, and where the `<function=` after it opens, if one does by
/// `limit`. Each value runs to its first `</parameter>`.
fn parameters_before_function(reply: &str, start: usize, limit: usize) -> Option<(Map<String, Value>, usize)> {
    let mut arguments = Map::new();
    let mut p = start;
    loop {
        p += reply[p..limit].len() - reply[p..limit].trim_start().len();
        // The function may open at `limit`: the call's own `<function=`.
        if reply[p..].starts_with(FUNCTION_OPEN) {
            return (!arguments.is_empty()).then_some((arguments, p));
        }
        reply[p..limit].strip_prefix(PARAMETER_OPEN)?;
        let (key, value_start, _) = parameter_key(reply, p + PARAMETER_OPEN.len()).filter(|&(_, at, _)| at <= limit)?;
        let close = find(&reply[..limit], value_start, PARAMETER_CLOSE)?;
        arguments.insert(key.to_owned(), markup_value::decode(template_value(&reply[value_start..close])));
        p = close + PARAMETER_CLOSE.len();
    }
}

/// The `<tool_call>` opened last before a call at `open`, when
/// `<parameter=…>` tags run from it to the call ([`parameters_before_function`]):
/// where it opens and their arguments. `tool_calls` finds each
/// `<tool_call>`, asked in order, and `after` is where the last call read
/// ended. Each `<tool_call>` is read for the first call after it only
/// (`read` is the last one read), so the time stays linear.
fn leading_parameters(
    reply: &str,
    open: usize,
    after: usize,
    tool_calls: &mut Forward<'_>,
    read: &mut Option<usize>,
) -> Option<(usize, Map<String, Value>)> {
    let at = tool_calls.last_before(open).filter(|&at| at >= after && *read != Some(at))?;
    *read = Some(at);
    let (arguments, function) = parameters_before_function(reply, at + TOOL_CALL.0.len(), open)?;
    (function == open).then_some((at, arguments))
}

/// Forward searches for the markers that end a call's parts.
struct Ends<'a> {
    function: Forward<'a>,
    tool_call: Forward<'a>,
    /// Per spelling of [`PARAMETER_TAGS`], its openings and its closings.
    parameter_open: [Forward<'a>; 4],
    parameter_close: [Forward<'a>; 4],
    cdata_end: Forward<'a>,
}

/// Every `<function=NAME>` and `<function name="NAME">` call. After a
/// failed call the scan resumes where reading it stopped, so the time stays
/// linear however the parts are mixed up.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut ends = Ends {
        function: Forward::new(reply, FUNCTION_CLOSE),
        tool_call: Forward::new(reply, TOOL_CALL.1),
        parameter_open: PARAMETER_TAGS.map(|(open, _)| Forward::new(reply, open)),
        parameter_close: PARAMETER_TAGS.map(|(_, close)| Forward::new(reply, close)),
        cdata_end: Forward::new(reply, CDATA.1),
    };
    let (mut tool_calls, mut tool_call_read, mut last_end) = (Forward::indexed(&scope.markers, TOOL_CALL.0), None, 0);
    let mut at = 0;
    while let Some(open) = scope.markers.find(at, ANCHOR) {
        at = open + ANCHOR.len();
        let Some((name, body)) = head(reply, open) else {
            if ends_inside_tag(&reply[open..]) {
                out.warn(open, "a <function…> tag is cut off; it is not a call");
            }
            continue;
        };
        at = body;
        if !scope.markup_calls(open, name) {
            continue;
        }
        let call = Call { reply, name, open };
        let leading = leading_parameters(reply, open, last_end, &mut tool_calls, &mut tool_call_read);
        match call.body(body, &mut ends, out) {
            Ok((own, end)) => {
                at = end;
                last_end = end;
                let (span, arguments) = match leading {
                    // The call's own arguments win over those before it.
                    Some((tool_call, mut arguments)) => {
                        arguments.extend(own);
                        (tool_call..wrapped(reply, open..end).end, arguments)
                    }
                    None => (wrapped(reply, open..end), own),
                };
                out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span });
            }
            Err(stopped) => at = at.max(stopped),
        }
    }
}

/// The name of the tag at `open` and where its body starts.
fn head(reply: &str, open: usize) -> Option<(&str, usize)> {
    let rest = &reply[open..];
    if rest.starts_with(FUNCTION_OPEN) {
        parameter_key(reply, open + FUNCTION_OPEN.len())
            .filter(|&(_, _, text)| text.is_none())
            .map(|(name, body, _)| (name, body))
    } else if rest.starts_with(FUNCTION_NAMED) {
        let (name, after) = quoted_name(reply, open + FUNCTION_NAMED.len())?;
        Some((attribute_name(name)?, after))
    } else {
        None
    }
}

/// A tag's quoted name attribute whose value starts at `start` (at its
/// quote), as in `<function name="NAME">` or MiniMax's `<invoke name="NAME">`:
/// the name, untrimmed, and where the tag's body starts.
pub(super) fn quoted_name(reply: &str, start: usize) -> Option<(&str, usize)> {
    let (name, attributes, body) = quoted_tag(reply, start)?;
    attributes.trim_start().is_empty().then_some((name, body))
}

/// The quoted name at `start` in a tag, the rest of the tag's text (its
/// other attributes) and where its body starts.
fn quoted_tag(reply: &str, start: usize) -> Option<(&str, &str, usize)> {
    let quote = *reply.as_bytes().get(start).filter(|q| matches!(q, b'"' | b'\''))?;
    let name_start = start + 1;
    let name_end = name_start + reply[name_start..].bytes().take(MAX_HEAD).position(|b| b == quote)?;
    let close = tag_end(reply, name_end + 1)?;
    Some((&reply[name_start..name_end], &reply[name_end + 1..close], close + 1))
}

/// The `>` that ends a tag whose text starts at `from`, on the same line.
pub(super) fn tag_end(reply: &str, from: usize) -> Option<usize> {
    let text = reply.as_bytes().get(from..)?;
    let end = text.iter().take(MAX_HEAD).position(|&b| matches!(b, b'>' | b'<' | b'\n'))?;
    (text[end] == b'>').then_some(from + end)
}

/// Whether `rest`, the end of a reply, stops inside a parameter's tag or a
/// closing tag.
fn ends_inside_tag(rest: &str) -> bool {
    let unclosed =
        |opening: &str| rest.strip_prefix(opening).is_some_and(|text| text.len() < MAX_HEAD && !text.contains(['<', '>', '\n']));
    let openings = [PARAMETER_OPEN, PARAM_OPEN, PARAM_NAMED, FUNCTION_OPEN, FUNCTION_NAMED];
    openings.into_iter().any(unclosed)
        || [PARAMETER_OPEN, PARAM_NAMED, FUNCTION_CLOSE, TOOL_CALL.1].iter().any(|tag| tag.starts_with(rest))
}

/// How many closing tags a value quoting a `</function>` is read past, to
/// the one the call's structure follows.
const MAX_QUOTED_CLOSES: usize = 8;

/// Whether the `</function>` at `close`, inside the value starting at
/// `value`, is quoted by it rather than the call's own: a call opens in
/// the value before it, or text that no call's end is followed by comes
/// after it (a call's own close is followed by `</tool_call>`, the next
/// call or the reply's end).
fn quotes_close(reply: &str, value: usize, close: usize) -> bool {
    let after = reply[close + FUNCTION_CLOSE.len()..].trim_start();
    let opens_inside = [FUNCTION_OPEN, FUNCTION_NAMED].iter().any(|open| reply[value..close].contains(open));
    let ends_a_call =
        after.is_empty() || [TOOL_CALL.1, TOOL_CALL.0, FUNCTION_OPEN, FUNCTION_NAMED].iter().any(|tag| after.starts_with(tag));
    opens_inside || !ends_a_call
}

/// A call being read: its tool and where its tag opened.
struct Call<'a> {
    reply: &'a str,
    name: &'a str,
    open: usize,
}

/// The arguments and where the call ends, or, after a warning, where
/// reading stopped.
type Read = Result<(Map<String, Value>, usize), usize>;

impl Call<'_> {
    /// The arguments from the body at `body` to the `</function>`.
    fn body(&self, body: usize, ends: &mut Ends<'_>, out: &mut Collector<'_>) -> Read {
        let reply = self.reply;
        let start = body + (reply[body..].len() - reply[body..].trim_start().len());
        let rest = &reply[start..];
        let tagged = PARAMETER_TAGS.iter().any(|(open, _)| rest.starts_with(open));
        if tagged || rest.starts_with(FUNCTION_CLOSE) || rest.starts_with(TOOL_CALL.1) {
            return self.parameters(start, ends, out);
        }
        if rest.is_empty() || ends_inside_tag(rest) {
            return self.cut_off(out);
        }
        if !rest.starts_with('{') {
            out.warn(
                start,
                format!("the call to `{}` holds neither JSON nor {PARAMETER_OPEN}…> tags; it is not a call", self.name),
            );
            return Err(start);
        }
        let (arguments, json_end) = object_at(reply, start, out).ok_or(start + 1)?;
        match ends.function.next(json_end) {
            Some(close) => Ok((arguments, close + FUNCTION_CLOSE.len())),
            None => self.cut_off(out),
        }
    }

    /// Qwen3-Coder's `<parameter=KEY>value</parameter>…` from `p` to the
    /// `</function>` (or the `</tool_call>`, when a model leaves the
    /// `</function>` out). A value runs to its `</parameter>`, or, when that
    /// is missing, to the next parameter or the end of the call.
    fn parameters(&self, mut p: usize, ends: &mut Ends<'_>, out: &mut Collector<'_>) -> Read {
        let reply = self.reply;
        let mut arguments = Map::new();
        loop {
            p += reply[p..].len() - reply[p..].trim_start().len();
            let rest = &reply[p..];
            if rest.starts_with(FUNCTION_CLOSE) {
                return Ok((arguments, p + FUNCTION_CLOSE.len()));
            }
            if rest.starts_with(TOOL_CALL.1) {
                out.warn(p, format!("repaired: {FUNCTION_CLOSE} missing"));
                return Ok((arguments, p));
            }
            // A bare `<function=NAME>` call (OpenHands never wraps it in a
            // `<tool_call>`) whose reply ends after a closed parameter, or
            // inside the `</function>`: whole but for its close, which
            // OpenHands' stop word `</function` takes. Wrapped, it is
            // Qwen3-Coder's own, cut off (by `max_tokens`, say).
            let tail = rest.trim_end();
            let stopped = tail.is_empty() || (tail.starts_with("</") && FUNCTION_CLOSE.starts_with(tail));
            let bare = reply[self.open..].starts_with(FUNCTION_OPEN) && !reply[..self.open].trim_end().ends_with(TOOL_CALL.0);
            if stopped && bare && !arguments.is_empty() {
                out.warn(p, format!("repaired: {FUNCTION_CLOSE} missing at the reply's end"));
                return Ok((arguments, reply.len()));
            }
            if rest.is_empty() {
                return self.cut_off(out);
            }
            let spelling = PARAMETER_TAGS.iter().position(|(open, _)| rest.starts_with(open));
            let key = spelling.and_then(|i| parameter_key(reply, p + PARAMETER_TAGS[i].0.len()).map(|key| (i, key)));
            let Some((spelling, (key, value_start, text))) = key else {
                if ends_inside_tag(rest) {
                    return self.cut_off(out);
                }
                out.warn(
                    p,
                    format!("expected {PARAMETER_OPEN}KEY> or {FUNCTION_CLOSE} in the call to `{}`; it is not a call", self.name),
                );
                return Err(p);
            };
            let close_tag = PARAMETER_TAGS[spelling].1;
            // A CDATA section is text up to its end, markup and all.
            let cdata = reply[value_start..].strip_prefix(CDATA.0).and_then(|text| {
                let text_at = reply.len() - text.len();
                let end = ends.cdata_end.next(text_at)?;
                let after = end + CDATA.1.len();
                let close_at = after + (reply[after..].len() - reply[after..].trim_start().len());
                reply[close_at..].starts_with(close_tag).then_some((text_at..end, close_at + close_tag.len()))
            });
            if let Some((text, after)) = cdata {
                arguments.insert(key.to_owned(), Value::String(reply[text].to_owned()));
                p = after;
                continue;
            }
            // The value runs to the last closing tag before the next
            // parameter or the call's end, so that a value quoting markup
            // (`</parameter>`, `<tool_call>…</tool_call>`) keeps it.
            let next_open = ends.parameter_open[spelling].next(value_start);
            let any_open = ends.parameter_open.iter_mut().filter_map(|opens| opens.next(value_start)).min();
            let function_close = ends.function.next(value_start);
            let structural = [next_open, function_close].into_iter().flatten().min();
            let limit = structural.unwrap_or(reply.len());
            let closes = &mut ends.parameter_close[spelling];
            let mut close = closes.next(value_start).filter(|&c| c < limit);
            while let Some(later) = close.and_then(|c| closes.next(c + 1)).filter(|&c| c < limit) {
                close = Some(later);
            }
            // A value that quotes a `</function>` (a file holding an example
            // call, prose about the format) runs past it to its own close,
            // when the call's structure follows that close and no other
            // parameter opens before it.
            if let Some(quoted_close) =
                function_close.filter(|&c| structural == Some(c) && close.is_none() && quotes_close(reply, value_start, c))
            {
                // The first close the call's structure follows; a few quoted
                // ones before it are looked past.
                let mut candidate = closes.next(quoted_close);
                for _ in 0..MAX_QUOTED_CLOSES {
                    let Some(c) = candidate.filter(|&c| any_open.is_none_or(|open| c < open)) else { break };
                    let after = reply[c + close_tag.len()..].trim_start();
                    if after.starts_with(FUNCTION_CLOSE) || after.starts_with(PARAMETER_TAGS[spelling].0) {
                        close = Some(c);
                        break;
                    }
                    candidate = closes.next(c + 1);
                }
            }
            let next = [structural, ends.tool_call.next(value_start)].into_iter().flatten().min();
            let (value_end, after) = match (close, next) {
                (Some(close), _) => (close, close + close_tag.len()),
                (None, Some(next)) => {
                    out.warn(value_start, format!("repaired: {close_tag} missing after `{key}`"));
                    (next, next)
                }
                (None, None) => return self.cut_off(out),
            };
            let raw = template_value(&reply[value_start..value_end]);
            let value = if text == Some(true) { Value::String(raw.to_owned()) } else { markup_value::decode(raw) };
            arguments.insert(key.to_owned(), value);
            p = after;
        }
    }

    /// A call that the reply ends inside: a warning, and nothing more to read.
    fn cut_off(&self, out: &mut Collector<'_>) -> Read {
        out.warn(self.open, format!("the call to `{}` is cut off before its {FUNCTION_CLOSE}; it is not a call", self.name));
        Err(self.reply.len())
    }
}

/// The name in a tag whose name starts at `start`, bare (`<parameter=KEY>`,
/// `<function=NAME>`) or quoted (`<param name="KEY">`, `<parameter="KEY">`),
/// and where the tag's body starts.
/// Quoted, its tag may say whether the value is text (`string="true"`,
/// kept exactly) or not, as Doubao Seed 2.0 writes it: `Some(true)` for
/// text.
fn parameter_key(reply: &str, start: usize) -> Option<(&str, usize, Option<bool>)> {
    if let Some((key, attributes, value_start)) = quoted_tag(reply, start) {
        let text = match attributes.trim() {
            "" => None,
            r#"string="true""# => Some(true),
            r#"string="false""# => Some(false),
            _ => return None,
        };
        return Some((attribute_name(key)?, value_start, text));
    }
    let end = tag_end(reply, start)?;
    Some((markup_name(&reply[start..end])?, end + 1, None))
}

/// A value without the one line break the template writes on each side.
pub(super) fn template_value(raw: &str) -> &str {
    let raw = raw.strip_prefix("\r\n").or_else(|| raw.strip_prefix('\n')).unwrap_or(raw);
    raw.strip_suffix("\r\n").or_else(|| raw.strip_suffix('\n')).unwrap_or(raw)
}

/// `span`, widened to the `<tool_call>…</tool_call>` (or Seed-OSS's
/// element) around it, if any.
pub(super) fn wrapped(reply: &str, span: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let before = reply[..span.start].trim_end();
    let after = reply[span.end..].trim_start();
    let start = WRAPPERS.iter().find_map(|(open, _)| before.strip_suffix(open)).map_or(span.start, str::len);
    let end = WRAPPERS
        .iter()
        .find(|(_, close)| after.starts_with(close))
        .map_or(span.end, |(_, close)| reply.len() - after.len() + close.len());
    start..end
}

/// A Hermes `<tool_call>` body `<function>NAME</function>{…}` at `at`, up
/// to `body_end`; the call spans `span`.
pub(super) fn hermes_named(scope: &Scope<'_>, at: usize, body_end: usize, span: std::ops::Range<usize>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let name_start = at + FUNCTION_NAME_OPEN.len();
    let name = find(&reply[..body_end], name_start, FUNCTION_CLOSE)
        .and_then(|close| Some((markup_name(&reply[name_start..close])?, close)));
    let Some((name, close)) = name else {
        out.warn(at, format!("{FUNCTION_NAME_OPEN} in a {} does not hold a tool's name; it is not a call", TOOL_CALL.0));
        return;
    };
    if !scope.markup_calls(span.start, name) {
        return;
    }
    let args = close + FUNCTION_CLOSE.len();
    let arguments = match reply[args..body_end].trim() {
        "" => Map::new(),
        text => match lenient_json::parse(text) {
            Ok((Value::Object(arguments), _)) => arguments,
            _ => {
                out.warn(args, format!("the arguments of `{name}` are not a JSON object; it is not a call"));
                return;
            }
        },
    };
    out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span });
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, warnings};
    use serde_json::{Value, json};

    /// A call as Qwen3-Coder's template writes it.
    const QWEN_CALL: &str = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>";

    #[test]
    fn qwen3_coder_calls_alone_after_prose_and_after_reasoning() {
        let args = json!({"city": "Paris", "unit": "celsius"});
        assert_eq!(calls(QWEN_CALL), one("get_weather", args.clone()));
        let reply = format!("<think>The user wants the weather.</think>\nLet me look that up.{QWEN_CALL}");
        let parsed = parse(&reply);
        assert_eq!(parsed.calls.len(), 1);
        assert_eq!(
            parsed.content, "<think>The user wants the weather.</think>\nLet me look that up.",
            "the <tool_call> belongs to the call"
        );
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        let forced_open = format!("The user wants the weather.\n</think>\n\n{QWEN_CALL}");
        assert_eq!(calls(&forced_open), one("get_weather", args));
    }

    #[test]
    fn qwen3_coder_several_calls_in_order() {
        let second = QWEN_CALL.replace("Paris", "Orlando");
        let third = "<tool_call>\n<function=now>\n</function>\n</tool_call>";
        let reply = format!("{QWEN_CALL}\n{second}\n{third}");
        assert_eq!(
            calls(&reply),
            vec![
                ("get_weather".into(), json!({"city": "Paris", "unit": "celsius"})),
                ("get_weather".into(), json!({"city": "Orlando", "unit": "celsius"})),
                ("now".into(), json!({})),
            ]
        );
        assert_eq!(parse(&reply).content, "");
    }

    #[test]
    fn mimo_parameters_written_before_their_function() {
        // vLLM's MiMo-V2-Flash tests: the second call's parameter comes
        // first inside its <tool_call>.
        let reply = "Here is the result:\n<tool_call>\n<function=calculate>\n<parameter=expression>1+1</parameter>\n</function>\n</tool_call>\n<tool_call>\n<parameter=city>Paris</parameter>\n<parameter=unit>C</parameter>\n<function=get_weather>\n<parameter=unit>F</parameter>\n</function>\n</tool_call>";
        assert_eq!(
            calls(reply),
            vec![
                ("calculate".into(), json!({"expression": "1+1"})),
                ("get_weather".into(), json!({"city": "Paris", "unit": "F"})),
            ],
            "the call's own value wins"
        );
        let parsed = parse(reply);
        assert_eq!(parsed.content, "Here is the result:");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        // Only parameters may stand before the function, inside the same
        // <tool_call>; else the call is read as before, without them.
        let prose_between =
            "<tool_call>\n<parameter=city>Paris</parameter>\nthen\n<function=get_weather>\n</function>\n</tool_call>";
        assert_eq!(calls(prose_between), one("get_weather", json!({})));
        let after_a_call = "<tool_call>\n<function=now>\n</function>\n<parameter=city>Paris</parameter>\n<function=get_weather>\n</function>\n</tool_call>";
        assert_eq!(calls(after_a_call), vec![("now".into(), json!({})), ("get_weather".into(), json!({}))]);
    }

    /// Two calls as Seed-OSS's template writes them.
    const SEED_CALLS: &str = "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n</seed:tool_call>\n<seed:tool_call>\n<function=now>\n</function>\n</seed:tool_call>";

    #[test]
    fn seed_oss_values_are_typed_as_vllm_types_them_by_the_schema() {
        // vLLM vllm/tool_parsers/seed_oss_tool_parser.py, convert_param_value:
        // a string parameter keeps its text, quotes and all; an integer,
        // number or boolean is decoded (`True` too), an object or array
        // read as JSON or a Python literal.
        let reply = "<seed:tool_call>\n<function=forecast>\n<parameter=city>\"Barcelona, Spain\"</parameter>\n<parameter=days>3</parameter>\n<parameter=ratio>0.25</parameter>\n<parameter=metric>True</parameter>\n<parameter=options>{'units': 'metric', 'fields': ['rain']}</parameter>\n</function>\n</seed:tool_call>";
        assert_eq!(
            Value::Object(checked(reply)),
            json!({"city": "\"Barcelona, Spain\"", "days": 3, "ratio": 0.25, "metric": true, "options": {"units": "metric", "fields": ["rain"]}})
        );
        let unquoted = reply.replace("\"Barcelona, Spain\"", "Barcelona, Spain");
        assert_eq!(checked(&unquoted)["city"], json!("Barcelona, Spain"));
    }

    #[test]
    fn seed_oss_calls_after_prose_and_after_reasoning() {
        let both = vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))];
        assert_eq!(calls(SEED_CALLS), both);
        assert_eq!(parse(SEED_CALLS).content, "", "the <seed:tool_call> belongs to the call");
        let reply = format!("<seed:think>\nThe weather, then the time.\n</seed:think>\nChecking both.\n{SEED_CALLS}");
        assert_eq!(calls(&reply), both);
        assert_eq!(parse(&reply).content, "<seed:think>\nThe weather, then the time.\n</seed:think>\nChecking both.");
        let typed = "<seed:tool_call>\n<function=forecast>\n<parameter=city>42</parameter>\n<parameter=days>3</parameter>\n<parameter=ratio>0.5</parameter>\n<parameter=metric>true</parameter>\n<parameter=options>{\"a\": [1]}</parameter>\n</function>\n</seed:tool_call>";
        assert_eq!(
            serde_json::Value::Object(checked(typed)),
            json!({"city": "42", "days": 3, "ratio": 0.5, "metric": true, "options": {"a": [1]}})
        );
    }

    #[test]
    fn a_seed_oss_call_in_its_reasoning_or_cut_off_is_not_a_call() {
        let example = format!("<seed:think>I could write {SEED_CALLS} but the answer is known.</seed:think>It is sunny.");
        assert_eq!(calls(&example), vec![], "a complete call inside closed reasoning is reasoning");
        assert_eq!(parse(&example).content, example);
        let cut = "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Par";
        assert_eq!(calls(cut), vec![]);
        assert_eq!(warnings(cut), ["the call to `get_weather` is cut off before its </function>; it is not a call"]);
        no_calls(&[
            "Seed-OSS writes `<seed:tool_call><function=delete_all></function></seed:tool_call>`.",
            "<seed:think><seed:tool_call>",
        ]);
    }

    #[test]
    fn a_value_quoting_markup_keeps_it() {
        let quoting = "<tool_call>\n<function=calculate>\n<parameter=code>\nuse <tool_call> and </parameter> here\n</parameter>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>";
        assert_eq!(calls(quoting), one("calculate", json!({"code": "use <tool_call> and </parameter> here", "x": 1})));
        let nested = "<tool_call>\n<function=calculate>\n<parameter=code>\nsee <tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>\n</parameter>\n</function>\n</tool_call>";
        assert_eq!(
            calls(nested),
            one("calculate", json!({"code": "see <tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>"}))
        );
        assert_eq!(parse(nested).content, "");
        assert!(parse(nested).warnings.is_empty(), "{:?}", parse(nested).warnings);
    }

    #[test]
    fn a_value_quoting_a_whole_call_keeps_it() {
        let example = "<tool_call><function=now></function></tool_call>";
        let reply = format!(
            "<tool_call>\n<function=calculate>\n<parameter=path>\nnotes.md\n</parameter>\n<parameter=code>\nExample: {example}\n</parameter>\n</function>\n</tool_call>"
        );
        assert_eq!(calls(&reply), one("calculate", json!({"path": "notes.md", "code": format!("Example: {example}")})));
        assert_eq!((parse(&reply).content.as_str(), warnings(&reply)), ("", Vec::<String>::new()));
        // A value whose close is left out still ends at the call's end when
        // the next call's parameters close their own.
        let two = "<tool_call>\n<function=now>\n<parameter=zone>\nUTC\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";
        assert_eq!(
            calls(two),
            vec![("now".to_owned(), json!({"zone": "UTC"})), ("get_weather".to_owned(), json!({"city": "Paris"}))]
        );
        // Prose about the format quotes the closes, one or both.
        for text in ["Each call ends with </function>.", "Qwen closes a call with </function> and a value with </parameter>."] {
            let reply =
                format!("<tool_call>\n<function=calculate>\n<parameter=code>\n{text}\n</parameter>\n</function>\n</tool_call>");
            assert_eq!(calls(&reply), one("calculate", json!({"code": text})), "{reply}");
            assert_eq!((parse(&reply).content.as_str(), warnings(&reply)), ("", Vec::<String>::new()), "{reply}");
        }
        // A value that quotes no call ends at the call's end, whatever
        // closes later.
        let later = "<tool_call>\n<function=calculate>\n<parameter=code>\nhello\n</function>\n</tool_call>\nDone. (Values close with </parameter>";
        assert_eq!(calls(later), one("calculate", json!({"code": "hello"})));
        let next_call = "<function=now>\n<param=zone>\nUTC\n</function>\n<function=get_weather>\n<param name=\"city\">Paris</param>\n</function>";
        assert_eq!(
            calls(next_call),
            vec![("now".to_owned(), json!({"zone": "UTC"})), ("get_weather".to_owned(), json!({"city": "Paris"}))]
        );
    }

    #[test]
    fn qwen3_coder_without_the_tool_call_around_it() {
        let reply = "Checking.\n<function=get_weather>\n<parameter=city>\nDallas\n</parameter>\n</function>";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Dallas"})));
        assert_eq!(parse(reply).content, "Checking.");
    }

    #[test]
    fn qwen3_coder_values_are_kept_exactly() {
        let code = "fn main() {\n    let x = a->b; // <b> & \"q\"\n\n    if x < 3 && y > 2 { }\n}\n";
        let reply = format!(
            "<tool_call>\n<function=calculate>\n<parameter=code>\n{code}\n</parameter>\n<parameter=spaced>  two  </parameter>\n</function>\n</tool_call>"
        );
        assert_eq!(calls(&reply), one("calculate", json!({"code": code, "spaced": "  two  "})));
    }

    #[test]
    fn qwen3_coder_values_are_typed_by_the_declaration() {
        let reply = "<tool_call>\n<function=forecast>\n<parameter=city>\n42\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=ratio>\n0.5\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n<parameter=options>\n{\"hourly\": true,\n \"fields\": [\"rain\"]}\n</parameter>\n</function>\n</tool_call>";
        assert_eq!(
            serde_json::Value::Object(checked(reply)),
            json!({"city": "42", "days": 3, "ratio": 0.5, "metric": true, "options": {"hourly": true, "fields": ["rain"]}})
        );
    }

    #[test]
    fn qwen3_coder_closing_tags_left_out_are_repaired() {
        let reply =
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=unit>\ncelsius\n</function>\n</tool_call>";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris", "unit": "celsius"})));
        assert!(warnings(reply).iter().any(|w| w == "repaired: </parameter> missing after `city`"), "{:?}", warnings(reply));
        let no_function_close = "<tool_call>\n<function=now>\n<parameter=zone>\nUTC\n</parameter>\n</tool_call>";
        assert_eq!(calls(no_function_close), one("now", json!({"zone": "UTC"})));
        assert_eq!(parse(no_function_close).content, "");
    }

    #[test]
    fn a_call_stopped_at_openhands_stop_word_is_whole() {
        for end in ["", "\n", "\n</", "\n</function"] {
            let reply = format!(
                "I will check.\n\n<function=get_weather>\n<parameter=city>Paris</parameter>\n<parameter=unit>\nC\n</parameter>{end}"
            );
            assert_eq!(calls(&reply), one("get_weather", json!({"city": "Paris", "unit": "C"})), "{reply}");
            assert_eq!(parse(&reply).content, "I will check.", "{reply}");
        }
        // Stopped before any parameter closed, inside a `<tool_call>` (the
        // model's own format, cut off), or inside a tag that is not the
        // close, it is cut off.
        for reply in [
            "<function=now>\n",
            "<function=get_weather>\n<parameter=city>Paris",
            "<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n",
            "<function=get_weather>\n<parameter=city>Paris</parameter>\n<",
        ] {
            assert_eq!(calls(reply), vec![], "{reply}");
        }
    }

    #[test]
    fn a_cut_off_function_call_is_a_warning_not_a_call() {
        for cut in [80, 60, 45, 30, 14] {
            let reply = format!("Let me check. {}", &QWEN_CALL[..cut]);
            let parsed = parse(&reply);
            assert!(parsed.calls.is_empty(), "{reply}");
            let cut_off = |w: &str| w.ends_with("it is not a call") && (w.contains("cut off") || w.contains("not closed"));
            assert!(parsed.warnings.iter().any(|w| cut_off(&w.message)), "{reply}: {:?}", parsed.warnings);
        }
        let complete_then_cut = format!("{QWEN_CALL}\n<tool_call>\n<function=now>\n<parameter=zone>\nUT");
        assert_eq!(calls(&complete_then_cut).len(), 1, "the complete call stays");
        assert_eq!(calls("<function=get_weather>{\"city\": \"Paris\"}"), vec![], "JSON without </function>");
    }

    #[test]
    fn function_markers_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "Qwen3-Coder writes <function=NAME> tags, each argument in <parameter=KEY> and </parameter>.",
            "Call it as `<function=delete_all><parameter=path>/</parameter></function>` in the template.",
            "Even a declared one: `<function=get_weather><parameter=city>Paris</parameter></function>`.",
            "```xml\n<function=delete_all>\n<parameter=path>\n/\n</parameter>\n</function>\n```",
            "I will use <function=get_weather> now.",
            "<think><function=get_weather><parameter=city>Paris</parameter></function></think>Done.",
        ]);
        let fenced = "```xml\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n```";
        assert_eq!(calls(fenced).len(), 1, "a declared tool's call in a fenced block counts, as fenced JSON does");
    }

    #[test]
    fn qwen3_coder_spellings_models_drift_into() {
        // `<param=KEY>` for `<parameter=KEY>`, as Qwen3.5 and 3.6 write it
        // at times (ml-explore/mlx-lm PR #1881 and sgl-project/sglang PR
        // #27337 collect such drift); quoted names as in
        // openvinotoolkit/model_server issue #4487.
        let param = "<tool_call>\n<function=get_weather>\n<param=city>\nParis\n</param>\n<param=days>\n3\n</param>\n</function>\n</tool_call>";
        assert_eq!(calls(param), one("get_weather", json!({"city": "Paris", "days": 3})));
        assert_eq!(parse(param).content, "");
        let quoted = "<tool_call>\n<function=\"now\">\n<parameter=\"zone\">\nUTC\n</parameter>\n</function>\n</tool_call>";
        assert_eq!(calls(quoted), one("now", json!({"zone": "UTC"})));
        let mixed_close = "<function=now>\n<param=zone>\nUTC\n</parameter>\n</function>";
        assert_eq!(calls(mixed_close), one("now", json!({"zone": "UTC\n</parameter>"})), "each spelling closes its own");
    }

    #[test]
    fn doubao_seed_parameters_named_and_typed_by_attribute() {
        // A real Doubao Seed 2.0 reply (sipeed/picoclaw issue 3153).
        let reply = "<seed:tool_call>\n  <function name=\"calculate\">\n    <parameter name=\"action\" string=\"true\">run</parameter>\n    <parameter name=\"command\" string=\"true\">ls -la /tmp/虎嗅网/</parameter>\n    <parameter name=\"code\" string=\"true\">42</parameter>\n    <parameter name=\"n\" string=\"false\">42</parameter>\n  </function>\n</seed:tool_call>";
        assert_eq!(
            calls(reply),
            one("calculate", json!({"action": "run", "command": "ls -la /tmp/虎嗅网/", "code": "42", "n": 42})),
            "text kept as text, the rest typed"
        );
        assert_eq!(parse(reply).content, "");
        // Another attribute is no parameter tag.
        let other = "<function name=\"calculate\"><parameter name=\"a\" type=\"int\">1</parameter></function>";
        assert_eq!(calls(other), vec![]);
    }

    #[test]
    fn minicpm5_param_tags_with_cdata_values() {
        // vLLM tests/tool_parsers/test_minicpm5xml_tool_parser.py: text
        // around the calls, CDATA values, typed values.
        let two = "Intro before.\n<function name=\"get_weather\"><param name=\"city\">上海</param><param name=\"date\">2024-06-27</param></function>\nTXT\n<function name=\"calculate\"><param name=\"nums\">[7, 8, 9]</param><param name=\"exact\">false</param></function>\nOutro after.";
        assert_eq!(
            calls(two),
            vec![
                ("get_weather".into(), json!({"city": "上海", "date": "2024-06-27"})),
                ("calculate".into(), json!({"nums": [7, 8, 9], "exact": false})),
            ]
        );
        assert_eq!(parse(two).content, "Intro before.\n\nTXT\n\nOutro after.");
        let cdata = "<function name=\"calculate\"><param name=\"code\"><![CDATA[if a < b { s = \"</param>\" }\n]]></param><param name=\"n\">1</param></function>";
        assert_eq!(
            calls(cdata),
            one("calculate", json!({"code": "if a < b { s = \"</param>\" }\n", "n": 1})),
            "a </param> inside CDATA is text"
        );
        let cut = "<function name=\"get_weather\"><param name=\"city\">北京</param>";
        assert_eq!(calls(cut), vec![]);
        no_calls(&[
            "MiniCPM writes `<function name=\"delete_all\"><param name=\"path\">/</param></function>`.",
            "<think><function name=\"now\"><param name=\"zone\">UTC</param></function></think>",
        ]);
    }

    #[test]
    fn function_tags_with_json_by_equals_or_by_attribute() {
        assert_eq!(calls("<function=get_weather>{\"city\": \"Kyiv\"}</function>"), one("get_weather", json!({"city": "Kyiv"})));
        assert_eq!(
            calls("<function=now>{\"note\": \"ends with </function> inside\"}</function>"),
            one("now", json!({"note": "ends with </function> inside"}))
        );
        assert_eq!(
            calls("<function name=\"get_weather\">{\"city\": \"Rome\"}</function>"),
            one("get_weather", json!({"city": "Rome"}))
        );
        assert_eq!(calls("<function name='now'></function>"), one("now", json!({})));
    }

    #[test]
    fn hermes_tool_call_with_a_function_name_tag() {
        let reply = "Sure.\n<tool_call>\n<function>get_weather</function>\n{\"city\": \"Lima\"}\n</tool_call>";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Lima"})));
        assert_eq!(parse(reply).content, "Sure.");
        assert_eq!(calls("<tool_call><function>now</function></tool_call>"), one("now", json!({})));
        assert_eq!(calls("The <function>printf</function> function {is} standard."), vec![], "only inside <tool_call>");
    }
}
