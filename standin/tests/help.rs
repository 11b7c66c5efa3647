//! `standin-llm --help` prints its usage, not an error about a script
//! named `--help`.

use std::process::Command;

#[test]
fn help_prints_the_usage_and_what_a_script_holds() {
    for flag in ["--help", "-h"] {
        let output = Command::new(env!("CARGO_BIN_EXE_standin-llm")).arg(flag).output().unwrap();
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{flag}: {}", String::from_utf8_lossy(&output.stderr));
        assert!(said.starts_with("usage: standin-llm SCRIPT.json"), "{said}");
        assert!(said.contains("\"stream\": false"), "{said}");
    }
}
