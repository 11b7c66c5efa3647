//! What the CLI's tests share: the built plugins, and `toolhost` run as a
//! user runs it with the caches in the build's target directory.
#![allow(dead_code, reason = "each test binary uses some of these")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `target/plugins/DIR`, built by `cargo xtask build-plugins`.
pub fn plugins(dir: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins").join(dir);
    assert!(path.exists(), "{} is missing; run `cargo xtask build-plugins`", path.display());
    path
}

/// `command` with the user's cache, state, data and config directories
/// (the compiled cache, its key, the per-user plugin directory, the
/// per-user policy) in the build's target directory, shared by the tests
/// and apart from the real user's.
pub fn in_test_home(command: &mut Command) -> &mut Command {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    command
        .env("XDG_CONFIG_HOME", target.join("toolhost-test-config"))
        .env("XDG_CACHE_HOME", target.join("toolhost-test-cache"))
        .env("XDG_STATE_HOME", target.join("toolhost-test-state"))
        .env("XDG_DATA_HOME", target.join("toolhost-test-data"))
}

/// Run `toolhost` in `cwd` with `args`.
pub fn toolhost(cwd: &Path, args: &[&str]) -> Output {
    in_test_home(&mut Command::new(env!("CARGO_BIN_EXE_toolhost")))
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .args(args)
        .output()
        .expect("toolhost runs")
}

/// Bytes as text, lossily.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

