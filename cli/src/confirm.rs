//! A yes-or-no question to the person at the terminal.

use super::output;
use anyhow::Context;
use std::fmt::Display;
use std::io::IsTerminal;

/// Ask `question` on the terminal, `[y/N]`; false without one to ask on.
pub(super) fn confirm(question: impl Display) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    output::alert(format_args!("{question} [y/N]"));
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).context("reading the answer")?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}
