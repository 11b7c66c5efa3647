//! The `toolhost` command line: one file per subcommand, each a clap-derive
//! struct whose doc comment is its `--help` and whose `execute` does the
//! work. Everything it does goes through the `toolhost` library's public
//! API.

mod add;
mod approvals;
mod call;
mod chat;
mod check;
mod completions;
mod confirm;
mod console;
mod inspect;
mod list;
mod lock;
mod mcp;
mod model;
mod new;
mod node;
mod output;
mod parse;
mod progress;
mod prompt;
mod remove;
mod run;
mod source;
mod stops;
mod wit;

// Each call's host memory is counted, so its host-memory limit holds.
toolhost::count_host_memory!();

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost::{AllowAll, Approvals, Approver, DenyAll, Executor, Pipeline, Registry, approval::TerminalApprover};
use toolhost::{
    Policy,
    config::{DEFAULT_CONFIG_FILE, DEFAULT_LOCK_FILE, find_config_file},
    policy_check::check_policy,
    sandbox::SandboxSize,
};
use toolhost_support::error_chain::error_chain;

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
    /// The host policy file [default: toolhost.toml here or above]
    ///
    /// Without `--config`: toolhost.toml in this directory or the nearest
    /// one above it; else $XDG_CONFIG_HOME/toolhost/toolhost.toml if it
    /// exists; else the per-user plugin directory,
    /// $XDG_DATA_HOME/toolhost/plugins, with its own lock file.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A directory of plugin components (for `plugin_dirs`); repeatable
    ///
    /// Replaces the policy's `plugin_dirs` when given (a relative one is
    /// taken from the working directory); its components are
    /// pinned by the policy's lock file, unless that is the per-user one
    /// (which pins what `toolhost add` installed): then by toolhost.lock in
    /// this directory, if it exists.
    #[arg(long = "plugins", global = true, value_name = "DIR")]
    plugins: Vec<PathBuf>,
    /// The lock file that pins the components, in place of `lock_file`
    ///
    /// In place of the policy's `lock_file`, and of the rule `--plugins`
    /// follows.
    #[arg(long, global = true, value_name = "FILE")]
    lock_file: Option<PathBuf>,
    /// More log output on stderr: -v info, -vv debug, -vvv trace.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    verbose: u8,
    /// Print only results and errors: no progress, warnings or notes.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Colour stderr
    ///
    /// auto: on a terminal, unless NO_COLOR is set.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    color: output::ColorChoice,
    /// What the command's sandbox reserves in place of the policy's
    /// `[sandbox]`: a command that runs a call or two reserves per
    /// instance, not a pool for a long-running host.
    #[arg(skip)]
    sandbox: Option<SandboxSize>,
}

#[derive(Debug, Subcommand)]
enum Command {
    List(list::ListCommand),
    Inspect(inspect::InspectCommand),
    Call(call::CallCommand),
    Chat(chat::ChatCommand),
    Console(console::ConsoleCommand),
    Check(check::CheckCommand),
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
    Mcp(mcp::McpCommand),
}

/// How long the command waits for background work when it is done.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Parse the command line, run the subcommand, print any error with its
/// whole cause chain. A closed stdout ends the command quietly.
fn main() -> ExitCode {
    let cli = Cli::parse();
    output::configure(cli.global.quiet, cli.global.color);
    init_logging(cli.global.verbose, cli.global.quiet);
    // Calls together may hold a share of the descriptor limit: the larger
    // the limit, the more files they may have open at once.
    if let Err(error) = toolhost::sandbox::raise_open_file_limit() {
        tracing::debug!("could not raise the open-file limit: {error}");
    }
    let runtime = match cli.runtime().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            output::alert(format_args!("error: cannot start the async runtime: {e}"));
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
            output::alert_lines(format_args!("error: {}", error_chain(&*error)));
            ExitCode::FAILURE
        }
    }
}

impl Cli {
    /// The runtime the command runs on: threads for every core, but where
    /// the command says otherwise (`mcp --threads`).
    fn runtime(&self) -> tokio::runtime::Builder {
        match &self.command {
            Command::Mcp(mcp) => mcp.runtime(),
            _ => tokio::runtime::Builder::new_multi_thread(),
        }
    }

    async fn execute(mut self) -> anyhow::Result<ExitCode> {
        self.global.sandbox = match &self.command {
            // Long-running: the pool the policy sizes.
            Command::Chat(_) | Command::Console(_) | Command::Node(_) | Command::Mcp(_) => None,
            // A reply's calls, perhaps in parallel.
            Command::Run(_) => Some(SandboxSize::on_demand(toolhost::executor::default_concurrency().try_into().unwrap_or(1))),
            _ => Some(SandboxSize::one_call()),
        };
        match self.command {
            Command::List(c) => c.execute(&self.global).await,
            Command::Inspect(c) => c.execute(&self.global).await,
            Command::Call(c) => c.execute(&self.global).await,
            Command::Chat(c) => c.execute(&self.global).await,
            Command::Console(c) => c.execute(&self.global).await,
            Command::Check(c) => c.execute(&self.global).await,
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
            Command::Mcp(c) => c.execute(&self.global).await,
        }
    }
}

impl GlobalOptions {
    /// The policy file in use: `--config`, else the one found from the
    /// working directory up, else the per-user one, if any.
    fn config_file(&self) -> Option<PathBuf> {
        if let Some(file) = &self.config {
            return Some(file.clone());
        }
        let here = std::env::current_dir().ok()?;
        let found = find_config_file(&here)?;
        // The working directory's own file keeps its paths short.
        Some(found.strip_prefix(&here).map_or(found.clone(), PathBuf::from))
    }

    /// The policy from [`GlobalOptions::config_file`], or else the defaults
    /// (over `--plugins` when given, the per-user plugin directory, made if
    /// missing, when not), with `--plugins` applied.
    fn policy(&self) -> anyhow::Result<Policy> {
        let config_file = self.config_file();
        if let Some(file) = config_file.as_ref().filter(|_| self.config.is_none()) {
            // A file found, not named: another user's, or one others may
            // write, would hand out this user's grants (git's safe.directory).
            toolhost_support::trust::check_trusted(file).map_err(|untrusted| {
                anyhow::anyhow!(
                    "refusing the policy file found at {untrusted}; if you trust it, name it with --config {}, \
                     or fix its owner or mode (chown, chmod o-w)",
                    file.display()
                )
            })?;
            tracing::info!("using the policy file {}", file.display());
        }
        let mut policy = match &config_file {
            Some(path) => Policy::load(path)?,
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
            // Made absolute here, so that a directory that is missing is
            // named where it was looked for.
            policy.plugin_dirs =
                self.plugins.iter().map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.clone())).collect();
            // The per-user lock pins what `add` installed in the per-user
            // directory, not a directory named here, say a build's output.
            if toolhost::config::user_plugin_dir().is_some_and(|dir| policy.lock_file == dir.join(DEFAULT_LOCK_FILE)) {
                policy.lock_file = PathBuf::from(DEFAULT_LOCK_FILE);
            }
        }
        if let Some(lock_file) = &self.lock_file {
            policy.lock_file = lock_file.clone();
        }
        if let Some(size) = self.sandbox {
            policy.sandbox = size;
        }
        Ok(policy)
    }

    /// The registry over the policy's plugin directories, showing progress
    /// on stderr while components compile.
    async fn registry(&self) -> anyhow::Result<Registry> {
        self.registry_over(&self.policy()?).await
    }

    /// The registry over `policy`'s plugin directories, showing progress on
    /// stderr while components compile and telling what is amiss.
    async fn registry_over(&self, policy: &Policy) -> anyhow::Result<Registry> {
        let registry = self.load(policy).await?;
        for finding in findings(&registry, policy) {
            output::note(finding);
        }
        Ok(registry)
    }

    /// The registry over `policy`'s plugin directories, saying on stderr
    /// what takes a while (components compiling) and for how long.
    async fn load(&self, policy: &Policy) -> anyhow::Result<Registry> {
        if policy.plugin_dirs.is_empty() {
            bail!("no plugin directories: pass --plugins DIR or set plugin_dirs in {DEFAULT_CONFIG_FILE}");
        }
        let progress = progress::Progress::start("loading plugins");
        let loaded = Registry::load_with_progress(policy.runtime(), &|p| {
            progress.update(format_args!(
                "compiling {} ({}/{}; the compiled code is cached for the next load)",
                p.file.display(),
                p.index,
                p.total
            ));
        })
        .await
        .context("loading plugins");
        progress.finish("plugins loaded");
        loaded
    }
}

/// Reload `registry` when a component is added, changed or removed in its
/// plugin directories, until `shutdown`: for the commands that keep
/// serving (`mcp`, `node`, `console`).
fn watch_plugins(registry: &Arc<Registry>, shutdown: &toolhost::CancellationToken) {
    let (registry, shutdown) = (registry.clone(), shutdown.clone());
    tokio::spawn(async move { registry.watch(toolhost::registry::DEFAULT_WATCH_INTERVAL, shutdown).await });
}

/// Rescan the plugin directories (on SIGHUP), and say what changed.
async fn rescan_plugins(registry: &Registry) {
    match registry.reload().await {
        Ok(event) => output::note(format_args!(
            "plugins rescanned: {} added, {} changed, {} removed",
            event.added.len(),
            event.changed.len(),
            event.removed.len()
        )),
        Err(error) => output::note(format_args!("warning: rescanning the plugins failed: {error}")),
    }
}

/// What a person should hear about a loaded registry, a line each:
/// refused components, policy sections that did not apply, policy
/// mistakes and approval rules that do nothing.
fn findings(registry: &Registry, policy: &Policy) -> Vec<String> {
    let catalog = registry.catalog();
    let refused = catalog.refused.iter().map(|r| format!("refused: {}", r.error));
    let unbound = catalog.plugins.iter().filter_map(|p| p.unbound.as_ref()).map(|u| format!("note: {u}"));
    let policy = check_policy(policy, &catalog).into_iter().map(|w| format!("warning: {w}"));
    refused.chain(unbound).chain(policy).collect()
}

impl GlobalOptions {
    /// The turn pipeline over `policy`'s plugins: approval by the
    /// policy, and by `--yes`, a person at the terminal, or nobody.
    async fn pipeline(&self, policy: &Policy, yes: bool) -> anyhow::Result<Pipeline> {
        self.pipeline_with(policy, approver(yes)).await
    }

    /// The turn pipeline over `policy`'s plugins, approving by the
    /// policy and `approver`.
    async fn pipeline_with(&self, policy: &Policy, approver: Arc<dyn Approver>) -> anyhow::Result<Pipeline> {
        Ok(pipeline_over(self.registry_over(policy).await?, policy, approver))
    }
}

/// Who approves a call the policy leaves to a person: everyone with
/// `--yes`, the person at the terminal, or nobody.
fn approver(yes: bool) -> Arc<dyn Approver> {
    if yes {
        Arc::new(AllowAll)
    } else if std::io::stdin().is_terminal() {
        Arc::new(TerminalApprover::stdio())
    } else {
        Arc::new(DenyAll)
    }
}

/// The turn pipeline over `registry`, approving by `policy` and
/// `approver`.
fn pipeline_over(registry: Registry, policy: &Policy, approver: Arc<dyn Approver>) -> Pipeline {
    let registry = Arc::new(registry);
    let approvals = Approvals::new(&policy.approval);
    for warning in approvals.take_warnings() {
        output::note(format_args!("warning: {warning}"));
    }
    Pipeline::new(Executor::new(registry), Arc::new(approvals), approver)
}

fn init_logging(verbose: u8, quiet: bool) {
    let default = match verbose {
        0 if quiet => "error",
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("{},toolhost={default}", if quiet { "error" } else { "warn" }))
    });
    // Colour only as `--color` says: a log file should hold text, not escapes.
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(output::color_on_stderr()).init();
}
