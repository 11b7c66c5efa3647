//! `toolhost wit` and `toolhost new`: for every language, a new project
//! built with its README's one command, then the README's `toolhost call`,
//! exactly as written.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{in_test_home, text, toolhost};

fn target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target")
}

/// The environment `cargo xtask build-plugins` built with (the toolchains
/// on PATH, Go offline), with this `toolhost` first on PATH; or why the
/// language's toolchain is missing.
fn toolchain_env(lang: &str) -> Result<Vec<(String, String)>, String> {
    if let Ok(reason) = std::fs::read_to_string(target().join(format!("plugins/polyglot/{lang}.skipped"))) {
        return Err(reason);
    }
    let file = target().join("toolchains/env");
    let text =
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}; run `cargo xtask build-plugins`", file.display()));
    let bin = Path::new(env!("CARGO_BIN_EXE_toolhost")).parent().unwrap().display().to_string();
    Ok(text
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| {
            let value = if key == "PATH" { format!("{bin}:{value}") } else { value.to_owned() };
            (key.to_owned(), value)
        })
        .collect())
}

/// The first line of the first `sh` block under `heading` in `readme`.
fn command_under(readme: &str, heading: &str) -> String {
    let section = readme.split(heading).nth(1).unwrap_or_else(|| panic!("no {heading} in:\n{readme}"));
    let block = section.split("```sh\n").nth(1).unwrap_or_else(|| panic!("no sh block under {heading}"));
    block.lines().next().unwrap_or_default().to_owned()
}

fn sh(dir: &Path, env: &[(String, String)], command: &str) -> std::process::Output {
    in_test_home(Command::new("sh").args(["-c", command]).current_dir(dir).envs(env.iter().cloned()))
        .env_remove("RUST_LOG")
        .output()
        .expect("sh runs")
}

/// `toolhost new NAME --lang LANG`, the README's build command, then its
/// `toolhost call`, which must count three words.
fn scaffold_builds_and_answers(lang: &str) {
    let env = match toolchain_env(lang) {
        Ok(env) => env,
        Err(reason) => return support::skip(&format!("the {lang} toolchain"), &reason),
    };
    let dir = tempfile::tempdir().unwrap();
    let name = format!("words-{lang}");
    let out = toolhost(dir.path(), &["new", &name, "--lang", lang]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let project = dir.path().join(&name);
    if lang == "rust" {
        // The project's own target directory, kept between runs.
        let cached = target().join("scaffold-rust-target");
        std::fs::create_dir_all(&cached).unwrap();
        std::os::unix::fs::symlink(&cached, project.join("target")).unwrap();
    }
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    let build = command_under(&readme, "## Build");
    let built = sh(&project, &env, &build);
    assert!(built.status.success(), "`{build}` failed:\n{}\n{}", text(&built.stdout), text(&built.stderr));
    let call = command_under(&readme, "## Try it");
    assert!(call.starts_with("toolhost --plugins ") && call.contains(&format!("call {name} ")), "{call}");
    let answered = sh(&project, &env, &call);
    assert!(answered.status.success(), "`{call}` failed:\n{}", text(&answered.stderr));
    let output: serde_json::Value = serde_json::from_slice(&answered.stdout).expect("JSON output");
    assert_eq!(output, serde_json::json!({ "words": 3 }), "{lang}");
}

#[test]
fn a_new_rust_project_builds_and_its_tool_answers() {
    scaffold_builds_and_answers("rust");
}

#[test]
fn a_new_python_project_builds_and_its_tool_answers() {
    scaffold_builds_and_answers("python");
}

#[test]
fn a_new_js_project_builds_and_its_tool_answers() {
    scaffold_builds_and_answers("js");
}

#[test]
fn a_new_c_project_builds_and_its_tool_answers() {
    scaffold_builds_and_answers("c");
}

#[test]
fn a_new_go_project_builds_and_its_tool_answers() {
    scaffold_builds_and_answers("go");
}

#[test]
fn new_refuses_a_bad_name_and_a_directory_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolhost(dir.path(), &["new", "Bad Name", "--lang", "c"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("`Bad Name` cannot name a plugin project"), "{}", text(&out.stderr));
    std::fs::create_dir(dir.path().join("taken")).unwrap();
    std::fs::write(dir.path().join("taken/keep.txt"), "mine").unwrap();
    let out = toolhost(dir.path(), &["new", "taken", "--lang", "python"]);
    assert!(text(&out.stderr).contains("taken is not empty"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_dir(dir.path().join("taken")).unwrap().count(), 1, "nothing written");
}

#[test]
fn wit_prints_the_contract_and_writes_it_for_a_toolchain() {
    let dir = tempfile::tempdir().unwrap();
    let repo_wit = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit/plugin.wit")).unwrap();
    let out = toolhost(dir.path(), &["wit"]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), repo_wit);
    let out = toolhost(dir.path(), &["wit", "--out", "deps/wit"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("deps/wit/plugin.wit")).unwrap(), repo_wit);
    assert_eq!(toolhost_sdk::WIT, repo_wit, "the SDK carries the same contract");
}

/// The `sh` and `rust` blocks of `section`, in order.
fn blocks(section: &str) -> Vec<(&str, &str)> {
    section
        .split("```")
        .skip(1)
        .step_by(2)
        .filter_map(|block| block.split_once('\n'))
        .filter(|(lang, _)| matches!(*lang, "sh" | "rust"))
        .collect()
}

#[test]
fn the_readmes_rust_plugin_quickstart_works_as_written() {
    let env = match toolchain_env("rust") {
        Ok(env) => env,
        Err(reason) => return support::skip("the rust toolchain", &reason),
    };
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let section = readme.split("## Quickstart: writing a plugin in Rust").nth(1).unwrap().split("\n## ").next().unwrap();
    let [("sh", start), ("rust", lib), ("sh", build)] = blocks(section)[..] else {
        panic!("expected a sh block, the rust source, and a sh block: {:?}", blocks(section))
    };
    let dir = tempfile::tempdir().unwrap();
    let started = sh(dir.path(), &env, &format!("set -e\n{start}"));
    assert!(started.status.success(), "{start}\n{}", text(&started.stderr));
    // The block ends in the project (`cd wordcount`); the rest runs there.
    let project = start.lines().rev().find_map(|l| l.trim().strip_prefix("cd ")).expect("the block enters the project");
    let project = dir.path().join(project);
    // The project's target directory is kept between runs, so that the
    // SDK's dependencies are not built for wasm32 every time.
    let cached = target().join("scaffold-rust-target");
    std::fs::create_dir_all(&cached).unwrap();
    std::os::unix::fs::symlink(&cached, project.join("target")).unwrap();
    std::fs::write(project.join("src/lib.rs"), lib).unwrap();
    let built = sh(&project, &env, &format!("set -e\n{build}"));
    assert!(built.status.success(), "{build}\n{}\n{}", text(&built.stdout), text(&built.stderr));
    let said = text(&built.stdout);
    assert!(said.contains("wordcount") && said.trim_end().ends_with(r#"{"words":3}"#), "{said}");
}

/// When the newest file under `dir` was last changed.
fn newest(dir: &Path) -> Option<std::time::SystemTime> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let meta = entry.metadata().ok()?;
            if meta.is_dir() { newest(&entry.path()) } else { meta.modified().ok() }
        })
        .max()
}

/// The README's embedding quickstart. Its source is `host/examples/one_turn.rs`
/// (built by `cargo test` with the workspace: a project of its own would
/// resolve other features and compile wasmtime a second time, five minutes
/// of CI); this checks the README shows that file, that its `Cargo.toml`
/// lines name exactly the crates the source uses, and runs the README's
/// steps with the built program in place of `cargo run`.
#[test]
fn the_readmes_embedding_quickstart_works_as_written() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let section = readme.split("## Quickstart: embedding the host").nth(1).unwrap().split("\n## ").next().unwrap();
    let [("sh", start), ("rust", main), ("sh", run)] = blocks(section)[..] else {
        panic!("expected a sh block, the rust source, and a sh block: {:?}", blocks(section))
    };
    let example = std::fs::read_to_string(repo.join("host/examples/one_turn.rs")).unwrap();
    let source = example.lines().skip_while(|line| line.starts_with("//!")).skip(1).collect::<Vec<_>>().join("\n") + "\n";
    assert_eq!(main, source, "the README's quickstart is host/examples/one_turn.rs without its header");

    let listed: BTreeSet<&str> = start
        .split("<<EOF\n")
        .nth(1)
        .and_then(|rest| rest.split("\nEOF").next())
        .expect("the block appends the dependencies")
        .lines()
        .filter_map(|line| line.split_once(" = ").map(|(name, _)| name.trim()))
        .collect();
    let used: BTreeSet<&str> = source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter_map(|word| word.split_once("::").map(|(root, _)| root))
        .filter(|root| root.starts_with(|c: char| c.is_ascii_lowercase()) && !["std", "crate", "self", "super"].contains(root))
        .collect();
    assert_eq!(listed, used, "the crates the README adds to Cargo.toml and the ones its source names");
    assert!(start.contains(r#"features = ["macros", "rt-multi-thread"]"#), "#[tokio::main] needs both: {start}");

    let program = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().join("examples/one_turn");
    let built = std::fs::metadata(&program).and_then(|meta| meta.modified()).ok();
    let sources = ["host/examples", "host/src", "runtime/src", "protocol/src", "types/src"].map(|dir| newest(&repo.join(dir)));
    assert!(
        built >= sources.into_iter().max().flatten(),
        "{} is built by `cargo test --workspace`, after its sources",
        program.display()
    );
    let env = vec![("TOOLHOST".to_owned(), repo.display().to_string())];
    let dir = tempfile::tempdir().unwrap();
    let started = sh(dir.path(), &env, &format!("set -e\n{start}"));
    assert!(started.status.success(), "{start}\n{}", text(&started.stderr));
    let project = start.lines().find_map(|l| l.split("&& cd ").nth(1)).expect("the block enters the project");
    let project = dir.path().join(project.trim());
    assert_eq!(run.trim(), "cargo run --release", "the step this test replaces with the built program");
    // Cargo resolves the manifest the README's steps wrote (the TOML, the
    // path to the library, the versions, pinned as this workspace's)
    // without building anything. For this platform only, and fetching what
    // it lacks: the workspace's build downloaded this platform's packages,
    // so a resolution of every platform's, offline, failed on a fresh
    // machine (macOS's `mach2` was never downloaded there).
    std::fs::copy(repo.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let resolve = "cargo metadata --format-version 1 --filter-platform \"$(rustc -vV | sed -n 's/^host: //p')\" > /dev/null";
    let manifest = sh(&project, &env, resolve);
    assert!(manifest.status.success(), "{start}\n{}", text(&manifest.stderr));
    let ran = in_test_home(Command::new(&program).current_dir(&project)).env_remove("RUST_LOG").output().unwrap();
    let said = text(&ran.stdout);
    assert!(ran.status.success(), "{said}\n{}", text(&ran.stderr));
    assert!(said.contains(r#"\"value\":42.0"#), "the model's call, 6 * 7: {said}");
    assert!(said.trim_end().ends_with(r#"calculate success: {"expression":"2 + 2","value":4.0}"#), "{said}");
}
