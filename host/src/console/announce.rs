//! Where a user's open console is found: a file only that user can read,
//! naming the console's address and token. A console writes it while it
//! serves; a door started with `--console` reads it and asks there
//! instead of opening a page of its own.
//!
//! The file is `$XDG_RUNTIME_DIR/toolhost/desk/console.json` (under a
//! directory the system makes for the user alone), else under
//! `$XDG_STATE_HOME`; `desk/` is made for it alone, mode 0700. It is trusted only when the
//! user owns it and nobody else may read or write it or its directory: a
//! file planted by someone else would send this user's questions to their
//! page.

use crate::home_paths::user_dir;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The file's name in its directory.
const FILE_NAME: &str = "console.json";
/// The most a genuine file holds; a larger one is not read.
const MAX_FILE_BYTES: u64 = 4096;

/// What the file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Announced {
    /// The console's base address, `http://HOST:PORT`.
    pub base: String,
    /// Its token.
    pub token: String,
    /// The process serving it.
    pub pid: u32,
}

/// The file this user's console is announced in, if the environment names
/// a home for it.
pub fn announcement_path() -> Option<PathBuf> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").filter(|dir| !dir.is_empty()).map(PathBuf::from);
    let dir = runtime.or_else(|| user_dir("XDG_STATE_HOME", ".local/state"))?;
    Some(dir.join("toolhost").join("desk").join(FILE_NAME))
}

/// The console announced at `path`, when the file is this user's alone
/// and well formed. Why it is not, for the log.
pub(crate) fn read(path: &Path) -> Result<Announced, String> {
    let dir = path.parent().ok_or("the announcement has no directory")?;
    private("its directory", dir)?;
    private("the file", path)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .map_err(|error| format!("{}: {error}", path.display()))?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_FILE_BYTES), &mut text)
        .map_err(|error| format!("{}: {error}", path.display()))?;
    serde_json::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))
}

/// Why `at` is not this user's alone, if it is not: owned by another
/// user, open to others, or a symbolic link.
fn private(what: &str, at: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(at).map_err(|error| format!("{}: {error}", at.display()))?;
    if meta.uid() != rustix::process::getuid().as_raw() {
        return Err(format!("{what} {} belongs to another user", at.display()));
    }
    if meta.mode() & 0o077 != 0 || meta.file_type().is_symlink() {
        return Err(format!("{what} {} may be read or changed by others (mode {:o})", at.display(), meta.mode() & 0o777));
    }
    Ok(())
}

/// Whether process `pid` runs, as this user: a console that died leaves
/// its file and its port behind, and another user may take the port.
pub(crate) fn is_ours_and_running(pid: u32) -> bool {
    std::fs::metadata(format!("/proc/{pid}")).is_ok_and(|meta| meta.uid() == rustix::process::getuid().as_raw())
}

/// The console's announcement, removed when dropped (if it still names
/// this console: a newer one may have taken its place).
#[derive(Debug)]
pub struct Announcement {
    path: PathBuf,
    token: String,
}

impl Announcement {
    /// Announce `announced` at `path`: written whole (a reader never sees
    /// half of it), readable by this user only.
    pub(crate) fn write(path: PathBuf, announced: &Announced) -> std::io::Result<Self> {
        let dir = path.parent().ok_or_else(|| std::io::Error::other("the announcement has no directory"))?;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        // A directory someone else made, or opened, is not written into.
        private("its directory", dir).map_err(std::io::Error::other)?;
        let temp = dir.join(format!(".{FILE_NAME}.{}", announced.pid));
        let _ = std::fs::remove_file(&temp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&temp)?;
        file.write_all(&serde_json::to_vec(announced).map_err(std::io::Error::other)?)?;
        drop(file);
        std::fs::rename(&temp, &path)?;
        Ok(Announcement { path, token: announced.token.clone() })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Announcement {
    fn drop(&mut self) {
        if read(&self.path).is_ok_and(|announced| announced.token == self.token) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn announced(token: &str) -> Announced {
        Announced { base: "http://127.0.0.1:7800".to_owned(), token: token.to_owned(), pid: 7 }
    }

    #[test]
    fn an_announcement_is_the_users_alone_and_removed_only_by_its_console() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("toolhost").join(FILE_NAME);
        let first = Announcement::write(path.clone(), &announced("first")).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().mode() & 0o777, 0o700);
        assert_eq!(read(&path).unwrap(), announced("first"));

        // A newer console took its place: the older one leaves it be.
        let second = Announcement::write(path.clone(), &announced("second")).unwrap();
        drop(first);
        assert_eq!(read(&path).unwrap().token, "second");
        drop(second);
        assert!(!path.exists());
    }

    #[test]
    fn a_console_is_trusted_only_while_its_process_runs_as_this_user() {
        assert!(is_ours_and_running(std::process::id()));
        // No such process (pids stay far below this).
        assert!(!is_ours_and_running(u32::MAX - 1));
    }

    #[test]
    fn a_file_others_may_read_or_change_is_not_trusted() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("toolhost").join(FILE_NAME);
        let _announcement = Announcement::write(path.clone(), &announced("t")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = read(&path).unwrap_err();
        assert!(refused.contains("may be read or changed by others (mode 644)"), "{refused}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(path.parent().unwrap(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let refused = read(&path).unwrap_err();
        assert!(refused.contains("its directory") && refused.contains("mode 755"), "{refused}");
    }
}
