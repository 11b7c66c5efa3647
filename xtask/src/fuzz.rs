//! `cargo xtask fuzz [--seconds N] [TARGET…]`: run the cargo-fuzz targets
//! in `fuzz/` one after the other, each for N seconds, and report each
//! one's executions. Before a run, each target's corpus is seeded with the
//! string literals of the tests that cover its parser, so the fuzzer starts
//! from real model outputs. Needs nightly and cargo-fuzz, which it
//! installs. Not part of CI.

use anyhow::{Context, bail};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How long each target runs when `--seconds` is not given.
const DEFAULT_SECONDS: u64 = 60;
/// An input that takes longer than this is reported as a hang.
const HANG_SECONDS: u64 = 10;
/// The longest input the fuzzer builds: long enough for quadratic work to
/// show as slow units.
const MAX_INPUT_BYTES: usize = 16 * 1024;

/// The cargo-fuzz folder of the parser targets: they depend on
/// `toolhost-protocol` alone, so they build without wasmtime.
const PARSER_FUZZ_DIR: &str = "fuzz";

/// Each target, its cargo-fuzz folder, and where its seeds come from
/// (files or folders of the workspace, whose Rust string literals, or whole
/// `.toml` files, are seeds).
const TARGETS: &[(&str, &str, &[&str])] = &[
    ("auto", PARSER_FUZZ_DIR, &["protocol/src"]),
    ("vcp", PARSER_FUZZ_DIR, &["protocol/src/vcp.rs", "protocol/src/auto"]),
    ("json_block", PARSER_FUZZ_DIR, &["protocol/src/json_block.rs", "protocol/src/auto"]),
    ("xml_tag", PARSER_FUZZ_DIR, &["protocol/src/xml_tag.rs", "protocol/src/auto"]),
    ("native", PARSER_FUZZ_DIR, &["protocol/src/native.rs", "protocol/src/json_call.rs"]),
    ("lenient_json", PARSER_FUZZ_DIR, &["protocol/src/lenient_json.rs", "protocol/src/json_call.rs", "protocol/src/auto"]),
    // The policy needs the whole host, wasmtime included: a folder of its own.
    (
        "config",
        "fuzz/config",
        &["host/src/config.rs", "runtime/src/registry/policy.rs", "runtime/src/sandbox/section.rs", "tests"],
    ),
];

/// Run the targets named in `args` (all by default).
pub(crate) fn run_targets(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let mut seconds = DEFAULT_SECONDS;
    let mut chosen = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--seconds" {
            seconds = args.next().context("--seconds needs a number")?.parse().context("--seconds needs a number")?;
        } else if TARGETS.iter().any(|(name, ..)| name == arg) {
            chosen.push(arg.as_str());
        } else {
            let names: Vec<&str> = TARGETS.iter().map(|(name, ..)| *name).collect();
            bail!("unknown fuzz target `{arg}`; the targets are {}", names.join(", "));
        }
    }
    install()?;
    let mut report = Vec::new();
    for &(target, fuzz_dir, sources) in TARGETS.iter().filter(|(name, ..)| chosen.is_empty() || chosen.contains(name)) {
        let seeds = seed(root, fuzz_dir, target, sources)?;
        eprintln!("xtask: fuzzing {target} for {seconds} s from {seeds} seeds");
        let log = root.join("fuzz/logs").join(format!("{target}.log"));
        std::fs::create_dir_all(log.parent().expect("a folder"))?;
        let status = nightly_cargo(root)
            .args(["fuzz", "run", "--fuzz-dir", fuzz_dir, "--sanitizer", "none", "--debug-assertions", target, "--"])
            .arg(format!("-max_total_time={seconds}"))
            .arg(format!("-timeout={HANG_SECONDS}"))
            .arg(format!("-max_len={MAX_INPUT_BYTES}"))
            .arg("-print_final_stats=1")
            .stderr(std::fs::File::create(&log)?)
            .status()
            .context("starting cargo fuzz")?;
        let text = std::fs::read_to_string(&log)?;
        let runs = final_stat(&text, "stat::number_of_executed_units:").unwrap_or_default();
        let slowest = final_stat(&text, "stat::slowest_unit_time_sec:").unwrap_or_default();
        let found =
            if status.success() { "nothing".to_owned() } else { format!("{} (input in {fuzz_dir}/artifacts/)", finding(&text)) };
        eprintln!(
            "xtask: {target}: {runs} executions in {seconds} s, slowest input {slowest} s, found {found} (log: {})",
            log.display()
        );
        report.push((target, runs, slowest, found));
    }
    println!("\n| target | executions | slowest input (s) | found |\n| --- | ---: | ---: | --- |");
    for (target, runs, slowest, found) in &report {
        println!("| {target} | {runs} | {slowest} | {found} |");
    }
    if report.iter().any(|(.., found)| found != "nothing") {
        bail!("a fuzz target found a problem; its input is in the artifacts folder the table names");
    }
    Ok(())
}

/// Nightly, and cargo-fuzz for it.
fn install() -> anyhow::Result<()> {
    crate::run(Command::new("rustup").args(["toolchain", "install", "nightly", "--profile", "minimal"]))?;
    let installed = Command::new("cargo").args(["fuzz", "--version"]).output().is_ok_and(|out| out.status.success());
    if !installed {
        crate::run(Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]))?;
    }
    Ok(())
}

/// `cargo +nightly` in `root`, through rustup's proxy rather than the
/// stable cargo that runs this task.
fn nightly_cargo(root: &Path) -> Command {
    let mut command = Command::new("cargo");
    command.arg("+nightly").current_dir(root).env_remove("CARGO").env_remove("RUSTUP_TOOLCHAIN");
    command
}

/// Write the seeds of `target` into its corpus in `fuzz_dir`; how many
/// there are.
fn seed(root: &Path, fuzz_dir: &str, target: &str, sources: &[&str]) -> anyhow::Result<usize> {
    let corpus = root.join(fuzz_dir).join("corpus").join(target);
    std::fs::create_dir_all(&corpus)?;
    let mut seeds = Vec::new();
    for source in sources {
        for file in files(&root.join(source))? {
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            match file.extension().and_then(|e| e.to_str()) {
                Some("rs") => seeds.extend(string_literals(&text)),
                Some("toml") => seeds.push(text),
                _ => {}
            }
        }
    }
    seeds.sort();
    seeds.dedup();
    for seed in &seeds {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        seed.hash(&mut hasher);
        std::fs::write(corpus.join(format!("seed-{:016x}", hasher.finish())), seed)?;
    }
    Ok(seeds.len())
}

/// `path` if it is a file, else every file below it.
fn files(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))? {
        found.extend(files(&entry?.path())?);
    }
    Ok(found)
}

/// The values of the string literals in Rust source: `"…"` with its
/// escapes, and raw `r#"…"#`. (A seed only has to be close: a literal read
/// wrongly is still an input.)
fn string_literals(source: &str) -> Vec<String> {
    let mut literals = Vec::new();
    let mut chars = source.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '/' if source[at..].starts_with("//") => {
                // A comment: its quotes are prose.
                while chars.next_if(|&(_, c)| c != '\n').is_some() {}
            }
            '\'' if source[at..].starts_with("'\"'") || source[at..].starts_with("'\\\"'") => {
                // The quote character, not a string.
                let length = if source[at..].starts_with("'\"'") { 3 } else { 4 };
                for _ in 1..length {
                    chars.next();
                }
            }
            'r' if source[at + 1..].starts_with(['#', '"']) => {
                let hashes = source[at + 1..].bytes().take_while(|&b| b == b'#').count();
                let open = at + 1 + hashes;
                if !source[open..].starts_with('"') {
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let Some(length) = source[open + 1..].find(&close) else { break };
                literals.push(source[open + 1..open + 1 + length].to_owned());
                let end = open + 1 + length + close.len();
                while chars.next_if(|&(i, _)| i < end).is_some() {}
            }
            '"' => {
                let mut literal = String::new();
                while let Some((_, c)) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next().map(|(_, c)| c) {
                            Some('n') => literal.push('\n'),
                            Some('t') => literal.push('\t'),
                            Some('r') => literal.push('\r'),
                            Some('0') => literal.push('\0'),
                            Some('u') => {
                                let digits: String = chars.by_ref().map(|(_, c)| c).skip(1).take_while(|&c| c != '}').collect();
                                literal.extend(u32::from_str_radix(&digits, 16).ok().and_then(char::from_u32));
                            }
                            Some('\n') => while chars.next_if(|&(_, c)| c.is_whitespace()).is_some() {},
                            Some(other) => literal.push(other),
                            None => break,
                        },
                        c => literal.push(c),
                    }
                }
                literals.push(literal);
            }
            _ => {}
        }
    }
    literals.retain(|literal| !literal.is_empty());
    literals
}

/// The value of libFuzzer's final statistic `name` in `log`.
fn final_stat(log: &str, name: &str) -> Option<u64> {
    log.lines().rev().find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
}

/// What a failed run found, from its log: libFuzzer's summary line.
fn finding(log: &str) -> String {
    log.lines()
        .find(|line| line.starts_with("SUMMARY:") || line.contains("ERROR: libFuzzer") || line.contains("panicked at"))
        .unwrap_or("a failure (see the log)")
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_literals_are_read_with_their_escapes() {
        let source = r####"let a = "x\n\"y\" \u{1F600}"; // "not this"
let b = r#"raw "quoted""#; let c = '"'; let d = "multi\
            line";"####;
        assert_eq!(string_literals(source), ["x\n\"y\" \u{1F600}", "raw \"quoted\"", "multiline"]);
    }

    #[test]
    fn the_final_statistics_are_read_from_the_log() {
        let log = "#2\tINITED\nDone 12 runs in 1 second(s)\nstat::number_of_executed_units: 12345\nstat::peak_rss_mb: 40\n";
        assert_eq!(final_stat(log, "stat::number_of_executed_units:"), Some(12345));
        assert_eq!(
            finding("INFO: x\nthread '<unnamed>' panicked at host/src/a.rs:1:2:\nSUMMARY: libFuzzer: deadly signal\n"),
            "thread '<unnamed>' panicked at host/src/a.rs:1:2:"
        );
    }
}
