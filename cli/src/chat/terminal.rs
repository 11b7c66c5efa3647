//! The one reader of the terminal in `toolhost chat`: a line editor
//! (rustyline) that reads the person's messages, their answers to approval
//! questions and their manual decisions alike. Two readers of one terminal
//! would race for the keys typed; one reader cannot.
//!
//! The library's [`TerminalApprover`] asks its questions through
//! [`PromptOutput`] and reads answers through [`PromptInput`]: whole lines
//! it writes go to stderr, and the unfinished last one (the question)
//! becomes the line editor's prompt. Ctrl-C at a question cancels the turn.

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use std::io::{self, BufRead, Read, Write};
use std::sync::{Arc, Mutex, PoisonError};
use toolhost::{CancellationToken, approval::TerminalApprover};

/// What a read at the prompt gave.
pub(super) enum Line {
    /// A line (without its newline).
    Text(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D, or the input ended.
    Ended,
}

/// The line editor, shared by everything that reads the terminal.
#[derive(Clone)]
pub(super) struct Terminal {
    editor: Arc<Mutex<DefaultEditor>>,
    /// The question being written, not yet ended by a newline.
    question: Arc<Mutex<String>>,
    /// The turn a Ctrl-C at a question cancels.
    turn: Arc<Mutex<CancellationToken>>,
}

impl Terminal {
    pub(super) fn new() -> anyhow::Result<Self> {
        Ok(Terminal { editor: Arc::new(Mutex::new(DefaultEditor::new()?)), question: Arc::default(), turn: Arc::default() })
    }

    /// Read a line at `prompt`, with `initial` text to edit.
    pub(super) async fn read(&self, prompt: &str, initial: &str) -> anyhow::Result<Line> {
        let (editor, prompt, initial) = (self.editor.clone(), prompt.to_owned(), initial.to_owned());
        let read = move || {
            let mut editor = editor.lock().unwrap_or_else(PoisonError::into_inner);
            let line = editor.readline_with_initial(&prompt, (&initial, ""));
            if let Ok(line) = &line
                && !line.trim().is_empty()
            {
                let _ = editor.add_history_entry(line.as_str());
            }
            line
        };
        match tokio::task::spawn_blocking(read).await? {
            Ok(line) => Ok(Line::Text(line)),
            Err(ReadlineError::Interrupted) => Ok(Line::Interrupted),
            Err(ReadlineError::Eof) => Ok(Line::Ended),
            Err(error) => Err(error.into()),
        }
    }

    /// The turn that a Ctrl-C at an approval question cancels from now on.
    pub(super) fn set_turn(&self, cancel: CancellationToken) {
        *self.turn.lock().unwrap_or_else(PoisonError::into_inner) = cancel;
    }

    /// An approver that asks at this terminal.
    pub(super) fn approver(&self) -> TerminalApprover<PromptInput, PromptOutput> {
        let input = PromptInput { terminal: self.clone(), line: Vec::new(), read: 0 };
        TerminalApprover::new(input, PromptOutput { question: self.question.clone() })
    }
}

/// Where the approver writes: whole lines to stderr, the last unfinished
/// one kept as the next prompt.
pub(super) struct PromptOutput {
    question: Arc<Mutex<String>>,
}

impl Write for PromptOutput {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let mut question = self.question.lock().unwrap_or_else(PoisonError::into_inner);
        question.push_str(&String::from_utf8_lossy(bytes));
        if let Some(end) = question.rfind('\n') {
            let lines: String = question.drain(..=end).collect();
            io::stderr().write_all(lines.as_bytes())?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// Where the approver reads: one line from the line editor per question.
pub(super) struct PromptInput {
    terminal: Terminal,
    line: Vec<u8>,
    read: usize,
}

impl Read for PromptInput {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for PromptInput {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.read == self.line.len() {
            let prompt = std::mem::take(&mut *self.terminal.question.lock().unwrap_or_else(PoisonError::into_inner));
            let mut editor = self.terminal.editor.lock().unwrap_or_else(PoisonError::into_inner);
            match editor.readline(&prompt) {
                Ok(line) => self.line = format!("{line}\n").into_bytes(),
                Err(ReadlineError::Eof) => self.line.clear(),
                Err(ReadlineError::Interrupted) => {
                    self.terminal.turn.lock().unwrap_or_else(PoisonError::into_inner).cancel();
                    return Err(io::Error::other("interrupted: the turn is cancelled"));
                }
                Err(error) => return Err(io::Error::other(error)),
            }
            self.read = 0;
        }
        Ok(&self.line[self.read..])
    }

    fn consume(&mut self, n: usize) {
        self.read = (self.read + n).min(self.line.len());
    }
}
