//! `hostile`: tools that misbehave on purpose, so tests can show the sandbox
//! holds. Only `spin`, `thrash_memory` and `wait_ms` are agent-callable, so
//! that tests of the conversation loop and the doors can have a model or a
//! client call a slow tool.

use std::sync::atomic::{AtomicU64, Ordering};
use toolhost_sdk::prelude::*;

struct Hostile;

/// Counts calls in this instance; a fresh instance per call keeps it at 1.
static CALLS: AtomicU64 = AtomicU64::new(0);

impl Plugin for Hostile {
    fn manifest() -> Manifest {
        let path = |tool: Tool| tool.param("path", Type::String, "a path inside the sandbox", Required);
        Manifest::new("hostile", env!("CARGO_PKG_VERSION"), "Misbehaving tools that test the sandbox")
            .directory("/data", Access::Read)
            .env("PATH")
            .http_host("127.0.0.1")
            // A name that resolves to loopback: granted by name, it must not
            // reach the host's own network.
            .http_host("localhost")
            .tool(Tool::new("spin", "Loop forever.").agent_callable(true))
            .tool(Tool::new("thrash_memory", "Read memory at random, forever: much time for little fuel.").agent_callable(true))
            .tool(Tool::new("exhaust_memory", "Allocate until memory runs out."))
            .tool(Tool::new("recurse", "Recurse without end."))
            .tool(path(Tool::new("read_path", "Read any path it is given.")))
            .tool(path(Tool::new("write_path", "Write to any path it is given.")))
            .tool(Tool::new("read_env", "Read an environment variable.").param("name", Type::String, "the variable", Required))
            .tool(Tool::new("fetch", "GET any URL.").param("url", Type::String, "the URL", Required))
            .tool(Tool::new("flood_output", "Return a huge output.").param("mib", Type::Integer, "how many MiB", Optional))
            .tool(Tool::new("panic", "Panic."))
            .tool(Tool::new("chatter", "Print a lot to stdout and stderr.").param(
                "kib",
                Type::Integer,
                "how many KiB to each",
                Required,
            ))
            .tool(Tool::new("count_calls", "Count calls in a static."))
            .tool(Tool::new("sleep", "Sleep inside a host call.").param("seconds", Type::Integer, "how long", Required))
            .tool(
                Tool::new("wait_ms", "Wait inside a host call, as a tool waiting on I/O does.")
                    .param("ms", Type::Integer, "how long", Required)
                    .agent_callable(true),
            )
    }

    fn invoke(tool: &str, args: Args) -> Result<Output, ToolError> {
        match tool {
            "spin" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "thrash_memory" => {
                // Reads at random across 48 MiB, more than a cache holds:
                // each read a miss, a few units of fuel for tens of
                // nanoseconds, so fuel's yields to the host's runtime come
                // a hundred milliseconds or more apart.
                let buffer = vec![1u8; 48 << 20];
                let (mut at, mut sum) = (0u32, 0u8);
                loop {
                    at = at.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    sum = std::hint::black_box(sum.wrapping_add(buffer[at as usize % buffer.len()]));
                }
            }
            "exhaust_memory" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "recurse" => Ok(json!({ "depth": recurse(0) }).into()),
            "read_path" => {
                let path: String = args.get("path")?;
                let text = std::fs::read_to_string(&path).map_err(|e| ToolError::failed(format!("cannot read {path}: {e}")))?;
                Ok(text.into())
            }
            "write_path" => {
                let path: String = args.get("path")?;
                std::fs::write(&path, b"pwned").map_err(|e| ToolError::failed(format!("cannot write {path}: {e}")))?;
                Ok("written".into())
            }
            "read_env" => {
                let name: String = args.get("name")?;
                std::env::var(&name)
                    .map(Output::from)
                    .map_err(|_| ToolError::failed(format!("environment variable `{name}` is not granted to this plugin")))
            }
            "fetch" => {
                let url: String = args.get("url")?;
                let response = toolhost_sdk::http::get(&url, 1024)?;
                Ok(json!({ "status": response.status, "body": String::from_utf8_lossy(&response.body) }).into())
            }
            "flood_output" => {
                let mib = args.get_opt::<u64>("mib")?.unwrap_or(8) as usize;
                Ok("x".repeat(mib << 20).into())
            }
            "panic" => panic!("hostile plugin panicked on purpose"),
            "chatter" => {
                let line = "x".repeat(1023);
                for _ in 0..args.get::<u64>("kib")? {
                    println!("{line}");
                    eprintln!("{line}");
                }
                Ok("done".into())
            }
            "count_calls" => Ok(json!({ "calls": CALLS.fetch_add(1, Ordering::SeqCst) + 1 }).into()),
            "wait_ms" => {
                std::thread::sleep(std::time::Duration::from_millis(args.get("ms")?));
                Ok("waited".into())
            }
            "sleep" => {
                let seconds: u64 = args.get("seconds")?;
                std::thread::sleep(std::time::Duration::from_secs(seconds));
                Ok("woke up".into())
            }
            other => Err(ToolError::unknown_tool(other)),
        }
    }
}

/// Recursion whose frames live on the WebAssembly stack (scalars only, no
/// arrays that Rust would put on its shadow stack in linear memory), and
/// whose result is used after the call so it cannot become a loop.
#[allow(unconditional_recursion, reason = "unbounded on purpose: it must hit the stack limit")]
fn recurse(depth: u64) -> u64 {
    recurse(depth.wrapping_add(1)).wrapping_mul(31).wrapping_add(depth)
}

toolhost_sdk::export_plugin!(Hostile);
