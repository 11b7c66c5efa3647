//! Suggestions for a misspelt tool name, for the message a model reads.

use std::borrow::Cow;

/// The message for an unknown tool, naming the closest of `known`:
/// "no tool named `x`; did you mean `y`, `z`?"
pub fn unknown_tool(name: &str, known: &[&str]) -> String {
    format!("no tool named `{}` is loaded{}", shown_name(name), did_you_mean(name, known))
}

/// A tool's name as an answer or a log shows it: a name as long as a
/// request (a hostile client's), which no declared tool has, is cut to its
/// first [`SHOWN_NAME_CHARS`] characters and its size.
pub fn shown_name(name: &str) -> Cow<'_, str> {
    match name.char_indices().nth(SHOWN_NAME_CHARS) {
        Some((cut, _)) => Cow::Owned(format!("{}… ({} bytes)", &name[..cut], name.len())),
        None => Cow::Borrowed(name),
    }
}

/// The most characters of a name [`shown_name`] shows.
pub const SHOWN_NAME_CHARS: usize = 128;

/// `; did you mean `a`, `b`?` naming up to three of `known` closest to
/// `name` (within half its length in edits), or nothing. A name whose
/// length alone puts it further (edits are at least the difference in
/// length) is not compared: a name of megabytes cost seconds a call.
pub fn did_you_mean(name: &str, known: &[&str]) -> String {
    let name_chars = name.chars().count();
    let within = |k: &str| k.chars().count().max(name_chars) / 2;
    let mut ranked: Vec<(usize, &str)> = known
        .iter()
        .filter(|k| name_chars.abs_diff(k.chars().count()) <= within(k))
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, k)| *d <= within(k))
        .collect();
    ranked.sort();
    let close: Vec<String> = ranked.iter().take(3).map(|(_, k)| format!("`{k}`")).collect();
    if close.is_empty() { String::new() } else { format!("; did you mean {}?", close.join(", ")) }
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tools_suggest_close_names() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(
            unknown_tool("read_fiel", &["read_file", "write_file", "calculate"]),
            "no tool named `read_fiel` is loaded; did you mean `read_file`?"
        );
        assert_eq!(
            unknown_tool("get_time", &["current_time", "set_time", "get_tim"]),
            "no tool named `get_time` is loaded; did you mean `get_tim`, `set_time`, `current_time`?"
        );
        assert_eq!(unknown_tool("zzz", &["calculate"]), "no tool named `zzz` is loaded");
        assert_eq!(unknown_tool("café", &["cafe"]), "no tool named `café` is loaded; did you mean `cafe`?");
    }

    #[test]
    fn a_name_of_megabytes_is_neither_echoed_whole_nor_compared() {
        let long = "é".repeat(1 << 20);
        let message = unknown_tool(&long, &["read_file", &"é".repeat(10)]);
        assert!(message.len() < 400 && message.ends_with("(2097152 bytes)` is loaded"), "{message:.300}");
    }
}
