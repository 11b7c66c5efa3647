//! The text-protocol benchmark, all figures from one run
//! (`cargo xtask bench`):
//!
//! - parse throughput on 1 MB of prose without calls, per protocol
//!   (target ≥ 8 GB/s for each protocol, ≥ 4 GB/s for `auto`, which looks
//!   for every family);
//! - parsing a reply with 100 VCP calls;
//! - rendering the prompt for 100 tools, cold versus cached.
//!
//! Each figure is a median.

mod summary;

use std::time::{Duration, Instant};
use summary::summarize;
use toolhost::{Declared, ProtocolId};
use toolhost::{ParamSpec, ParamType, Permission, ToolSpec};
use toolhost::{PromptCache, ToolCallConfig};

const PROSE_BYTES: usize = 1 << 20;

fn main() {
    let prose = prose(PROSE_BYTES);
    let declared = Declared::new((0..100).map(|i| format!("tool_{i}")));
    println!("toolhost protocol benchmark (medians)");
    println!("parse 1 MiB of prose without calls:");
    for protocol in [ProtocolId::Vcp, ProtocolId::JsonBlock, ProtocolId::XmlTag, ProtocolId::Native, ProtocolId::Auto] {
        let time = median(21, || {
            let parsed = protocol.protocol().parse(&prose, &declared);
            assert!(parsed.calls.is_empty());
        });
        let gbps = prose.len() as f64 / time.as_secs_f64() / 1e9;
        let target = if protocol == ProtocolId::Auto { 4.0 } else { 8.0 };
        if protocol == ProtocolId::Auto {
            summarize("auto_parse_gbps", gbps);
        }
        let mark = if gbps >= target { "meets" } else { "MISSES" };
        println!("  {:<10} {:>10}  {gbps:>6.2} GB/s  ({mark} target >= {target} GB/s)", protocol.as_str(), show(time));
    }

    let reply = hundred_vcp_calls();
    for protocol in [ProtocolId::Vcp, ProtocolId::Auto] {
        let time = median(101, || {
            let parsed = protocol.protocol().parse(&reply, &declared);
            assert_eq!(parsed.calls.len(), 100);
        });
        println!(
            "parse a reply with 100 VCP calls ({} KiB), {:<5} {:>10}  ({:.2} µs per call)",
            reply.len() >> 10,
            protocol.as_str(),
            show(time),
            time.as_secs_f64() * 1e6 / 100.0
        );
    }

    let tools: Vec<ToolSpec> = (0..100).map(tool).collect();
    let config = ToolCallConfig::on();
    let mut generation = 0;
    let cache = PromptCache::new();
    let cold = median(21, || {
        generation += 1; // a new registry generation empties the cache
        cache.render_tools(generation, || tools.iter().collect(), "bench", &config, ProtocolId::Vcp, "{{tools}}");
    });
    let warm = median(1001, || {
        cache.render_tools(generation, || tools.iter().collect(), "bench", &config, ProtocolId::Vcp, "{{tools}}");
    });
    let prompt = cache.render_tools(generation, || tools.iter().collect(), "bench", &config, ProtocolId::Vcp, "{{tools}}");
    println!(
        "render the prompt for 100 tools ({} KiB, {} tokens): cold {}, cached {}, cold/cached {:.0}x",
        prompt.text.len() >> 10,
        prompt.tokens(),
        show(cold),
        show(warm),
        cold.as_secs_f64() / warm.as_secs_f64()
    );
}

fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm-up
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples[runs / 2]
}

fn show(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1_000.0 { format!("{micros:.2} µs") } else { format!("{:.2} ms", micros / 1000.0) }
}

/// Deterministic English-like prose with the punctuation replies have.
fn prose(bytes: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "model",
        "answered",
        "with",
        "a",
        "careful",
        "explanation",
        "of",
        "how",
        "tools",
        "work,",
        "and",
        "then",
        "(see",
        "note",
        "3)",
        "it",
        "said:",
        "results",
        "may",
        "vary.",
        "However",
        "in",
        "practice",
        "most",
        "replies",
        "are",
        "plain",
        "text",
        "—",
        "lists,",
        "quotes",
        "\"like",
        "this\"",
        "and",
        "numbers",
        "such",
        "as",
        "42",
        "or",
        "3.14.",
        "Paragraphs",
        "end",
        "here.\n\n",
    ];
    let mut out = String::with_capacity(bytes + 32);
    let mut i = 0usize;
    while out.len() < bytes {
        out.push_str(WORDS[(i * 7 + i / 13) % WORDS.len()]);
        out.push(' ');
        i += 1;
    }
    out.truncate(bytes);
    out
}

fn hundred_vcp_calls() -> String {
    let mut reply = String::from("I will run these now.\n");
    for i in 0..100 {
        reply.push_str(&format!(
            "<<<[TOOL_REQUEST]>>>\ntool_name:「始」tool_{i}「末」,\nquery:「始」item number {i} with some words「末」,\nlimit:「始」{i}「末」\n<<<[END_TOOL_REQUEST]>>>\n"
        ));
    }
    reply
}

fn tool(i: usize) -> ToolSpec {
    ToolSpec {
        name: format!("tool_{i}"),
        plugin: format!("plugin_{}", i / 10),
        description: format!("Tool number {i}: looks things up in a collection and returns what matches."),
        params: vec![
            ParamSpec { name: "query".into(), ty: ParamType::String, description: "what to look for".into(), required: true },
            ParamSpec { name: "limit".into(), ty: ParamType::Integer, description: "how many results".into(), required: false },
        ],
        permission: Permission::Public,
        declared_permission: Permission::Public,
        result_approval: false,
        agent_callable: true,
        distributed_exposed: false,
        tags: vec![],
        example: None,
        reach: toolhost::types::Reach::Compute,
    }
}
