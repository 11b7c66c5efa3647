//! The MCP benchmark: `tools/call` round trips of `calculate` with the
//! official Python client, over stdio in both eras (the `initialize`
//! handshake, and 2026-07-28 with no handshake) and over streamable HTTP,
//! against a bare JSON-RPC responder of the same era in the same harness,
//! and against the fresh-instance figure of the runtime benchmark run just
//! before.
//!
//! The client is most of a round trip: what `toolhost mcp` itself costs
//! is its median less the bare responder's, measured in alternating rounds
//! so that load on the machine falls on both.

use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Calls per round, after the client's own warm-up.
const CALLS: &str = "2000";
/// Alternating rounds of the bare responder and toolhost over stdio.
const ROUNDS: usize = 3;
/// What the server-side cost of a call may be, at most.
const TARGET_SERVER_US: f64 = 30.0;

/// Run the benchmark and print its figures.
pub fn run(root: &Path) -> anyhow::Result<()> {
    crate::mcp_clients::install(root)?;
    let toolhost = root.join("target/release/toolhost");
    let examples = root.join("target/plugins/examples");
    let xtask = std::env::current_exe().context("finding the xtask binary")?;
    // (era, the client's mode): each era against its own bare responder.
    let eras = [("handshake", "session"), ("2026-07-28", "2026-07-28")];
    let (mut bare, mut stdio) = (vec![Vec::new(); eras.len()], vec![Vec::new(); eras.len()]);
    for _ in 0..ROUNDS {
        for (era, (_, mode)) in eras.iter().enumerate() {
            let bench = ["--mode", mode, "bench", "--calls", CALLS, "--stdio"];
            bare[era].push(client(root, &bench, &[xtask.as_os_str(), "bare-mcp".as_ref()])?);
            let server = [toolhost.as_os_str(), "--quiet".as_ref(), "--plugins".as_ref(), examples.as_os_str(), "mcp".as_ref()];
            stdio[era].push(client(root, &bench, &server)?);
        }
    }
    let http = {
        let mut server = Command::new(&toolhost)
            .args(["--plugins"])
            .arg(&examples)
            .args(["mcp", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting toolhost mcp --http")?;
        let mut stderr = BufReader::new(server.stderr.take().context("its stderr")?);
        let mut line = String::new();
        let url = loop {
            line.clear();
            if stderr.read_line(&mut line)? == 0 {
                bail!("toolhost mcp --http ended before serving");
            }
            if let Some(at) = line.find("http://") {
                break line[at..].split_whitespace().next().unwrap_or_default().to_owned();
            }
        };
        let measured = client(root, &["--http", &url, "bench", "--calls", CALLS], &[]);
        let _ = server.kill();
        let _ = server.wait();
        measured?
    };
    let median = |runs: &[Value], key: &str| -> f64 {
        let mut values: Vec<f64> = runs.iter().filter_map(|r| r[key].as_f64()).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let fresh = std::fs::read_to_string(root.join("target/bench/fresh_call_counted.txt"))
        .ok()
        .and_then(|ns| ns.trim().parse::<f64>().ok())
        .map(|ns| format!("{:.1} µs", ns / 1000.0))
        .unwrap_or_else(|| "not measured in this run".to_owned());
    println!("MCP tools/call round trip of calculate, official Python client, {CALLS} calls a round:");
    let (mut worst_cost, mut worst_ratio) = (f64::MIN, f64::MIN);
    for (era, (name, _)) in eras.iter().enumerate() {
        let mut costs: Vec<f64> = bare[era]
            .iter()
            .zip(&stdio[era])
            .filter_map(|(b, t)| Some(t["median_us"].as_f64()? - b["median_us"].as_f64()?))
            .collect();
        costs.sort_by(f64::total_cmp);
        let cost = costs[costs.len() / 2];
        worst_cost = worst_cost.max(cost);
        worst_ratio = worst_ratio.max(median(&stdio[era], "median_us") / median(&bare[era], "median_us"));
        println!(
            "  {name}, stdio: bare JSON-RPC responder median {:.0} µs (p99 {:.0}); toolhost mcp median {:.0} µs (p99 {:.0}); \
             toolhost's own cost {cost:.0} µs (median of {ROUNDS} alternating rounds; target ≤ {TARGET_SERVER_US} µs)",
            median(&bare[era], "median_us"),
            median(&bare[era], "p99_us"),
            median(&stdio[era], "median_us"),
            median(&stdio[era], "p99_us"),
        );
    }
    println!(
        "  handshake, HTTP: toolhost mcp median {:.0} µs, p99 {:.0} µs; a fresh instance alone: {fresh}",
        http["median_us"].as_f64().unwrap_or(f64::NAN),
        http["p99_us"].as_f64().unwrap_or(f64::NAN)
    );
    super::summary::record(root, "mcp_server_side_us", worst_cost)?;
    super::summary::record(root, "mcp_stdio_over_bare", worst_ratio)?;
    Ok(())
}

/// Run the client script with `args`, then `server` (the `--stdio`
/// command), and read the JSON it printed.
fn client(root: &Path, args: &[&str], server: &[&std::ffi::OsStr]) -> anyhow::Result<Value> {
    let python = root.join("target/toolchains/mcp/python/bin/python");
    let output = Command::new(python)
        .arg(root.join("tests/mcp/client.py"))
        .args(args)
        .args(server)
        .stderr(Stdio::inherit())
        .output()
        .context("running the MCP client")?;
    if !output.status.success() {
        bail!("the MCP client failed with {}", output.status);
    }
    Ok(serde_json::from_slice(&output.stdout)?)
}

/// A bare MCP server on stdio: it answers `initialize`, `tools/list` and
/// `tools/call` with fixed results the size of toolhost's, and does
/// nothing else. The floor a server's own cost is measured against.
pub fn bare_responder() -> anyhow::Result<()> {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let request: Value = serde_json::from_str(&line?)?;
        let Some(id) = request.get("id") else { continue };
        let mut result = match request["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bare", "version": "0"},
            }),
            Some("server/discover") => json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bare", "version": "0"},
                "ttlMs": 0,
                "cacheScope": "private",
            }),
            Some("tools/list") => {
                json!({"tools": [{"name": "calculate", "inputSchema": {"type": "object"}}], "ttlMs": 0, "cacheScope": "private"})
            }
            Some("tools/call") => json!({
                "content": [{"type": "text", "text": "{\"expression\":\"6*7\",\"value\":42.0}"}],
                "structuredContent": {"expression": "6*7", "value": 42.0},
                "isError": false,
            }),
            _ => json!({}),
        };
        // A 2026-07-28 request (its version in `_meta`) gets that era's
        // results, as toolhost gives them.
        if request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string() {
            result["resultType"] = json!("complete");
        }
        serde_json::to_writer(&mut stdout, &json!({"jsonrpc": "2.0", "id": id, "result": result}))?;
        stdout.write_all(b"\n")?;
        stdout.flush()?;
    }
    Ok(())
}
