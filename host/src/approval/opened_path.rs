//! The path a call will open: a rule's argument pattern judges what a path
//! argument names inside the plugin's directory grants, not only the text
//! the model wrote, so a link in the grant cannot carry a call past a rule.
//!
//! A string argument is read as a path in each granted directory: relative
//! to the directory (as a plugin joins it), and, when it is absolute under
//! the directory's guest path (`/workspace/notes/a`), as the rest of it.
//! Each reading is resolved as the sandbox resolves it: `.` dropped, `..`
//! taken back, each symbolic link that exists followed within the
//! directory. A link that leaves the directory (an absolute target, or one
//! that climbs above it) or a chain of more than [`MAX_LINKS`] links is an
//! escape: the rules cannot say where it ends, so the call is denied. A `\`
//! is read as a separator too, as a plugin may treat it as one.
//!
//! The path is resolved when the call is approved; a link made after that
//! (by the call itself) is the sandbox's to confine, not the rules'.

use crate::sandbox::DirGrant;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

/// The most symbolic links one path may pass through, as Linux's
/// `MAXSYMLINKS`.
pub const MAX_LINKS: usize = 40;

/// The longest argument read as a path, in bytes: Linux's `PATH_MAX`. A
/// longer one cannot be opened, so only its text is judged.
pub const MAX_PATH_BYTES: usize = 4096;

/// What one string argument names as a path in the plugin's directories.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PathReadings {
    /// Each place it names that a link led to, in the two forms the rules
    /// see: relative to its directory (`secrets/key`) and under the guest
    /// path (`/workspace/secrets/key`).
    pub through_links: Vec<[String; 2]>,
    /// Each place it names without passing a link, in the same two forms.
    pub direct: Vec<[String; 2]>,
    /// How it leaves its directory, when one reading does.
    pub escape: Option<String>,
}

/// A call's arguments with the directories they are opened in; each
/// string argument is read as a path once, when a rule first asks.
pub(crate) struct CallArguments<'a> {
    args: &'a Map<String, Value>,
    dirs: &'a [DirGrant],
    read: RefCell<HashMap<&'a str, Rc<PathReadings>>>,
}

impl<'a> CallArguments<'a> {
    pub(crate) fn new(args: &'a Map<String, Value>, dirs: &'a [DirGrant]) -> Self {
        CallArguments { args, dirs, read: RefCell::default() }
    }

    /// The argument `name`, if the call has it.
    pub(crate) fn get(&self, name: &str) -> Option<&'a Value> {
        self.args.get(name)
    }

    /// What the argument `name` names as a path; `None` when it is not a
    /// string, is too long to be a path, or the plugin has no directory.
    pub(crate) fn path(&self, name: &str) -> Option<Rc<PathReadings>> {
        let (name, Value::String(text)) = self.args.get_key_value(name)? else { return None };
        if self.dirs.is_empty() || text.len() > MAX_PATH_BYTES {
            return None;
        }
        let mut read = self.read.borrow_mut();
        Some(read.entry(name.as_str()).or_insert_with(|| Rc::new(read_path(text, self.dirs))).clone())
    }
}

/// Every reading of `text` in every directory of `dirs`.
fn read_path(text: &str, dirs: &[DirGrant]) -> PathReadings {
    let mut readings = PathReadings::default();
    let mut spellings = vec![text.to_owned()];
    if text.contains('\\') {
        spellings.push(text.replace('\\', "/"));
    }
    for dir in dirs {
        let guest: Vec<&str> = components(&dir.guest_path).collect();
        for spelling in &spellings {
            let whole: Vec<&str> = components(spelling).collect();
            let mut starts = vec![&whole[..]];
            if spelling.starts_with('/') && !guest.is_empty() && whole.starts_with(&guest) {
                starts.push(&whole[guest.len()..]);
            }
            for start in starts {
                match resolve(&dir.host_path, start) {
                    Ok(Resolved { path, through_link }) => {
                        let under_guest: Vec<&str> = guest.iter().copied().chain(path.iter().map(String::as_str)).collect();
                        let forms = [path.join("/"), format!("/{}", under_guest.join("/"))];
                        if through_link { &mut readings.through_links } else { &mut readings.direct }.push(forms);
                    }
                    Err(escape) => {
                        readings.escape.get_or_insert_with(|| format!("`{text}` {}", escape.describe(&dir.guest_path)));
                    }
                }
            }
        }
    }
    readings
}

/// `a//b/./c/` → `a`, `b`, `c`: the components, without empty and `.` ones.
fn components(text: &str) -> impl Iterator<Item = &str> {
    text.split('/').filter(|c| !c.is_empty() && *c != ".")
}

/// A reading resolved inside its directory.
#[derive(Debug, PartialEq, Eq)]
struct Resolved {
    /// Its components from the directory.
    path: Vec<String>,
    /// Whether a symbolic link was followed on the way.
    through_link: bool,
}

/// How a reading leaves its directory.
#[derive(Debug, PartialEq, Eq)]
enum Escape {
    /// A `..` the model wrote climbs above it.
    Climbs,
    /// A link's target is absolute: `(link, target)`.
    AbsoluteLink(String, String),
    /// A `..` in a link's target climbs above it.
    LinkClimbs,
    /// More than [`MAX_LINKS`] links.
    TooManyLinks,
    /// A link that cannot be read.
    Unreadable(String),
}

impl Escape {
    /// `leads out of /workspace through the link etc -> /etc`.
    fn describe(&self, guest: &str) -> String {
        match self {
            Escape::Climbs => format!("climbs above {guest}"),
            Escape::AbsoluteLink(link, target) => format!("leads out of {guest} through the link {link} -> {target}"),
            Escape::LinkClimbs => format!("leads out of {guest} through a link that climbs above it"),
            Escape::TooManyLinks => format!("passes more than {MAX_LINKS} links (MAX_LINKS) in {guest}"),
            Escape::Unreadable(link) => format!("passes the link {link} in {guest}, which cannot be read"),
        }
    }
}

/// `start` resolved from the directory `root` as the sandbox opens it:
/// `..` takes back a component, and each component that is a symbolic link
/// is replaced by its target. Components under one that does not exist are
/// taken as written.
fn resolve(root: &Path, start: &[&str]) -> Result<Resolved, Escape> {
    let mut todo: Vec<String> = start.iter().rev().map(|c| (*c).to_owned()).collect();
    let (mut path, mut links) = (Vec::<String>::new(), 0);
    // Where the first component that does not exist is, while it is in
    // `path`: links are looked for only above it. A `..` back above it
    // finds them again, as a plugin that drops `x/..` before opening would.
    let mut missing_at: Option<usize> = None;
    while let Some(component) = todo.pop() {
        match component.as_str() {
            "" | "." => {}
            ".." if path.pop().is_some() => {
                missing_at = missing_at.filter(|at| *at < path.len());
            }
            ".." if links == 0 => return Err(Escape::Climbs),
            ".." => return Err(Escape::LinkClimbs),
            name => {
                let here = root.join(path.join("/")).join(name);
                let meta = missing_at.is_none().then(|| std::fs::symlink_metadata(&here).ok()).flatten();
                match meta {
                    Some(meta) if meta.file_type().is_symlink() => {
                        links += 1;
                        let link = path.iter().map(String::as_str).chain([name]).collect::<Vec<_>>().join("/");
                        if links > MAX_LINKS {
                            return Err(Escape::TooManyLinks);
                        }
                        let target = std::fs::read_link(&here).map_err(|_| Escape::Unreadable(link.clone()))?;
                        let target = target.to_string_lossy();
                        if target.starts_with('/') {
                            return Err(Escape::AbsoluteLink(link, target.into_owned()));
                        }
                        todo.extend(target.split('/').rev().map(str::to_owned));
                    }
                    Some(_) => path.push(name.to_owned()),
                    None => {
                        missing_at.get_or_insert(path.len());
                        path.push(name.to_owned());
                    }
                }
            }
        }
    }
    Ok(Resolved { path, through_link: links > 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::DirAccess;
    use std::os::unix::fs::symlink;

    fn grant(root: &Path) -> Vec<DirGrant> {
        vec![DirGrant::new("/workspace", root, DirAccess::ReadWrite)]
    }

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["secrets", "notes", ".git/hooks"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        symlink("secrets", dir.path().join("alias")).unwrap();
        symlink(".git/hooks", dir.path().join("hooks")).unwrap();
        symlink("../notes", dir.path().join("secrets/up")).unwrap();
        symlink("/etc", dir.path().join("etc")).unwrap();
        symlink("../..", dir.path().join("notes/out")).unwrap();
        symlink("loop", dir.path().join("loop")).unwrap();
        dir
    }

    fn read(root: &Path, text: &str) -> PathReadings {
        read_path(text, &grant(root))
    }

    #[test]
    fn links_inside_the_directory_are_followed() {
        let ws = workspace();
        let alias = read(ws.path(), "alias/key");
        assert_eq!(alias.through_links, [["secrets/key".to_owned(), "/workspace/secrets/key".to_owned()]]);
        assert_eq!(alias.escape, None);
        assert_eq!(read(ws.path(), "hooks/pre-commit").through_links[0][0], ".git/hooks/pre-commit");
        assert_eq!(read(ws.path(), "secrets/up/a").through_links[0][0], "notes/a", "a link's `..` is from where it is");
        assert_eq!(read(ws.path(), "alias/../notes/a").through_links[0][0], "notes/a");
        assert_eq!(read(ws.path(), "new/../alias/k").through_links[0][0], "secrets/k", "back above a missing component");
        assert_eq!(read(ws.path(), "new/alias/k").direct[0][0], "new/alias/k");
    }

    #[test]
    fn plain_paths_resolve_lexically_in_every_spelling() {
        let ws = workspace();
        for text in ["notes/a", "./notes//a", "notes/a/", "/workspace/notes/a", "notes\\a", "x/../notes/a"] {
            let readings = read(ws.path(), text);
            assert!(readings.direct.iter().any(|[relative, _]| relative == "notes/a"), "{text}: {readings:?}");
            assert!(readings.through_links.is_empty() && readings.escape.is_none(), "{text}: {readings:?}");
        }
        let secrets_k = |readings: PathReadings| readings.through_links.iter().any(|[relative, _]| relative == "secrets/k");
        assert!(secrets_k(read(ws.path(), "/workspace/alias/k")));
        assert!(secrets_k(read(ws.path(), "alias\\k")), "a backslash read as a separator");
    }

    #[test]
    fn a_link_that_leaves_the_directory_is_an_escape() {
        let ws = workspace();
        for (text, says) in [
            ("etc/passwd", "`etc/passwd` leads out of /workspace through the link etc -> /etc"),
            ("notes/out/x", "`notes/out/x` leads out of /workspace through a link that climbs above it"),
            ("loop/x", "`loop/x` passes more than 40 links (MAX_LINKS) in /workspace"),
            ("../x", "`../x` climbs above /workspace"),
        ] {
            assert_eq!(read(ws.path(), text).escape.as_deref(), Some(says), "{text}");
        }
    }

    #[test]
    fn only_strings_short_enough_in_a_plugin_with_directories_are_paths() {
        let ws = workspace();
        let dirs = grant(ws.path());
        let args = serde_json::json!({ "path": "alias/k", "n": 5, "long": "a/".repeat(MAX_PATH_BYTES) });
        let args = args.as_object().unwrap();
        let call = CallArguments::new(args, &dirs);
        assert!(call.path("path").is_some());
        assert!(call.path("n").is_none() && call.path("long").is_none() && call.path("missing").is_none());
        assert!(CallArguments::new(args, &[]).path("path").is_none());
    }
}
