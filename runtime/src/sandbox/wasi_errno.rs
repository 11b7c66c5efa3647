//! A plugin's error message as a person can act on it. A plugin runs on
//! WASI, so an OS error number in what it says is a WASI errno, not the
//! host's: 44 is "no such file or directory" in WASI and "channel number
//! out of range" on Linux. Each such number is named, and a file error
//! says which directories the plugin sees, since a path it was not
//! granted fails exactly as if it did not exist.

use super::capability::Grants;
use crate::manifest::DirAccess;
use std::fmt::Write;

/// WASI's errno values (`wasi_snapshot_preview1` and wasi-libc), by number.
const NAMES: [&str; 77] = [
    "ESUCCESS",
    "E2BIG",
    "EACCES",
    "EADDRINUSE",
    "EADDRNOTAVAIL",
    "EAFNOSUPPORT",
    "EAGAIN",
    "EALREADY",
    "EBADF",
    "EBADMSG",
    "EBUSY",
    "ECANCELED",
    "ECHILD",
    "ECONNABORTED",
    "ECONNREFUSED",
    "ECONNRESET",
    "EDEADLK",
    "EDESTADDRREQ",
    "EDOM",
    "EDQUOT",
    "EEXIST",
    "EFAULT",
    "EFBIG",
    "EHOSTUNREACH",
    "EIDRM",
    "EILSEQ",
    "EINPROGRESS",
    "EINTR",
    "EINVAL",
    "EIO",
    "EISCONN",
    "EISDIR",
    "ELOOP",
    "EMFILE",
    "EMLINK",
    "EMSGSIZE",
    "EMULTIHOP",
    "ENAMETOOLONG",
    "ENETDOWN",
    "ENETRESET",
    "ENETUNREACH",
    "ENFILE",
    "ENOBUFS",
    "ENODEV",
    "ENOENT",
    "ENOEXEC",
    "ENOLCK",
    "ENOLINK",
    "ENOMEM",
    "ENOMSG",
    "ENOPROTOOPT",
    "ENOSPC",
    "ENOSYS",
    "ENOTCONN",
    "ENOTDIR",
    "ENOTEMPTY",
    "ENOTRECOVERABLE",
    "ENOTSOCK",
    "ENOTSUP",
    "ENOTTY",
    "ENXIO",
    "EOVERFLOW",
    "EOWNERDEAD",
    "EPERM",
    "EPIPE",
    "EPROTO",
    "EPROTONOSUPPORT",
    "EPROTOTYPE",
    "ERANGE",
    "EROFS",
    "ESPIPE",
    "ESRCH",
    "ESTALE",
    "ETIMEDOUT",
    "ETXTBSY",
    "EXDEV",
    "ENOTCAPABLE",
];

/// The errnos a path outside the plugin's directories, or a write to a
/// read-only one, comes back as: EACCES, ENOENT, EPERM, EROFS, ENOTCAPABLE.
const ACCESS_ERRNOS: [u16; 5] = [2, 44, 63, 69, 76];

/// How guest languages print an OS error number, each as the text before
/// the number and the text after it: Rust's `(os error 44)`, Python's
/// `[Errno 44]`.
const FORMS: [(&str, &str); 2] = [("(os error ", ")"), ("[Errno ", "]")];

/// `message` with every WASI errno in it named, and, when one of them is
/// how a missing grant shows, a last line saying which directories plugin
/// `plugin` sees (or that it sees none) and which it asked for and was not
/// given. `None` when the message holds no errno.
pub(crate) fn explain(message: &str, plugin: &str, grants: &Grants) -> Option<String> {
    let (named, errnos) = name_errnos(message);
    if errnos.is_empty() {
        return None;
    }
    let mut text = named;
    if errnos.iter().any(|errno| ACCESS_ERRNOS.contains(errno)) {
        text.push('\n');
        text.push_str(&directories_note(plugin, grants));
    }
    Some(text)
}

/// `message` with `(os error N)` and `[Errno N]` for each known WASI errno
/// N spelled `(WASI errno N, ENAME)`, and the numbers found. One pass: each
/// bracket is looked at once, so a plugin's message of any make-up costs
/// time in proportion to its length (it is read after the call, outside
/// fuel and the timeout).
fn name_errnos(message: &str) -> (String, Vec<u16>) {
    let mut out = String::with_capacity(message.len() + 32);
    let mut errnos = Vec::new();
    let (mut copied, mut from) = (0, 0);
    while let Some(found) = message[from..].find(['(', '[']) {
        let at = from + found;
        from = at + 1;
        let Some((open, close, number, len)) = errno_at(&message[at..]) else { continue };
        out.push_str(&message[copied..at]);
        let _ = write!(out, "{}WASI errno {number}, {}{close}", &open[..1], NAMES[usize::from(number)]);
        errnos.push(number);
        copied = at + len;
        from = copied;
    }
    out.push_str(&message[copied..]);
    (out, errnos)
}

/// The errno `text` starts with, in one of the [`FORMS`]: its form, the
/// number, and how long it is written.
fn errno_at(text: &str) -> Option<(&'static str, &'static str, u16, usize)> {
    FORMS.iter().find_map(|&(open, close)| {
        let after = text.strip_prefix(open)?;
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let number = after[..digits].parse::<u16>().ok().filter(|&n| usize::from(n) < NAMES.len())?;
        // `(os error 044)` is not how any language writes one.
        let canonical = number.to_string().len() == digits;
        (canonical && after[digits..].starts_with(close)).then_some((open, close, number, open.len() + digits + close.len()))
    })
}

/// What the plugin can see of the file system, and what it asked for and
/// did not get.
fn directories_note(plugin: &str, grants: &Grants) -> String {
    let mut note = if grants.dirs.is_empty() {
        format!("note: plugin `{plugin}` is granted no directories, so every path is missing to it")
    } else {
        let seen: Vec<String> = grants.dirs.iter().map(|d| format!("{} ({})", d.guest_path, d.access.as_str())).collect();
        let read_only = grants.dirs.iter().any(|d| d.access == DirAccess::Read);
        let writes = if read_only { ", and writing in a read-only one is refused" } else { "" };
        format!("note: plugin `{plugin}` sees only {}; any other path is missing to it{writes}", seen.join(", "))
    };
    let withheld: Vec<&str> = grants
        .withheld
        .iter()
        .filter_map(|w| match w {
            super::capability::Withheld::Directory { guest_path } => Some(guest_path.as_str()),
            _ => None,
        })
        .collect();
    if !withheld.is_empty() {
        let _ = write!(
            note,
            "; it asks for {}, which the policy does not grant ([plugins.{plugin}.dirs] in the policy file)",
            withheld.join(", ")
        );
    }
    note
}

#[cfg(test)]
mod tests {
    use super::super::capability::{DirGrant, Withheld};
    use super::*;

    fn granted(dirs: &[(&str, DirAccess)], withheld: &[&str]) -> Grants {
        Grants {
            dirs: dirs
                .iter()
                .map(|&(guest, access)| DirGrant { guest_path: guest.into(), host_path: "/srv".into(), access })
                .collect(),
            withheld: withheld.iter().map(|g| Withheld::Directory { guest_path: (*g).into() }).collect(),
            ..Grants::none()
        }
    }

    #[test]
    fn a_missing_file_names_the_errno_and_the_directories_seen() {
        let grants = granted(&[("/data", DirAccess::Read)], &["/secrets"]);
        let text = explain("cannot open /etc/passwd: No such file or directory (os error 44)", "files", &grants).unwrap();
        assert_eq!(
            text,
            "cannot open /etc/passwd: No such file or directory (WASI errno 44, ENOENT)\n\
             note: plugin `files` sees only /data (read); any other path is missing to it, and writing in a \
             read-only one is refused; it asks for /secrets, \
             which the policy does not grant ([plugins.files.dirs] in the policy file)"
        );
    }

    #[test]
    fn pythons_form_and_no_directories_at_all() {
        let text = explain("[Errno 76] Capabilities insufficient: '/x'", "py", &Grants::none()).unwrap();
        assert_eq!(
            text,
            "[WASI errno 76, ENOTCAPABLE] Capabilities insufficient: '/x'\n\
             note: plugin `py` is granted no directories, so every path is missing to it"
        );
    }

    #[test]
    fn an_errno_unrelated_to_access_is_named_without_a_note() {
        let text = explain("bad (os error 28) and (os error 28)", "p", &Grants::none()).unwrap();
        assert_eq!(text, "bad (WASI errno 28, EINVAL) and (WASI errno 28, EINVAL)");
    }

    #[test]
    fn text_that_only_looks_like_an_errno_is_left_alone() {
        for message in ["plain failure", "(os error 99)", "(os error 44", "(os error x)", "[Errno 044]", "(os error )"] {
            assert_eq!(explain(message, "p", &Grants::none()), None, "{message}");
        }
        // A near miss before a real one does not hide it.
        let text = explain("(os error 4x) then (os error 8)", "p", &Grants::none()).unwrap();
        assert_eq!(text, "(os error 4x) then (WASI errno 8, EBADF)");
    }

    #[test]
    fn a_hostile_message_costs_time_in_proportion_to_its_length() {
        // A plugin's 1 MiB error message: valid errnos, then many openers
        // that are not. Searching the rest of the text again after each
        // errno took about 3·10⁹ steps on this message.
        let valid = "(os error 1)".repeat(43_000);
        let message = format!("{valid}{}", "[Errno ".repeat(75_000));
        let start = std::time::Instant::now();
        let (named, errnos) = name_errnos(&message);
        let took = start.elapsed();
        assert_eq!(errnos.len(), 43_000);
        assert!(named.starts_with("(WASI errno 1, E2BIG)(WASI errno 1, E2BIG)"), "{}", &named[..80]);
        assert!(named.ends_with("[Errno [Errno "));
        // Linear work takes milliseconds; the bound only catches a return
        // of the quadratic scan, which takes minutes.
        assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
    }

    #[test]
    fn every_errno_has_a_name() {
        assert_eq!(NAMES[44], "ENOENT");
        assert_eq!(NAMES[76], "ENOTCAPABLE");
        assert!(NAMES.iter().all(|n| n.starts_with('E')));
    }
}
