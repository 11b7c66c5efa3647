use super::GlobalOptions;
use super::list::params_cell;
use super::output;
use anyhow::anyhow;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolhost::sandbox::Withheld;
use toolhost::text::printable;
use toolhost::{LoadedPlugin, Registry, registry::LockFile};

/// Show what one component offers and asks for.
///
/// Load one component and show its manifest, its pin, its limits, and the
/// capabilities it asks for next to those the policy grants (and, when the
/// policy section of its name is not bound to this component, why not).
/// Control characters in what the plugin declares are shown escaped.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "Examples:\n  toolhost inspect dist/words.wasm\n  toolhost inspect dist/words.wasm --json")]
pub(super) struct InspectCommand {
    /// The component file.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

impl InspectCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let policy = global.policy()?;
        // The registry reads an unreadable lock file as no pins; say so here.
        LockFile::read(&policy.lock_file)?;
        let registry = Registry::new(policy)?;
        // Its text is the plugin's: one line, escaped, like a `refused:` line.
        let plugin = registry.inspect(&self.file).await.map_err(|e| anyhow!("{}", printable(&e.to_string())))?;
        let pin = plugin.pin.to_string();
        let manifest = &plugin.manifest;
        if self.json {
            let value = json!({
                "file": self.file,
                "sha256": plugin.sha256,
                "pin": pin,
                "manifest": manifest,
                "granted": plugin.grants,
                "unbound": plugin.unbound.as_ref().map(ToString::to_string),
                "limits": {
                    "fuel": plugin.limits.fuel,
                    "timeout_ms": plugin.limits.timeout.as_millis() as u64,
                    "memory_bytes": plugin.limits.memory_bytes,
                    "output_bytes": plugin.limits.output_bytes,
                },
            });
            output::json(&value)?;
            return Ok(ExitCode::SUCCESS);
        }
        show(&plugin, &self.file)?;
        Ok(ExitCode::SUCCESS)
    }
}

/// What a loaded component is and asks for, as `toolhost inspect` and
/// `toolhost add` show it: its manifest, pin and limits, each tool with its
/// permission level, and each capability it requests, granted or withheld.
pub(super) fn show(plugin: &LoadedPlugin, file: &Path) -> anyhow::Result<()> {
    let pin = plugin.pin.to_string();
    let manifest = &plugin.manifest;
    output::line(format_args!("{} — {}", plugin.label(), manifest.description))?;
    output::line(format_args!("file:        {}", file.display()))?;
    output::line(format_args!("sha256:      {} ({pin})", plugin.sha256))?;
    output::line(format_args!("api version: {} (built against {})", manifest.api_version, plugin.contract))?;
    output::line(format_args!(
        "limits:      fuel {}, timeout {} ms, memory {} MiB, output {} KiB",
        plugin.limits.fuel,
        plugin.limits.timeout.as_millis(),
        plugin.limits.memory_bytes >> 20,
        plugin.limits.output_bytes >> 10
    ))?;
    output::line("tools:")?;
    let raising = plugin.grants.raising_level();
    for tool in &manifest.tools {
        let mut flags = vec![tool.permission.as_str().to_owned()];
        if tool.declared_permission != tool.permission {
            flags[0] = format!("{} (declared {}, raised by {})", flags[0], tool.declared_permission.as_str(), raising.join(", "));
        }
        for (on, flag) in [
            (tool.result_approval, "result-approval"),
            (tool.agent_callable, "agent-callable"),
            (tool.distributed_exposed, "distributed-exposed"),
        ] {
            if on {
                flags.push(flag.into());
            }
        }
        output::line(format_args!("  {} ({}) — {}", tool.name, flags.join(", "), tool.description))?;
        output::line(format_args!("    params: {}", params_cell(tool)))?;
        for param in tool.params.iter().filter(|p| !p.description.is_empty()) {
            output::line(format_args!("      {} — {}", param.name, param.description))?;
        }
        if !tool.tags.is_empty() {
            output::line(format_args!("    tags: {}", tool.tags.join(", ")))?;
        }
        if let Some(example) = &tool.example {
            output::line(format_args!("    example: {example}"))?;
        }
    }
    output::line("capabilities requested:")?;
    let asked = plugin.grants.asked(&manifest.capabilities);
    for asked in &asked {
        let access = asked.access.map(|access| format!(" ({access})")).unwrap_or_default();
        let status = match (asked.granted, &asked.how) {
            (true, Some(how)) => format!("granted {how}"),
            (true, None) => "granted".to_owned(),
            (false, _) => "withheld".to_owned(),
        };
        output::line(format_args!("  {} {}{access}: {status}", asked.kind, asked.item))?;
    }
    if asked.is_empty() {
        output::line("  none")?;
    }
    for withheld in &plugin.grants.withheld {
        if let Withheld::Env { reason, name } = withheld {
            output::line(format_args!("  (env {name}: {reason})"))?;
        }
    }
    if let Some(unbound) = &plugin.unbound {
        output::line(format_args!("  ({unbound})"))?;
    }
    Ok(())
}
