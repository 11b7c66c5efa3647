use super::Cli;
use clap::CommandFactory;
use std::process::ExitCode;

/// Print a shell completion script.
///
/// Print a completion script for SHELL: `toolhost completions bash >
/// ~/.local/share/bash-completion/completions/toolhost`, or `source
/// <(toolhost completions zsh)`.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost completions bash > ~/.local/share/bash-completion/completions/toolhost\n  source <(toolhost completions zsh)"
)]
pub(super) struct CompletionsCommand {
    /// The shell
    shell: clap_complete::Shell,
}

impl CompletionsCommand {
    pub(super) fn execute(&self) -> anyhow::Result<ExitCode> {
        let mut script = Vec::new();
        clap_complete::generate(self.shell, &mut Cli::command(), "toolhost", &mut script);
        super::output::data(&String::from_utf8(script)?)?;
        Ok(ExitCode::SUCCESS)
    }
}
