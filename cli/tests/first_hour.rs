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
    let out =
        toolhost(dir.path(), &["--plugins", &plugins, "call", "calculate", "--arg", "expresion=1", "--arg", "expression=2"]);
    assert!(
        stderr(&out).contains("`calculate` declares no parameter `expresion`; did you mean `expression`"),
        "{}",
        stderr(&out)
    );

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

#[test]
fn the_policy_file_is_found_above_the_working_directory_then_in_the_users_config() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("project/src/deep");
    std::fs::create_dir_all(&deep).unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(config.join("toolhost")).unwrap();
    let run = |cwd: &std::path::Path| {
        in_test_home(&mut Command::new(env!("CARGO_BIN_EXE_toolhost")))
            .current_dir(cwd)
            .env("XDG_CONFIG_HOME", &config)
            .args(["-v", "list", "--json"])
            .output()
            .unwrap()
    };
    let tools = |out: &Output| -> Vec<String> {
        assert!(out.status.success(), "{}", stderr(out));
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        listed.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    // The per-user policy, when nothing nearer has one.
    let hostile = support::plugins("hostile").display().to_string();
    std::fs::write(config.join("toolhost/toolhost.toml"), format!("plugin_dirs = [{hostile:?}]\n")).unwrap();
    let user = run(&deep);
    assert!(tools(&user).contains(&"spin".to_owned()));
    assert!(stderr(&user).contains("config/toolhost/toolhost.toml"), "says which file: {}", stderr(&user));
    // A project's policy two directories up wins, its relative paths read
    // from where it is.
    let project = dir.path().join("project");
    std::os::unix::fs::symlink(support::plugins("examples"), project.join("plugins")).unwrap();
    std::fs::write(project.join("toolhost.toml"), "plugin_dirs = [\"plugins\"]\n").unwrap();
    let found = tools(&run(&deep));
    assert!(found.contains(&"calculate".to_owned()) && !found.contains(&"spin".to_owned()), "{found:?}");
}

#[test]
fn quiet_keeps_only_results_and_errors_and_color_follows_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = examples();
    // A warning (an undeclared argument) and the status line go; the result stays.
    let args = ["--plugins", &plugins, "call", "calculate", "--arg", "expression=2+2", "--arg", "x=1"];
    let loud = toolhost(dir.path(), &args);
    assert!(stderr(&loud).contains("warning:") && stderr(&loud).contains("status: success"), "{}", stderr(&loud));
    let quiet = toolhost(dir.path(), &[&["-q"][..], &args].concat());
    assert!(quiet.status.success());
    assert_eq!(stderr(&quiet), "");
    assert!(text(&quiet.stdout).contains('4'), "{}", text(&quiet.stdout));
    // An error is still said.
    let failed = toolhost(dir.path(), &["-q", "--plugins", &plugins, "call", "calculate", "--arg", "expression=1/"]);
    assert!(!failed.status.success() && !stderr(&failed).is_empty());
    assert!(!stderr(&failed).contains("status:"), "{}", stderr(&failed));
    // Log lines carry colour escapes only when asked, even into a pipe.
    let coloured = toolhost(dir.path(), &["-v", "--color", "always", "--plugins", &plugins, "list"]);
    assert!(stderr(&coloured).contains("\x1b["), "{}", stderr(&coloured));
    let plain = toolhost(dir.path(), &["-v", "--color", "never", "--plugins", &plugins, "list"]);
    assert!(!stderr(&plain).contains('\x1b') && stderr(&plain).contains("INFO"), "{}", stderr(&plain));
    let conflict = toolhost(dir.path(), &["-q", "-v", "list"]);
    assert!(!conflict.status.success() && stderr(&conflict).contains("cannot be used with"), "{}", stderr(&conflict));
}

#[test]
fn call_takes_fuel_and_time_limits_for_one_try() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = examples();
    let starved =
        toolhost(dir.path(), &["--plugins", &plugins, "call", "calculate", "--arg", "expression=2+2", "--fuel", "1000"]);
    assert!(!starved.status.success());
    assert!(stderr(&starved).contains("out of fuel after 1 000 units"), "{}", stderr(&starved));
    std::fs::create_dir(dir.path().join("hostile")).unwrap();
    std::fs::copy(support::plugins("hostile").join("hostile.wasm"), dir.path().join("hostile/hostile.wasm")).unwrap();
    let started = std::time::Instant::now();
    let args = ["--plugins", "hostile", "call", "spin", "--yes", "--timeout", "300ms", "--fuel", "1000000000000000"];
    let stopped = toolhost(dir.path(), &args);
    assert!(!stopped.status.success());
    assert!(stderr(&stopped).contains("timed out after 300 ms"), "{}", stderr(&stopped));
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "the default limit did not apply");
    let bad = toolhost(dir.path(), &["--plugins", &plugins, "call", "calculate", "--timeout", "soon"]);
    assert!(!bad.status.success() && stderr(&bad).contains("500ms, 5s or 2m"), "{}", stderr(&bad));
    let none = toolhost(dir.path(), &["--plugins", &plugins, "call", "calculate", "--fuel", "0"]);
    assert!(!none.status.success() && stderr(&none).contains("--fuel"), "{}", stderr(&none));
}

/// A direct call has no agent to cap its time: `--timeout` above the
/// default agent's 30 s is the limit the call runs under (`-vv` logs it).
#[test]
fn call_timeout_above_thirty_seconds_is_the_limit_the_call_runs_under() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolhost(
        dir.path(),
        &["-vv", "--plugins", &examples(), "call", "calculate", "--arg", "expression=6*7", "--timeout", "2m"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let calling = stderr(&out).lines().find(|line| line.contains("calling `calculate`")).map(str::to_owned);
    assert!(calling.as_deref().is_some_and(|line| line.contains(", time 120 s,")), "{}", stderr(&out));
}

#[test]
fn an_os_error_is_said_once_and_a_plugins_wasi_errno_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolhost(dir.path(), &["--plugins", "no-such-dir", "list"]);
    let said = stderr(&out);
    assert!(!out.status.success());
    assert_eq!(said.matches("(os error 2)").count(), 1, "{said}");
    assert!(said.contains("no-such-dir"), "{said}");
    // A plugin reading a directory it was not granted.
    let hostile = support::plugins("hostile").display().to_string();
    let out = toolhost(dir.path(), &["--plugins", &hostile, "call", "read_path", "--arg", "path=/data/x", "--yes"]);
    let said = stderr(&out);
    assert!(said.contains("(WASI errno 44, ENOENT)") && !said.contains("os error 44"), "{said}");
    assert!(said.contains("granted no directories") && said.contains("it asks for /data"), "{said}");
}

#[test]
fn check_fails_on_a_policy_mistake_and_passes_a_clean_policy() {
    let dir = tempfile::tempdir().unwrap();
    // Only calc: a plugin that lacks a grant is a finding of its own.
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::copy(support::plugins("examples").join("calc.wasm"), dir.path().join("plugins/calc.wasm")).unwrap();
    let policy = |agents: &str| format!("plugin_dirs = [\"plugins\"]\n{agents}");
    std::fs::write(
        dir.path().join("toolhost.toml"),
        policy("[agents.helper]\nenabled = true\nsystem_prompt = \"Use {{tool:calculat}} well. {{tools}}\"\n"),
    )
    .unwrap();
    let out = toolhost(dir.path(), &["check"]);
    assert!(!out.status.success());
    let found = text(&out.stdout);
    assert!(
        found.contains("warning: agents.helper.system_prompt: {{tool:calculat}} names no tool offered to this agent")
            && found.contains("did you mean `calculate`"),
        "{found}"
    );
    assert!(stderr(&out).contains(": 1 finding\n"), "{}", stderr(&out));
    // The same mistake in a template given to `prompt`.
    std::fs::write(dir.path().join("prompt.txt"), "{{tool:calculat}}").unwrap();
    let out = toolhost(dir.path(), &["prompt", "--agent", "helper", "--template", "prompt.txt"]);
    assert!(stderr(&out).contains("{{tool:calculat}} names no tool offered to agent `helper`"), "{}", stderr(&out));

    std::fs::write(
        dir.path().join("toolhost.toml"),
        policy("[agents.helper]\nenabled = true\nsystem_prompt = \"Use {{tool:calculate}} well.\"\n"),
    )
    .unwrap();
    let out = toolhost(dir.path(), &["check"]);
    assert!(out.status.success(), "{}{}", text(&out.stdout), stderr(&out));
    assert_eq!(text(&out.stdout), "");
    assert!(stderr(&out).contains("tools, 0 refused (toolhost.toml): ok"), "{}", stderr(&out));
    // An agent with tool calling off is said at `prompt` too.
    std::fs::write(dir.path().join("toolhost.toml"), policy("[agents.off]\nprotocol = \"vcp\"\n")).unwrap();
    let out = toolhost(dir.path(), &["prompt", "--agent", "off"]);
    assert!(stderr(&out).contains("agent `off` has tool calling off"), "{}", stderr(&out));
    assert!(!toolhost(dir.path(), &["check"]).status.success());
}

#[test]
fn tools_whose_plugin_lacks_a_grant_are_flagged_by_check_and_left_out_of_the_prompt_until_granted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), format!("plugin_dirs = [{:?}]\n", examples())).unwrap();
    let out = toolhost(dir.path(), &["check"]);
    assert!(!out.status.success());
    let found = text(&out.stdout);
    assert!(
        found.contains(
            "warning: plugins.files.dirs.\"/workspace\": the plugin asks for the directory /workspace, which the policy \
             does not grant, so its tools (list_files, read_file, write_file) fail where they use it"
        ),
        "{found}"
    );
    let prompt = text(&toolhost(dir.path(), &["prompt"]).stdout);
    assert!(prompt.contains("calculate") && !prompt.contains("read_file"), "{prompt}");

    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let granted = format!(
        "plugin_dirs = [{:?}]\n[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = \"ws\" }} }}\n",
        examples()
    );
    std::fs::write(dir.path().join("toolhost.toml"), granted).unwrap();
    let found = text(&toolhost(dir.path(), &["check"]).stdout);
    assert!(!found.contains("plugins.files") && found.contains("plugins.dirtree"), "{found}");
    let prompt = text(&toolhost(dir.path(), &["prompt"]).stdout);
    assert!(prompt.contains("read_file"), "{prompt}");
}

#[test]
fn a_load_that_compiles_for_over_a_second_says_so_with_the_time_taken_on_a_stderr_that_is_no_terminal() {
    let textstats = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins/polyglot/textstats.wasm");
    if !textstats.exists() {
        return support::skip("the Python example (18 MiB, seconds to compile)", "it is not built");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::copy(&textstats, dir.path().join("plugins/textstats.wasm")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    // A cache of its own, so the component compiles.
    for (var, sub) in
        [("XDG_CACHE_HOME", "cache"), ("XDG_STATE_HOME", "state"), ("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data")]
    {
        command.env(var, dir.path().join(sub));
    }
    let out = command.env_remove("RUST_LOG").current_dir(dir.path()).args(["--plugins", "plugins", "list"]).output().unwrap();
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    // --plugins is made absolute, so the file is named where it was looked for.
    let named = format!("compiling {} (1/1;", dir.path().join("plugins/textstats.wasm").display());
    assert!(said.contains(&named) && said.contains(" s\n"), "{said}");
    assert!(said.contains("plugins loaded in "), "{said}");
}

#[test]
fn call_and_parse_word_a_value_of_the_wrong_type_alike() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = examples();
    let called = toolhost(dir.path(), &["--plugins", &plugins, "call", "dir_tree", "--arg", "max_depth=abc"]);
    assert!(!called.status.success());
    let said = stderr(&called);
    let from_call = said.lines().find(|l| l.starts_with("the parameter")).unwrap_or_else(|| panic!("{said}")).to_owned();
    assert_eq!(from_call, "the parameter `max_depth` of `dir_tree` must be an integer, got the string \"abc\"");

    std::fs::write(
        dir.path().join("reply.txt"),
        "```json\n{\"action\":\"tool_call\",\"name\":\"dir_tree\",\"arguments\":{\"max_depth\":\"abc\"}}\n```\n",
    )
    .unwrap();
    let parsed = toolhost(dir.path(), &["--plugins", &plugins, "parse", "--protocol", "json-block", "reply.txt"]);
    let parsed: serde_json::Value = serde_json::from_slice(&parsed.stdout).unwrap();
    assert_eq!(parsed["warnings"][0].as_str().unwrap(), format!("at byte 0: {from_call}"));
}

#[test]
fn a_renamed_tool_lets_two_plugins_with_one_tool_name_both_load() {
    let dir = tempfile::tempdir().unwrap();
    for (sub, name) in [("a", "examples"), ("b", "hostile")] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        let file = if name == "examples" { "calc.wasm" } else { "impostor.wasm" };
        std::fs::copy(support::plugins(name).join(file), dir.path().join(sub).join(file)).unwrap();
    }
    let clash = toolhost(dir.path(), &["--plugins", "a", "--plugins", "b", "list"]);
    let said = stderr(&clash);
    assert!(said.contains("a/calc.wasm") && said.contains("b/impostor.wasm") && said.contains("tool_prefix"), "{said}");
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "plugin_dirs = [\"a\", \"b\"]\n[plugins.impostor]\nrename = { calculate = \"impostor_calculate\" }\n",
    )
    .unwrap();
    let out = toolhost(dir.path(), &["list", "--json"]);
    assert!(out.status.success() && !stderr(&out).contains("refused"), "{}", stderr(&out));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = listed.as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"calculate") && names.contains(&"impostor_calculate"), "{names:?}");
    let renamed = listed.as_array().unwrap().iter().find(|t| t["name"] == "impostor_calculate").unwrap();
    assert_eq!(renamed["declared_name"], "calculate");
    let table = text(&toolhost(dir.path(), &["list"]).stdout);
    assert!(table.lines().any(|l| l.starts_with("impostor_calculate (declared calculate) ")), "{table}");
    let out = toolhost(dir.path(), &["call", "calculate", "--arg", "expression=6*7"]);
    assert!(out.status.success() && text(&out.stdout).contains("42"), "{}", stderr(&out));
}

/// A line of output as the Try-it test compares it: a line that says a
/// time, a fuel count or a local port has its digits masked, as they
/// change from run to run; every other line is compared as it is.
fn steady(line: &str) -> String {
    let varies = [" ms", "fuel ", "127.0.0.1:"].iter().any(|v| line.contains(v));
    if varies { line.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect() } else { line.trim_end().to_owned() }
}

/// The `$ COMMAND` lines of the `console` blocks of `section`, each with
/// the output shown under it.
fn console_steps(section: &str) -> Vec<(String, Vec<String>)> {
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    for block in section.split("```console\n").skip(1) {
        let block = block.split("```").next().unwrap();
        for line in block.lines() {
            match (line.strip_prefix("$ "), steps.last_mut()) {
                (Some(command), _) => steps.push((command.to_owned(), Vec::new())),
                (None, Some((_, shown))) => shown.push(line.to_owned()),
                (None, None) => panic!("a console block starts with output, not a command: {line}"),
            }
        }
    }
    steps
}

#[test]
fn the_readmes_try_it_section_works_as_written() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let section = readme.split("\n## Try it\n").nth(1).expect("the README has a Try it section");
    let section = section.split("<!-- try-it: end -->").next().unwrap();
    let steps = console_steps(section);
    assert!(steps.len() >= 4, "call, list, prompt and chat: {steps:?}");
    assert!(repo.join("target/release/standin-llm").exists(), "the scripted model is missing; run `cargo xtask build-plugins`");
    // The commands run as a user runs them, from the repository's root,
    // with the `toolhost` just built first on the PATH.
    let built = std::path::Path::new(env!("CARGO_BIN_EXE_toolhost")).parent().unwrap();
    let path = format!("{}:{}", built.display(), std::env::var("PATH").unwrap_or_default());
    for (command, shown) in steps {
        let out = in_test_home(Command::new("sh").arg("-c").arg(format!("{{ {command}\n}} 2>&1")))
            .current_dir(repo)
            .env("PATH", &path)
            .env_remove("RUST_LOG")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_MODEL")
            .output()
            .unwrap();
        let said = text(&out.stdout);
        assert!(out.status.success(), "{command}\n{said}");
        // stdout and stderr interleave as the pipes flush: the same lines,
        // in any order.
        let mut printed: Vec<String> = said.lines().map(steady).collect();
        let mut expected: Vec<String> = shown.iter().map(|l| steady(l)).collect();
        printed.sort();
        expected.sort();
        assert_eq!(printed, expected, "`{command}` printed, unlike the README:\n{said}");
    }
}
