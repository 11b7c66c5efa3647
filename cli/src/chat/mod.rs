//! `toolhost chat`: a conversation with a model that calls the loaded
//! tools, through the library's [`Chain`].

mod display;
mod terminal;

use super::GlobalOptions;
use super::model::{self, ModelOptions};
use super::output;
use anyhow::{Context, bail};
use display::Display;
use std::future::Future;
use std::io::{IsTerminal, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use terminal::{Line, Terminal};
use toolhost::{
    AllowAll, Approver, CancellationToken, Chain, ChainEvent, DenyAll, OpenAiClient, ProtocolId, Registry, Stop, Transcript,
    agent::{CallMode, LiveSettings},
    chain::ManualDecision,
    prompt::visible_tools,
    protocol::suggest::did_you_mean,
    registry::DEFAULT_WATCH_INTERVAL,
    text::printable,
    transcript::{Entry, RequestedCall},
    vcp::Handover,
};
use toolhost_support::printable::to_json_pretty_excerpt;

/// The agent name a chat without `--agent` runs as (approvals remembered
/// for it, audit records).
const CHAT_AGENT: &str = "chat";
/// The most of a call's arguments, laid out, that manual approval shows
/// (their layout can be a hundred times their size); the rest is said to
/// be cut.
const ARGUMENTS_SHOWN_BYTES: usize = 64 << 10;

/// Chat with a model that calls the loaded tools.
///
/// Each reply streams in; the calls it makes are parsed in the agent's
/// protocol (or taken from the native API), approved where their
/// permission level says so — asked at the terminal, allowed with
/// `--yes`, denied when there is nobody to ask — run in the sandbox, and
/// sent back, until the model answers. Ctrl-C cancels the turn (a second
/// one quits); Ctrl-D or `/quit` at the prompt ends the chat.
///
/// The model is any OpenAI-compatible endpoint: an `[llm.NAME]` profile
/// (`--llm`, or the agent's `llm`), or `--base-url`/`--model` and the
/// OPENAI_BASE_URL, OPENAI_MODEL and OPENAI_API_KEY variables.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost chat --base-url http://127.0.0.1:8080/v1\n  toolhost chat --llm local --message \"What is 6*7?\" --yes --transcript chat.jsonl\n  toolhost chat --resume chat.jsonl"
)]
pub(super) struct ChatCommand {
    /// The agent (`[agents.NAME]`): its tools, protocol, prompt and model
    ///
    /// The agent (`[agents.NAME]`): its tools, protocol, limits, mode, system
    /// prompt and model. Without one: every agent-callable tool, the vcp protocol,
    /// the default system prompt.
    #[arg(long)]
    agent: Option<String>,
    #[command(flatten)]
    endpoint: ModelOptions,
    /// The protocol tools are offered in [default: the agent's]
    ///
    /// The protocol tools are offered and called in: vcp, json-block, xml-tag or
    /// native [default: the agent's].
    #[arg(long)]
    protocol: Option<ProtocolId>,
    /// Manual mode: you run, answer or skip each call yourself
    ///
    /// Manual mode: after each reply with calls, you run each (as written or
    /// edited), answer it by hand, or skip it.
    #[arg(long)]
    manual: bool,
    /// Allow calls that need approval without asking
    ///
    /// Allow calls that need approval without asking (deny rules still apply); in
    /// manual mode without a terminal, run every call as written.
    #[arg(long)]
    yes: bool,
    /// Save the conversation in FILE (which must not exist yet)
    ///
    /// Save the conversation in FILE, one JSON entry per line (FILE must not exist
    /// yet).
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    transcript: Option<PathBuf>,
    /// Go on with the conversation saved in FILE, adding to it.
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,
    /// Send this message, wait for the answer, and exit; repeatable
    ///
    /// Send this message, wait for the answer, and exit; repeatable (sent in
    /// turn). Without it, messages are read at a prompt — or, when stdin is not a
    /// terminal, all of stdin is one message.
    #[arg(long, short)]
    message: Vec<String>,
    /// Print every event as a line of JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Ask a person at the console to approve calls that need it
    ///
    /// Ask a person at the console (a local web page) to approve the calls that
    /// need it, instead of at this terminal: the console this user has open, or
    /// one opened for this chat (optionally where it listens [default: `[console]
    /// listen`]). The page's toggles for the chat's agent hold from the next
    /// message on.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, conflicts_with = "yes")]
    console: Option<Option<SocketAddr>>,
}

/// What a chat needs while it runs.
struct Session {
    chain: Chain,
    /// The loaded plugins, for `/tools` and `/reload`.
    registry: Arc<Registry>,
    transcript: Transcript,
    display: Display,
    /// The person's terminal, when stdin is one.
    terminal: Option<Terminal>,
    /// `--yes`.
    yes: bool,
    /// A turn ended because the model failed.
    failed: bool,
    /// The agent's settings as the console's page toggles them (with
    /// `--console`).
    settings: Option<LiveSettings>,
}

impl ChatCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let policy = global.policy()?;
        let (agent, mut config) = model::agent(&policy, self.agent.as_deref(), CHAT_AGENT)?;
        if let Some(protocol) = self.protocol {
            config.protocol = protocol;
        }
        if self.manual {
            config.mode = CallMode::Manual;
        }
        let profile = self.endpoint.profile(&policy, &config)?;
        let terminal = if std::io::stdin().is_terminal() { Some(Terminal::new()?) } else { None };
        let approver: Arc<dyn Approver> = match &terminal {
            _ if self.yes => Arc::new(AllowAll),
            Some(terminal) => Arc::new(terminal.approver()),
            None => Arc::new(DenyAll),
        };
        let mut pipeline = global.pipeline_with(&policy, approver).await?;
        // Stops the console (or its hellos) when the chat ends.
        let shutdown = CancellationToken::new();
        let _stop = shutdown.clone().drop_guard();
        let mut settings = None;
        if self.console.is_some() {
            let controlled = Some((agent.as_str(), &config));
            if let Some(desk) = super::console::for_door(self.console, "chat", controlled, &policy, &pipeline, &shutdown).await? {
                let live = LiveSettings::new(config.clone());
                pipeline = pipeline.with_approver(desk.approver(
                    "chat",
                    &agent,
                    &format!("terminal chat (process {})", std::process::id()),
                ));
                desk.attend("chat", &agent, Some(live.clone()), &shutdown);
                settings = Some(live);
            }
        }
        let registry = pipeline.executor().registry().clone();
        let offered = if config.enabled { visible_tools(&pipeline.executor().registry().catalog(), &config).len() } else { 0 };
        let (url, model) = (profile.base_url.clone(), profile.model.clone());
        // A chat channel that is the VCP server this machine joins as a
        // node: the server runs the calls, through the node.
        let handover = match (&profile.vcp_server, &policy.vcp) {
            (Some(_), Some(vcp)) => Some(Handover::to_status_file(vcp)),
            _ => None,
        };
        let llm = Arc::new(OpenAiClient::new(profile).context("the model endpoint")?);
        let protocol = config.protocol;
        let mut chain = Chain::new(llm, pipeline, &agent, config)?;
        if let Some(handover) = handover {
            output::note(format_args!(
                "the model is the VCP server {}: its calls run there, through this machine's node",
                handover.server()
            ));
            chain = chain.handing_over(handover);
        }
        output::note(format_args!("chat: model `{model}` at {url}, {offered} tools offered in {protocol} (agent `{agent}`)"));
        if terminal.is_none() && !self.yes && settings.is_none() && offered > 0 {
            output::note("note: no terminal to ask on: calls that need approval are denied (--yes allows them)");
        }
        let transcript = self.transcript()?;
        let display = Display::new(self.json);
        let mut session = Session { chain, registry, transcript, display, terminal, yes: self.yes, failed: false, settings };
        let waiting = !session.transcript.unanswered().is_empty() && session.chain.config().mode == CallMode::Manual;
        if waiting {
            session.decide_waiting().await?;
        }
        if !self.message.is_empty() {
            for message in &self.message {
                session.turn(message).await?;
            }
        } else if session.terminal.is_some() {
            session.prompt_loop().await?;
        } else if !waiting {
            let mut message = String::new();
            std::io::stdin().read_to_string(&mut message).context("reading the message from stdin")?;
            if message.trim().is_empty() {
                bail!("no message: pass --message TEXT, pipe one in, or run at a terminal");
            }
            session.turn(message.trim_end()).await?;
        }
        if session.display.closed() {
            return Err(output::StdoutClosed.into());
        }
        Ok(if session.failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
    }

    fn transcript(&self) -> anyhow::Result<Transcript> {
        if let Some(path) = &self.resume {
            let (transcript, warnings) = Transcript::resume(path)?;
            for warning in warnings {
                output::note(format_args!("warning: {warning}"));
            }
            let count = transcript.entries().len();
            output::note(format_args!("resuming {} ({count} entries)", path.display()));
            show_last_exchange(&transcript);
            return Ok(transcript);
        }
        match &self.transcript {
            Some(path) => Ok(Transcript::create(path)?),
            None => Ok(Transcript::in_memory()),
        }
    }
}

impl Session {
    /// Messages typed at the prompt, each a turn, until Ctrl-D or `/quit`.
    async fn prompt_loop(&mut self) -> anyhow::Result<()> {
        let terminal = self.terminal.clone().expect("a prompt loop runs at a terminal");
        output::note("Type a message; /help lists the commands; Ctrl-C cancels a turn, Ctrl-D or /quit ends the chat.");
        // Components added, changed or removed in the plugin directories
        // reach the next turn.
        let watching = CancellationToken::new();
        let _stop_watching = watching.clone().drop_guard();
        tokio::spawn({
            let registry = self.registry.clone();
            async move { registry.watch(DEFAULT_WATCH_INTERVAL, watching).await }
        });
        loop {
            let message = match terminal.read("you> ", "").await? {
                Line::Text(text) if matches!(text.trim(), "/quit" | "/exit") => return Ok(()),
                Line::Text(text) if text.trim().is_empty() => continue,
                Line::Text(text) if is_command(&text) => {
                    self.command(text.trim()).await;
                    continue;
                }
                Line::Text(text) => text,
                Line::Interrupted => continue,
                Line::Ended => return Ok(()),
            };
            self.turn(&message).await?;
            if self.display.closed() {
                return Ok(());
            }
        }
    }

    /// A `/command` typed at the prompt: said on stderr, never sent.
    async fn command(&mut self, command: &str) {
        match command {
            "/help" => output::note(
                "/tools    the tools offered to the model, with their levels\n\
                 /reload   rescan the plugin directories now (changes are also picked up on their own)\n\
                 /quit     end the chat (or Ctrl-D); Ctrl-C cancels a turn",
            ),
            "/tools" => {
                let catalog = self.registry.catalog();
                let config = self.chain.config();
                let offered = if config.enabled { visible_tools(&catalog, config) } else { Vec::new() };
                if offered.is_empty() {
                    output::note("no tools are offered to the model");
                }
                for tool in offered {
                    let first = tool.description.lines().next().unwrap_or("");
                    output::note(format_args!("{:<16} {:<10} {}", tool.name, tool.permission.as_str(), printable(first)));
                }
            }
            "/reload" => match self.registry.reload().await {
                Ok(event) if event.added.is_empty() && event.removed.is_empty() && event.changed.is_empty() => {
                    output::note("reloaded: nothing changed")
                }
                Ok(event) => output::note(format_args!(
                    "reloaded: added [{}], removed [{}], changed [{}]",
                    event.added.join(", "),
                    event.removed.join(", "),
                    event.changed.join(", ")
                )),
                Err(error) => output::alert(format_args!("the reload failed: {error}")),
            },
            other => {
                let known = ["/help", "/tools", "/reload", "/quit"];
                output::note(format_args!("no command {}{}; /help lists them", printable(other), did_you_mean(other, &known)));
            }
        }
    }

    /// Send `message`, and in manual mode settle what the model asks for,
    /// until the model answers or the loop stops.
    async fn turn(&mut self, message: &str) -> anyhow::Result<()> {
        if let Some(settings) = &self.settings {
            let now = settings.get();
            if now != *self.chain.config()
                && let Err(error) = self.chain.set_config(now)
            {
                output::note(format_args!("warning: the console's toggles are not applied: {error}"));
            }
        }
        let cancel = self.new_turn();
        let display = &self.display;
        let events = |event: ChainEvent| display.show(&event);
        let stop = interruptible(self.chain.send(&mut self.transcript, message, &events, &cancel), &cancel).await?;
        self.settle(stop, &cancel).await
    }

    /// Calls a saved conversation left waiting: decide them first.
    async fn decide_waiting(&mut self) -> anyhow::Result<()> {
        let waiting = self.transcript.unanswered();
        let stop = Stop::AwaitingDecisions { calls: waiting };
        output::note(format_args!("the saved conversation: {stop}"));
        let cancel = self.new_turn();
        self.settle(stop, &cancel).await
    }

    fn new_turn(&self) -> CancellationToken {
        let cancel = CancellationToken::new();
        if let Some(terminal) = &self.terminal {
            terminal.set_turn(cancel.clone());
        }
        cancel
    }

    /// Manual mode: decide waiting calls and go on, for as long as the
    /// model asks; then note how the turn ended.
    async fn settle(&mut self, mut stop: Stop, cancel: &CancellationToken) -> anyhow::Result<()> {
        while let Stop::AwaitingDecisions { calls } = &stop {
            let Some(decisions) = self.decisions(calls).await? else {
                let how = if self.transcript.path().is_some() { "resume the transcript" } else { "save a transcript" };
                output::note(format_args!(
                    "{stop}; nothing ran. To decide them, {how} at a terminal (or with --yes to run them as written)."
                ));
                return Ok(());
            };
            let display = &self.display;
            let events = |event: ChainEvent| display.show(&event);
            stop = interruptible(self.chain.resume(&mut self.transcript, decisions, &events, cancel), cancel).await?;
        }
        self.failed |= matches!(stop, Stop::ModelFailed { .. });
        Ok(())
    }

    /// A decision for each waiting call: asked at the terminal, or every
    /// call run as written with `--yes`; `None` when nobody decides.
    async fn decisions(&self, calls: &[RequestedCall]) -> anyhow::Result<Option<Vec<ManualDecision>>> {
        let Some(terminal) = &self.terminal else {
            let run_all = calls.iter().map(|c| ManualDecision::Run { id: c.id.clone(), arguments: None });
            return Ok(self.yes.then(|| run_all.collect()));
        };
        let mut decisions = Vec::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            let arguments = &call.arguments;
            output::alert_lines(format_args!(
                "[{}/{}] {} {}",
                index + 1,
                calls.len(),
                printable(&call.tool),
                to_json_pretty_excerpt(arguments, ARGUMENTS_SHOWN_BYTES).unwrap_or_default()
            ));
            match ask_decision(terminal, call, arguments).await? {
                Some(decision) => decisions.push(decision),
                None => return Ok(None),
            }
        }
        Ok(Some(decisions))
    }
}

/// One call's decision, asked until the answer is one; `None` on Ctrl-C
/// or the end of input.
async fn ask_decision(
    terminal: &Terminal,
    call: &RequestedCall,
    arguments: &serde_json::Map<String, serde_json::Value>,
) -> anyhow::Result<Option<ManualDecision>> {
    let id = call.id.clone();
    loop {
        let Line::Text(answer) = terminal.read("run, edit, answer or skip? [r/e/a/s] ", "").await? else { return Ok(None) };
        let decision = match answer.trim().to_ascii_lowercase().as_str() {
            "r" | "run" => ManualDecision::Run { id: id.clone(), arguments: None },
            "e" | "edit" => {
                let initial = serde_json::Value::Object(arguments.clone()).to_string();
                let Line::Text(edited) = terminal.read("arguments> ", &initial).await? else { return Ok(None) };
                match serde_json::from_str::<serde_json::Value>(&edited) {
                    Ok(serde_json::Value::Object(edited)) => ManualDecision::Run { id: id.clone(), arguments: Some(edited) },
                    Ok(_) => {
                        output::alert("the arguments must be a JSON object");
                        continue;
                    }
                    Err(error) => {
                        output::alert(format_args!("not JSON: {error}"));
                        continue;
                    }
                }
            }
            "a" | "answer" => {
                let Line::Text(output) = terminal.read("result> ", "").await? else { return Ok(None) };
                ManualDecision::Answer { id: id.clone(), output }
            }
            "s" | "skip" => {
                let Line::Text(reason) = terminal.read("why (optional)> ", "").await? else { return Ok(None) };
                let reason = Some(reason.trim().to_owned()).filter(|r| !r.is_empty());
                ManualDecision::Skip { id: id.clone(), reason }
            }
            _ => {
                output::alert("answer r (run as written), e (edit the arguments, then run), a (answer by hand) or s (skip)");
                continue;
            }
        };
        return Ok(Some(decision));
    }
}

/// Await `work`; a Ctrl-C cancels `cancel` (the work then ends soon), and
/// a second one quits.
async fn interruptible<T>(work: impl Future<Output = T>, cancel: &CancellationToken) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            out = &mut work => return out,
            signal = tokio::signal::ctrl_c() => {
                if signal.is_err() {
                    return work.await;
                }
                if cancel.is_cancelled() {
                    output::alert("interrupted again: quitting");
                    std::process::exit(130);
                }
                output::alert("cancelling the turn (Ctrl-C again quits)");
                cancel.cancel();
            }
        }
    }
}

/// A line typed at the prompt that is a command: one word after a `/`
/// (a message that merely starts with a path has spaces or more slashes).
fn is_command(text: &str) -> bool {
    let text = text.trim();
    text.starts_with('/') && text.len() > 1 && !text[1..].contains(['/', ' ', '\t'])
}

/// What was last said in a resumed conversation, so the person knows
/// where it stands.
fn show_last_exchange(transcript: &Transcript) {
    let entries = transcript.entries();
    let Some(asked) = entries.iter().rposition(|e| matches!(e, Entry::User { .. })) else { return };
    if let Entry::User { content } = &entries[asked] {
        output::note(format_args!("you> {}", printable(content)));
    }
    let answer = entries[asked..].iter().rev().find_map(|e| match e {
        Entry::Assistant { content, .. } if !content.trim().is_empty() => Some(content),
        _ => None,
    });
    if let Some(answer) = answer {
        output::note(printable(answer));
    }
}
