//! What a plugin returns reaches the model as it returned it, and a
//! person only through `printable`: terminal control sequences, bidi
//! overrides and invisible characters are shown, never obeyed.

use crate::built::ESCAPES;
use crate::support::TestHost;
use toolhost::{Status, text::printable};

/// A character a terminal would obey or a reader could not see.
fn hidden_or_obeyed(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{e0000}'..='\u{e007f}')
}

#[tokio::test]
async fn a_plugins_terminal_escapes_are_kept_for_the_model_and_shown_escaped_to_people() {
    let host = TestHost::new(&[ESCAPES], "").await;
    for (tool, status) in [("shout", Status::Success), ("fail_loudly", Status::Error)] {
        let outcome = host.call(tool, serde_json::json!({})).await;
        assert_eq!(outcome.status, status, "{tool}: {:?}", outcome.output);
        assert!(outcome.output.contains("\x1b[2J"), "{tool}: the text is the plugin's own: {:?}", outcome.output);
        let shown = printable(&outcome.output);
        assert!(!shown.chars().any(hidden_or_obeyed), "{tool}: {shown:?}");
        assert!(shown.contains("\\e[2J") && shown.contains("\\e]52;"), "{tool}: each sequence is shown: {shown:?}");
    }
}
