//! The VCP node benchmark, all figures from one run
//! (`cargo bench -p toolhost-tests --bench vcp_node`), against the
//! test suite's stand-in VCP server on loopback:
//!
//! - (a) `calculate` on `1+1` on the bare executor, a fresh instance per
//!   call, one at a time: what the node adds to;
//! - (b) the `execute_tool` → `tool_result` round trip through the node,
//!   one call at a time: median and p99;
//! - (c) calls per second through the node with 64 in flight, against
//!   (a)'s calls per second.
//!
//! The stand-in's side (framing, JSON, its own task hops) is inside (b)
//! and (c), as a real server's would be.

#[allow(dead_code)]
mod built {
    include!(concat!(env!("OUT_DIR"), "/plugins.rs"));
}
#[allow(dead_code)]
#[path = "all/support.rs"]
mod support;
#[allow(dead_code)]
#[path = "all/vcp_standin.rs"]
mod vcp_standin;

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::TestHost;
use tokio::sync::broadcast;
use toolhost::{Approvals, CancellationToken, Pipeline, Status, ToolCall, VcpNode, vcp::UnattendedApprover};
use vcp_standin::{Received, StandIn};

// Host memory is counted, as in the toolhost command.
toolhost::count_host_memory!();

const KEY: &str = "bench-key";
const WARM_UP: usize = 300;
const FRESH_CALLS: usize = 3_000;
const ROUND_TRIPS: usize = 3_000;
const IN_FLIGHT: usize = 64;
const THROUGHPUT_CALLS: usize = 20_000;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let standin = StandIn::start(KEY).await;
    let host = TestHost::new(&[built::CALC], &format!("[vcp]\nserver = \"{}\"\nnode_name = \"bench\"\n", standin.url())).await;
    let config = host.config.vcp.clone().expect("[vcp] is set");
    let approvals = Arc::new(Approvals::new(&host.config.approval));
    let pipeline = Pipeline::new(host.executor.clone(), approvals, Arc::new(UnattendedApprover::new(config.unattended)));
    let node = VcpNode::new(config, KEY, pipeline)?;
    let shutdown = CancellationToken::new();
    let running = tokio::spawn({
        let (node, shutdown) = (node.clone(), shutdown.clone());
        async move { node.run(shutdown).await }
    });
    standin.wait_for("the placeholder", |r| r.kind() == "update_static_placeholders").await;
    let mut frames = standin.subscribe();

    // (a) The bare executor, a fresh instance per call.
    let call = ToolCall::new("bench", "calculate", json!({"expression": "1+1"}).as_object().cloned().unwrap_or_default());
    let mut fresh = Vec::with_capacity(FRESH_CALLS);
    for i in 0..WARM_UP + FRESH_CALLS {
        let start = Instant::now();
        let outcome = host.executor.call(&call).await;
        anyhow::ensure!(outcome.status == Status::Success, "{}", outcome.output);
        if i >= WARM_UP {
            fresh.push(start.elapsed());
        }
    }
    fresh.sort();

    // (b) One call at a time through the node.
    let mut round_trips = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..WARM_UP + ROUND_TRIPS {
        let id = format!("rt{i}");
        let start = Instant::now();
        standin.execute(&id, "calculate", json!({"expression": "1+1"}));
        let answered = next_result(&mut frames).await?;
        anyhow::ensure!(answered == id, "{answered} answered while waiting for {id}");
        if i >= WARM_UP {
            round_trips.push(start.elapsed());
        }
    }
    round_trips.sort();

    // (c) 64 in flight: each answer sends the next call.
    let start = Instant::now();
    let mut sent = 0;
    for _ in 0..IN_FLIGHT {
        standin.execute(&format!("tp{sent}"), "calculate", json!({"expression": "1+1"}));
        sent += 1;
    }
    for _ in 0..THROUGHPUT_CALLS {
        next_result(&mut frames).await?;
        if sent < THROUGHPUT_CALLS {
            standin.execute(&format!("tp{sent}"), "calculate", json!({"expression": "1+1"}));
            sent += 1;
        }
    }
    let elapsed = start.elapsed();
    shutdown.cancel();
    running.await?;

    let fresh_median = percentile(&fresh, 50);
    let (median, p99) = (percentile(&round_trips, 50), percentile(&round_trips, 99));
    let per_second = THROUGHPUT_CALLS as f64 / elapsed.as_secs_f64();
    let fresh_per_second = 1.0 / fresh_median.as_secs_f64();
    println!("VCP node on loopback, calculate(1+1), {} cores", std::thread::available_parallelism()?);
    println!("(a) bare executor, fresh instance, serial   median {:>10}", show(fresh_median));
    println!("(b) execute_tool -> tool_result, serial     median {:>10}   p99 {:>10}", show(median), show(p99));
    println!("    the node's and the socket's share of (b) median {:>10}", show(median.saturating_sub(fresh_median)));
    println!(
        "(c) through the node, {IN_FLIGHT} in flight          {per_second:>10.0} calls/s ({THROUGHPUT_CALLS} calls in {elapsed:.2?})"
    );
    println!(
        "    against (a) serial                      {fresh_per_second:>10.0} calls/s: {:.2}x",
        per_second / fresh_per_second
    );
    Ok(())
}

/// The request id of the next successful `tool_result`.
async fn next_result(frames: &mut broadcast::Receiver<Received>) -> anyhow::Result<String> {
    loop {
        let received = tokio::time::timeout(Duration::from_secs(10), frames.recv()).await??;
        if received.kind() == "tool_result" {
            let data = &received.frame["data"];
            anyhow::ensure!(data["status"] == "success", "{data}");
            return Ok(data["requestId"].as_str().unwrap_or_default().to_owned());
        }
    }
}

/// The `p`th percentile of sorted `samples`.
fn percentile(samples: &[Duration], p: usize) -> Duration {
    samples[(samples.len() * p / 100).min(samples.len() - 1)]
}

fn show(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}
