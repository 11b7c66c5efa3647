//! One call written as `<invoke name="NAME">`, a
//! `<parameter name="KEY">value</parameter>` for each argument, and
//! `</invoke>`: the markup of MiniMax-M2 ([`MINIMAX`]), of DeepSeek V3.2
//! and V4 ([`DSML`], its tags behind `｜DSML｜`), of GigaChat 3.5 ([`GCML`],
//! the same behind `｜GCML｜`) and of Step3
//! ([`STEPTML`], behind `steptml:`), and of Muse Glimmer ([`ATEM`], behind
//! `atem:`). The families differ in the section
//! around the calls (read by their own modules) and in how a value is
//! written ([`Values`]).

use super::super::ParsedCall;
use super::super::markup_value;
use super::super::scan::{Collector, Forward};
use super::function_tag::{quoted_name, tag_end};
use super::section::{self, CallTokens};
use super::{Scope, attribute_name, object_at};
use serde_json::{Map, Value};

/// How a dialect writes an argument's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Values {
    /// Raw text, trimmed as the engines trim it (MiniMax), typed as
    /// [`markup_value`] types it; the check step types it by the declared
    /// parameter.
    Trimmed,
    /// Raw text kept as written, white space and all (Step3: vLLM keeps it
    /// for a string parameter), typed as [`markup_value`] types it when
    /// nothing surrounds it.
    Untrimmed,
    /// Tagged by the model: `string="true"` keeps the text exactly,
    /// `string="false"` is JSON (DeepSeek's DSML, GigaChat's GCML).
    StringAttribute,
}

/// The tags of one dialect.
#[derive(Debug)]
pub(crate) struct Dialect {
    /// Opens a call, up to its name's value: `<invoke name=`.
    pub(crate) invoke_open: &'static str,
    /// Closes a call.
    pub(crate) invoke_close: &'static str,
    /// Opens an argument, up to its key's value: `<parameter name=`.
    pub(crate) parameter_open: &'static str,
    /// Closes an argument.
    pub(crate) parameter_close: &'static str,
    /// How values are written.
    pub(crate) values: Values,
}

impl Dialect {
    /// Every tag of the dialect.
    pub(crate) const fn markers(&self) -> [&'static str; 4] {
        [self.invoke_open, self.invoke_close, self.parameter_open, self.parameter_close]
    }

    /// How long the call's closing tag at the start of `rest` is, if one
    /// stands there: the whole tag, or one whose `invoke` is cut short to at
    /// least `inv` (`</｜DSML｜inv>`, as quantized DeepSeek V4 models write
    /// it; mlx-lm reads it).
    fn invoke_close_at(&self, rest: &str) -> Option<usize> {
        if rest.starts_with(self.invoke_close) {
            return Some(self.invoke_close.len());
        }
        let before = self.invoke_close.strip_suffix("invoke>")?;
        let name = rest.strip_prefix(before)?.strip_prefix("inv")?;
        let kept = name.find('>').filter(|&end| "oke".starts_with(&name[..end]))?;
        Some(before.len() + "inv".len() + kept + 1)
    }
}

/// MiniMax-M2's tags.
pub(crate) const MINIMAX: Dialect = Dialect {
    invoke_open: "<invoke name=",
    invoke_close: "</invoke>",
    parameter_open: "<parameter name=",
    parameter_close: "</parameter>",
    values: Values::Trimmed,
};

/// DeepSeek V3.2's and V4's tags.
pub(crate) const DSML: Dialect = Dialect {
    invoke_open: "<｜DSML｜invoke name=",
    invoke_close: "</｜DSML｜invoke>",
    parameter_open: "<｜DSML｜parameter name=",
    parameter_close: "</｜DSML｜parameter>",
    values: Values::StringAttribute,
};

/// DeepSeek V4.1's tags: V4's with a space after `｜DSML｜`.
pub(crate) const DSML_SPACED: Dialect = Dialect {
    invoke_open: "<｜DSML｜ invoke name=",
    invoke_close: "</｜DSML｜ invoke>",
    parameter_open: "<｜DSML｜ parameter name=",
    parameter_close: "</｜DSML｜ parameter>",
    values: Values::StringAttribute,
};

/// GigaChat 3.5's tags: DSML's, behind `｜GCML｜`.
pub(crate) const GCML: Dialect = Dialect {
    invoke_open: "<｜GCML｜invoke name=",
    invoke_close: "</｜GCML｜invoke>",
    parameter_open: "<｜GCML｜parameter name=",
    parameter_close: "</｜GCML｜parameter>",
    values: Values::StringAttribute,
};

/// Step3's tags.
pub(crate) const STEPTML: Dialect = Dialect {
    invoke_open: "<steptml:invoke name=",
    invoke_close: "</steptml:invoke>",
    parameter_open: "<steptml:parameter name=",
    parameter_close: "</steptml:parameter>",
    values: Values::Untrimmed,
};

/// Muse Glimmer's ATEM tags.
pub(crate) const ATEM: Dialect = Dialect {
    invoke_open: "<atem:invoke name=",
    invoke_close: "</atem:invoke>",
    parameter_open: "<atem:parameter name=",
    parameter_close: "</atem:parameter>",
    values: Values::Trimmed,
};

/// The attribute that tags a DSML value as text or JSON.
const STRING_ATTRIBUTE: &str = "string=";

/// Reads the calls of one dialect in a reply; its searches stay linear
/// over the whole reply however many calls it holds.
pub(crate) struct Invoke<'a> {
    dialect: &'static Dialect,
    parameter_close: Forward<'a>,
    parameter_open: Forward<'a>,
    invoke_close: Forward<'a>,
}

impl<'a> Invoke<'a> {
    pub(crate) fn new(reply: &'a str, dialect: &'static Dialect) -> Self {
        Invoke {
            dialect,
            parameter_close: Forward::new(reply, dialect.parameter_close),
            parameter_open: Forward::new(reply, dialect.parameter_open),
            invoke_close: Forward::new(reply, dialect.invoke_close),
        }
    }

    /// Whether it reads `dialect`'s calls.
    pub(crate) fn reads(&self, dialect: &Dialect) -> bool {
        std::ptr::eq(self.dialect, dialect)
    }

    /// Whether a call starts at the start of `rest`.
    pub(crate) fn opens_call(&self, rest: &str) -> bool {
        rest.starts_with(self.dialect.invoke_open)
    }

    /// The call whose opening tag is at `at`, if it is one, and where
    /// reading it stopped.
    pub(crate) fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize) {
        let reply = scope.reply;
        let Some((name, _, p)) = attributes(reply, at + self.dialect.invoke_open.len()) else {
            return (None, self.cut_off_or(reply, at, out, "an invoke tag does not name a tool"));
        };
        let Some(name) = attribute_name(name) else {
            out.warn(at, format!("`{}` is not a tool's name; it is not a call", name.trim()));
            return (None, p);
        };
        let body_at = p + (reply[p..].len() - reply[p..].trim_start().len());
        let read = if reply[body_at..].starts_with('{') {
            self.json_body(reply, at, body_at, name, out)
        } else {
            self.parameters(reply, at, p, name, out)
        };
        let (arguments, p) = match read {
            Ok(read) => read,
            Err(stopped) => return (None, stopped),
        };
        if !scope.markup_calls(at, name) {
            return (None, p);
        }
        (Some(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: at..p }), p)
    }

    /// The arguments of the call to `name` at `at`, one parameter tag each
    /// from `p` up to the call's closing tag, and where that tag ends; else,
    /// warned of, where reading stopped.
    fn parameters(
        &mut self,
        reply: &str,
        at: usize,
        mut p: usize,
        name: &str,
        out: &mut Collector<'_>,
    ) -> Result<(Map<String, Value>, usize), usize> {
        let dialect = self.dialect;
        let mut arguments = Map::new();
        loop {
            p += reply[p..].len() - reply[p..].trim_start().len();
            let rest = &reply[p..];
            if let Some(close) = dialect.invoke_close_at(rest) {
                return Ok((arguments, p + close));
            }
            let key = rest.strip_prefix(dialect.parameter_open).and_then(|_| attributes(reply, p + dialect.parameter_open.len()));
            let Some((key, is_string, value_start)) =
                key.and_then(|(key, string, after)| Some((attribute_name(key)?, string, after)))
            else {
                let what =
                    format!("expected {}\"KEY\"> or {} in the call to `{name}`", dialect.parameter_open, dialect.invoke_close);
                return Err(self.cut_off_or(reply, at, out, &what));
            };
            let Some(close) = self.value_end(value_start) else {
                let what = format!("`{key}` in the call to `{name}` has no {}", dialect.parameter_close);
                return Err(self.cut_off_or(reply, at, out, &what));
            };
            arguments.insert(key.to_owned(), value(dialect.values, is_string, &reply[value_start..close]));
            p = close + dialect.parameter_close.len();
        }
    }

    /// The arguments of the call to `name` at `at` written as one JSON
    /// object at `body_at` instead of parameter tags (SGLang's DeepSeek V3.2
    /// detector reads both), and where the call's closing tag after it ends;
    /// else, warned of, where reading stopped.
    fn json_body(
        &mut self,
        reply: &str,
        at: usize,
        body_at: usize,
        name: &str,
        out: &mut Collector<'_>,
    ) -> Result<(Map<String, Value>, usize), usize> {
        let close = self.dialect.invoke_close;
        let Some((arguments, after)) = object_at(reply, body_at, out) else {
            return Err(self.invoke_close.next(body_at).map_or(reply.len(), |c| c + close.len()));
        };
        let close_at = after + (reply[after..].len() - reply[after..].trim_start().len());
        let Some(close_len) = self.dialect.invoke_close_at(&reply[close_at..]) else {
            return Err(self.cut_off_or(reply, at, out, &format!("text follows the arguments of `{name}` before {close}")));
        };
        Ok((arguments, close_at + close_len))
    }

    /// Where the value starting at `start` ends: at the last closing tag
    /// before the next argument or the call's end, so that a value quoting
    /// markup (`</parameter>`) keeps it.
    fn value_end(&mut self, start: usize) -> Option<usize> {
        let structural = [self.parameter_open.next(start), self.invoke_close.next(start)].into_iter().flatten().min();
        let limit = structural.unwrap_or(usize::MAX);
        let mut close = self.parameter_close.next(start);
        while let Some(later) = close.and_then(|c| self.parameter_close.next(c + 1)).filter(|&c| c < limit) {
            close = Some(later);
        }
        close
    }

    /// A call that cannot be read, warned of: where reading stopped.
    fn cut_off_or(&self, reply: &str, at: usize, out: &mut Collector<'_>, what: &str) -> usize {
        section::unreadable(reply, at, self.dialect.invoke_close, what, out)
    }
}

/// The calls of one dialect in a section that one of `ends` closes
/// (MiniMax's, ATEM's), read by [`section`].
pub(crate) struct InvokeSection<'a> {
    pub(crate) invoke: Invoke<'a>,
    ends: &'static [&'static str],
}

impl<'a> InvokeSection<'a> {
    pub(crate) fn new(reply: &'a str, dialect: &'static Dialect, ends: &'static [&'static str]) -> Self {
        InvokeSection { invoke: Invoke::new(reply, dialect), ends }
    }
}

impl CallTokens for InvokeSection<'_> {
    fn section_end(&self, rest: &str) -> Option<usize> {
        self.ends.iter().find(|end| rest.starts_with(*end)).map(|end| end.len())
    }

    fn opens_call(&self, rest: &str) -> bool {
        self.invoke.opens_call(rest)
    }

    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize) {
        self.invoke.call(scope, at, out)
    }
}

/// An argument's value as the dialect writes it. A DSML value tagged as
/// JSON that does not parse stays text, for the check step to judge.
fn value(values: Values, is_string: Option<bool>, raw: &str) -> Value {
    match (values, is_string) {
        (Values::Trimmed, _) => markup_value::decode(raw.trim()),
        (Values::Untrimmed, _) => markup_value::decode(raw),
        (Values::StringAttribute, Some(false)) => markup_value::tagged_json(raw),
        (Values::StringAttribute, _) => Value::String(raw.to_owned()),
    }
}

/// The attributes of a tag whose name value starts at `start`: the name,
/// quoted as the templates write it or not (the engines strip the quotes
/// if any), the `string="true|false"` tag if there is one, and where the
/// tag's body starts.
fn attributes(reply: &str, start: usize) -> Option<(&str, Option<bool>, usize)> {
    if let Some((name, body)) = quoted_name(reply, start) {
        return Some((name, None, body));
    }
    let close = tag_end(reply, start)?;
    let text = &reply[start..close];
    let Some((name, rest)) = text.split_once(' ').filter(|(_, rest)| rest.trim_start().starts_with(STRING_ATTRIBUTE)) else {
        return Some((text, None, close + 1));
    };
    let tag = rest.trim().strip_prefix(STRING_ATTRIBUTE)?.trim_matches(['"', '\'']);
    let is_string = match tag {
        "true" => true,
        "false" => false,
        _ => return None,
    };
    Some((name.trim_matches(['"', '\'']), Some(is_string), close + 1))
}
