//! How `toolhost chat` shows the loop's events: the reply streamed to
//! stdout as it arrives, reasoning dimmed on stderr, each call with its
//! arguments, a spinner with the time spent while the model thinks or the
//! tools run, and each outcome with its status and duration. With `--json`
//! every event is one JSON line on stdout instead.
//!
//! Everything a model or a plugin chose is escaped before a terminal sees
//! it; the reply text goes raw to a pipe.

use super::super::output;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use toolhost::{
    ChainEvent,
    text::{printable, printable_lines},
};

/// Lines of a tool's output shown under its outcome.
const OUTPUT_LINES: usize = 12;
/// Dim, and back to normal: for reasoning on a terminal.
const DIM: (&str, &str) = ("\x1b[2m", "\x1b[0m");

/// Shows events as they come; shared with the loop, which calls
/// [`Display::show`] from its tasks.
pub(super) struct Display {
    json: bool,
    stdout_terminal: bool,
    stderr_terminal: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    spinner: Option<ProgressBar>,
    /// Reply text ended without a newline on stdout.
    mid_reply: bool,
    /// Reasoning ended without a newline on stderr.
    mid_reasoning: bool,
    /// The JSON lines could not be written (stdout closed).
    closed: bool,
}

impl Display {
    pub(super) fn new(json: bool) -> Self {
        Display {
            json,
            stdout_terminal: std::io::stdout().is_terminal(),
            stderr_terminal: std::io::stderr().is_terminal(),
            state: Mutex::default(),
        }
    }

    /// Whether stdout was closed by its reader.
    pub(super) fn closed(&self) -> bool {
        self.state().closed
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn show(&self, event: &ChainEvent) {
        let mut state = self.state();
        if self.json {
            if !state.closed && output::json_line(event).is_err() {
                state.closed = true;
            }
            return;
        }
        match event {
            ChainEvent::Requesting { .. } => self.spin(&mut state, "thinking"),
            ChainEvent::TextDelta { text } => {
                stop_spinner(&mut state);
                end_reasoning(&mut state);
                let text = if self.stdout_terminal { printable_lines(text) } else { text.into() };
                let mut stdout = std::io::stdout().lock();
                if write!(stdout, "{text}").and_then(|()| stdout.flush()).is_err() {
                    state.closed = true;
                }
                state.mid_reply = !text.ends_with('\n');
            }
            ChainEvent::ReasoningDelta { .. } if output::quiet() => {}
            ChainEvent::ReasoningDelta { text } => {
                stop_spinner(&mut state);
                let text = printable_lines(text);
                let (dim, normal) = if output::color_on_stderr() { DIM } else { ("", "") };
                let _ = write!(std::io::stderr().lock(), "{dim}{text}{normal}");
                state.mid_reasoning = !text.ends_with('\n');
            }
            ChainEvent::CallsParsed { calls, warnings } => {
                stop_spinner(&mut state);
                end_lines(&mut state);
                for warning in warnings {
                    output::note(format_args!("warning: {warning}"));
                }
                for call in calls {
                    let arguments = serde_json::Value::Object(call.arguments.clone());
                    output::note(format_args!("→ {} {arguments}", call.tool));
                }
            }
            ChainEvent::AwaitingApproval { .. } => stop_spinner(&mut state),
            ChainEvent::Executing { calls } => {
                let names: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
                self.spin(&mut state, &format!("running {}", printable(&names.join(", "))));
            }
            ChainEvent::Outcome { tool, status, duration_ms, output: text, .. } => {
                let spinner = state.spinner.clone();
                let line = |text: String| match &spinner {
                    Some(spinner) => spinner.suspend(|| output::note_lines(&text)),
                    None => output::note_lines(&text),
                };
                let mark = if *status == toolhost::Status::Success { "✓" } else { "✗" };
                line(format!("{mark} {} {status} in {duration_ms:.1} ms", printable(tool)));
                if !text.is_empty() {
                    line(indented_excerpt(text));
                }
            }
            ChainEvent::IterationDone { .. } => stop_spinner(&mut state),
            ChainEvent::Warning { message } => {
                end_lines(&mut state);
                output::note(format_args!("warning: {message}"));
            }
            ChainEvent::Error { message } => {
                stop_spinner(&mut state);
                end_lines(&mut state);
                output::alert(format_args!("error: {message}"));
            }
            ChainEvent::Finished { stop } => {
                stop_spinner(&mut state);
                end_lines(&mut state);
                if !matches!(stop, toolhost::Stop::Answered | toolhost::Stop::AwaitingDecisions { .. }) {
                    output::note(format_args!("({stop})"));
                }
            }
            // An event the library added after this display was written:
            // shown as it is (Debug escapes what a terminal would obey)
            // rather than lost; the JSON output has it in full.
            other => {
                stop_spinner(&mut state);
                end_lines(&mut state);
                output::note(format_args!("({other:?})"));
            }
        }
    }

    /// Show a spinner with `what` and the time since it started, on a
    /// terminal.
    fn spin(&self, state: &mut State, what: &str) {
        stop_spinner(state);
        if !self.stderr_terminal || output::quiet() {
            return;
        }
        end_lines(state);
        let style = ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("a valid template");
        let spinner = ProgressBar::new_spinner().with_style(style).with_message(what.to_owned());
        spinner.enable_steady_tick(Duration::from_millis(100));
        state.spinner = Some(spinner);
    }
}

fn stop_spinner(state: &mut State) {
    if let Some(spinner) = state.spinner.take() {
        spinner.finish_and_clear();
    }
}

/// End the reply's and the reasoning's unfinished lines, so that what
/// follows starts a line of its own.
fn end_lines(state: &mut State) {
    end_reasoning(state);
    if std::mem::take(&mut state.mid_reply) {
        println!();
    }
}

fn end_reasoning(state: &mut State) {
    if std::mem::take(&mut state.mid_reasoning) {
        let _ = writeln!(std::io::stderr());
    }
}

/// The first [`OUTPUT_LINES`] lines of `text`, indented, saying how many
/// more there were.
fn indented_excerpt(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut shown: Vec<String> = lines.iter().take(OUTPUT_LINES).map(|l| format!("    {l}")).collect();
    if lines.len() > OUTPUT_LINES {
        shown.push(format!("    … {} more lines", lines.len() - OUTPUT_LINES));
    }
    shown.join("\n")
}
