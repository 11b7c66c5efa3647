//! `~`, `$HOME` and the XDG base directories in a policy's paths: a
//! per-user policy names the user's own directories, and these are how a
//! person writes them. Nothing else expands: `~other` and any other `$NAME`
//! are refused with what may be written instead, never read as a file name
//! beside the policy. And the per-user directories toolhost defaults to.

use serde::{Deserialize, Deserializer};
use std::ffi::OsString;
use std::path::PathBuf;

/// The variables a path may start with, and where each defaults to under
/// `$HOME` when unset or empty, as the XDG base directory spec says.
const VARIABLES: [(&str, &str); 5] = [
    ("HOME", ""),
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_CACHE_HOME", ".cache"),
    ("XDG_STATE_HOME", ".local/state"),
];

/// What a path value may start with, for the error that refuses another.
const EXPANDS: &str = "only a leading ~ or one of $HOME, $XDG_CONFIG_HOME, $XDG_DATA_HOME, $XDG_CACHE_HOME, \
                       $XDG_STATE_HOME (or ${NAME}) expands";

/// `path` with a leading `~`, `$NAME` or `${NAME}` replaced by its
/// directory, looked up with `var`; a path that starts with none is as
/// written. `$` elsewhere in a path is kept.
pub(crate) fn expand(path: &str, var: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, String> {
    let set = |name: &str| var(name).filter(|value| !value.is_empty());
    let home = || set("HOME").map(PathBuf::from).ok_or_else(|| format!("{path:?} needs $HOME, which is not set"));
    if let Some(rest) = path.strip_prefix('~') {
        return match rest.strip_prefix('/') {
            Some(rest) => Ok(home()?.join(rest)),
            None if rest.is_empty() => home(),
            None => Err(format!("{path:?}: ~USER is not expanded; {EXPANDS}")),
        };
    }
    let Some(rest) = path.strip_prefix('$') else { return Ok(PathBuf::from(path)) };
    let (name, rest) = match rest.strip_prefix('{') {
        Some(braced) => braced.split_once('}').ok_or_else(|| format!("{path:?}: an unclosed ${{"))?,
        None => rest.split_at(rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())),
    };
    let Some((_, under_home)) = VARIABLES.iter().find(|(known, _)| *known == name) else {
        return Err(format!("{path:?}: ${name} is not expanded; {EXPANDS}"));
    };
    let dir = match set(name) {
        Some(dir) => PathBuf::from(dir),
        None if name == "HOME" => home()?,
        None => home()?.join(under_home),
    };
    match rest.strip_prefix('/') {
        Some(rest) => Ok(dir.join(rest)),
        None if rest.is_empty() => Ok(dir),
        None => Err(format!("{path:?}: expected / after ${name}")),
    }
}

/// A path value of the policy, expanded (see `expand`); serde's
/// `deserialize_with` for a `PathBuf`, an `Option` or a `Vec` of them.
/// A refusal is a parse error, so it names the key and its line.
pub fn expanded<'de, D: Deserializer<'de>, T: Deserialize<'de> + Expand>(deserializer: D) -> Result<T, D::Error> {
    T::deserialize(deserializer)?.expand().map_err(serde::de::Error::custom)
}

/// Values holding paths that [`expanded`] expands.
pub trait Expand: Sized {
    /// Every path in `self`, expanded from the process's environment.
    fn expand(self) -> Result<Self, String>;
}

impl Expand for PathBuf {
    fn expand(self) -> Result<Self, String> {
        // A path that is not UTF-8 cannot start with `~` or `$` as written
        // in a TOML file, which is UTF-8.
        match self.to_str() {
            Some(text) => expand(text, &|name| std::env::var_os(name)),
            None => Ok(self),
        }
    }
}

impl Expand for Option<PathBuf> {
    fn expand(self) -> Result<Self, String> {
        self.map(Expand::expand).transpose()
    }
}

impl Expand for Vec<PathBuf> {
    fn expand(self) -> Result<Self, String> {
        self.into_iter().map(Expand::expand).collect()
    }
}

/// `$XDG_CACHE_HOME/toolhost`, else `$HOME/.cache/toolhost`.
pub fn default_cache_dir() -> Option<PathBuf> {
    user_dir("XDG_CACHE_HOME", ".cache").map(|dir| dir.join("toolhost"))
}

/// `$XDG_STATE_HOME/toolhost/cache.key`, else
/// `$HOME/.local/state/toolhost/cache.key`: state of this user on this
/// machine, apart from the cache it authenticates (a copied or shared
/// cache directory does not bring its key along) and from configuration,
/// which people publish.
pub fn default_cache_key() -> Option<PathBuf> {
    user_dir("XDG_STATE_HOME", ".local/state").map(|dir| dir.join("toolhost").join("cache.key"))
}

/// The XDG base directory `$var`, else `$HOME/fallback`.
pub fn user_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    let xdg = std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    xdg.or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(fallback)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<OsString> {
        match name {
            "HOME" => Some("/home/ada".into()),
            "XDG_DATA_HOME" => Some("/data/ada".into()),
            "XDG_CACHE_HOME" => Some("".into()),
            _ => None,
        }
    }

    #[test]
    fn a_leading_tilde_home_or_xdg_directory_expands() {
        let cases = [
            ("~", "/home/ada"),
            ("~/notes", "/home/ada/notes"),
            ("$HOME/notes", "/home/ada/notes"),
            ("${HOME}/notes", "/home/ada/notes"),
            ("$XDG_DATA_HOME/toolhost/plugins", "/data/ada/toolhost/plugins"),
            ("$XDG_CONFIG_HOME/toolhost", "/home/ada/.config/toolhost"),
            ("$XDG_CACHE_HOME", "/home/ada/.cache"),
            ("$XDG_STATE_HOME/x", "/home/ada/.local/state/x"),
            ("plugins", "plugins"),
            ("/srv/a$b", "/srv/a$b"),
            ("a/~/b", "a/~/b"),
        ];
        for (written, expected) in cases {
            assert_eq!(expand(written, &env), Ok(PathBuf::from(expected)), "{written}");
        }
    }

    #[test]
    fn what_does_not_expand_is_refused_saying_what_does() {
        for (written, says) in [
            ("~bob/notes", "~USER is not expanded"),
            ("$PWD/notes", "$PWD is not expanded"),
            ("${HOME", "an unclosed ${"),
            ("$HOMEWORK", "$HOMEWORK is not expanded"),
            ("${HOME}x", "expected / after $HOME"),
        ] {
            let error = expand(written, &env).unwrap_err();
            assert!(error.contains(says), "{written}: {error}");
        }
        let error = expand("~/notes", &|_| None).unwrap_err();
        assert!(error.contains("needs $HOME, which is not set"), "{error}");
    }
}
