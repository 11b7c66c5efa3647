//! An error and its causes as one line, each said once. Many errors print
//! their cause in their own message and also return it as their source
//! (an I/O error under a "cannot read FILE" error, say); printing every
//! link of such a chain would say "No such file or directory (os error 2)"
//! twice.

use std::error::Error;

/// `error`'s message, then each cause's that is not already in the text,
/// joined by ": ".
pub fn error_chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        let message = error.to_string();
        if !message.is_empty() && !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        cause = error.source();
    }
    text
}

/// The message a panic was raised with, or `None` for a payload that is
/// not text.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> Option<&str> {
    panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str))
}

/// `work`'s value, or the message of its panic.
pub fn caught<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .map_err(|panic| panic_message(&*panic).unwrap_or("a panic without a message").to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read /x: {source}")]
    struct Repeats {
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("loading plugins")]
    struct Context {
        #[source]
        source: Repeats,
    }

    #[test]
    fn a_cause_already_in_the_message_is_said_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let said = io.to_string();
        let error = Context { source: Repeats { source: io } };
        assert_eq!(error_chain(&error), format!("loading plugins: cannot read /x: {said}"));
        assert_eq!(error_chain(&error).matches(&said).count(), 1);
    }

    #[test]
    fn causes_not_in_the_message_are_all_kept() {
        let error = anyhow::anyhow!("innermost").context("middle").context("outer");
        assert_eq!(error_chain(&*error), "outer: middle: innermost");
    }
}
