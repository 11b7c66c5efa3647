//! The dead ends a new user met in their first hour, each held shut: run
//! as the user runs `toolhost`.

mod support;

use std::process::{Command, Output};
use support::{in_test_home, text, toolhost};

fn stderr(out: &Output) -> String {
    text(&out.stderr)
}

#[test]
fn lock_refuses_to_write_an_empty_lock_that_would_refuse_every_plugin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    let out = toolhost(dir.path(), &["--plugins", "plugins", "lock", "--yes"]);
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(said.contains("nothing to pin") && said.contains("plugins"), "{said}");
    assert!(!dir.path().join("toolhost.lock").exists(), "no lock was written");
}

#[test]
fn inspect_says_what_a_file_that_is_not_a_component_is_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let files: [(&str, &[u8], &str); 3] = [
        ("libtool.so", b"\x7fELF\x02\x01\x01\0\0\0\0\0", "native ELF shared library"),
        ("module.wasm", b"\0asm\x01\0\0\0", "core WebAssembly module, not a component"),
        ("notes.wasm", b"hello", "not WebAssembly"),
    ];
    for (name, bytes, says) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        let out = toolhost(dir.path(), &["inspect", name]);
        let said = stderr(&out);
        assert!(!out.status.success(), "{name}");
        assert!(said.contains(says) && said.contains("--target wasm32-wasip2"), "{name}: {said}");
        assert!(!said.contains("0x7f") && !said.contains("magic header"), "{name}: no byte dump: {said}");
    }
}

#[test]
fn a_grant_of_a_directory_that_does_not_exist_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let examples = support::plugins("examples");
    let policy = format!(
        "plugin_dirs = [{:?}]\n[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = \"missing\" }} }}\n",
        examples.display().to_string()
    );
    std::fs::write(dir.path().join("toolhost.toml"), policy).unwrap();
    let out = toolhost(dir.path(), &["list"]);
    let said = stderr(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("plugins.files.dirs.\"/workspace\".host") && said.contains("missing"), "{said}");
    std::fs::create_dir(dir.path().join("missing")).unwrap();
    let out = toolhost(dir.path(), &["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn policy_keys_that_do_nothing_are_warned_about_with_the_closest_names() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let examples = support::plugins("examples");
    let policy = format!(
        "plugin_dirs = [{:?}]\n\
         [plugins.calcc]\nlimits = {{ fuel = 1000 }}\n\
         [plugins.files]\nfile = \"files.wasm\"\nenv = [\"HOME\"]\ndirs = {{ \"/workspce\" = {{ host = \"ws\" }} }}\n\
         [agents.helper]\ntool_toggles = {{ calculat = false }}\n",
        examples.display().to_string()
    );
    std::fs::write(dir.path().join("toolhost.toml"), policy).unwrap();
    let out = toolhost(dir.path(), &["list"]);
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    for expected in [
        "warning: plugins.calcc: no loaded plugin is named `calcc`; did you mean `calc`",
        "warning: plugins.files.dirs.\"/workspce\": the plugin never asks for the directory `/workspce`",
        "did you mean `/workspace`",
        "warning: plugins.files.env: the plugin never asks for the variable `HOME`",
        "warning: agents.helper.enabled: tool calling is off",
        "warning: agents.helper.tool_toggles.calculat: no loaded tool is named `calculat`; did you mean `calculate`",
    ] {
        assert!(said.contains(expected), "missing {expected:?} in:\n{said}");
    }
}

fn examples() -> String {
    support::plugins("examples").display().to_string()
}

#[test]
fn call_warns_of_an_undeclared_argument_reads_json_from_stdin_and_prints_the_outcome_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = examples();
    let out = toolhost(dir.path(), &["--plugins", &plugins, "call", "calculate", "--arg", "expresion=1", "--arg", "expression=2"]);
    assert!(stderr(&out).contains("`calculate` declares no parameter `expresion`; did you mean `expression`"), "{}", stderr(&out));

    let mut child = in_test_home(&mut Command::new(env!("CARGO_BIN_EXE_toolhost")))
        .current_dir(dir.path())
        .args(["--plugins", &plugins, "call", "calculate", "--json", "-", "--output", "json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(br#"{"expression": "3 * 3"}"#).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((outcome["tool"].as_str(), outcome["status"].as_str()), (Some("calculate"), Some("success")));
    assert!(outcome["output"].as_str().unwrap().contains("9.0"), "{outcome}");
}

#[test]
fn prompt_refuses_auto_and_list_shows_which_tools_a_model_may_be_offered() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = examples();
    let out = toolhost(dir.path(), &["--plugins", &plugins, "prompt", "--protocol", "auto"]);
    assert!(!out.status.success() && stderr(&out).contains("`auto` only reads replies"), "{}", stderr(&out));
    let out = toolhost(dir.path(), &["--plugins", &plugins, "list"]);
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(table.lines().next().unwrap().contains("AGENTS"), "{table}");
    let calculate = table.lines().find(|l| l.starts_with("calculate ")).unwrap();
    assert!(calculate.contains("callable"), "{table}");
}

#[test]
fn completions_are_printed_for_each_shell_and_know_the_subcommands() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = toolhost(dir.path(), &["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = text(&out.stdout);
        assert!(script.contains("toolhost") && script.contains("chat") && script.contains("lock"), "{shell}: {script}");
    }
    let out = toolhost(dir.path(), &["completions", "tcsh"]);
    assert!(!out.status.success() && stderr(&out).contains("possible values"), "{}", stderr(&out));
}
