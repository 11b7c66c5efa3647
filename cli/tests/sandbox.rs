//! What the command reserves: a one-shot command runs under an
//! address-space limit a pool for a long-running host would not fit, and
//! says at `-v` what it reserved.

mod support;

use std::process::Command;
use support::{in_test_home, plugins, text};

/// 64 GiB, as `prlimit --as` takes it: a pool sized for a long-running
/// host (terabytes of reservations) does not fit under it.
const ADDRESS_LIMIT: u64 = 64 << 30;

#[test]
fn a_call_runs_under_a_64_gib_address_space_limit() {
    let dir = tempfile::tempdir().unwrap();
    let examples = plugins("examples");
    let output = in_test_home(&mut Command::new("prlimit"))
        .current_dir(dir.path())
        .env_remove("RUST_LOG")
        .arg(format!("--as={ADDRESS_LIMIT}"))
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", examples.to_str().unwrap(), "-v", "call", "calculate", "--arg", "expression=6*7"])
        .output()
        .expect("prlimit (util-linux) runs");
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("42"), "{stdout}");
    // -v says what the sandbox reserved: per instance, not a pool.
    assert!(stderr.contains("sandbox: 1 calls at once in 1 engine, memory reserved per instance"), "{stderr}");
}

#[test]
fn a_long_running_sandbox_under_a_tight_limit_sizes_down_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let examples = plugins("examples");
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!("plugin_dirs = [{:?}]\n[sandbox]\ncalls = 1000\nengines = 2\n", examples.display().to_string()),
    )
    .unwrap();
    // `node --status` reads no server; `prompt` is one-shot. The policy's
    // pool is what `chat` uses: with a message and a closed port it loads
    // the plugins, then fails to reach the model.
    let output = in_test_home(&mut Command::new("prlimit"))
        .current_dir(dir.path())
        .env_remove("RUST_LOG")
        .arg(format!("--as={}", 512u64 << 30))
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .args(["chat", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--message", "hi", "--yes"])
        .output()
        .expect("prlimit (util-linux) runs");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("the sandbox could not reserve the address space for 1000 calls at once in 2 engines"), "{stderr}");
    assert!(!stderr.contains("failed to create memory pool mapping"), "{stderr}");
}
