//! Suggestions for a misspelt tool name, for the message a model reads.

/// The message for an unknown tool, naming the closest of `known`:
/// "no tool named `x`; did you mean `y`, `z`?"
pub fn unknown_tool(name: &str, known: &[&str]) -> String {
    format!("no tool named `{name}` is loaded{}", did_you_mean(name, known))
}

/// `; did you mean `a`, `b`?` naming up to three of `known` closest to
/// `name` (within half its length in edits), or nothing.
pub fn did_you_mean(name: &str, known: &[&str]) -> String {
    let mut ranked: Vec<(usize, &str)> = known.iter().map(|k| (edit_distance(name, k), *k)).collect();
    ranked.sort();
    let close: Vec<String> =
        ranked.iter().filter(|(d, k)| *d <= k.len().max(name.len()) / 2).take(3).map(|(_, k)| format!("`{k}`")).collect();
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
    }
}
