//! The real MCP peers the MCP tests run against, from this project's
//! registries, cached under `target/toolchains/mcp/`:
//!
//! | peer | from |
//! | --- | --- |
//! | the official Python client, `mcp` | PyPI, into a virtual environment |
//! | Node 22 and the official conformance suite, for the handshake era | npm (`node@22`, `@modelcontextprotocol/conformance@0.1.16`), in `node/` |
//! | the same for the 2026-07-28 requirements (its alpha line) | npm (`@modelcontextprotocol/conformance@0.2.0-alpha.12`), in `node-2026/` |
//! | nginx, the load balancer of the scale-out test | Debian |
//!
//! The Python client and nginx must install: the tests fail without them.
//! Only the conformance suite may be skipped, when Node 22 cannot be
//! installed: the reason is printed and written to
//! `target/toolchains/mcp/conformance.skipped`, where the test reads it
//! and reports the skip.

use crate::polyglot::{apt, cached, npm_install, run};
use std::path::Path;
use std::process::Command;

/// The Python client, pinned so the tests see one behaviour.
const PIP_PACKAGES: &[&str] = &["mcp==2.3.0"];
/// Node 22 and the conformance suite of the handshake era.
const NPM_PACKAGES: &[&str] = &["node@22", "@modelcontextprotocol/conformance@0.1.16"];
/// Node 22 and the suite whose `--requirements 2026-07-28` checks that
/// revision (a package of another version, so a folder of its own).
const NPM_PACKAGES_2026: &[&str] = &["node@22", "@modelcontextprotocol/conformance@0.2.0-alpha.12"];

/// Install the MCP peers, unless they are there.
pub fn install(root: &Path) -> anyhow::Result<()> {
    let dir = root.join("target/toolchains/mcp");
    std::fs::create_dir_all(&dir)?;
    let venv = dir.join("python");
    cached(&venv, PIP_PACKAGES, || {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
        run(Command::new(venv.join("bin/pip")).args(["install", "--quiet", "--disable-pip-version-check"]).args(PIP_PACKAGES))
    })?;
    let skipped = dir.join("conformance.skipped");
    let installed =
        npm_install(&dir.join("node"), NPM_PACKAGES).and_then(|()| npm_install(&dir.join("node-2026"), NPM_PACKAGES_2026));
    match installed {
        Ok(()) => {
            let _ = std::fs::remove_file(&skipped);
        }
        Err(reason) => {
            eprintln!("xtask: the MCP conformance suite will be SKIPPED: {reason}");
            std::fs::write(&skipped, reason)?;
        }
    }
    apt(&["nginx"], "nginx").map_err(|reason| anyhow::anyhow!("nginx, which the MCP scale-out test needs: {reason}"))
}
