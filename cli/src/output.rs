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
//!
//! `--quiet` silences notes (progress, warnings, summaries) but never
//! [`alert`]s: errors, questions, and a failed call's output. `--color`
//! decides whether stderr gets escapes ([`color_on_stderr`]).

use serde::Serialize;
use std::fmt::Display;
use std::io::{IsTerminal, Write};
use std::sync::OnceLock;
use toolhost::text::{printable, printable_lines};
use toolhost_support::printable::{to_json_line, to_json_pretty};

/// When to colour what a person reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(super) enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    Always,
    Never,
}

/// How notes are shown, decided once from the command line.
#[derive(Debug, Clone, Copy)]
struct Settings {
    quiet: bool,
    color_on_stderr: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// Set `--quiet` and `--color` for the whole process; the first call wins.
pub(super) fn configure(quiet: bool, color: ColorChoice) {
    let color_on_stderr = match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let _ = SETTINGS.set(Settings { quiet, color_on_stderr });
}

fn settings() -> Settings {
    *SETTINGS.get_or_init(|| Settings { quiet: false, color_on_stderr: false })
}

/// Whether `--quiet` was given: progress and notes are not shown.
pub(super) fn quiet() -> bool {
    settings().quiet
}

/// Whether escapes (colour, dimming) may be written to stderr.
pub(super) fn color_on_stderr() -> bool {
    settings().color_on_stderr
}

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
    let rows: Vec<Vec<String>> = rows.iter().map(|row| row.iter().map(|cell| printable(cell).into_owned()).collect()).collect();
    let widths: Vec<usize> = (0..N).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
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

/// One line on stderr, escaped; not with `--quiet`.
pub(super) fn note(text: impl Display) {
    if !quiet() {
        alert(text);
    }
}

/// Several lines on stderr (a summary, a tool's output), escaped but for
/// newlines and tabs; not with `--quiet`.
pub(super) fn note_lines(text: impl Display) {
    if !quiet() {
        alert_lines(text);
    }
}

/// One line on stderr that `--quiet` does not silence: an error, a
/// question.
pub(super) fn alert(text: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "{}", printable(&text.to_string()));
}

/// Several lines on stderr that `--quiet` does not silence (an error
/// message, a failed call's output), escaped but for newlines and tabs.
pub(super) fn alert_lines(text: impl Display) {
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
