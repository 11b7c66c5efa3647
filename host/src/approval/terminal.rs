//! [`TerminalApprover`]: a person answering at a terminal, or any reader
//! and writer (so scripted input tests it).
//!
//! ```text
//! 2 tool calls need approval:
//! [1] write_file (plugin files), because it is sensitive: every call is asked
//!     {
//!       "path": "notes/today.md"
//!     }
//! [2] read_file (plugin files), because it is moderate and no "allow always" is remembered for it
//!     {}
//! Answer y (yes), a (always: moderate tools only), n (no; a reason may follow, as in "n not now"),
//! all (yes to this and the rest) or none (no to this and the rest; a reason may follow).
//! [1/2] write_file: run it? [y/n/all/none] y
//! [2/2] read_file: run it? [y/a/n/all/none] n not now
//! ```

use super::adapters::by;
use super::{Answer, Approver, CallDecision, DecidedBy, PendingCall, ResultDecision};
use crate::manifest::ToolSpec;
use crate::outcome::ToolOutcome;
use crate::printable::{printable, printable_lines, to_json_pretty_excerpt};
use std::io::{self, BufRead, BufReader, Stderr, Stdin, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Indentation of arguments and results under their heading.
const INDENT: &str = "    ";
/// The most of a call's arguments, laid out, that a question shows (their
/// layout can be a hundred times their size); the rest is said to be cut.
const ARGUMENTS_SHOWN_BYTES: usize = 64 << 10;
/// What the answers to a call's question are.
const CALL_HELP: &str = "Answer y (yes), a (always: moderate tools only), n (no; a reason may follow, as in \"n not now\"),\n\
                         all (yes to this and the rest) or none (no to this and the rest; a reason may follow).";
/// What the answers to a result's question are.
const RESULT_HELP: &str = "Answer y (pass it on) or n (withhold it; a reason may follow).";
/// The reason a call or result gets when the input ends before an answer.
const INPUT_ENDED: &str = "nobody answered: the approval prompt's input ended";
/// Said when the line read was meant for a question withdrawn meanwhile.
const ANSWER_NOT_USED: &str = "(that question was withdrawn: the answer was not used)";

/// Shows each pending call (tool, plugin, why, its arguments as pretty
/// JSON) and reads an answer per call: `y`es, `a`lways (moderate tools),
/// `n`o with an optional reason, `all` or `none` for the rest of the batch.
/// Shows each result that needs approval and reads `y` (pass) or `n`
/// (reject, with an optional reason). The end of input denies what is left.
///
/// Everything a plugin or a model chose is shown escaped ([`printable`]),
/// so it cannot steer the terminal. Reading blocks, so it happens on a
/// blocking thread.
///
/// A question whose call is cancelled before it is answered (the turn is
/// cancelled, or a VCP server's `cancel_tool` came) is withdrawn, saying
/// so at once; the line typed for it next is not taken as an answer to
/// anything.
#[derive(Debug)]
pub struct TerminalApprover<R, W> {
    io: Arc<Mutex<Prompt<R, W>>>,
    /// What withdrawals are said on, while a question waits for input.
    output: SharedOutput<W>,
}

#[derive(Debug)]
struct Prompt<R, W> {
    input: R,
    output: SharedOutput<W>,
}

/// The prompt's output, written a call at a time: a question is withdrawn
/// while its reader waits for a line.
#[derive(Debug)]
struct SharedOutput<W>(Arc<Mutex<W>>);

impl<W> Clone for SharedOutput<W> {
    fn clone(&self) -> Self {
        SharedOutput(Arc::clone(&self.0))
    }
}

impl<W: Write> Write for SharedOutput<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).flush()
    }
}

/// One batch of questions: whether it was shown, and whether it was
/// withdrawn.
#[derive(Debug, Default)]
struct Question {
    shown: AtomicBool,
    withdrawn: AtomicBool,
}

impl Question {
    /// Start showing it; false when it was withdrawn first.
    fn show(&self) -> bool {
        self.shown.store(true, Ordering::SeqCst);
        !self.withdrawn.load(Ordering::SeqCst)
    }

    fn withdrawn(&self) -> bool {
        self.withdrawn.load(Ordering::SeqCst)
    }
}

/// Withdraws its question when dropped before [`Pending::answered`]: the
/// future asking was dropped, as a cancelled turn drops it.
struct Pending<W: Write> {
    question: Arc<Question>,
    output: SharedOutput<W>,
    /// What was asked about, for the notice.
    about: String,
    answered: bool,
}

impl<W: Write> Pending<W> {
    fn answered(mut self) {
        self.answered = true;
    }
}

impl<W: Write> Drop for Pending<W> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        self.question.withdrawn.store(true, Ordering::SeqCst);
        if self.question.shown.load(Ordering::SeqCst) {
            let _ = writeln!(
                self.output,
                "\n{}: withdrawn: the call was cancelled while it waited for an answer (no answer is needed)",
                self.about
            );
            let _ = self.output.flush();
        }
    }
}

impl TerminalApprover<BufReader<Stdin>, Stderr> {
    /// A person at this process's terminal: questions on stderr (stdout
    /// carries results), answers from stdin.
    pub fn stdio() -> Self {
        TerminalApprover::new(BufReader::new(io::stdin()), io::stderr())
    }
}

impl<R: BufRead + Send + 'static, W: Write + Send + 'static> TerminalApprover<R, W> {
    /// Ask on `output`, read answers from `input`.
    pub fn new(input: R, output: W) -> Self {
        let output = SharedOutput(Arc::new(Mutex::new(output)));
        TerminalApprover { io: Arc::new(Mutex::new(Prompt { input, output: output.clone() })), output }
    }

    /// The reader and the writer back, unless a prompt is still running.
    pub fn into_inner(self) -> Option<(R, W)> {
        let TerminalApprover { io, output } = self;
        drop(output);
        let prompt = Arc::into_inner(io)?.into_inner().unwrap_or_else(PoisonError::into_inner);
        let output = Arc::into_inner(prompt.output.0)?.into_inner().unwrap_or_else(PoisonError::into_inner);
        Some((prompt.input, output))
    }

    /// A question about `about`, withdrawn if dropped unanswered.
    fn pending(&self, about: String) -> Pending<W> {
        Pending { question: Arc::default(), output: self.output.clone(), about, answered: false }
    }

    /// Run `ask` on a blocking thread with the prompt; `None` if it
    /// panicked.
    async fn blocking<T: Send + 'static>(&self, ask: impl FnOnce(&mut Prompt<R, W>) -> T + Send + 'static) -> Option<T> {
        let io = Arc::clone(&self.io);
        let run = move || ask(&mut io.lock().unwrap_or_else(PoisonError::into_inner));
        tokio::task::spawn_blocking(run).await.ok()
    }
}

#[async_trait::async_trait]
impl<R: BufRead + Send + 'static, W: Write + Send + 'static> Approver for TerminalApprover<R, W> {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        self.answer_calls(calls).await.into_iter().map(|answer| answer.decision).collect()
    }

    async fn approve_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultDecision {
        let pending = self.pending(format!("the result of {}", printable(&tool.name)));
        let (outcome, tool, question) = (outcome.clone(), tool.clone(), pending.question.clone());
        let decision = self.blocking(move |prompt| prompt.result(&outcome, &tool, &question)).await;
        pending.answered();
        match decision {
            Some(Ok(Some(decision))) => decision,
            Some(Ok(None)) => ResultDecision::Reject { reason: Some(INPUT_ENDED.into()) },
            Some(Err(e)) => ResultDecision::Reject { reason: Some(format!("the approval prompt failed: {e}")) },
            None => ResultDecision::Reject { reason: Some("the approval prompt failed".into()) },
        }
    }

    async fn answer_calls(&self, calls: &[PendingCall]) -> Vec<Answer> {
        let tools: Vec<String> = calls.iter().map(|call| printable(&call.tool).into_owned()).collect();
        let pending = self.pending(format!("the question about {}", tools.join(", ")));
        let (owned, question) = (calls.to_vec(), pending.question.clone());
        let answers = self.blocking(move |prompt| prompt.calls(&owned, &question)).await;
        pending.answered();
        answers.unwrap_or_else(|| unasked(calls.len(), "the approval prompt failed".into()))
    }
}

/// Denials, for `count` calls the prompt could not ask about.
fn unasked(count: usize, reason: String) -> Vec<Answer> {
    by(DecidedBy::NoAnswer, vec![CallDecision::Deny { reason: Some(reason) }; count])
}

/// One reply at the prompt.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Yes,
    Always,
    No(Option<String>),
    All,
    None(Option<String>),
}

/// `n too risky` → `No(Some("too risky"))`; `None` for anything else
/// than the words the prompt offers.
fn parse_reply(line: &str) -> Option<Reply> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let word = word.trim_end_matches([':', ',']).to_ascii_lowercase();
    let reason = Some(rest.trim().trim_start_matches([':', ',', '-']).trim()).filter(|r| !r.is_empty()).map(str::to_owned);
    match word.as_str() {
        "y" | "yes" if reason.is_none() => Some(Reply::Yes),
        "a" | "always" if reason.is_none() => Some(Reply::Always),
        "all" if reason.is_none() => Some(Reply::All),
        "n" | "no" => Some(Reply::No(reason)),
        "none" => Some(Reply::None(reason)),
        _ => None,
    }
}

impl<R: BufRead, W: Write> Prompt<R, W> {
    /// One answer per call: those given, then denials for the rest if the
    /// input ended or failed first.
    fn calls(&mut self, calls: &[PendingCall], question: &Question) -> Vec<Answer> {
        let mut answers = Vec::with_capacity(calls.len());
        let why = match self.ask_calls(calls, question, &mut answers) {
            Ok(()) => INPUT_ENDED.to_owned(),
            Err(e) => {
                tracing::warn!("the approval prompt failed: {e}");
                format!("the approval prompt failed: {e}")
            }
        };
        answers.extend(unasked(calls.len() - answers.len(), why));
        answers
    }

    fn ask_calls(&mut self, calls: &[PendingCall], question: &Question, answers: &mut Vec<Answer>) -> io::Result<()> {
        if !question.show() {
            return Ok(());
        }
        let count = calls.len();
        let plural = if count == 1 { "tool call needs" } else { "tool calls need" };
        writeln!(self.output, "{count} {plural} approval:")?;
        for (i, call) in calls.iter().enumerate() {
            writeln!(
                self.output,
                "[{}] {} (plugin {}), because {}",
                i + 1,
                printable(&call.tool),
                printable(&call.plugin),
                printable(&call.reason.to_string())
            )?;
            let args = to_json_pretty_excerpt(&call.args, ARGUMENTS_SHOWN_BYTES).unwrap_or_default();
            self.indented(&args)?;
        }
        writeln!(self.output, "{CALL_HELP}")?;
        let mut rest: Option<CallDecision> = None;
        for (i, call) in calls.iter().enumerate() {
            if let Some(decision) = &rest {
                answers.push(Answer { decision: decision.clone(), by: DecidedBy::Person });
                continue;
            }
            let offers_always = call.offers_always();
            let choices = if offers_always { "y/a/n/all/none" } else { "y/n/all/none" };
            let asked = format!("[{}/{count}] {}: run it? [{choices}] ", i + 1, printable(&call.tool));
            let Some(reply) = self.read_reply(&asked, CALL_HELP, question)? else { return Ok(()) };
            let decision = match reply {
                Reply::Yes => CallDecision::AllowOnce,
                Reply::Always if offers_always => CallDecision::AllowAlways,
                Reply::Always => {
                    writeln!(self.output, "(\"always\" is not offered for this call, which is asked every time: allowed once)")?;
                    CallDecision::AllowOnce
                }
                Reply::No(reason) => CallDecision::Deny { reason },
                Reply::All => rest.insert(CallDecision::AllowOnce).clone(),
                Reply::None(reason) => rest.insert(CallDecision::Deny { reason }).clone(),
            };
            answers.push(Answer { decision, by: DecidedBy::Person });
        }
        Ok(())
    }

    /// Show `outcome` and ask whether it may go on; `None` at the end of
    /// input.
    fn result(&mut self, outcome: &ToolOutcome, tool: &ToolSpec, question: &Question) -> io::Result<Option<ResultDecision>> {
        if !question.show() {
            return Ok(None);
        }
        writeln!(
            self.output,
            "result of {} (plugin {}): {}, {} ms",
            printable(&tool.name),
            printable(&tool.plugin),
            outcome.status,
            outcome.duration.as_millis()
        )?;
        self.indented(&outcome.output)?;
        loop {
            let Some(reply) = self.read_reply("pass it on? [y/n] ", RESULT_HELP, question)? else { return Ok(None) };
            match reply {
                Reply::Yes => return Ok(Some(ResultDecision::Pass)),
                Reply::No(reason) => return Ok(Some(ResultDecision::Reject { reason })),
                _ => writeln!(self.output, "{RESULT_HELP}")?,
            }
        }
    }

    /// Ask `asked` until a reply parses, showing `help` after one that
    /// does not; `None` at the end of input, or when `question` was
    /// withdrawn while the line was awaited.
    fn read_reply(&mut self, asked: &str, help: &str, question: &Question) -> io::Result<Option<Reply>> {
        loop {
            write!(self.output, "{asked}")?;
            self.output.flush()?;
            let mut line = String::new();
            if self.input.read_line(&mut line)? == 0 {
                writeln!(self.output)?;
                return Ok(None);
            }
            if question.withdrawn() {
                writeln!(self.output, "{ANSWER_NOT_USED}")?;
                return Ok(None);
            }
            match parse_reply(&line) {
                Some(reply) => return Ok(Some(reply)),
                None => writeln!(self.output, "{help}")?,
            }
        }
    }

    /// `text`, escaped but for line breaks and tabs, each line indented.
    fn indented(&mut self, text: &str) -> io::Result<()> {
        for line in printable_lines(text).lines() {
            writeln!(self.output, "{INDENT}{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::AskReason;
    use crate::manifest::Permission;
    use crate::outcome::Status;
    use serde_json::json;
    use std::io::Cursor;

    fn pending(id: &str, tool: &str, permission: Permission, reason: AskReason) -> PendingCall {
        PendingCall {
            id: id.into(),
            agent: "coder".into(),
            plugin: "files".into(),
            tool: tool.into(),
            permission,
            args: json!({ "path": format!("notes/{id}.md") }).as_object().unwrap().clone(),
            reason,
        }
    }

    fn batch() -> Vec<PendingCall> {
        vec![
            pending("1", "read_file", Permission::Moderate, AskReason::Moderate),
            pending("2", "write_file", Permission::Sensitive, AskReason::Sensitive),
            pending("3", "write_file", Permission::Sensitive, AskReason::Sensitive),
        ]
    }

    async fn answer(input: &str, calls: &[PendingCall]) -> (Vec<Answer>, String) {
        let approver = TerminalApprover::new(Cursor::new(input.to_owned()), Vec::new());
        let answers = approver.answer_calls(calls).await;
        let (_, output) = approver.into_inner().expect("the prompt is done");
        (answers, String::from_utf8(output).unwrap())
    }

    fn person(decision: CallDecision) -> Answer {
        Answer { decision, by: DecidedBy::Person }
    }

    #[tokio::test]
    async fn each_call_is_shown_and_answered_with_always_and_a_reason() {
        let (answers, shown) = answer("always\nmaybe\ny\nn: not into src\n", &batch()).await;
        assert_eq!(
            answers,
            [
                person(CallDecision::AllowAlways),
                person(CallDecision::AllowOnce),
                person(CallDecision::Deny { reason: Some("not into src".into()) }),
            ]
        );
        assert!(shown.starts_with("3 tool calls need approval:\n"), "{shown}");
        assert!(
            shown.contains("[2] write_file (plugin files), because it is sensitive: every call is asked\n    {\n      \"path\": \"notes/2.md\"\n    }\n"),
            "{shown}"
        );
        assert!(shown.contains("[1/3] read_file: run it? [y/a/n/all/none] "), "{shown}");
        assert!(shown.contains(&format!("[2/3] write_file: run it? [y/n/all/none] {CALL_HELP}\n[2/3] write_file")), "{shown}");
    }

    #[tokio::test]
    async fn all_and_none_answer_the_rest_of_the_batch() {
        let (answers, _) = answer("n\nall\n", &batch()).await;
        assert_eq!(
            answers,
            [person(CallDecision::Deny { reason: None }), person(CallDecision::AllowOnce), person(CallDecision::AllowOnce),]
        );
        let (answers, _) = answer("none too many writes\n", &batch()).await;
        assert_eq!(answers, vec![person(CallDecision::Deny { reason: Some("too many writes".into()) }); 3]);
    }

    #[tokio::test]
    async fn always_on_a_sensitive_tool_is_once() {
        let (answers, shown) = answer("a\n", &batch()[1..2]).await;
        assert_eq!(answers, [person(CallDecision::AllowOnce)]);
        assert!(shown.contains("(\"always\" is not offered for this call, which is asked every time: allowed once)"), "{shown}");
    }

    #[tokio::test]
    async fn the_end_of_input_denies_what_is_left() {
        let (answers, _) = answer("y\n", &batch()).await;
        assert_eq!(answers[0], person(CallDecision::AllowOnce));
        let ended = Answer { decision: CallDecision::Deny { reason: Some(INPUT_ENDED.into()) }, by: DecidedBy::NoAnswer };
        assert_eq!(answers[1..], [ended.clone(), ended]);
    }

    #[tokio::test]
    async fn what_plugins_and_models_wrote_is_shown_escaped() {
        let mut call = pending("1", "write_file", Permission::Sensitive, AskReason::Sensitive);
        call.args.insert("content".into(), json!("\x1b[2J\u{202e}gnp.exe"));
        let (_, shown) = answer("n\n", &[call]).await;
        assert!(!shown.contains('\x1b') && !shown.contains('\u{202e}'), "{shown:?}");
        assert!(shown.contains(r#""content": "\u001b[2J\u202egnp.exe""#), "{shown}");
    }

    #[tokio::test]
    async fn results_are_shown_then_passed_or_rejected_with_a_reason() {
        let tool = ToolSpec::new("read_file", "files", "reads");
        let outcome = ToolOutcome::without_running("1", "read_file", Status::Success, "line one\n\x1b]0;title\x07".into());
        let approver = TerminalApprover::new(Cursor::new("what\nn has a key in it\ny\n".to_owned()), Vec::new());
        let first = approver.approve_result(&outcome, &tool).await;
        assert_eq!(first, ResultDecision::Reject { reason: Some("has a key in it".into()) });
        assert_eq!(approver.approve_result(&outcome, &tool).await, ResultDecision::Pass);
        assert_eq!(
            approver.approve_result(&outcome, &tool).await,
            ResultDecision::Reject { reason: Some(INPUT_ENDED.into()) },
            "the end of input rejects"
        );
        let shown = String::from_utf8(approver.into_inner().unwrap().1).unwrap();
        assert!(
            shown.starts_with("result of read_file (plugin files): success, 0 ms\n    line one\n    \\e]0;title\\u{7}\npass it on? [y/n] Answer y"),
            "{shown}"
        );
    }

    #[test]
    fn replies_parse_with_their_reasons() {
        assert_eq!(parse_reply(" Y \n"), Some(Reply::Yes));
        assert_eq!(parse_reply("no - too risky\n"), Some(Reply::No(Some("too risky".into()))));
        assert_eq!(parse_reply("none\n"), Some(Reply::None(None)));
        assert_eq!(parse_reply("yes please"), None, "only a denial carries words");
        assert_eq!(parse_reply(""), None);
    }
}
