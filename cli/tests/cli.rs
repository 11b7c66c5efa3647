//! The `toolhost` binary, run as a user runs it, over the built plugins.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{in_test_home, plugins, text, toolhost};

/// A directory with a `toolhost.toml` over the example plugins that maps
/// `/workspace` and `/tree`.
fn demo_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "plugin_dirs = [{:?}]\n\
             [plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = \"ws\", access = \"read-write\" }} }}\n\
             [plugins.dirtree]\nfile = \"dirtree.wasm\"\ndirs = {{ \"/tree\" = {{ host = \"ws\" }} }}\n",
            plugins("examples").display().to_string()
        ),
    )
    .unwrap();
    dir
}

#[test]
fn list_shows_the_five_example_plugins_with_permissions_and_grants() {
    let dir = demo_dir();
    let out = toolhost(dir.path(), &["list"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for plugin in ["calc@0.1.0", "clock@0.1.0", "dirtree@0.1.0", "files@0.1.0", "http_get@0.1.0"] {
        assert!(stdout.contains(plugin), "{plugin} missing from:\n{stdout}");
    }
    let row = |tool: &str| stdout.lines().find(|l| l.starts_with(&format!("{tool} "))).unwrap_or_default().to_owned();
    assert!(row("write_file").contains("sensitive"), "{stdout}");
    assert!(row("read_file").contains("moderate +result"), "{stdout}");
    assert!(row("calculate").contains("public") && row("calculate").ends_with("none"), "{stdout}");
    assert!(row("list_files").contains("dir /workspace=") && row("list_files").contains("(read-write)"), "{stdout}");
    assert!(row("dir_tree").contains("(read)"), "{stdout}");

    let json = toolhost(dir.path(), &["list", "--json"]);
    let tools: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 8);
    assert_eq!(tools[0]["name"], "calculate");
    assert_eq!(tools[0]["params"][0]["type"], "string");
}

#[test]
fn call_prints_the_output_and_reports_status_on_stderr() {
    let dir = demo_dir();
    let out = toolhost(dir.path(), &["call", "calculate", "--arg", "expression=1 + 2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), r#"{"expression":"1 + 2","value":3.0}"#);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("status: success · ") && stderr.contains(" ms · fuel "), "{stderr}");

    let json = toolhost(
        dir.path(),
        &["call", "convert_time", "--json", r#"{"time":"2026-01-01 12:00","from":"UTC","to":"Asia/Kolkata"}"#],
    );
    assert!(text(&json.stdout).contains("2026-01-01T17:30:00+05:30"), "{}", text(&json.stdout));
}

#[test]
fn call_checks_and_coerces_arguments_against_the_declaration() {
    let dir = demo_dir();
    let coerced = toolhost(dir.path(), &["call", "calculate", "--json", r#"{"expression": 42}"#]);
    assert!(coerced.status.success(), "{}", text(&coerced.stderr));
    assert_eq!(text(&coerced.stdout).trim(), r#"{"expression":"42","value":42.0}"#, "a number became the string declared");

    let wrong_type = toolhost(dir.path(), &["call", "dir_tree", "--arg", "max_depth=deep"]);
    assert!(!wrong_type.status.success());
    let stderr = text(&wrong_type.stderr);
    assert!(stderr.contains("the parameter `max_depth` of `dir_tree` must be an integer, got the string \"deep\""), "{stderr}");
    assert!(stderr.contains("status: invalid-args"), "{stderr}");

    let missing = toolhost(dir.path(), &["call", "calculate"]);
    assert!(!missing.status.success());
    let stderr = text(&missing.stderr);
    assert!(stderr.contains("`calculate` needs the parameter `expression` (string)"), "{stderr}");
}

#[test]
fn a_failed_call_exits_non_zero_and_names_the_limit() {
    let dir = demo_dir();
    let hostile = plugins("hostile");
    let out = toolhost(dir.path(), &["--plugins", hostile.to_str().unwrap(), "call", "spin"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("out of fuel after 1 000 000 000 units"), "{stderr}");
    assert!(stderr.contains("status: out-of-fuel"), "{stderr}");

    let unknown = toolhost(dir.path(), &["call", "calculat"]);
    assert!(!unknown.status.success());
    assert!(text(&unknown.stderr).contains("did you mean `calculate`"), "{}", text(&unknown.stderr));
}

#[test]
fn a_failure_is_data_in_the_json_of_call_and_run() {
    let dir = demo_dir();
    let hostile = plugins("hostile");
    let out =
        toolhost(dir.path(), &["--plugins", hostile.to_str().unwrap(), "call", "spin", "--fuel", "5000", "--output", "json"]);
    assert!(!out.status.success());
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let failure = &outcome["failure"];
    assert_eq!(failure["kind"], "out-of-fuel", "{outcome}");
    assert_eq!(failure["limit"], serde_json::json!({ "name": "fuel", "value": 5000 }), "{outcome}");
    assert_eq!(failure["plugin"], "hostile", "{outcome}");
    assert!(failure["plugin_version"].as_str().is_some_and(|v| !v.is_empty()), "{outcome}");

    // The plugin's own invalid-args, and a denial decided before running.
    let reply = "```json\n{\"action\": \"tool_call\", \"name\": \"calculate\", \"arguments\": {\"expression\": \"1+\"}}\n```\n\
        ```json\n{\"action\": \"tool_call\", \"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"42\"}}\n```\n";
    let ran = toolhost_with_input(dir.path(), &["run", "--json"], reply);
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    let value: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap();
    let (invalid, denied) = (&value["outcomes"][0], &value["outcomes"][1]);
    assert_eq!((&invalid["status"], &invalid["failure"]["kind"]), (&"invalid-args".into(), &"invalid-args".into()), "{invalid}");
    assert_eq!(invalid["failure"]["plugin"], "calc", "{invalid}");
    assert_eq!((&denied["status"], &denied["failure"]["kind"]), (&"denied".into(), &"denied".into()), "{denied}");
}

#[test]
fn inspect_shows_requested_versus_granted() {
    let dir = demo_dir();
    let files = plugins("examples").join("files.wasm");
    let granted = toolhost(dir.path(), &["inspect", files.to_str().unwrap()]);
    let stdout = text(&granted.stdout);
    assert!(granted.status.success(), "{}", text(&granted.stderr));
    assert!(stdout.starts_with("files@0.1.0 — "), "{stdout}");
    assert!(stdout.contains("dir /workspace (read-write): granted read-write → "), "{stdout}");
    assert!(stdout.contains("read_file (moderate, result-approval, agent-callable)"), "{stdout}");

    let bare = tempfile::tempdir().unwrap();
    let withheld = toolhost(bare.path(), &["inspect", files.to_str().unwrap()]);
    assert!(text(&withheld.stdout).contains("dir /workspace (read-write): withheld"), "{}", text(&withheld.stdout));
}

/// A temporary directory with `plugins/` holding `components` (file name,
/// built component).
fn plugin_dir(components: &[(&str, PathBuf)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    for (name, built) in components {
        std::fs::copy(built, dir.path().join("plugins").join(name)).unwrap();
    }
    dir
}

fn sha256_of(path: &Path) -> String {
    toolhost_support::digest::sha256_hex(&std::fs::read(path).unwrap())
}

#[test]
fn lock_pins_and_a_changed_component_is_refused_with_both_hashes() {
    let dir = plugin_dir(&[("calc.wasm", plugins("examples").join("calc.wasm"))]);
    let own = dir.path().join("plugins");
    let lock = toolhost(dir.path(), &["--plugins", "plugins", "lock", "--yes"]);
    assert!(lock.status.success(), "{}", text(&lock.stderr));
    let pinned = sha256_of(&own.join("calc.wasm"));
    assert_eq!(text(&lock.stdout), format!("new        plugins/calc.wasm  sha256:{pinned}\n"));
    assert!(dir.path().join("toolhost.lock").exists());

    std::fs::copy(plugins("examples").join("clock.wasm"), own.join("calc.wasm")).unwrap();
    let list = toolhost(dir.path(), &["--plugins", "plugins", "list"]);
    let stderr = text(&list.stderr);
    assert!(
        stderr.contains(&format!("refused: plugins/calc.wasm does not match its pin: pinned sha256:{pinned}, found sha256:")),
        "{stderr}"
    );
    let inspect = toolhost(dir.path(), &["--plugins", "plugins", "inspect", "plugins/calc.wasm"]);
    let changed = sha256_of(&own.join("calc.wasm"));
    assert!(
        text(&inspect.stdout).contains(&format!("({})", toolhost::registry::PinState::Mismatch { pinned, actual: changed })),
        "inspect says what loading says: {}",
        text(&inspect.stdout)
    );
}

#[test]
fn an_unknown_config_key_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "plugin_dir = [\"x\"]\n").unwrap();
    let out = toolhost(dir.path(), &["list"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("unknown field `plugin_dir`"), "{}", text(&out.stderr));
}

#[test]
fn approvals_lists_revokes_and_clears_remembered_decisions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "lock_file = \"state/toolhost.lock\"\n").unwrap();
    std::fs::create_dir(dir.path().join("state")).unwrap();
    let file = dir.path().join("state/toolhost.approvals.json");
    let sha = "0123456789abcdef".repeat(4);
    let memory = toolhost::approval::ApprovalMemory::open(&file);
    for (agent, plugin, tool) in
        [("coder", "files", "read_file"), ("writer", "files", "read_file"), ("coder", "http_get", "http_get")]
    {
        memory.remember(agent, plugin, tool, &sha).unwrap();
    }
    let run = |args: &[&str]| {
        let out = toolhost(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{args:?}");
        text(&out.stdout)
    };

    let list = run(&["approvals", "list"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 4, "{list}");
    assert!(lines[0].starts_with("AGENT   PLUGIN    TOOL       SHA256        SINCE"), "{list}");
    assert!(lines[1].starts_with("coder   files     read_file  0123456789ab  20"), "{list}");
    assert!(lines[1].ends_with('Z') && !list.contains(&sha), "the date in RFC 3339, the digest short: {list}");

    let revoked = run(&["approvals", "revoke", "read_file", "--agent", "coder"]);
    assert_eq!(revoked.trim(), "revoked 1 remembered approval(s) of read_file for agent coder in state/toolhost.approvals.json");
    // Another process changed the file: seen within MEMORY_RECHECK, or now on reload.
    memory.reload();
    assert!(!memory.contains("coder", "files", "read_file", &sha) && memory.contains("writer", "files", "read_file", &sha));
    assert!(run(&["approvals", "revoke", "read_file"]).starts_with("revoked 1 remembered approval(s) of read_file in"));
    let typo = toolhost(dir.path(), &["approvals", "revoke", "http_gte"]);
    assert!(!typo.status.success());
    let said = text(&typo.stderr);
    assert!(said.contains("no remembered approval of http_gte in") && said.contains("did you mean `http_get`"), "{said}");

    assert!(run(&["approvals", "clear"]).starts_with("cleared 1 remembered approval(s) from"));
    memory.reload();
    assert!(memory.entries().is_empty());
    assert_eq!(run(&["approvals", "list"]).trim(), "no remembered approvals in state/toolhost.approvals.json");

    std::fs::write(&file, "{ not json").unwrap();
    let out = toolhost(dir.path(), &["approvals", "list"]);
    assert!(out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("warning: remembered approvals") && stderr.contains("are corrupt"), "{stderr}");
    assert!(text(&out.stdout).starts_with("no remembered approvals"), "a corrupt file grants nothing");
}

#[test]
fn a_policy_or_lock_file_found_upward_that_others_may_write_is_refused_unless_named() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (policy, below) = (dir.path().join("toolhost.toml"), dir.path().join("project/src"));
    std::fs::create_dir_all(&below).unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::write(&policy, "plugin_dirs = [\"plugins\"]\n").unwrap();
    let mode = |path: &Path, mode: u32| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    mode(&policy, 0o666);
    let out = toolhost(&below, &["list"]);
    let said = text(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains(&format!("refusing the policy file found at {}", policy.display())), "{said}");
    assert!(said.contains("its mode 666 lets others write it") && said.contains("--config"), "{said}");
    // Named, it is trusted explicitly.
    let named = toolhost(&below, &["list", "--config", policy.to_str().unwrap()]);
    assert!(named.status.success(), "{}", text(&named.stderr));

    // Another user's file (only root can make one here).
    mode(&policy, 0o644);
    if std::process::Command::new("chown").arg("4242").arg(&policy).status().is_ok_and(|s| s.success()) {
        let said = text(&toolhost(&below, &["list"]).stderr);
        assert!(said.contains("it is owned by user 4242"), "{said}");
        assert!(std::process::Command::new("chown").arg(rustix_uid()).arg(&policy).status().unwrap().success());
    }

    // The lock file beside it decides which bytes load: the same rule.
    let lock = dir.path().join("toolhost.lock");
    std::fs::write(&lock, "version = 2\n[pins]\n").unwrap();
    mode(&lock, 0o666);
    let said = text(&toolhost(&below, &["list"]).stderr);
    assert!(said.contains(&format!("lock file {} is not trusted: its mode 666", lock.display())), "{said}");
}

/// This process's user id, as `chown` takes it.
fn rustix_uid() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status.lines().find_map(|l| l.strip_prefix("Uid:")).unwrap().split_whitespace().nth(1).unwrap().to_owned()
}

#[test]
fn an_approvals_file_that_is_a_fifo_is_reported_never_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "[approval]\nmemory_file = \"approvals.json\"\n").unwrap();
    // Listing reads the file and takes no lock; revoking takes the lock too.
    let cases: [(&str, &[&str]); 3] = [
        ("approvals.json", &["approvals", "list"]),
        ("approvals.json", &["approvals", "revoke", "read_file"]),
        ("approvals.json.lock", &["approvals", "revoke", "read_file"]),
    ];
    for (name, args) in cases {
        for stale in ["approvals.json", "approvals.json.lock"] {
            let _ = std::fs::remove_file(dir.path().join(stale));
        }
        assert!(Command::new("mkfifo").arg(dir.path().join(name)).status().unwrap().success());
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        in_test_home(&mut command).current_dir(dir.path()).env_remove("RUST_LOG").args(args);
        let (out, _) = support::run_bounded(&mut command, std::time::Duration::from_secs(20), 256 << 20)
            .unwrap_or_else(|why| panic!("{name} {args:?}: {why}"));
        let said = text(&out.stderr);
        assert!(said.contains("not a regular file"), "{name} {args:?}: {said}");
    }
}

#[test]
fn a_bad_approval_rule_is_an_error_naming_the_rule_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let rule = "[[approval.rules]]\naction = \"allow\"\ntool = \"write_file\"\nargs = { path = \"notes/[\" }\n";
    std::fs::write(dir.path().join("toolhost.toml"), rule).unwrap();
    let out = toolhost(dir.path(), &["approvals", "list"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("approval.rules[0].args.path = \"notes/[\" is invalid"), "{}", text(&out.stderr));
}

/// Run `toolhost parse` on `reply` from stdin.
fn parse(cwd: &Path, args: &[&str], reply: &str) -> serde_json::Value {
    use std::io::Write;
    let mut child = in_test_home(&mut Command::new(env!("CARGO_BIN_EXE_toolhost")))
        .current_dir(cwd)
        .arg("parse")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(reply.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn parse_finds_calls_in_every_format() {
    let bare = tempfile::tempdir().unwrap();
    let replies = [
        ("vcp", "<<<[TOOL_REQUEST]>>>\ntool_name:「始」get_weather「末」,\ncity:「始」Paris「末」\n<<<[END_TOOL_REQUEST]>>>"),
        (
            "json-block",
            "```json\n{\"action\": \"tool_call\", \"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```",
        ),
        ("xml-tag", "<tool_code>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_code>"),
        (
            "native",
            "{\"tool_calls\": [{\"id\": \"1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}}]}",
        ),
        ("auto", "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>"),
        ("auto", "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"),
        ("auto", "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"),
        ("auto", "[get_weather(city=\"Paris\")]"),
        ("auto", "<function=get_weather>{\"city\": \"Paris\"}</function>"),
    ];
    for (protocol, reply) in replies {
        let out = parse(bare.path(), &["--protocol", protocol, "--tool", "get_weather"], &format!("Checking. {reply}"));
        assert_eq!(
            out["calls"],
            serde_json::json!([{ "name": "get_weather", "arguments": { "city": "Paris" } }]),
            "{protocol}: {reply}\n{out}"
        );
        assert_eq!(out["content"], "Checking.", "{protocol}");
    }
}

#[test]
fn parse_coerces_arguments_of_loaded_tools_and_reports_problems() {
    let dir = demo_dir();
    let reply = "<<<[TOOL_REQUEST]>>>tool_name:「始」dir_tree「末」,max_depth:「始」2「末」<<<[END_TOOL_REQUEST]>>>\n\
                 <<<[TOOL_REQUEST]>>>tool_name:「始」dir_tree「末」,max_depth:「始」deep「末」<<<[END_TOOL_REQUEST]>>>\n\
                 <<<[TOOL_REQUEST]>>>tool_name:「始」calculator「末」<<<[END_TOOL_REQUEST]>>>";
    let out = parse(dir.path(), &[], reply);
    assert_eq!(
        out["calls"],
        serde_json::json!([{ "name": "dir_tree", "arguments": { "max_depth": 2 } }, { "name": "calculator", "arguments": {}, "undeclared": true }]),
        "a call to an undeclared tool is kept, flagged"
    );
    let warnings: Vec<&str> = out["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert!(
        warnings[0].ends_with("the parameter `max_depth` of `dir_tree` must be an integer, got the string \"deep\""),
        "{warnings:?}"
    );
    assert!(warnings[1].ends_with("no tool named `calculator` is loaded; did you mean `calculate`?"), "{warnings:?}");
}

#[test]
fn prompt_prints_the_tools_and_a_token_estimate() {
    let dir = demo_dir();
    std::fs::write(dir.path().join("t.txt"), "You are helpful.\n{{tool:calculate}}").unwrap();
    let out = toolhost(dir.path(), &["prompt", "--protocol", "xml-tag", "--template", "t.txt"]);
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("You are helpful.\n## How to call a tool"), "{stdout}");
    assert!(stdout.contains("### calculate") && !stdout.contains("### current_time"), "{stdout}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains(" tokens (o200k_base), ") && stderr.contains("protocol xml-tag"), "{stderr}");
}

#[test]
fn lock_shows_what_it_pins_and_asks_before_trusting_new_bytes() {
    let examples = plugins("examples");
    let dir = plugin_dir(&[("calc.wasm", examples.join("calc.wasm")), ("clock.wasm", examples.join("clock.wasm"))]);
    let own = dir.path().join("plugins");
    assert!(toolhost(dir.path(), &["--plugins", "plugins", "lock", "--yes"]).status.success());
    let before = std::fs::read_to_string(dir.path().join("toolhost.lock")).unwrap();

    std::fs::copy(examples.join("dirtree.wasm"), own.join("calc.wasm")).unwrap();
    std::fs::copy(examples.join("files.wasm"), own.join("files.wasm")).unwrap();
    let (calc, dirtree, clock, files) = (
        sha256_of(&examples.join("calc.wasm")),
        sha256_of(&examples.join("dirtree.wasm")),
        sha256_of(&examples.join("clock.wasm")),
        sha256_of(&examples.join("files.wasm")),
    );
    let expected = format!(
        "changed    plugins/calc.wasm  sha256:{calc} → sha256:{dirtree}\n\
         unchanged  plugins/clock.wasm  sha256:{clock}\n\
         new        plugins/files.wasm  sha256:{files}\n"
    );
    let asked = toolhost(dir.path(), &["--plugins", "plugins", "lock"]);
    assert!(!asked.status.success(), "stdin is not a terminal: pinning new bytes needs --yes");
    assert_eq!(text(&asked.stdout), expected);
    assert!(
        text(&asked.stderr).contains("2 new or changed components; check them above, then run `toolhost lock --yes`"),
        "{}",
        text(&asked.stderr)
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("toolhost.lock")).unwrap(), before, "nothing was written");

    let declined = on_a_terminal(dir.path(), "--plugins plugins lock", "n\n");
    assert!(!declined.status.success());
    assert!(text(&declined.stdout).contains("pin 2 new or changed components in "), "{}", text(&declined.stdout));
    assert_eq!(std::fs::read_to_string(dir.path().join("toolhost.lock")).unwrap(), before, "nothing was written");
    let confirmed = on_a_terminal(dir.path(), "--plugins plugins lock", "y\n");
    assert!(confirmed.status.success(), "{}", text(&confirmed.stdout));
    assert_ne!(std::fs::read_to_string(dir.path().join("toolhost.lock")).unwrap(), before, "a yes pins");

    let pinned = toolhost(dir.path(), &["--plugins", "plugins", "lock"]);
    assert!(pinned.status.success(), "nothing new to trust: {}", text(&pinned.stderr));
    assert_eq!(
        text(&pinned.stdout),
        format!(
            "unchanged  plugins/calc.wasm  sha256:{dirtree}\nunchanged  plugins/clock.wasm  sha256:{clock}\n\
             unchanged  plugins/files.wasm  sha256:{files}\n"
        )
    );
    std::fs::remove_file(own.join("files.wasm")).unwrap();
    let removed = toolhost(dir.path(), &["--plugins", "plugins", "lock"]);
    assert!(removed.status.success(), "dropping a pin trusts nothing new: {}", text(&removed.stderr));
    assert!(
        text(&removed.stdout).contains(&format!("removed    plugins/files.wasm  sha256:{files}\n")),
        "{}",
        text(&removed.stdout)
    );
}

#[test]
fn one_file_name_in_two_plugin_directories_is_pinned_and_loaded_by_path() {
    let dir = tempfile::tempdir().unwrap();
    for (sub, built) in [("one", "calc.wasm"), ("two", "clock.wasm")] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        std::fs::copy(plugins("examples").join(built), dir.path().join(sub).join("calc.wasm")).unwrap();
    }
    let (calc, clock) = (sha256_of(&dir.path().join("one/calc.wasm")), sha256_of(&dir.path().join("two/calc.wasm")));
    let both = ["--plugins", "one", "--plugins", "two"];
    let lock = toolhost(dir.path(), &[&both[..], &["lock", "--yes"]].concat());
    assert!(lock.status.success(), "{}", text(&lock.stderr));
    assert_eq!(
        text(&lock.stdout),
        format!("new        one/calc.wasm  sha256:{calc}\nnew        two/calc.wasm  sha256:{clock}\n")
    );

    let list = toolhost(dir.path(), &[&both[..], &["list"]].concat());
    assert!(list.status.success() && !text(&list.stderr).contains("refused"), "{}", text(&list.stderr));
    assert!(text(&list.stdout).contains("calculate") && text(&list.stdout).contains("convert_time"), "{}", text(&list.stdout));

    std::fs::copy(plugins("examples").join("dirtree.wasm"), dir.path().join("two/calc.wasm")).unwrap();
    let changed = toolhost(dir.path(), &[&both[..], &["list"]].concat());
    let stderr = text(&changed.stderr);
    assert!(stderr.contains(&format!("refused: two/calc.wasm does not match its pin: pinned sha256:{clock}")), "{stderr}");
    assert!(!stderr.contains("one/calc.wasm"), "{stderr}");
    assert!(text(&changed.stdout).contains("calculate"), "the other calc.wasm still loads");
}

#[test]
fn lock_refuses_to_pin_two_components_claiming_one_name() {
    let dir = plugin_dir(&[
        ("00_files_update.wasm", plugins("hostile").join("squatter.wasm")),
        ("files.wasm", plugins("examples").join("files.wasm")),
    ]);
    let out = toolhost(dir.path(), &["--plugins", "plugins", "lock", "--yes"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "refused: plugins/00_files_update.wasm is refused: it claims plugin name `files`, as plugins/files.wasm also does"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "refused: plugins/files.wasm is refused: it claims plugin name `files`, as plugins/00_files_update.wasm also does"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("toolhost.lock was not written"), "{stderr}");
    assert!(!dir.path().join("toolhost.lock").exists());

    let tools = plugin_dir(&[
        ("calc.wasm", plugins("examples").join("calc.wasm")),
        ("impostor.wasm", plugins("hostile").join("impostor.wasm")),
    ]);
    let out = toolhost(tools.path(), &["--plugins", "plugins", "lock", "--yes"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("refused: plugins/impostor.wasm is refused: tool `calculate` of plugin `impostor` is also offered by plugin `calc` (plugins/calc.wasm)"), "{}", text(&out.stderr));
    assert!(!tools.path().join("toolhost.lock").exists());
}

/// Bytes a terminal obeys rather than shows: ESC, CR, BS, BEL, the C1 CSI
/// (U+009B) and the right-to-left override (U+202E), as UTF-8.
const OBEYED: [&[u8]; 6] = [b"\x1b", b"\r", b"\x08", b"\x07", "\u{9b}".as_bytes(), "\u{202e}".as_bytes()];

/// Panics if `bytes` holds any of [`OBEYED`].
fn assert_shown_not_obeyed(what: &str, bytes: &[u8]) {
    for raw in OBEYED {
        assert!(!bytes.windows(raw.len()).any(|w| w == raw), "{what} carries a raw {raw:?}:\n{}", text(bytes));
    }
}

/// A directory whose policy loads the `escapes` plugin and `calc`.
fn escapes_dir() -> tempfile::TempDir {
    let dir = plugin_dir(&[
        ("escapes.wasm", plugins("hostile").join("escapes.wasm")),
        ("calc.wasm", plugins("examples").join("calc.wasm")),
    ]);
    std::fs::write(dir.path().join("toolhost.toml"), "plugin_dirs = [\"plugins\"]\n").unwrap();
    dir
}

#[test]
fn list_and_inspect_show_plugin_text_escaped() {
    // Declarations cannot carry control, reversing or invisible characters
    // (the plugin is refused at load, see manifest.rs); a file name can.
    let dir = escapes_dir();
    let named = dir.path().join("plugins/\x1b[2J\u{202e}escapes.wasm");
    std::fs::rename(dir.path().join("plugins/escapes.wasm"), &named).unwrap();
    let named = named.to_str().unwrap();
    for args in [&["list"][..], &["list", "--json"], &["-v", "inspect", named], &["inspect", "--json", named]] {
        let out = toolhost(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_shown_not_obeyed(&format!("stdout of {args:?}"), &out.stdout);
        assert_shown_not_obeyed(&format!("stderr of {args:?}"), &out.stderr);
    }
    let inspect = text(&toolhost(dir.path(), &["inspect", named]).stdout);
    assert!(inspect.contains("\\e[2J\\u{202e}escapes.wasm"), "{inspect}");
}

#[test]
fn refused_lines_show_file_names_and_plugin_text_escaped() {
    let dir = escapes_dir();
    // A file name is the plugin directory's to choose; two claims of one
    // name refuse both, and each refusal names the other file.
    std::fs::copy(dir.path().join("plugins/escapes.wasm"), dir.path().join("plugins/\x1b[2J\rall verified.wasm")).unwrap();
    for args in [&["list"][..], &["-v", "list"], &["call", "calculate", "--arg", "expression=1"]] {
        let out = toolhost(dir.path(), args);
        assert_shown_not_obeyed(&format!("stdout of {args:?}"), &out.stdout);
        assert_shown_not_obeyed(&format!("stderr of {args:?}"), &out.stderr);
        assert!(
            text(&out.stderr).contains("refused: plugins/escapes.wasm is refused: it claims plugin name `escapes`, as plugins/\\e[2J\\rall verified.wasm also does"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn call_escapes_errors_always_and_output_on_a_terminal_only() {
    let dir = escapes_dir();
    let failed = toolhost(dir.path(), &["call", "fail_loudly"]);
    assert!(!failed.status.success());
    assert_shown_not_obeyed("stderr of a failed call", &failed.stderr);
    let stderr = text(&failed.stderr);
    assert!(stderr.starts_with("failed\\e[2J\\e[Hall plugins verified\n\\r\\e[Kstatus: success\\e]0;trusted"), "{stderr}");
    assert!(stderr.contains("\nstatus: error · "), "{stderr}");

    // To a pipe, output is data and passes byte for byte.
    let piped = toolhost(dir.path(), &["call", "shout"]);
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    assert!(
        text(&piped.stdout).starts_with("first line\n\x1b[2J\x1b[Hall plugins verified\n\r\x1b[K"),
        "{}",
        text(&piped.stdout)
    );
    assert_shown_not_obeyed("stderr of a call", &piped.stderr);

    // On a terminal it is shown escaped, lines kept.
    let tty = on_a_terminal(dir.path(), "call shout", "");
    assert!(tty.status.success(), "{}{}", text(&tty.stdout), text(&tty.stderr));
    assert_shown_not_obeyed("a call's output on a terminal", &tty.stdout);
    assert!(
        text(&tty.stdout).contains("first line\n\\e[2J\\e[Hall plugins verified\n\\r\\e[Kstatus: success\\u{8}"),
        "{}",
        text(&tty.stdout)
    );
}

/// Run `toolhost ARGS` (split on spaces) on a pseudo-terminal, through
/// `script` from util-linux, with `input` typed in. Raw mode keeps the
/// terminal from adding CRs of its own; its output is the terminal's.
fn on_a_terminal(cwd: &Path, args: &str, input: &str) -> Output {
    use std::io::Write;
    let command = format!("stty raw -echo; '{}' {args}", env!("CARGO_BIN_EXE_toolhost"));
    let mut child = in_test_home(&mut Command::new("script"))
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("`script` from util-linux runs a command on a terminal");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// Run `toolhost` with a stdout pipe that is closed after `read_lines`
/// lines; returns its exit status and stderr.
fn with_stdout_closed(cwd: &Path, args: &[&str], stdin: &str, read_lines: usize) -> (std::process::ExitStatus, String) {
    use std::io::{BufRead, Read, Write};
    let mut child = in_test_home(&mut Command::new(env!("CARGO_BIN_EXE_toolhost")))
        .current_dir(cwd)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Only `parse` reads stdin; the others may have exited already.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    for _ in 0..read_lines {
        stdout.read_line(&mut String::new()).unwrap();
    }
    drop(stdout);
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    (child.wait().unwrap(), stderr)
}

#[test]
fn every_command_exits_quietly_when_stdout_is_closed_early() {
    let dir = demo_dir();
    let files = plugins("examples").join("files.wasm");
    let files = files.to_str().unwrap();
    let lock = plugin_dir(&[("calc.wasm", plugins("examples").join("calc.wasm"))]);
    let commands: [(&Path, &[&str]); 9] = [
        (dir.path(), &["list"]),
        (dir.path(), &["list", "--json"]),
        (dir.path(), &["inspect", files]),
        (dir.path(), &["inspect", "--json", files]),
        (dir.path(), &["call", "calculate", "--arg", "expression=1"]),
        (dir.path(), &["prompt"]),
        (dir.path(), &["parse"]),
        (lock.path(), &["--plugins", "plugins", "lock", "--yes"]),
        (dir.path(), &["--help"]),
    ];
    for (cwd, args) in commands {
        let (status, stderr) = with_stdout_closed(cwd, args, "no calls here", 0);
        assert!(status.success(), "{args:?} exited with {status}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("error"), "{args:?}: {stderr}");
    }

    // The reader goes after one line of many, as `| head -1` does.
    let reply = "<<<[TOOL_REQUEST]>>>tool_name:「始」nope「末」<<<[END_TOOL_REQUEST]>>>\n".repeat(3_000);
    let (status, stderr) = with_stdout_closed(dir.path(), &["parse"], &reply, 1);
    assert!(status.success(), "parse exited with {status}: {stderr}");
    assert_eq!(stderr, "");
}

/// Wait for `child` at most `limit`; kill it and fail if it is still running.
fn exits_within(mut child: std::process::Child, limit: std::time::Duration) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("toolhost was still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_fifo_in_a_grant_neither_hangs_the_call_nor_keeps_the_process_alive() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::copy(plugins("hostile").join("hoarder.wasm"), dir.path().join("plugins/hoarder.wasm")).unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    assert!(Command::new("mkfifo").arg(dir.path().join("data/pipe")).status().unwrap().success());
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "plugin_dirs = [\"plugins\"]\n[plugins.hoarder]\nfile = \"hoarder.wasm\"\nlimits = { timeout_ms = 1_000 }\n\
         dirs = { \"/data\" = { host = \"data\" } }\n",
    )
    .unwrap();
    let child = in_test_home(&mut Command::new(env!("CARGO_BIN_EXE_toolhost")))
        .current_dir(dir.path())
        .args(["call", "read_data", "--arg", "name=pipe"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = exits_within(child, std::time::Duration::from_secs(20));
    assert!(!status.success(), "reading a FIFO is refused");
}

/// Run `toolhost` in `cwd` with `args`, `input` on stdin (not a terminal).
fn toolhost_with_input(cwd: &Path, args: &[&str], input: &str) -> Output {
    use std::io::Write;
    // The test home: the shared cache under its own key, never the user's.
    let mut child = in_test_home(&mut Command::new(env!("CARGO_BIN_EXE_toolhost")))
        .current_dir(cwd)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn run_executes_a_replys_calls_and_denies_what_nobody_approved() {
    let dir = demo_dir();
    let reply = "Computing, then saving.\n\
        ```json\n{\"action\": \"tool_call\", \"name\": \"calculate\", \"arguments\": {\"expression\": \"6*7\"}}\n```\n\
        ```json\n{\"action\": \"tool_call\", \"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"42\"}}\n```\n";
    let statuses = |out: &Output| -> Vec<String> {
        assert!(out.status.success(), "{}", text(&out.stderr));
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        value["outcomes"].as_array().unwrap().iter().map(|o| o["status"].as_str().unwrap().to_owned()).collect()
    };
    let unattended = toolhost_with_input(dir.path(), &["run", "--json"], reply);
    assert_eq!(statuses(&unattended), ["success", "denied"]);
    assert!(!dir.path().join("ws/a.txt").exists());
    let value: serde_json::Value = serde_json::from_slice(&unattended.stdout).unwrap();
    let message = &value["messages"][0];
    assert_eq!(message["role"], "user");
    assert!(message["content"].as_str().unwrap().contains(r#""toolCallId":"call-2""#), "{message}");

    let approved = toolhost_with_input(dir.path(), &["run", "--json", "--yes"], reply);
    assert_eq!(statuses(&approved), ["success", "success"]);
    assert_eq!(std::fs::read_to_string(dir.path().join("ws/a.txt")).unwrap(), "42");
}

#[test]
fn short_help_lists_each_command_on_a_line_and_each_commands_long_help_ends_with_examples() {
    let dir = tempfile::tempdir().unwrap();
    let short = text(&toolhost(dir.path(), &["-h"]).stdout);
    let listed: Vec<&str> = short.lines().skip_while(|l| *l != "Commands:").skip(1).take_while(|l| !l.is_empty()).collect();
    assert!(listed.len() > 15, "{short}");
    for line in short.lines() {
        assert!(line.chars().count() <= 100, "-h fits 100 columns; the long text is --help's: {line}");
    }
    for command in listed.iter().filter_map(|l| l.split_whitespace().next()).filter(|c| *c != "help") {
        let short = text(&toolhost(dir.path(), &[command, "-h"]).stdout);
        for line in short.lines() {
            assert!(line.chars().count() <= 100, "{command} -h fits 100 columns: {line}");
        }
        let long = text(&toolhost(dir.path(), &[command, "--help"]).stdout);
        let (_, examples) = long.trim_end().rsplit_once("\nExamples:\n").unwrap_or_else(|| panic!("{command}: {long}"));
        let lines: Vec<&str> = examples.lines().collect();
        assert!(
            !lines.is_empty() && lines.iter().all(|l| l.starts_with("  ") && l.contains("toolhost ")),
            "{command}: {examples}"
        );
    }
}

#[test]
fn run_answers_in_the_protocol_the_calls_were_written_in_and_in_vcp_as_prompt_teaches_by_default() {
    let dir = demo_dir();
    let taught = toolhost(dir.path(), &["prompt"]);
    assert!(text(&taught.stdout).contains("<<<[TOOL_REQUEST]>>>"), "{}", text(&taught.stdout));
    let vcp = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calculate「末」,\nexpression:「始」6*7「末」\n<<<[END_TOOL_REQUEST]>>>\n";
    let answered = text(&toolhost_with_input(dir.path(), &["run"], vcp).stdout);
    assert!(answered.starts_with("<!-- VCP_TOOL_PAYLOAD -->") && answered.contains("42"), "{answered}");
    let json = "```json\n{\"action\": \"tool_call\", \"name\": \"calculate\", \"arguments\": {\"expression\": \"6*7\"}}\n```\n";
    let answered = text(&toolhost_with_input(dir.path(), &["run"], json).stdout);
    assert!(answered.contains("\"toolCallId\"") && !answered.contains("VCP_TOOL_PAYLOAD"), "{answered}");
}

/// `parse --tools FILE` types every XML-style family's values by the
/// schemas in FILE: a string keeps its text exactly, even when it looks
/// like JSON; integers, numbers, booleans, objects and arrays are decoded;
/// `null` for an optional parameter is its absence; a parameter the schema
/// does not declare keeps its text as a string.
#[test]
fn parse_types_xml_style_values_by_the_schemas_of_a_tools_file() {
    let dir = tempfile::tempdir().unwrap();
    let tools = serde_json::json!([{"type": "function", "function": {"name": "forecast", "description": "weather", "parameters": {
    "type": "object",
    "required": ["city"],
    "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "ratio": {"type": "number"}, "metric": {"type": "boolean"},
        "options": {"type": "object"}, "fields": {"type": "array", "items": {"type": "string"}}, "limit": {"type": ["integer", "null"]}
    }}}}]);
    std::fs::write(dir.path().join("tools.json"), tools.to_string()).unwrap();
    // (key, value as written, JSON type for the families that tag it)
    let values = [
        ("city", "{\"a\": 1}", "string"),
        ("days", "3", "integer"),
        ("ratio", "0.5", "number"),
        ("metric", "true", "boolean"),
        ("options", "{\"x\": [1, null]}", "object"),
        ("fields", "[\"rain\", \"wind\"]", "array"),
        ("limit", "null", "null"),
        ("extra", "42", "string"),
    ];
    let join = |f: &dyn Fn(&str, &str, &str) -> String| values.iter().map(|(k, v, t)| f(k, v, t)).collect::<String>();
    let families = [
        (
            "qwen3-coder",
            format!(
                "<tool_call>\n<function=forecast>\n{}</function>\n</tool_call>",
                join(&|k, v, _| format!("<parameter={k}>\n{v}\n</parameter>\n"))
            ),
        ),
        (
            "seed-oss",
            format!(
                "<seed:tool_call>\n<function=forecast>\n{}</function>\n</seed:tool_call>",
                join(&|k, v, _| format!("<parameter={k}>{v}</parameter>\n"))
            ),
        ),
        (
            "glm",
            format!(
                "<tool_call>forecast\n{}</tool_call>",
                join(&|k, v, _| format!("<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n"))
            ),
        ),
        (
            "minimax",
            format!(
                "<minimax:tool_call>\n<invoke name=\"forecast\">\n{}</invoke>\n</minimax:tool_call>",
                join(&|k, v, _| format!("<parameter name=\"{k}\">{v}</parameter>\n"))
            ),
        ),
        (
            "deepseek-dsml",
            format!(
                "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"forecast\">\n{}</｜DSML｜invoke>\n</｜DSML｜function_calls>",
                join(&|k, v, t| format!(
                    "<｜DSML｜parameter name=\"{k}\" string=\"{}\">{v}</｜DSML｜parameter>\n",
                    t == "string"
                ))
            ),
        ),
        (
            "step3",
            format!(
                "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"forecast\">{}</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
                join(&|k, v, _| format!("<steptml:parameter name=\"{k}\">{v}</steptml:parameter>"))
            ),
        ),
        (
            "kimi-k3",
            format!(
                "<|open|>tools<|sep|><|open|>call tool=\"forecast\" index=\"1\"<|sep|>{}<|close|>call<|sep|><|close|>tools<|sep|>",
                join(&|k, v, t| format!("<|open|>argument key=\"{k}\" type=\"{t}\"<|sep|>{v}<|close|>argument<|sep|>"))
            ),
        ),
    ];
    let typed = serde_json::json!({
        "city": "{\"a\": 1}", "days": 3, "ratio": 0.5, "metric": true, "options": {"x": [1, null]}, "fields": ["rain", "wind"]
    });
    for (family, reply) in families {
        let out = toolhost_with_input(dir.path(), &["parse", "--tools", "tools.json"], &reply);
        assert!(out.status.success(), "{family}: {}", text(&out.stderr));
        let mut parsed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // A parameter the schema does not declare is typed as without one:
        // as the model tagged it, else decoded as the engines decode it.
        let extra = parsed["calls"][0]["arguments"].as_object_mut().and_then(|args| args.remove("extra"));
        let tagged = reply.contains("type=\"string\"") || reply.contains("string=\"true\"");
        let expected = if tagged { serde_json::json!("42") } else { serde_json::json!(42) };
        assert_eq!(extra, Some(expected), "{family}: {parsed}");
        assert_eq!(parsed["calls"][0]["arguments"], typed, "{family}: {parsed}");
        assert_eq!(parsed["warnings"], serde_json::json!([]), "{family}");
    }
    let untyped = toolhost_with_input(
        dir.path(),
        &["parse", "--tool", "forecast"],
        "<tool_call>\n<function=forecast>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    );
    let untyped: serde_json::Value = serde_json::from_slice(&untyped.stdout).unwrap();
    // Without a schema, a number is decoded as SGLang's Qwen3-Coder
    // detector decodes it (issue 33, class 3).
    assert_eq!(untyped["calls"][0]["arguments"], serde_json::json!({"days": 3}), "without a schema, decoded");
    let bad = toolhost_with_input(dir.path(), &["parse", "--tools", "missing.json"], "");
    assert!(!bad.status.success() && text(&bad.stderr).contains("missing.json"), "{}", text(&bad.stderr));
}

/// A directory whose policy grants `understated` (a writer it declares
/// public) `/workspace` read-write over `ws/`, with `extra` policy text.
fn understated_dir(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["plugins", "ws"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    std::fs::copy(plugins("hostile").join("understated.wasm"), dir.path().join("plugins/understated.wasm")).unwrap();
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "plugin_dirs = [\"plugins\"]\n[plugins.understated]\nfile = \"understated.wasm\"\n\
             dirs = {{ \"/workspace\" = {{ host = \"ws\", access = \"read-write\" }} }}\n{extra}"
        ),
    )
    .unwrap();
    dir
}

#[test]
fn a_writer_declared_public_is_asked_for_and_list_and_inspect_show_both_levels() {
    let dir = understated_dir("");
    let out = toolhost(dir.path(), &["call", "save_note", "--arg", "path=a.txt", "--arg", "content=x"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("status: denied"), "{}", text(&out.stderr));
    assert!(!dir.path().join("ws/a.txt").exists(), "nothing was written");

    let list = text(&toolhost(dir.path(), &["list"]).stdout);
    let row = list.lines().find(|l| l.starts_with("save_note ")).unwrap_or_default();
    assert!(row.contains("moderate (declared public)"), "{list}");
    let json: serde_json::Value = serde_json::from_slice(&toolhost(dir.path(), &["list", "--json"]).stdout).unwrap();
    assert_eq!((&json[0]["permission"], &json[0]["declared_permission"]), (&"moderate".into(), &"public".into()));
    let inspect = toolhost(dir.path(), &["inspect", "plugins/understated.wasm"]);
    let shown = text(&inspect.stdout);
    assert!(shown.contains("save_note (moderate (declared public, raised by write /workspace)"), "{shown}");
}

#[test]
fn check_says_which_plugins_tools_a_rule_without_a_plugin_matches() {
    let rules = "[[approval.rules]]\naction = \"allow\"\ntool = \"save_*\"\n\
                 [[approval.rules]]\naction = \"allow\"\nplugin = \"understated\"\ntool = \"save_note\"\n\
                 [[approval.rules]]\naction = \"deny\"\nplugin = \"notes\"\ntool = \"*\"\n";
    let dir = understated_dir(rules);
    let out = toolhost(dir.path(), &["check"]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("info: approval.rules[0]: `allow save_*` names no plugin; it matches save_note of understated"),
        "{stdout}"
    );
    assert!(!stdout.contains("approval.rules[1]"), "a rule naming its plugin needs no word: {stdout}");
    assert!(stdout.contains("warning: approval.rules[2].plugin: no loaded plugin is named `notes`"), "{stdout}");
    assert!(!out.status.success(), "a rule for no loaded plugin is a finding");
}

#[test]
fn an_unknown_agent_lists_the_agents_and_a_missing_plugin_directory_is_named_where_it_was_looked_for() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    let policy = "plugin_dirs = [\"plugins\"]\n[agents.coder]\nenabled = true\n[agents.writer]\nenabled = true\n";
    std::fs::write(dir.path().join("toolhost.toml"), policy).unwrap();
    std::fs::write(dir.path().join("reply.txt"), "no calls").unwrap();
    for args in [&["prompt", "--agent", "codr"][..], &["run", "--agent", "codr", "reply.txt"][..]] {
        let said = text(&toolhost(dir.path(), args).stderr);
        assert!(said.contains("no agent `codr` in the policy") && said.contains("its agents: coder, writer"), "{args:?}: {said}");
        assert!(said.contains("did you mean `coder`"), "{said}");
    }
    let said = text(&toolhost(dir.path(), &["--plugins", "nowhere", "list"]).stderr);
    let looked = dir.path().canonicalize().unwrap().join("nowhere");
    assert!(
        said.contains(&looked.display().to_string()) || said.contains(&dir.path().join("nowhere").display().to_string()),
        "{said}"
    );
}
