//! The browser the console's tests drive: Debian's Chromium and its
//! ChromeDriver. The tests may be skipped only when these cannot be
//! installed: the reason is printed and written to
//! `target/toolchains/browser.skipped`, where the tests read it and report
//! the skip.

use crate::polyglot::apt;
use std::path::Path;

/// Install Chromium and ChromeDriver, unless they are there.
pub fn install(root: &Path) -> anyhow::Result<()> {
    let dir = root.join("target/toolchains");
    std::fs::create_dir_all(&dir)?;
    let skipped = dir.join("browser.skipped");
    match apt(&["chromium", "chromium-driver"], "chromedriver") {
        Ok(()) => {
            let _ = std::fs::remove_file(&skipped);
        }
        Err(reason) => {
            eprintln!("xtask: the console's browser tests will be SKIPPED: {reason}");
            std::fs::write(&skipped, reason)?;
        }
    }
    Ok(())
}
