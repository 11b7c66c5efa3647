use super::GlobalOptions;
use super::list::params_cell;
use crate::registry::{LockFile, Registry};
use crate::sandbox::Withheld;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

/// Load one component and show its manifest, its pin, its limits, and the
/// capabilities it asks for next to those the policy grants.
#[derive(Debug, clap::Args)]
pub(super) struct InspectCommand {
    /// The component file.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

impl InspectCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let mut policy = global.policy()?;
        let lock = LockFile::read(&policy.lock_file)?;
        policy.plugin_dirs.clear();
        let registry = Registry::load(policy).await?;
        let plugin = registry.inspect(&self.file).await?;
        let file_name = self.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let pin = match lock.as_ref().map(|l| l.pin(&file_name)) {
            None => "no lock file".to_owned(),
            Some(None) => "not pinned".to_owned(),
            Some(Some(p)) if p == plugin.sha256 => "pinned, matches".to_owned(),
            Some(Some(p)) => format!("MISMATCH: pinned sha256:{p}"),
        };
        let manifest = &plugin.manifest;
        if self.json {
            let value = json!({
                "file": self.file,
                "sha256": plugin.sha256,
                "pin": pin,
                "manifest": manifest,
                "granted": plugin.grants,
                "limits": {
                    "fuel": plugin.limits.fuel,
                    "timeout_ms": plugin.limits.timeout.as_millis() as u64,
                    "memory_bytes": plugin.limits.memory_bytes,
                    "output_bytes": plugin.limits.output_bytes,
                },
            });
            println!("{}", serde_json::to_string_pretty(&value)?);
            return Ok(ExitCode::SUCCESS);
        }
        println!("{} — {}", plugin.label(), manifest.description);
        println!("file:        {}", self.file.display());
        println!("sha256:      {} ({pin})", plugin.sha256);
        println!("api version: {}", manifest.api_version);
        println!(
            "limits:      fuel {}, timeout {} ms, memory {} MiB, output {} KiB",
            plugin.limits.fuel,
            plugin.limits.timeout.as_millis(),
            plugin.limits.memory_bytes >> 20,
            plugin.limits.output_bytes >> 10
        );
        println!("tools:");
        for tool in &manifest.tools {
            let mut flags = vec![tool.permission.as_str().to_owned()];
            for (on, flag) in [
                (tool.result_approval, "result-approval"),
                (tool.agent_callable, "agent-callable"),
                (tool.distributed_exposed, "distributed-exposed"),
            ] {
                if on {
                    flags.push(flag.into());
                }
            }
            println!("  {} ({}) — {}", tool.name, flags.join(", "), tool.description);
            println!("    params: {}", params_cell(tool));
        }
        let caps = &manifest.capabilities;
        println!("capabilities requested:");
        for dir in &caps.directories {
            let granted = plugin.grants.dirs.iter().find(|g| g.guest_path == dir.guest_path);
            let status = match granted {
                Some(g) => format!("granted {} → {}", g.access.as_str(), g.host_path.display()),
                None => "withheld".to_owned(),
            };
            println!("  dir {} ({}): {status}", dir.guest_path, dir.access.as_str());
        }
        for name in &caps.env {
            let status = if plugin.grants.env.iter().any(|e| &e.name == name) { "granted" } else { "withheld" };
            println!("  env {name}: {status}");
        }
        for host in &caps.http_hosts {
            let status = if plugin.grants.http_hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) { "granted" } else { "withheld" };
            println!("  http {host}: {status}");
        }
        if caps.directories.is_empty() && caps.env.is_empty() && caps.http_hosts.is_empty() {
            println!("  none");
        }
        for withheld in &plugin.grants.withheld {
            if let Withheld::Env { reason, name } = withheld {
                println!("  (env {name}: {reason})");
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
