//! The remembered-approvals file written by several processes at once:
//! [`WRITERS`] processes, each with its own handle, remember
//! [`PER_WRITER`] approvals each, all starting together. Every update must
//! be in the file afterwards: each read-modify-write holds the file lock,
//! so no writer starts from a file another is about to replace.
//!
//! Run alone with `cargo test --release -p toolhost-tests --test approvals_lock`.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};
use toolhost::approval::ApprovalMemory;

/// Processes writing at once.
const WRITERS: usize = 4;
/// Approvals each remembers.
const PER_WRITER: usize = 25;
/// How long the writers may wait for the start signal.
const START_BOUND: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, path, writer] = &args[..]
        && flag == "--writer"
    {
        write(Path::new(path), writer);
        return ExitCode::SUCCESS;
    }
    match supervise() {
        Ok(()) => {
            println!("approvals lock: {WRITERS} processes, {PER_WRITER} approvals each, none lost");
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("approvals lock: {failure}");
            ExitCode::FAILURE
        }
    }
}

/// Wait for the start file, then remember this writer's approvals.
fn write(path: &Path, writer: &str) {
    let memory = ApprovalMemory::open(path);
    let start = path.with_extension("start");
    let waiting = Instant::now();
    while !start.exists() {
        assert!(waiting.elapsed() < START_BOUND, "no start signal");
        std::thread::sleep(Duration::from_millis(1));
    }
    for i in 0..PER_WRITER {
        memory.remember("agent", "plugin", &format!("w{writer}_t{i}"), "aa").expect("remember");
    }
}

fn supervise() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("toolhost.approvals.json");
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let child = Command::new(&exe).arg("--writer").arg(&path).arg(writer.to_string()).spawn();
        writers.push(child.map_err(|e| format!("cannot start a writer: {e}"))?);
    }
    std::fs::write(path.with_extension("start"), "").map_err(|e| e.to_string())?;
    for mut writer in writers {
        let status = writer.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("a writer failed: {status}"));
        }
    }
    let memory = ApprovalMemory::open(&path);
    let found = memory.entries().len();
    if !memory.take_warnings().is_empty() {
        return Err("the file reads with warnings".into());
    }
    if found != WRITERS * PER_WRITER {
        return Err(format!("{found} approvals in the file, {} remembered: updates were lost", WRITERS * PER_WRITER));
    }
    Ok(())
}
