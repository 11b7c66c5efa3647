//! The contract between the host and its plugins, the WIT package
//! `toolhost:plugin`.
//!
//! Two kinds of copy live in `wit/`: `plugin.wit`, the contract a new
//! plugin is built against (what `toolhost wit` and `toolhost new` write,
//! and what the SDKs are generated from), and under `released/VERSION/`
//! every version ever released, frozen. The host has bindings for each
//! released version and reads which one a component was built against from
//! the names of its `toolhost:plugin/…@VERSION` imports ([`Contract::of`]),
//! so a change to the contract adds a version beside the old ones and
//! plugins built before it keep loading.

use std::path::{Path, PathBuf};
use wasmtime::component::Component;

/// The WIT text of `toolhost:plugin` that new plugins are built against.
pub const PLUGIN_WIT: &str = include_str!("../wit/plugin.wit");
/// The file name the package is written under in a `wit/` directory.
pub const PLUGIN_WIT_FILE: &str = "plugin.wit";
/// The world a plugin targets (`--world plugin`).
pub const PLUGIN_WORLD: &str = "plugin";
/// The package's name, before `/interface@version` in an import's name.
const PACKAGE: &str = "toolhost:plugin";

/// Write the package into `dir` (made if missing) as [`PLUGIN_WIT_FILE`];
/// returns the file's path.
///
/// # Errors
///
/// The I/O error when `dir` cannot be made or the file cannot be written.
pub fn write_wit(dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let file = dir.join(PLUGIN_WIT_FILE);
    std::fs::write(&file, PLUGIN_WIT)?;
    Ok(file)
}

/// A released version of the plugin contract, which this host runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Contract {
    /// `toolhost:plugin@0.1.0`, the first release.
    V0_1,
}

impl Contract {
    /// Every version this host runs, oldest first.
    pub const RELEASED: &'static [Contract] = &[Contract::V0_1];

    /// The version, e.g. `0.1.0`.
    pub fn version(self) -> semver::Version {
        match self {
            Contract::V0_1 => semver::Version::new(0, 1, 0),
        }
    }

    /// The frozen WIT text of this version.
    pub fn wit(self) -> &'static str {
        match self {
            Contract::V0_1 => include_str!("../wit/released/0.1.0/plugin.wit"),
        }
    }

    /// The version `component` was built against.
    ///
    /// # Errors
    ///
    /// When it imports no `toolhost:plugin` interface, imports it at more
    /// than one version, or at a version this host does not run.
    pub fn of(component: &Component) -> Result<Contract, ContractError> {
        let engine = component.engine();
        Contract::of_imports(component.component_type().imports(engine).map(|(name, _)| name))
    }

    /// The version a component with imports named `imports` was built
    /// against; see [`Contract::of`]. Only a released version runs: the
    /// component model has no subtyping of records, so a plugin built
    /// against one version cannot be run through another's bindings. Build
    /// metadata (`0.1.0+local`) is ignored, as the linker ignores it.
    fn of_imports<'a>(imports: impl Iterator<Item = &'a str>) -> Result<Contract, ContractError> {
        let mut versions: Vec<ImportedVersion> = imports
            .filter_map(|name| name.strip_prefix(PACKAGE)?.strip_prefix('/'))
            .map(|interface| ImportedVersion::read(interface.split_once('@').map_or("", |(_, version)| version)))
            .collect();
        versions.sort();
        versions.dedup();
        let found = match &versions[..] {
            [] => return Err(ContractError::NotAPlugin),
            [one] => one,
            _ => return Err(ContractError::Mixed { versions: bounded_list(versions.iter().map(ImportedVersion::to_string)) }),
        };
        let released = match found {
            ImportedVersion::Semver(version) => Contract::RELEASED.iter().copied().find(|release| release.version() == *version),
            ImportedVersion::Other(_) => None,
        };
        released.ok_or_else(|| ContractError::Unknown { found: found.to_string() })
    }
}

/// The version part of an imported interface's name.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ImportedVersion {
    /// A semver version, without its build metadata.
    Semver(semver::Version),
    /// None, or one that is not semver (wasmtime refuses those before this
    /// reads them; kept, bounded, for the message).
    Other(String),
}

impl ImportedVersion {
    fn read(text: &str) -> Self {
        match semver::Version::parse(text) {
            Ok(mut version) => {
                version.build = semver::BuildMetadata::EMPTY;
                ImportedVersion::Semver(version)
            }
            Err(_) => ImportedVersion::Other(text.chars().take(MAX_SHOWN_VERSION_CHARS).collect()),
        }
    }
}

impl std::fmt::Display for ImportedVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportedVersion::Semver(version) => {
                let text = version.to_string();
                match text.char_indices().nth(MAX_SHOWN_VERSION_CHARS) {
                    Some((cut, _)) => write!(f, "{}…", &text[..cut]),
                    None => f.write_str(&text),
                }
            }
            ImportedVersion::Other(text) if text.is_empty() => f.write_str("no version"),
            ImportedVersion::Other(text) => f.write_str(text),
        }
    }
}

/// The longest version a refusal quotes: a component names its own
/// imports, up to wasm's 100 000-byte string limit.
const MAX_SHOWN_VERSION_CHARS: usize = 40;
/// The most versions a refusal lists.
const MAX_SHOWN_VERSIONS: usize = 4;

/// `items`, at most [`MAX_SHOWN_VERSIONS`] of them, then `and N more`.
fn bounded_list(items: impl ExactSizeIterator<Item = String>) -> Vec<String> {
    let total = items.len();
    let mut shown: Vec<String> = items.take(MAX_SHOWN_VERSIONS).collect();
    if total > MAX_SHOWN_VERSIONS {
        shown.push(format!("and {} more", total - MAX_SHOWN_VERSIONS));
    }
    shown
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{PACKAGE}@{}", self.version())
    }
}

/// Why a component's contract version cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContractError {
    /// It imports nothing of `toolhost:plugin`.
    #[error(
        "it imports no `{PACKAGE}` interface, so it was not built against toolhost's contract \
         (`toolhost wit` writes it; `toolhost new` starts a plugin)"
    )]
    NotAPlugin,
    /// It imports `toolhost:plugin` at more than one version.
    #[error("it imports `{PACKAGE}` at more than one version ({}); build it against one", versions.join(", "))]
    Mixed {
        /// The versions, as the imports name them.
        versions: Vec<String>,
    },
    /// It was built against a version this host does not run: a newer one,
    /// or none ever released.
    #[error(
        "it was built against {PACKAGE}@{found}, which this host does not run (it runs {}); \
         update toolhost, or build the plugin against the contract `toolhost wit` writes",
        released()
    )]
    Unknown {
        /// The version, as the imports name it.
        found: String,
    },
}

/// The released versions, for messages: `0.1.0, 0.2.0`.
fn released() -> String {
    Contract::RELEASED.iter().map(|c| c.version().to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{HOST_API_VERSION, ToolSpec};
    use sha2::Digest;

    /// The SHA-256 of each released WIT file. A release never changes: a
    /// change to the contract is a new version with a new frozen copy.
    const FROZEN: &[(Contract, &str)] = &[(Contract::V0_1, "8a5f4459c09f2ab142aa224eccd55ca2fc5d6dc899335909cedd9da0b4c7b3d0")];

    #[test]
    fn released_contracts_are_frozen() {
        assert_eq!(FROZEN.len(), Contract::RELEASED.len(), "every release has a pinned digest");
        for (contract, pinned) in FROZEN {
            let digest = hex::encode(sha2::Sha256::digest(contract.wit()));
            assert_eq!(&digest, pinned, "the frozen WIT of {contract} changed; add a new version instead");
            let package = format!("package {contract};");
            assert!(contract.wit().lines().any(|line| line == package), "{contract}'s WIT does not declare {package}");
        }
    }

    #[test]
    fn plugin_wit_is_a_frozen_release() {
        let package = PLUGIN_WIT.lines().find_map(|l| l.strip_prefix("package ")).expect("a package line");
        match Contract::RELEASED.iter().find(|c| package == format!("{c};")) {
            Some(release) => {
                assert_eq!(PLUGIN_WIT, release.wit(), "plugin.wit differs from released {release}: bump its version")
            }
            None => panic!("plugin.wit declares {package}, which is not released: freeze it under wit/released/ first"),
        }
        assert!(PLUGIN_WIT.contains(&format!("world {PLUGIN_WORLD} {{")), "no world {PLUGIN_WORLD}");
        assert!(package.starts_with(&format!("{PACKAGE}@{HOST_API_VERSION}")), "the API version is the contract's");
    }

    #[test]
    fn the_version_is_read_from_the_imports() {
        let of = |names: &[&str]| Contract::of_imports(names.iter().copied());
        let wasi = "wasi:io/streams@0.2.0";
        assert_eq!(of(&["toolhost:plugin/types@0.1.0"]), Ok(Contract::V0_1));
        assert_eq!(of(&[wasi, "toolhost:plugin/types@0.1.0", "toolhost:plugin/host@0.1.0"]), Ok(Contract::V0_1));
        assert_eq!(of(&[wasi]), Err(ContractError::NotAPlugin));
        assert_eq!(of(&["toolhost:plugins/types@0.1.0"]), Err(ContractError::NotAPlugin));
        let unknown = |found: &str| Err(ContractError::Unknown { found: found.into() });
        // Build metadata is ignored, as the linker ignores it.
        assert_eq!(of(&["toolhost:plugin/types@0.1.0+local", "toolhost:plugin/host@0.1.0"]), Ok(Contract::V0_1));
        // Only a released version: not a later patch, a pre-release, a
        // newer or an unversioned one.
        assert_eq!(of(&["toolhost:plugin/types@0.1.1"]), unknown("0.1.1"));
        assert_eq!(of(&["toolhost:plugin/types@0.1.0-rc.1"]), unknown("0.1.0-rc.1"));
        assert_eq!(of(&["toolhost:plugin/types@0.2.0"]), unknown("0.2.0"));
        assert_eq!(of(&["toolhost:plugin/types@1.0.0"]), unknown("1.0.0"));
        assert_eq!(of(&["toolhost:plugin/types"]), unknown("no version"));
        assert_eq!(of(&["toolhost:plugin/types@x.y"]), unknown("x.y"));
        assert_eq!(
            of(&["toolhost:plugin/types@0.10.0", "toolhost:plugin/host@0.9.0"]),
            Err(ContractError::Mixed { versions: vec!["0.9.0".into(), "0.10.0".into()] }),
            "in version order"
        );
    }

    #[test]
    fn a_refusal_quotes_a_bounded_part_of_what_the_component_names() {
        let long = format!("toolhost:plugin/types@1.0.0-{}", "a".repeat(100_000));
        let Err(ContractError::Unknown { found }) = Contract::of_imports([long.as_str()].into_iter()) else { panic!() };
        assert_eq!(found.chars().count(), MAX_SHOWN_VERSION_CHARS + 1, "{found}");
        let many: Vec<String> = (0..50).map(|minor| format!("toolhost:plugin/i{minor}@0.{minor}.0")).collect();
        let Err(ContractError::Mixed { versions }) = Contract::of_imports(many.iter().map(String::as_str)) else { panic!() };
        assert_eq!(versions, ["0.0.0", "0.1.0", "0.2.0", "0.3.0", "and 46 more"]);
    }

    #[test]
    fn a_refusal_names_the_version_found_and_those_the_host_runs() {
        let message = ContractError::Unknown { found: "0.2.0".into() }.to_string();
        assert!(message.contains("toolhost:plugin@0.2.0") && message.contains("it runs 0.1.0"), "{message}");
    }

    #[test]
    fn a_new_tool_spec_has_the_defaults_the_contract_names() {
        let spec = ToolSpec::new("t", "p", "d");
        let list = |empty: bool| if empty { "[]" } else { "a list with items" };
        // Every field but the two a tool must be given has a default.
        let ours = [
            ("name", None),
            ("description", None),
            ("params", Some(list(spec.params.is_empty()).to_owned())),
            ("permission", Some(spec.permission.as_str().to_owned())),
            ("result-approval", Some(spec.result_approval.to_string())),
            ("agent-callable", Some(spec.agent_callable.to_string())),
            ("distributed-exposed", Some(spec.distributed_exposed.to_string())),
            ("tags", Some(list(spec.tags.is_empty()).to_owned())),
            ("example", Some(spec.example.as_ref().map_or("none".into(), ToString::to_string))),
        ]
        .map(|(field, value)| (field.to_owned(), value));
        assert_eq!(toolhost_sdk::declared_tool_defaults(PLUGIN_WIT), ours);
    }

    #[test]
    fn write_wit_makes_the_directory_and_writes_the_package() {
        let dir = tempfile::tempdir().unwrap();
        let file = write_wit(&dir.path().join("nested/wit")).unwrap();
        assert_eq!(file, dir.path().join("nested/wit").join(PLUGIN_WIT_FILE));
        assert_eq!(std::fs::read_to_string(file).unwrap(), PLUGIN_WIT);
    }
}
