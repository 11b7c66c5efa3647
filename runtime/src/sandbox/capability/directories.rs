//! Host directories: a plugin declares the guest paths it needs and how
//! (`directories`), `[plugins.NAME] dirs = { "/guest" = { host, access } }`
//! maps each to a host directory, and a call sees each granted one
//! preopened at its guest path, read-only unless both sides said
//! read-write.

use super::{AskedFor, Capability, Unasked, Withheld};
use crate::home_paths::expanded;
use crate::manifest::{Capabilities, DirAccess, Reach};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// Host directories as a `[plugins.NAME]` section allows them.
pub(crate) struct Directories;

/// Guest path → the host directory behind it and the most access allowed.
pub type AllowedDirs = BTreeMap<String, (PathBuf, DirAccess)>;

/// A directory a call sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DirGrant {
    /// The path inside the sandbox.
    pub guest_path: String,
    /// The host directory behind it.
    pub host_path: PathBuf,
    /// The effective access: the lesser of what was asked and allowed.
    pub access: DirAccess,
}

impl DirGrant {
    /// `host_path` seen at `guest_path` with `access`, as the sandbox
    /// grants it (for code that checks paths against a call's grants).
    pub fn new(guest_path: impl Into<String>, host_path: impl Into<PathBuf>, access: DirAccess) -> Self {
        DirGrant { guest_path: guest_path.into(), host_path: host_path.into(), access }
    }
}

/// One `dirs` entry of a `[plugins.NAME]` section as the file spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DirSection {
    #[serde(deserialize_with = "expanded")]
    host: PathBuf,
    #[serde(default = "read_only")]
    access: DirAccess,
}

fn read_only() -> DirAccess {
    DirAccess::Read
}

impl Capability for Directories {
    type Section = BTreeMap<String, DirSection>;
    type Allowed = AllowedDirs;
    type Grant = DirGrant;

    fn allowed(section: Self::Section, resolve: &dyn Fn(PathBuf) -> PathBuf) -> AllowedDirs {
        section.into_iter().map(|(guest, dir)| (guest, (resolve(dir.host), dir.access))).collect()
    }

    fn resolve(requested: &Capabilities, allowed: &AllowedDirs, withheld: &mut Vec<Withheld>) -> Vec<DirGrant> {
        let mut grants = Vec::new();
        for dir in &requested.directories {
            match allowed.get(&dir.guest_path) {
                Some((host_path, most)) => grants.push(DirGrant {
                    guest_path: dir.guest_path.clone(),
                    host_path: host_path.clone(),
                    access: dir.access.min(*most),
                }),
                None => withheld.push(Withheld::Directory { guest_path: dir.guest_path.clone() }),
            }
        }
        grants
    }

    fn unasked(requested: &Capabilities, allowed: &AllowedDirs) -> Vec<Unasked> {
        let asked: Vec<String> = requested.directories.iter().map(|d| d.guest_path.clone()).collect();
        allowed
            .keys()
            .filter(|guest| !asked.contains(guest))
            .map(|guest| Unasked {
                key: format!("dirs.\"{guest}\""),
                what: "directory",
                item: guest.clone(),
                asked: asked.clone(),
            })
            .collect()
    }

    fn reach(grants: &[DirGrant]) -> Reach {
        if grants.iter().any(|d| d.access == DirAccess::ReadWrite) {
            Reach::Write
        } else if grants.is_empty() {
            Reach::Compute
        } else {
            Reach::Read
        }
    }

    /// A read-only directory does not raise the level: the plugin only
    /// reads what the operator put there.
    fn raising(grants: &[DirGrant]) -> Vec<String> {
        grants.iter().filter(|d| d.access == DirAccess::ReadWrite).map(|d| format!("write {}", d.guest_path)).collect()
    }

    fn described(grants: &[DirGrant]) -> Vec<String> {
        grants.iter().map(|d| format!("dir {}={} ({})", d.guest_path, d.host_path.display(), d.access.as_str())).collect()
    }

    fn asked(requested: &Capabilities, grants: &[DirGrant]) -> Vec<AskedFor> {
        let asked = requested.directories.iter();
        asked
            .map(|dir| {
                let granted = grants.iter().find(|g| g.guest_path == dir.guest_path);
                AskedFor {
                    kind: "dir",
                    item: dir.guest_path.clone(),
                    access: Some(dir.access.as_str()),
                    granted: granted.is_some(),
                    how: granted.map(|g| format!("{} → {}", g.access.as_str(), g.host_path.display())),
                }
            })
            .collect()
    }

    fn wire(grants: &[DirGrant], wasi: &mut WasiCtxBuilder) -> wasmtime::Result<()> {
        for dir in grants {
            let perms = match dir.access {
                DirAccess::Read => FsPerms::ReadOnly,
                DirAccess::ReadWrite => FsPerms::ReadWrite,
            };
            wasi.preopened_dir(&dir.host_path, &dir.guest_path, perms)?;
        }
        Ok(())
    }
}
