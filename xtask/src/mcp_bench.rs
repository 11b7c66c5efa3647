//! The MCP benchmark: `tools/call` round trips of `calculate` with the
//! official Python client, over stdio in both eras (the `initialize`
//! handshake, and 2026-07-28 with no handshake) and over streamable HTTP,
//! against a bare JSON-RPC responder of the same era in the same harness,
//! and against the fresh-instance figure of the runtime benchmark run just
//! before.
//!
//! The client is most of a round trip: what `toolhost mcp` itself costs
//! is measured against the bare responder (built optimized, as toolhost
//! is) in alternating rounds, so that load on the machine falls on both.
//! Over stdio the client, and the server it starts, run on one core: on a
//! VM of two cores the kernel put them on one core in some runs and on two
//! in others, and toolhost's own cost by round trips swung from 0 to
//! 106 µs between two runs of the same build. Each server's processor time
//! per call (a round of the calls less a round of none, so that start-up
//! and warm-up drop out) is the steadier figure; it is what the summary's
//! `mcp_server_side_us` holds.

use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Calls per round, after the client's own warm-up.
const CALLS: usize = 2000;
/// Alternating rounds of the bare responder and toolhost over stdio.
const ROUNDS: usize = 3;
/// What the server-side cost of a call may be, at most.
const TARGET_SERVER_US: f64 = 30.0;

/// One round of a server over stdio: its round trips' median and p99, and
/// its processor time per call, µs.
struct Round {
    median_us: f64,
    p99_us: f64,
    cpu_us: f64,
}

/// Run the benchmark and print its figures.
pub fn run(root: &Path) -> anyhow::Result<()> {
    crate::mcp_clients::install(root)?;
    // The bare responder optimized, as toolhost is: built for debugging,
    // it took 23 µs of processor time a call where it takes 7.5.
    super::run(super::cargo(root).args(["build", "--quiet", "--release", "-p", "xtask"]))?;
    let toolhost = root.join("target/release/toolhost");
    let examples = root.join("target/plugins/examples");
    let bare_responder = root.join("target/release/xtask");
    // (era, the client's mode): each era against its own bare responder.
    let eras = [("handshake", "session"), ("2026-07-28", "2026-07-28")];
    let (mut bare, mut stdio): (Vec<Vec<Round>>, Vec<Vec<Round>>) =
        (eras.iter().map(|_| Vec::new()).collect(), eras.iter().map(|_| Vec::new()).collect());
    for _ in 0..ROUNDS {
        for (era, (_, mode)) in eras.iter().enumerate() {
            bare[era].push(stdio_round(root, mode, &[bare_responder.as_os_str(), "bare-mcp".as_ref()])?);
            let server = [toolhost.as_os_str(), "--quiet".as_ref(), "--plugins".as_ref(), examples.as_os_str(), "mcp".as_ref()];
            stdio[era].push(stdio_round(root, mode, &server)?);
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
        let measured = client(root, &["--http", &url, "bench", "--calls", &CALLS.to_string()], &[]);
        let _ = server.kill();
        let _ = server.wait();
        measured?
    };
    let fresh = std::fs::read_to_string(root.join("target/bench/fresh_call_counted.txt"))
        .ok()
        .and_then(|ns| ns.trim().parse::<f64>().ok())
        .map(|ns| format!("{:.1} µs", ns / 1000.0))
        .unwrap_or_else(|| "not measured in this run".to_owned());
    println!(
        "MCP tools/call of calculate, official Python client, {CALLS} calls a round, {ROUNDS} alternating rounds (medians):"
    );
    let (mut worst_cost, mut worst_ratio) = (f64::MIN, f64::MIN);
    for (era, (name, _)) in eras.iter().enumerate() {
        let (bare, toolhost) = (&bare[era], &stdio[era]);
        let of = |rounds: &[Round], figure: fn(&Round) -> f64| median(rounds.iter().map(figure).collect());
        let own = |figure: fn(&Round) -> f64| median(bare.iter().zip(toolhost).map(|(b, t)| figure(t) - figure(b)).collect());
        let (own_cpu, own_trip) = (own(|r| r.cpu_us), own(|r| r.median_us));
        worst_cost = worst_cost.max(own_cpu);
        worst_ratio = worst_ratio.max(of(toolhost, |r| r.median_us) / of(bare, |r| r.median_us));
        println!(
            "  {name}, stdio, one core: round trip: bare JSON-RPC responder {:.0} µs (p99 {:.0}), toolhost mcp {:.0} µs (p99 {:.0}), \
             toolhost's own {own_trip:.0} µs; processor time a call: bare {:.1} µs, toolhost {:.1} µs, toolhost's own {own_cpu:.1} µs \
             (target ≤ {TARGET_SERVER_US} µs)",
            of(bare, |r| r.median_us),
            of(bare, |r| r.p99_us),
            of(toolhost, |r| r.median_us),
            of(toolhost, |r| r.p99_us),
            of(bare, |r| r.cpu_us),
            of(toolhost, |r| r.cpu_us),
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

/// One round of `server` (a command line) over stdio in the client's
/// `mode`, on one core: the calls' round trips, and the server's processor
/// time per call, from a round of them less a round of none.
fn stdio_round(root: &Path, mode: &str, server: &[&std::ffi::OsStr]) -> anyhow::Result<Round> {
    let round =
        |calls: usize| client(root, &["--mode", mode, "bench", "--one-core", "--calls", &calls.to_string(), "--stdio"], server);
    let (none, measured) = (round(0)?, round(CALLS)?);
    let figure = |value: &Value, key: &str| value[key].as_f64().with_context(|| format!("the client gave no {key}: {value}"));
    Ok(Round {
        median_us: figure(&measured, "median_us")?,
        p99_us: figure(&measured, "p99_us")?,
        cpu_us: (figure(&measured, "server_cpu_us")? - figure(&none, "server_cpu_us")?) / CALLS as f64,
    })
}

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
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
