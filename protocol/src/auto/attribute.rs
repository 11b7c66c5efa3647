//! A markup tag's attributes as the chat templates write them,
//! `key="value"`, the values escaped as XML escapes them (`&quot;`,
//! `&amp;`, `&lt;`, `&gt;`, `&apos;`): Kimi K3's headers, Cohere's cofl
//! tags.

use std::borrow::Cow;

/// The escapes a template writes, and what each stands for.
const ENTITIES: [(&str, char); 5] = [("&quot;", '"'), ("&amp;", '&'), ("&lt;", '<'), ("&gt;", '>'), ("&apos;", '\'')];

/// The value of `key="…"` among `attributes`, unescaped.
pub(super) fn attribute(attributes: &str, key: &str) -> Option<String> {
    let mut rest = attributes;
    while let Some(i) = rest.find(key) {
        let before_ok = i == 0 || rest.as_bytes()[i - 1].is_ascii_whitespace();
        let after = &rest[i + key.len()..];
        if before_ok && let Some(value) = after.strip_prefix("=\"") {
            let value = &value[..value.find('"')?];
            return Some(unescaped(value).into_owned());
        }
        rest = after;
    }
    None
}

/// `text` with the escapes of [`ENTITIES`] replaced, in one pass (so that
/// `&amp;lt;` is `&lt;`); an `&` that starts none of them stays.
pub(super) fn unescaped(text: &str) -> Cow<'_, str> {
    if !text.contains('&') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        match ENTITIES.iter().find(|(entity, _)| tail.starts_with(entity)) {
            Some((entity, c)) => {
                out.push(*c);
                rest = &tail[entity.len()..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::{attribute, unescaped};

    #[test]
    fn attributes_are_found_by_whole_key_and_unescaped() {
        let tag = "id=\"0\" tool_name=\"x\" name=\"search &quot;web&quot; &amp;&lt;b&gt;\"";
        assert_eq!(attribute(tag, "name").as_deref(), Some("search \"web\" &<b>"));
        assert_eq!(attribute(tag, "id").as_deref(), Some("0"));
        assert_eq!(attribute(tag, "type"), None);
        assert_eq!(attribute("name=\"cut", "name"), None, "an unterminated value");
        assert_eq!(unescaped("&amp;lt; && &x;"), "&lt; && &x;", "one pass; a bare & stays");
    }
}
