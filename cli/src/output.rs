//! Where a command's words go, and how they are made safe to show.
//!
//! Results go to stdout. A write there fails with [`StdoutClosed`] once the
//! reader has gone (`toolhost inspect --json x.wasm | head -1`), and `main`
//! ends the command quietly on it. Notes go to stderr; a failed write there
//! is ignored, as there is nowhere left to report it.
//!
//! Everything shown to a person passes through [`printable`]: plugins and
//! plugin directories choose descriptions, messages and file names. Tool
//! output and prompts are data: written raw when stdout is a pipe or a file
//! (so `toolhost call x > out` keeps the exact bytes) and escaped, lines
//! kept, when it is a terminal.

use toolhost::{printable, printable_lines, to_json_line, to_json_pretty};
use serde::Serialize;
use std::fmt::Display;
use std::io::{IsTerminal, Write};

/// Standard output was closed by its reader; the command stops quietly.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
pub(super) struct StdoutClosed;

/// One line for a person, escaped.
pub(super) fn line(text: impl Display) -> anyhow::Result<()> {
    write_stdout(&printable(&text.to_string()))
}

/// Rows of cells in aligned columns, the first row a header. Cells are
/// escaped before they are measured, so columns line up.
pub(super) fn table<const N: usize>(rows: &[[String; N]]) -> anyhow::Result<()> {
    let rows: Vec<Vec<String>> =
        rows.iter().map(|row| row.iter().map(|cell| printable(cell).into_owned()).collect()).collect();
    let widths: Vec<usize> =
        (0..N).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        line(cells.join("  ").trim_end())?;
    }
    Ok(())
}

/// Pretty JSON, with no control, bidirectional or invisible character raw.
pub(super) fn json(value: &(impl Serialize + ?Sized)) -> anyhow::Result<()> {
    write_stdout(&to_json_pretty(value)?)
}

/// One line of JSON (JSON-lines output), escaped as [`json`] is.
pub(super) fn json_line(value: &(impl Serialize + ?Sized)) -> anyhow::Result<()> {
    write_stdout(&to_json_line(value)?)
}

/// Data a tool or a template produced: raw unless stdout is a terminal.
pub(super) fn data(text: &str) -> anyhow::Result<()> {
    if std::io::stdout().is_terminal() { write_stdout(&printable_lines(text)) } else { write_stdout(text) }
}

/// One line on stderr, escaped.
pub(super) fn note(text: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "{}", printable(&text.to_string()));
}

/// Several lines on stderr (an error message, a tool's error), escaped
/// but for newlines and tabs.
pub(super) fn note_lines(text: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "{}", printable_lines(&text.to_string()));
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("writing to standard output")),
        Ok(()) => Ok(()),
    }
}
