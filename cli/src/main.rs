//! The `toolhost` command line: one file per subcommand, each a clap-derive
//! struct whose doc comment is its `--help` and whose `execute` does the
//! work. Everything it does goes through the `toolhost` library's public
//! API.

mod add;
mod approvals;
mod call;
mod chat;
mod completions;
mod confirm;
mod inspect;
mod list;
mod lock;
mod new;
mod node;
mod output;
mod parse;
mod prompt;
mod remove;
mod run;
mod source;
mod wit;

use toolhost::{DEFAULT_CONFIG_FILE, Policy, check_policy};
use std::sync::Arc;
use toolhost::{AllowAll, Approvals, Approver, DenyAll, Executor, Pipeline, Registry, TerminalApprover};
use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// Run sandboxed WebAssembly tools for LLMs.
#[derive(Debug, Parser)]
#[command(name = "toolhost", version)]
struct Cli {
    #[command(flatten)]
    global: GlobalOptions,
    #[command(subcommand)]
    command: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
struct GlobalOptions {
    /// The host policy file [default: ./toolhost.toml if it exists; else
    /// the per-user plugin directory, $XDG_DATA_HOME/toolhost/plugins, with
    /// its own lock file].
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A directory of plugin components; repeatable. Replaces the policy's
    /// `plugin_dirs` when given.
    #[arg(long = "plugins", global = true, value_name = "DIR")]
    plugins: Vec<PathBuf>,
    /// More log output on stderr: -v info, -vv debug, -vvv trace.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Debug, Subcommand)]
enum Command {
    List(list::ListCommand),
    Inspect(inspect::InspectCommand),
    Call(call::CallCommand),
    Chat(chat::ChatCommand),
    Completions(completions::CompletionsCommand),
    Lock(lock::LockCommand),
    Prompt(prompt::PromptCommand),
    Parse(parse::ParseCommand),
    Run(run::RunCommand),
    Approvals(approvals::ApprovalsCommand),
    Wit(wit::WitCommand),
    New(new::NewCommand),
    Add(add::AddCommand),
    Remove(remove::RemoveCommand),
    Node(node::NodeCommand),
}

/// How long the command waits for background work when it is done.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Parse the command line, run the subcommand, print any error with its
/// whole cause chain. A closed stdout ends the command quietly.
fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.global.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            output::note(format_args!("error: cannot start the async runtime: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(cli.execute());
    // A host call stopped at its deadline may leave a blocking thread in a
    // system call; the process does not wait for it.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    match result {
        Ok(code) => code,
        // The reader has what it wanted (`| head`): not an error.
        Err(error) if error.is::<output::StdoutClosed>() => ExitCode::SUCCESS,
        Err(error) => {
            output::note_lines(format_args!("error: {error:#}"));
            ExitCode::FAILURE
        }
    }
}

impl Cli {
    async fn execute(self) -> anyhow::Result<ExitCode> {
        match self.command {
            Command::List(c) => c.execute(&self.global).await,
            Command::Inspect(c) => c.execute(&self.global).await,
            Command::Call(c) => c.execute(&self.global).await,
            Command::Chat(c) => c.execute(&self.global).await,
            Command::Completions(c) => c.execute(),
            Command::Lock(c) => c.execute(&self.global).await,
            Command::Prompt(c) => c.execute(&self.global).await,
            Command::Parse(c) => c.execute(&self.global).await,
            Command::Run(c) => c.execute(&self.global).await,
            Command::Approvals(c) => c.execute(&self.global).await,
            Command::Wit(c) => c.execute(&self.global).await,
            Command::New(c) => c.execute(&self.global).await,
            Command::Add(c) => c.execute(&self.global).await,
            Command::Remove(c) => c.execute(&self.global).await,
            Command::Node(c) => c.execute(&self.global).await,
        }
    }
}

impl GlobalOptions {
    /// The policy from `--config`, `./toolhost.toml`, or else the defaults
    /// (over `--plugins` when given, the per-user plugin directory, made if
    /// missing, when not), with `--plugins` applied.
    fn policy(&self) -> anyhow::Result<Policy> {
        let mut policy = match &self.config {
            Some(path) => Policy::load(path)?,
            None if std::path::Path::new(DEFAULT_CONFIG_FILE).exists() => {
                Policy::load(std::path::Path::new(DEFAULT_CONFIG_FILE))?
            }
            None if self.plugins.is_empty() => {
                let policy = Policy::user();
                for dir in &policy.plugin_dirs {
                    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
                }
                policy
            }
            None => Policy::default(),
        };
        if !self.plugins.is_empty() {
            policy.plugin_dirs = self.plugins.clone();
        }
        Ok(policy)
    }

    /// The registry over the policy's plugin directories, showing progress
    /// on stderr while components compile.
    async fn registry(&self) -> anyhow::Result<Registry> {
        let policy = self.policy()?;
        if policy.plugin_dirs.is_empty() {
            bail!("no plugin directories: pass --plugins DIR or set plugin_dirs in {DEFAULT_CONFIG_FILE}");
        }
        let show = std::io::stderr().is_terminal() || self.verbose > 0;
        let registry = Registry::load_with_progress(policy, &|p| {
            if show {
                output::note(format_args!("compiling {} ({}/{})", p.file.display(), p.index, p.total));
            }
        })
        .await
        .context("loading plugins")?;
        let catalog = registry.catalog();
        for refusal in &catalog.refused {
            output::note(format_args!("refused: {}", refusal.error));
        }
        for unbound in catalog.plugins.iter().filter_map(|p| p.unbound.as_ref()) {
            output::note(format_args!("note: {unbound}"));
        }
        for warning in check_policy(registry.policy(), &catalog) {
            output::note(format_args!("warning: {warning}"));
        }
        Ok(registry)
    }
}

impl GlobalOptions {
    /// The turn pipeline over the policy's plugins: approval by the
    /// policy, and by `--yes`, a person at the terminal, or nobody.
    async fn pipeline(&self, yes: bool) -> anyhow::Result<Pipeline> {
        let approver: Arc<dyn Approver> = if yes {
            Arc::new(AllowAll)
        } else if std::io::stdin().is_terminal() {
            Arc::new(TerminalApprover::stdio())
        } else {
            Arc::new(DenyAll)
        };
        self.pipeline_with(approver).await
    }

    /// The turn pipeline over the policy's plugins, approving by the
    /// policy and `approver`.
    async fn pipeline_with(&self, approver: Arc<dyn Approver>) -> anyhow::Result<Pipeline> {
        let registry = Arc::new(self.registry().await?);
        let approvals = Approvals::new(&registry.policy().approval);
        for warning in approvals.take_warnings() {
            output::note(format_args!("warning: {warning}"));
        }
        Ok(Pipeline::new(Executor::new(registry), Arc::new(approvals), approver))
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("warn,toolhost={default}")));
    // Colour only on a terminal: a log file should hold text, not escapes.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
