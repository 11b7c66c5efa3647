//! JSON text as peers write it. JSON's grammar allows a string to escape
//! half of a UTF-16 surrogate pair alone (`"\ud83d"`), and JavaScript's
//! `JSON.stringify` and Python's `json.dumps` write one for a string cut
//! in the middle of an emoji; serde_json refuses such a string, since no
//! Rust `String` holds it. Before a peer's message is parsed, each lone
//! half is replaced with U+FFFD, as a lossy UTF-16 decoder does, so the
//! message is read, not dropped unanswered.

use std::borrow::Cow;

/// What stands for a lone surrogate: U+FFFD REPLACEMENT CHARACTER.
const REPLACEMENT: &[u8] = b"\\ufffd";
/// An escape of one UTF-16 unit: `\u` and four hex digits.
const UNIT_ESCAPE_BYTES: usize = 6;

/// `json` with every `\uXXXX` escape of a lone surrogate (a high one not
/// followed by an escaped low one, or a low one not after a high one)
/// replaced with `\ufffd`; borrowed when there is none. Escapes are read
/// wherever a backslash starts one, in strings or not: outside a string a
/// backslash is no JSON anyway. Linear in `json`'s length.
pub fn lone_surrogates_replaced(json: &[u8]) -> Cow<'_, [u8]> {
    // Most messages hold no `\uD…` escape at all: one fast pass says so.
    let any = memchr::memmem::find_iter(json, b"\\u").any(|at| matches!(json.get(at + 2), Some(b'd' | b'D')));
    if !any {
        return Cow::Borrowed(json);
    }
    let mut replaced: Option<Vec<u8>> = None;
    let (mut copied, mut at) = (0, 0);
    while let Some(offset) = json.get(at..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let escape = at + offset;
        if json.get(escape + 1) != Some(&b'u') {
            at = escape + 2; // `\\`, `\"` and the others: one escaped byte
            continue;
        }
        at = escape + UNIT_ESCAPE_BYTES;
        let lone = match unit(json, escape) {
            Some(0xD800..=0xDBFF) if matches!(unit(json, at), Some(0xDC00..=0xDFFF)) => {
                at += UNIT_ESCAPE_BYTES; // a whole pair
                false
            }
            Some(0xD800..=0xDFFF) => true,
            _ => false,
        };
        if lone {
            let out = replaced.get_or_insert_with(|| Vec::with_capacity(json.len()));
            out.extend_from_slice(&json[copied..escape]);
            out.extend_from_slice(REPLACEMENT);
            copied = at;
        }
    }
    match replaced {
        Some(mut out) => {
            out.extend_from_slice(&json[copied.min(json.len())..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(json),
    }
}

/// The UTF-16 unit escaped at `json[at..]` as `\uXXXX`, if one is there.
fn unit(json: &[u8], at: usize) -> Option<u16> {
    let escape = json.get(at..at + UNIT_ESCAPE_BYTES)?;
    let digits = escape.strip_prefix(b"\\u")?;
    // `from_str_radix` takes a sign; JSON's four digits have none.
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(json: &str) -> String {
        String::from_utf8(lone_surrogates_replaced(json.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn a_lone_half_of_a_pair_is_replaced_and_the_message_then_parses() {
        let json = r#"{"text":"cut \ud83d here, \ude00 there, \uD83D"}"#;
        assert!(serde_json::from_str::<serde_json::Value>(json).is_err(), "serde_json refuses a lone surrogate");
        let fixed = replaced(json);
        assert_eq!(fixed, r#"{"text":"cut \ufffd here, \ufffd there, \ufffd"}"#);
        let value: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(value["text"], "cut \u{fffd} here, \u{fffd} there, \u{fffd}");
    }

    #[test]
    fn whole_pairs_other_escapes_and_escaped_backslashes_are_left_alone() {
        for json in [
            r#"{"emoji":"\ud83d\ude00","upper":"\uD83D\uDE00"}"#,
            r#"{"path":"C:\\ud83d\\temp","quote":"\"\ud83d\ude00\"","bmp":"\u00e9\ud7ff\ue000"}"#,
            r#"{"plain":"no escapes"}"#,
            r#"{"short":"\ud8"}"#,
            r#"{"end":"\"#,
        ] {
            assert!(matches!(lone_surrogates_replaced(json.as_bytes()), Cow::Borrowed(_)), "{json}");
        }
        // A high half, then a low one only after an escaped backslash: no pair.
        assert_eq!(replaced(r#""\ud83d\\ude00""#), r#""\ufffd\\ude00""#);
        // Cut off after a lone half, in an escape or after a backslash.
        assert_eq!(replaced(r#""\ud800\u12"#), r#""\ufffd\u12"#);
        assert_eq!(replaced(r#""\udc00\"#), r#""\ufffd\"#);
        // Two high halves: the first is lone, the second pairs.
        assert_eq!(replaced(r#""\ud83d\ud83d\ude00""#), r#""\ufffd\ud83d\ude00""#);
    }

    #[test]
    fn it_reads_in_time_linear_in_the_length() {
        let json = format!("\"{}\"", r"\ud800".repeat(200_000));
        let fixed = replaced(&json);
        assert_eq!(fixed.matches(r"\ufffd").count(), 200_000);
        assert!(serde_json::from_str::<String>(&fixed).is_ok());
    }
}
