use super::GlobalOptions;
use super::output;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

/// Print the plugin contract (WIT), or write it into a directory.
///
/// Print the plugin contract, the WIT package `toolhost:plugin` built into
/// this binary, or write it into a directory for a component toolchain
/// (`componentize-py -d DIR`, `wit-bindgen c DIR`, …). A plugin targets its
/// world `plugin`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "Examples:\n  toolhost wit\n  toolhost wit --out wit")]
pub(super) struct WitCommand {
    /// Write `plugin.wit` into DIR instead of printing it
    ///
    /// Write `plugin.wit` into DIR (made if missing) instead of printing it.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

impl WitCommand {
    pub(super) async fn execute(self, _global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        match self.out {
            Some(dir) => {
                let file =
                    toolhost::contract::write_wit(&dir).with_context(|| format!("writing the WIT into {}", dir.display()))?;
                output::note(format_args!("wrote {}", file.display()));
            }
            // Byte for byte, so `toolhost wit > plugin.wit` is the file itself.
            None => output::data(toolhost::contract::PLUGIN_WIT.strip_suffix('\n').unwrap_or(toolhost::contract::PLUGIN_WIT))?,
        }
        Ok(ExitCode::SUCCESS)
    }
}
