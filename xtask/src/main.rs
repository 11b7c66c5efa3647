//! Project automation, run as `cargo xtask <task>`:
//!
//! - `build-plugins`: build the plugins for wasm32-wasip2 and copy them to
//!   `target/plugins/examples/` and `target/plugins/hostile/`, then install
//!   the Python, JavaScript, C and Go toolchains and build their examples
//!   into `target/plugins/polyglot/` (see `polyglot`);
//! - `build-samples`: build every language's `toolhost new` sample, as
//!   the benchmark compares them (with the CLI already built);
//! - `lint`: `cargo fmt --check` (the workspace, the plugins, the fuzz
//!   targets), `cargo clippy --all-targets` and `cargo doc --no-deps` with
//!   warnings denied, and a check of the library without default features;
//! - `test`: lint and build the plugins while, beside them, the peers the
//!   tests drive install (the other languages' toolchains, the official
//!   MCP clients, nginx, Chromium and ChromeDriver), then run every test;
//! - `browser`: install Chromium and ChromeDriver for the console's tests;
//! - `demo`: build the plugins and the CLI, then list the plugins, run real
//!   calls, show a hostile plugin stopped with its limit named, and end
//!   with one chat turn against a scripted stand-in model;
//! - `bench`: build the plugins and every language's `toolhost new`
//!   sample, then run the runtime, protocol and conversation-loop
//!   benchmarks, and the VCP node's.
//! - `api`: rewrite `docs/API.md`, the library's public names, from its
//!   source (a test fails when the two disagree);
//! - `fuzz [--seconds N] [TARGET…]`: run the fuzz targets in `fuzz/` (with
//!   nightly and cargo-fuzz, which it installs), each for N seconds.
//!
//! Each task that builds plugins first installs the `wasm32-wasip2` target
//! with rustup, so it works on a fresh machine.

mod api;
mod browser;
mod mcp_bench;
mod mcp_clients;
mod polyglot;
mod summary;

use anyhow::{Context, bail};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod fuzz;

/// Plugin crates whose unit tests run natively.
const NATIVE_TESTED: &[&str] = &["calc"];

fn main() -> anyhow::Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    let root = workspace_root();
    match task.as_str() {
        "build-plugins" => build_plugins(&root, Workspace::Everything),
        "mcp-clients" => mcp_clients::install(&root),
        "browser" => browser::install(&root),
        "mcp-bench" => mcp_bench::run(&root),
        // The bare responder the MCP benchmark measures toolhost against.
        "bare-mcp" => mcp_bench::bare_responder(),
        "build-samples" => polyglot::build_samples(&root, &root.join("target/release/toolhost")),
        "lint" => lint(&root),
        "test" => {
            // The installs wait on the network and the lint and build on
            // the processor: side by side, a clean machine saves minutes.
            // Every apt-get runs on the one installing thread, so none
            // waits on another's lock.
            let installs = std::thread::spawn({
                let root = root.clone();
                move || install_test_peers(&root)
            });
            let built = lint(&root).and_then(|()| build_rust(&root, Workspace::Everything));
            let installed = installs.join().unwrap_or_else(|_| Err(anyhow::anyhow!("the installing thread panicked")));
            let toolchains = match (built, installed) {
                (Ok(()), Ok(toolchains)) => toolchains,
                (Err(built), Ok(_)) => return Err(built),
                (Ok(()), Err(installed)) => return Err(installed),
                (Err(built), Err(installed)) => return Err(built.context(format!("and the installs failed too: {installed:#}"))),
            };
            build_polyglot(&root, &toolchains)?;
            run(cargo(&root).args(["test", "--release", "--workspace"]))?;
            let host = host_triple()?;
            for name in NATIVE_TESTED {
                run(cargo(&root.join("plugins")).args(["test", "--release", "-p", name, "--target", &host]))?;
            }
            for (lang, reason) in polyglot::skipped(&root) {
                eprintln!("xtask: the {lang} tests were SKIPPED: {reason}");
            }
            Ok(())
        }
        "demo" => {
            // Only what the demo runs: the plugins, the CLI and the
            // stand-in model; the test command builds the rest. (Installing
            // the toolchains beside the build, as `test` does, saved nothing
            // on a fresh 2-core machine: both need the processor.)
            build_plugins(&root, Workspace::Binaries)?;
            demo(&root)
        }
        "bench" => {
            build_plugins(&root, Workspace::Everything)?;
            polyglot::build_samples(&root, &root.join("target/release/toolhost"))?;
            summary::clear(&root)?;
            run(cargo(&root)
                .args(["bench", "-p", "toolhost", "--features", "unchecked"])
                .args(["--bench", "runtime", "--bench", "protocol", "--bench", "chain"]))?;
            host_memory_accounting_cost(&root)?;
            mcp_bench::run(&root)?;
            run(cargo(&root).args(["bench", "-p", "toolhost-tests", "--bench", "vcp_node"]))?;
            summary::print(&root);
            Ok(())
        }
        "api" => api::write(&root),
        "fuzz" => fuzz::run_targets(&root, &std::env::args().skip(2).collect::<Vec<_>>()),
        _ => bail!(
            "usage: cargo xtask <build-plugins | build-samples | mcp-clients | browser | mcp-bench | lint | test | demo | bench | api | fuzz [--seconds N] [TARGET…]>"
        ),
    }
}

/// Rounds of the fresh-call benchmark with and without the counting
/// allocator, run alternately so that load on the machine falls on both.
const ACCOUNTING_ROUNDS: usize = 3;

/// What counting host memory costs a fresh call: the fresh-call benchmark
/// built with toolhost's counting allocator and without it, alternately,
/// each round's medians compared, the median ratio reported.
fn host_memory_accounting_cost(root: &Path) -> anyhow::Result<()> {
    let read = |label: &str| -> anyhow::Result<f64> {
        let file = root.join(format!("target/bench/fresh_call_{label}.txt"));
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        Ok(text.trim().parse::<f64>()? / 1000.0)
    };
    let mut rounds = Vec::new();
    for _ in 0..ACCOUNTING_ROUNDS {
        run(cargo(root).args(["bench", "-p", "toolhost", "--features", "unchecked", "--bench", "fresh_call_uncounted"]))?;
        let uncounted = read("uncounted")?;
        run(cargo(root).args(["bench", "-p", "toolhost", "--features", "unchecked", "--bench", "fresh_call_counted"]))?;
        let counted = read("counted")?;
        rounds.push((counted / uncounted, counted, uncounted));
    }
    rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (ratio, counted, uncounted) = rounds[rounds.len() / 2];
    println!(
        "host-memory accounting: a fresh call takes {counted:.2} µs counted, {uncounted:.2} µs not: {ratio:.3}× \
         (+{:.1}%; target ≤ 10%), the median of {ACCOUNTING_ROUNDS} alternating rounds",
        (ratio - 1.0) * 100.0
    );
    Ok(())
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_owned()
}

/// The checks that need no plugin, fastest first, so a careless change
/// fails in seconds: formatting (every workspace of the repository: the
/// plugins and fuzz targets are workspaces of their own), clippy's lints
/// and the documentation with warnings denied, and a check of the
/// workspace without default features. Clippy and doc build in the release
/// profile the tests use, so they share the dependencies' metadata.
fn lint(root: &Path) -> anyhow::Result<()> {
    run(Command::new("rustup").args(["component", "add", "rustfmt", "clippy"]))?;
    // Without `--all`, which would resolve every dependency (and write a
    // lock file where there is none); at a workspace's root, every member.
    for workspace in [".", "plugins", "fuzz", "fuzz/config"] {
        run(cargo(&root.join(workspace)).args(["fmt", "--check"]))?;
    }
    run(cargo(root).args(["clippy", "--release", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    // `--lib`: the CLI's binary is named `toolhost` too, and its page
    // would overwrite the library's (cargo#6313).
    run(cargo(root).args(["doc", "--release", "--no-deps", "--workspace", "--lib"]).env("RUSTDOCFLAGS", "-D warnings"))?;
    // The core alone, as an embedder takes it, with the README's embedding
    // quickstart (`one_turn`). (A check of the whole workspace without
    // default features would check nothing clippy has not: the CLI asks
    // for every door, and no other member has default features.)
    run(cargo(root).args(["check", "--release", "-p", "toolhost", "--no-default-features", "--lib", "--example", "one_turn"]))
}

fn cargo(dir: &Path) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(dir);
    command
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    eprintln!("xtask: running {command:?}");
    let status = command.status().with_context(|| format!("starting {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed with {status}");
    }
    Ok(())
}

fn host_triple() -> anyhow::Result<String> {
    let output = Command::new("rustc").arg("-vV").output().context("running rustc -vV")?;
    let text = String::from_utf8(output.stdout)?;
    text.lines().find_map(|l| l.strip_prefix("host: ")).map(str::to_owned).context("rustc -vV printed no host triple")
}

/// Build the Rust plugins and the workspace, then the other languages'
/// examples.
fn build_plugins(root: &Path, workspace: Workspace) -> anyhow::Result<()> {
    build_rust(root, workspace)?;
    build_polyglot(root, &polyglot::Toolchains::install(root))
}

/// Each member of the plugin workspace and the directory of
/// `target/plugins/` it is copied to: `examples` for `NAME`, `hostile` for
/// `hostile/NAME`, `testing` for `testing/NAME` (the tests name the same
/// members, read the same way, in `tests/build.rs`).
fn plugin_members(root: &Path) -> anyhow::Result<Vec<(&'static str, String)>> {
    let manifest = root.join("plugins/Cargo.toml");
    let text = std::fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
    let parsed: toml::Table = text.parse().with_context(|| format!("parsing {}", manifest.display()))?;
    let members = parsed.get("workspace").and_then(|w| w.get("members")).and_then(toml::Value::as_array);
    let members = members.with_context(|| format!("{} has no workspace.members", manifest.display()))?;
    members
        .iter()
        .map(|member| {
            let member = member.as_str().context("a workspace member is not a string")?;
            Ok(match member.split_once('/') {
                None => ("examples", member.to_owned()),
                Some(("hostile", name)) => ("hostile", name.to_owned()),
                Some(("testing", name)) => ("testing", name.to_owned()),
                Some(_) => bail!("plugins/Cargo.toml: `{member}` is neither NAME, hostile/NAME nor testing/NAME"),
            })
        })
        .collect()
}

/// What the tests drive besides the workspace: the other languages'
/// toolchains, the OCI registry, the MCP peers and the browser.
fn install_test_peers(root: &Path) -> anyhow::Result<polyglot::Toolchains> {
    let toolchains = polyglot::Toolchains::install(root);
    polyglot::install_registry();
    mcp_clients::install(root)?;
    browser::install(root)?;
    Ok(toolchains)
}

/// Install the target, build the plugin workspace, and copy the components
/// where the tests and the demo look for them; then build the workspace,
/// whose CLI scaffolds the other languages' examples.
/// How much of the workspace a task builds.
#[derive(Clone, Copy)]
enum Workspace {
    /// Its binaries (the CLI, the stand-in model): what the demo runs.
    Binaries,
    /// Everything: tests and benchmarks too.
    Everything,
}

fn build_rust(root: &Path, workspace: Workspace) -> anyhow::Result<()> {
    run(Command::new("rustup").args(["target", "add", "wasm32-wasip2"]))?;
    run(cargo(&root.join("plugins")).args(["build", "--release"]))?;
    let built = root.join("plugins/target/wasm32-wasip2/release");
    for (dir, name) in plugin_members(root)? {
        let out = root.join("target/plugins").join(dir);
        std::fs::create_dir_all(&out)?;
        let file = format!("{name}.wasm");
        std::fs::copy(built.join(&file), out.join(&file)).with_context(|| format!("copying {file} to {}", out.display()))?;
    }
    // The CLI builds the polyglot examples. For the tests, built as `cargo
    // test --release --workspace` builds it (every member, test targets
    // too), so that Cargo unifies the same features and the test run reuses
    // this build rather than compiling wasmtime a second time; every binary
    // in the same build (the CLI, and `standin-llm`, the scripted model the
    // README's "Try it" chats with), so none is compiled again with other
    // features. Not the benchmarks: the lint's clippy already compiles them
    // (`--all-targets`), so a change that breaks one fails there; `cargo
    // xtask bench` builds them. For the demo, only the binaries: a fresh
    // 2-core machine spent 56 CPU-minutes on the rest.
    let targets: &[&str] = match workspace {
        Workspace::Binaries => &["--bins"],
        Workspace::Everything => &["--tests", "--bins"],
    };
    run(cargo(root).args(["build", "--release", "--workspace"]).args(targets))
}

/// Build the other languages' examples with the CLI (installing their
/// toolchains, unless they are there).
fn build_polyglot(root: &Path, toolchains: &polyglot::Toolchains) -> anyhow::Result<()> {
    polyglot::build_examples(root, &root.join("target/release/toolhost"), toolchains)?;
    eprintln!("xtask: plugins are in {}", root.join("target/plugins").display());
    Ok(())
}

/// The demo's calls to the other languages' examples, by language.
const POLYGLOT_STEPS: &[(&str, &str, &[&str])] = &[
    (
        "python",
        "text statistics, in Python",
        &["call", "text_stats", "--arg", "text=The cat sat. The cat ran!", "--arg", "top=2"],
    ),
    (
        "js",
        "a JSONPath query, in JavaScript",
        &[
            "call",
            "json_query",
            "--arg",
            r#"document={"books":[{"title":"Dune"},{"title":"Emma"}]}"#,
            "--arg",
            "path=$.books[*].title",
        ],
    ),
    ("c", "a checksum, in C", &["call", "hash_text", "--arg", "text=hello", "--arg", "algorithm=crc32"]),
    ("go", "semantic versions compared, in Go", &["call", "semver_compare", "--arg", "a=1.10.0", "--arg", "b=1.2.3"]),
];

/// The demo: a policy with a workspace and a tree to list, then real calls.
fn demo(root: &Path) -> anyhow::Result<()> {
    let demo = root.join("target/demo");
    let workspace = demo.join("workspace");
    std::fs::create_dir_all(workspace.join("src"))?;
    std::fs::write(workspace.join("notes.txt"), "toolhost demo notes\n")?;
    std::fs::write(workspace.join("src/main.rs"), "fn main() {}\n")?;
    let plugins = root.join("target/plugins");
    let config = demo.join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            r#"plugin_dirs = ["{examples}", "{polyglot}"]
cache_dir = "cache"
lock_file = "toolhost.lock"

[plugins.dirtree]
file = "dirtree.wasm"
dirs = {{ "/tree" = {{ host = "workspace" }} }}

[plugins.files]
file = "files.wasm"
dirs = {{ "/workspace" = {{ host = "workspace", access = "read-write" }} }}
"#,
            examples = plugins.join("examples").display(),
            polyglot = plugins.join("polyglot").display(),
        ),
    )?;
    let toolhost = root.join("target/release/toolhost");
    let step_with = |config: &Path, title: &str, args: &[&str], expect_success: bool| -> anyhow::Result<()> {
        let named = config
            .file_name()
            .filter(|name| *name != "toolhost.toml")
            .map(|name| format!("--config {} ", name.to_string_lossy()));
        println!("\n$ toolhost {}{}\n# {title}", named.unwrap_or_default(), args.join(" "));
        let status = Command::new(&toolhost).arg("--config").arg(config).args(args).status()?;
        if status.success() != expect_success {
            bail!(
                "`toolhost {}` exited with {status}, expected {}",
                args.join(" "),
                if expect_success { "success" } else { "failure" }
            );
        }
        Ok(())
    };
    let step = |title: &str, args: &[&str], expect_success: bool| step_with(&config, title, args, expect_success);
    step("the example plugins, their permissions and grants", &["list"], true)?;
    step("arithmetic", &["call", "calculate", "--arg", "expression=2 * (3 + 4) ^ 2"], true)?;
    step(
        "time-zone conversion",
        &["call", "convert_time", "--arg", "time=2026-03-01 09:30", "--arg", "from=America/New_York", "--arg", "to=Asia/Tokyo"],
        true,
    )?;
    step("a tree of the granted directory", &["call", "dir_tree", "--arg", "max_depth=2"], true)?;
    for (lang, title, args) in POLYGLOT_STEPS {
        match polyglot::skipped(root).into_iter().find(|(skipped, _)| skipped == lang) {
            Some((_, reason)) => println!("\n# {title}: SKIPPED, the {lang} toolchain did not install: {reason}"),
            None => step(title, args, true)?,
        }
    }
    step(
        "a sensitive tool without a person to approve it is denied",
        &["call", "write_file", "--arg", "path=hello.txt", "--arg", "content=never written"],
        false,
    )?;
    step(
        "approved with --yes, it writes into the granted workspace",
        &["call", "--yes", "write_file", "--arg", "path=hello.txt", "--arg", "content=written by a sandboxed plugin"],
        true,
    )?;
    step("reading it back (its result needs approval too)", &["call", "--yes", "read_file", "--arg", "path=hello.txt"], true)?;
    step(
        "an escape attempt is refused by the plugin and the sandbox",
        &["call", "--yes", "read_file", "--arg", "path=../../Cargo.toml"],
        false,
    )?;
    step(
        "a host the policy does not allow, even approved",
        &["call", "--yes", "http_get", "--arg", "url=https://example.com/"],
        false,
    )?;
    // Only the one hostile plugin the demo calls; the rest misbehave at
    // load, which the tests cover.
    let hostile = demo.join("hostile");
    std::fs::create_dir_all(&hostile)?;
    std::fs::copy(plugins.join("hostile/hostile.wasm"), hostile.join("hostile.wasm"))?;
    // A policy of its own, so the other steps' policy names no plugin
    // they do not load.
    let hostile_config = demo.join("hostile.toml");
    std::fs::write(
        &hostile_config,
        "plugin_dirs = [\"hostile\"]\ncache_dir = \"cache\"\n\n[plugins.hostile]\nfile = \"hostile.wasm\"\n\
         limits = { fuel = 200_000_000, timeout_ms = 2_000, memory_mib = 32 }\n",
    )?;
    step_with(&hostile_config, "a hostile plugin that loops forever, stopped by its fuel limit", &["call", "spin"], false)?;
    step_with(
        &hostile_config,
        "a hostile plugin that hoards memory, stopped at its memory limit",
        &["call", "exhaust_memory"],
        false,
    )?;
    step("the host still answers the next call", &["call", "calculate", "--arg", "expression=sqrt(2)"], true)?;
    chat_turn(root, &demo, &config)?;
    println!("\ndemo finished: every step behaved as expected");
    Ok(())
}

/// One chat turn against `standin-llm`, a scripted stand-in for a model:
/// its first reply asks for a sensitive call (denied: nobody is there to
/// approve it) and a public one; its second quotes both results.
fn chat_turn(root: &Path, demo: &Path, config: &Path) -> anyhow::Result<()> {
    let vcp = |tool: &str, args: &[(&str, &str)]| {
        let args: String = args.iter().map(|(k, v)| format!(",\n{k}:「始」{v}「末」")).collect();
        format!("<<<[TOOL_REQUEST]>>>\ntool_name:「始」{tool}「末」{args}\n<<<[END_TOOL_REQUEST]>>>")
    };
    let first = format!(
        "I'll save your order and work out the total.\n{}\n{}",
        vcp("write_file", &[("path", "order.txt"), ("content", "3 notebooks at 19.99")]),
        vcp("calculate", &[("expression", "3 * 19.99")])
    );
    // The stand-in fills `{{last_message:REGEX}}` from what it was sent:
    // the answer really uses the results.
    let second = "I could not save the order: {{last_message:\\(denied\\):\\\\n([^.]+)}}.\n\
                  The total is {{last_message:value\\\\?\"?:\\s*([0-9.]+)}}.";
    let script = serde_json::json!([
        { "reply": { "text": first, "reasoning": "Save the order first, then compute 3 × 19.99." } },
        { "reply": { "text": second } },
    ]);
    let script_file = demo.join("chat-script.json");
    std::fs::write(&script_file, serde_json::to_string_pretty(&script)?)?;
    let mut model = Command::new(root.join("target/release/standin-llm")).arg(&script_file).stdout(Stdio::piped()).spawn()?;
    let mut url = String::new();
    std::io::BufReader::new(model.stdout.take().context("the stand-in's stdout")?).read_line(&mut url)?;
    let transcript = demo.join("chat.jsonl");
    let _ = std::fs::remove_file(&transcript);
    let message = "Save my order of 3 notebooks at 19.99 each, and tell me the total.";
    println!("\n$ toolhost chat --base-url {} --message \"{message}\" --transcript {}", url.trim(), transcript.display());
    println!("# one chat turn. The model is SCRIPTED: standin-llm, a stand-in OpenAI-compatible server");
    println!("# replaying {}; no real model is called. Nobody is there to approve", script_file.display());
    println!("# the sensitive write_file, so it is denied and the model is told why; calculate runs.");
    let status = Command::new(root.join("target/release/toolhost"))
        .arg("--config")
        .arg(config)
        .args(["chat", "--base-url", url.trim(), "--message", message, "--transcript"])
        .arg(&transcript)
        .stdin(Stdio::null())
        .status();
    let _ = model.kill();
    let _ = model.wait();
    if !status?.success() {
        bail!("`toolhost chat` failed");
    }
    let saved = std::fs::read_to_string(&transcript)?;
    let answer = saved.lines().last().unwrap_or_default();
    if !(answer.contains("59.97") && answer.contains("needs approval")) {
        bail!("the final answer does not use the results: {answer}");
    }
    println!("# the transcript, {} entries: {}", saved.lines().count(), transcript.display());
    Ok(())
}
