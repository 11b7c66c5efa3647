//! Whether a file that decides what runs — the policy, the lock file —
//! may be trusted, as git decides with `safe.directory`: it must belong to
//! this user or root, and others (not its owner, not its group) may not
//! write it. Group write is allowed, as a umask of 002 makes it and as a
//! shared project's group is the user's choice. A file found by walking
//! up from the working directory (a shared `/tmp/…`, a world-writable
//! project root) could otherwise grant another user's plugins this user's
//! directories.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Others may write.
const WRITABLE_BY_OTHERS: u32 = 0o002;

/// A file someone other than this user (or root) could have written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is not trusted: {why}", path.display())]
#[non_exhaustive]
pub struct UntrustedFile {
    /// The file.
    pub path: PathBuf,
    /// Who else owns or may write it.
    pub why: String,
}

/// `Ok` when the file at `path` (symlinks followed) belongs to this user or
/// to root and others may not write it; a file that does not
/// exist is no one's and passes.
///
/// # Errors
///
/// An [`UntrustedFile`] naming the file and who else owns or may write it, and
/// how to trust it.
pub fn check_trusted(path: &Path) -> Result<(), UntrustedFile> {
    let Ok(metadata) = std::fs::metadata(path) else { return Ok(()) };
    let me = rustix::process::geteuid().as_raw();
    let why = if metadata.uid() != me && metadata.uid() != 0 {
        format!("it is owned by user {}, not by this user ({me}) or root", metadata.uid())
    } else if metadata.mode() & WRITABLE_BY_OTHERS != 0 {
        format!("its mode {:o} lets others write it", metadata.mode() & 0o777)
    } else {
        return Ok(());
    };
    Err(UntrustedFile { path: path.to_owned(), why })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_others_may_write_is_not_trusted_and_a_missing_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("toolhost.toml");
        assert_eq!(check_trusted(&file), Ok(()));
        std::fs::write(&file, "").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).unwrap();
        assert_eq!(check_trusted(&file), Ok(()), "a umask of 002 is fine");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        let error = check_trusted(&file).unwrap_err().to_string();
        assert!(error.contains("its mode 666 lets others write it"), "{error}");
    }
}
