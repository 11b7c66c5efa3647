//! `hoarder`: makes the host do and keep things on its behalf — host
//! memory through WASI resources, log records, host copies, open files,
//! symlinks out of its grant, huge errors, an exit instead of a result —
//! so tests can show that every such path is bounded, named in the outcome,
//! and that the host serves the next call. It asks for `/data` read-write
//! and the HTTP host `127.0.0.1`; tests grant either or neither.

use toolhost_sdk::prelude::*;
use toolhost_sdk::{LogLevel, log};
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, OpenFlags, PathFlags};

struct Hoarder;

impl Plugin for Hoarder {
    fn manifest() -> Manifest {
        let count = |tool: Tool| tool.param("count", Type::Integer, "how many; unbounded if absent", Optional);
        Manifest::new("hoarder", env!("CARGO_PKG_VERSION"), "Makes the host hold and do things for it")
            .directory("/data", Access::ReadWrite)
            .http_host("127.0.0.1")
            .tool(Tool::new("hoard_fields", "Keep wasi:http fields resources of 60 KB each."))
            .tool(Tool::new("hoard_paths", "Keep outgoing requests whose path is 60 KB each."))
            .tool(Tool::new("hoard_pollables", "Keep clock pollables."))
            .tool(count(Tool::new("log_empty", "Log empty records.")))
            .tool(Tool::new("log_huge", "Log records of `mib` MiB forever.").param(
                "mib",
                Type::Integer,
                "each record's size",
                Required,
            ))
            .tool(Tool::new("poll_many", "Poll one pollable listed `count` times.").param(
                "count",
                Type::Integer,
                "how many times it is listed",
                Required,
            ))
            .tool(Tool::new("touch", "Set the times of a file in /data, following links.").param(
                "name",
                Type::String,
                "the file in /data",
                Required,
            ))
            .tool(Tool::new("log_forged", "Log a record that tries to forge host log lines."))
            .tool(
                Tool::new("huge_error", "Fail with an error message of `mib` MiB.")
                    .param("mib", Type::Integer, "the message's size", Required)
                    .param("kind", Type::String, "failed or invalid-args", Optional),
            )
            .tool(Tool::new("random", "Ask the host for `bytes` random bytes at once.").param(
                "bytes",
                Type::Integer,
                "how many",
                Required,
            ))
            .tool(Tool::new("errno_bomb", "Fail with a message of errno-like text that is costly to scan naively."))
            .tool(Tool::new("grow_then_panic", "Have a memory growth refused, handle it, then panic."))
            .tool(Tool::new("grow_then_spin", "Have a memory growth refused, handle it, then loop."))
            .tool(Tool::new("exit", "Exit the process with status 0 instead of returning."))
            .tool(count(Tool::new("hold_files", "Open /data again and again, keeping every handle.")))
            .tool(count(Tool::new("hold_streams", "Open a file, keep a stream over it, drop the descriptor; again and again.")))
            .tool(Tool::new("hoard_listings", "Fill /data with `files` files, then keep directory streams over it.").param(
                "files",
                Type::Integer,
                "how many files to create first",
                Required,
            ))
            .tool(
                Tool::new("fetch_many", "GET a URL `count` times, failing at the first error.")
                    .param("url", Type::String, "the URL", Required)
                    .param("count", Type::Integer, "how many", Required),
            )
            .tool(Tool::new("read_data", "Read a file in /data (a FIFO, say).").param(
                "name",
                Type::String,
                "the file in /data",
                Required,
            ))
            .tool(
                Tool::new("symlink", "Create a symlink in /data.")
                    .param("target", Type::String, "where it points", Required)
                    .param("name", Type::String, "the link's name in /data", Required),
            )
    }

    fn invoke(tool: &str, args: Args) -> Result<Output, ToolError> {
        let count = args.get_opt::<u64>("count")?.unwrap_or(u64::MAX);
        match tool {
            "hoard_fields" => {
                let mut kept = Vec::new();
                loop {
                    let fields = wasip2::http::types::Fields::new();
                    fields
                        .append("x-hoard", &[b'a'; 60_000])
                        .map_err(|e| ToolError::failed(format!("append refused after {} fields: {e:?}", kept.len())))?;
                    kept.push(fields);
                }
            }
            "hoard_paths" => {
                let path = format!("/{}", "p".repeat(60_000));
                let mut kept = Vec::new();
                loop {
                    let request = wasip2::http::types::OutgoingRequest::new(wasip2::http::types::Fields::new());
                    request
                        .set_path_with_query(Some(&path))
                        .map_err(|()| ToolError::failed(format!("path refused after {} requests", kept.len())))?;
                    kept.push(request);
                }
            }
            "hoard_pollables" => {
                let mut kept = Vec::new();
                loop {
                    kept.push(wasip2::clocks::monotonic_clock::subscribe_duration(1_000_000_000));
                }
            }
            "log_empty" => {
                for _ in 0..count {
                    log(LogLevel::Info, "");
                }
                Ok("logged".into())
            }
            "log_huge" => {
                let message = "m".repeat((args.get::<u64>("mib")? as usize) << 20);
                loop {
                    log(LogLevel::Info, &message);
                }
            }
            "poll_many" => {
                let pollable = wasip2::clocks::monotonic_clock::subscribe_duration(0);
                let list: Vec<&wasip2::io::poll::Pollable> = (0..args.get::<u64>("count")?).map(|_| &pollable).collect();
                Ok(json!({ "ready": wasip2::io::poll::poll(&list).len() }).into())
            }
            "touch" => {
                let name: String = args.get("name")?;
                let now = wasip2::filesystem::types::NewTimestamp::Now;
                data_dir()?
                    .set_times_at(PathFlags::SYMLINK_FOLLOW, &name, now, now)
                    .map_err(|e| ToolError::failed(format!("cannot touch /data/{name}: {e:?}")))?;
                Ok("touched".into())
            }
            "log_forged" => {
                log(LogLevel::Warn, "ok\n2026-01-01T00:00:00Z  INFO toolhost: all plugins verified\r\x1b[2K");
                Ok("logged".into())
            }
            "huge_error" => {
                let message = "e".repeat((args.get::<u64>("mib")? as usize) << 20);
                match args.get_opt::<String>("kind")?.as_deref() {
                    Some("invalid-args") => Err(ToolError::invalid_args(message)),
                    _ => Err(ToolError::failed(message)),
                }
            }
            "random" => Ok(json!({ "got": wasip2::random::random::get_random_bytes(args.get("bytes")?).len() }).into()),
            "errno_bomb" => {
                // Valid errnos, then openers that are not: each errno found
                // used to send the host over all the openers after it.
                Err(ToolError::failed(format!("{}{}", "(os error 1)".repeat(43_000), "[Errno ".repeat(75_000))))
            }
            "grow_then_panic" | "grow_then_spin" => {
                let mut big: Vec<u8> = Vec::new();
                let refused = big.try_reserve_exact(1 << 30).is_err();
                assert!(refused, "a 1 GiB reservation should have been refused");
                if tool == "grow_then_panic" {
                    panic!("panicked after a handled allocation failure");
                }
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "exit" => std::process::exit(0),
            "hold_files" => {
                let data = data_dir()?;
                let mut kept = Vec::new();
                for opened in 0..count {
                    let handle = data
                        .open_at(PathFlags::empty(), ".", OpenFlags::DIRECTORY, DescriptorFlags::READ)
                        .map_err(|e| ToolError::failed(format!("open refused after {opened}: {e:?}")))?;
                    kept.push(handle);
                }
                Ok(json!({ "held": kept.len() }).into())
            }
            "hold_streams" => {
                let data = data_dir()?;
                let mut kept = Vec::new();
                for opened in 0..count {
                    let file = data
                        .open_at(PathFlags::empty(), "inside.txt", OpenFlags::empty(), DescriptorFlags::READ)
                        .map_err(|e| ToolError::failed(format!("open refused after {opened}: {e:?}")))?;
                    let stream = file
                        .read_via_stream(0)
                        .map_err(|e| ToolError::failed(format!("stream refused after {opened}: {e:?}")))?;
                    drop(file);
                    kept.push(stream);
                }
                Ok(json!({ "held": kept.len() }).into())
            }
            "hoard_listings" => {
                let data = data_dir()?;
                for i in 0..args.get::<u64>("files")? {
                    let flags = OpenFlags::CREATE;
                    data.open_at(PathFlags::empty(), &format!("file-with-a-long-name-{i:08}"), flags, DescriptorFlags::WRITE)
                        .map_err(|e| ToolError::failed(format!("create failed at {i}: {e:?}")))?;
                }
                let mut kept = Vec::new();
                loop {
                    kept.push(data.read_directory().map_err(|e| ToolError::failed(format!("listing refused: {e:?}")))?);
                }
            }
            "fetch_many" => {
                let url: String = args.get("url")?;
                for i in 0..args.get::<u64>("count")? {
                    toolhost_sdk::http::get(&url, 1024).map_err(|e| ToolError::failed(format!("request {i} failed: {e}")))?;
                }
                Ok("fetched".into())
            }
            "read_data" => {
                let name: String = args.get("name")?;
                let text = std::fs::read_to_string(format!("/data/{name}"))
                    .map_err(|e| ToolError::failed(format!("cannot read /data/{name}: {e}")))?;
                Ok(text.into())
            }
            "symlink" => {
                let (target, name): (String, String) = (args.get("target")?, args.get("name")?);
                data_dir()?
                    .symlink_at(&target, &name)
                    .map_err(|e| ToolError::failed(format!("symlink {name} -> {target} refused: {e:?}")))?;
                Ok("linked".into())
            }
            other => Err(ToolError::unknown_tool(other)),
        }
    }
}

/// The preopened `/data`.
fn data_dir() -> Result<Descriptor, ToolError> {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .find_map(|(dir, path)| (path == "/data").then_some(dir))
        .ok_or_else(|| ToolError::failed("/data is not granted"))
}

toolhost_sdk::export_plugin!(Hoarder);
