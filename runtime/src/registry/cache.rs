//! The compiled-artifact cache: a component compiled once is kept on disk,
//! keyed by its BLAKE3 digest and the engine's configuration, so the next
//! load skips compilation.
//!
//! A cache file holds native code the host will run, so it is trusted only
//! when this user wrote it. The cache directory must belong to this user and
//! be writable by no one else (a new one is made `0700`), and every file
//! carries a MAC (BLAKE3 in its keyed mode), under a secret key of this
//! user's, of the artifact and of the component and engine it is for. A
//! file that fails the check — truncated, corrupted, forged, written under
//! another key (another user, another machine), or moved to another
//! component's name — is recompiled, never loaded.
//!
//! The key is 32 random bytes in a file of its own (`Policy::cache_key`),
//! apart from the cache, so that copying or sharing a cache directory does
//! not carry the key along. It is made on first use, atomically and `0600`;
//! a key file that belongs to someone else, or that group or others may
//! read or write, is refused.
//!
//! A cache file is `MAGIC`, the MAC, then the artifact. It is written to a
//! temporary file and renamed into place, so a reader never sees half a
//! file.
//!
//! Beside it, a manifest file keeps what the guest declared and the
//! component's SHA-256 (what lock files pin), so that a warm load computes
//! neither: BLAKE3, collision-resistant as SHA-256 is, names the entry, at
//! a quarter of SHA-256's cost here.
//!
//! The artifact is copied into memory, never mapped from the file: mapping
//! it would spare a third of a warm load (measured 1.15 → 0.82 ms, issue
//! 17), but any process that then truncated the file in place (`cp` over
//! it, `rsync --inplace`) would kill the host with `SIGBUS` the next time
//! a call touched that code.
#![allow(unsafe_code, reason = "deserializing a compiled artifact is unsafe in wasmtime; see `load`")]

use crate::regular_file::read_regular_file;
use crate::sandbox::GuestManifest;
use sha2::{Digest, Sha256};
use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The first bytes of every cache file; bump the digit when the layout
/// changes. It is part of each file's name too, so files of another layout
/// are never read.
const MAGIC: &[u8; 16] = b"toolhost-cwasm4\n";
/// The first bytes of every manifest file: a component's SHA-256 and
/// manifest, kept beside its artifact under a MAC of its own. Bump the
/// digit when how a manifest is read changes (its limits, its conversion),
/// so that every guest is asked again.
const MANIFEST_MAGIC: &[u8; 16] = b"toolhost-mfst2\n\n";
/// What else a manifest file's MAC covers: the toolhost version that read
/// the manifest, so a new release asks every guest again.
const MANIFEST_READER: &str = env!("CARGO_PKG_VERSION");
/// A manifest file larger than this is not read: JSON of a manifest at the
/// guest's output limit, with room for escaping.
const MAX_MANIFEST_FILE_BYTES: u64 = 8 * crate::manifest::MAX_PLUGIN_MANIFEST_BYTES as u64;
/// Bytes of the secret key, as BLAKE3's keyed mode takes it.
const KEY_BYTES: usize = blake3::KEY_LEN;
/// Bytes of the MAC in a cache file.
const TAG_BYTES: usize = blake3::OUT_LEN;
/// What precedes the artifact in a cache file.
const HEADER_BYTES: usize = MAGIC.len() + TAG_BYTES;
/// Bytes of a SHA-256 in hex, as a manifest file holds it before the JSON.
const SHA256_HEX_BYTES: usize = 64;

/// A new cache directory, and the key's directory: only the owner may enter.
const PRIVATE_DIR_MODE: u32 = 0o700;
/// Mode bits that let group or others write: refused on the cache directory.
const WRITABLE_BY_OTHERS: u32 = 0o022;
/// Mode bits that let group or others read or write: refused on the key.
const OPEN_TO_OTHERS: u32 = 0o077;
/// The permission bits of a mode, as `chmod` takes them.
const PERMISSION_BITS: u32 = 0o7777;

/// How a component was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheUse {
    /// Loaded from an authenticated cache file.
    Hit,
    /// Compiled; the cache file was absent (or there is no cache).
    Compiled,
    /// Compiled because the cache file failed verification; says why.
    Recovered(String),
    /// Compiled, but the artifact could not be stored, so the next load
    /// compiles it again; says why. The component loads all the same.
    NotStored(String),
}

impl std::fmt::Display for CacheUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheUse::Hit => f.write_str("from the compiled cache"),
            CacheUse::Compiled => f.write_str("compiled"),
            CacheUse::Recovered(why) => write!(f, "compiled again ({why})"),
            CacheUse::NotStored(why) => write!(f, "compiled, not stored in the cache ({why})"),
        }
    }
}

/// Why the cache cannot be used. Each message names the directory or file
/// and says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The cache directory could not be made or read.
    #[error("cannot use cache directory {}: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The cache directory belongs to another user.
    #[error(
        "cache directory {} (owner uid {owner}, mode {mode:04o}) belongs to another user, who could make \
         toolhost run their code; set cache_dir to a directory of your own",
        dir.display()
    )]
    DirNotOwned {
        /// The directory.
        dir: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// Group or others may write the cache directory.
    #[error(
        "cache directory {dir} (owner uid {owner}, mode {mode:04o}) is writable by group or others, who could \
         make toolhost run their code; run `chmod go-w {dir}`, or set cache_dir to a directory of your own",
        dir = dir.display()
    )]
    DirShared {
        /// The directory.
        dir: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// The key file could not be made or read.
    #[error("cannot use cache key file {}: {source}", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The key file belongs to another user.
    #[error(
        "cache key file {} (owner uid {owner}, mode {mode:04o}) belongs to another user; remove it (toolhost \
         makes a new key and recompiles; resume tokens given out before are refused), or set cache_key to a file \
         of your own",
        path.display()
    )]
    KeyNotOwned {
        /// The key file.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// Group or others may read or write the key file.
    #[error(
        "cache key file {} (owner uid {owner}, mode {mode:04o}) is open to group or others, who could forge \
         cache files and resume tokens with it; remove it (toolhost makes a new key, mode 0600, and recompiles)",
        path.display()
    )]
    KeyShared {
        /// The key file.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// The key file is not a regular file of the key's size.
    #[error(
        "cache key file {} is not a {KEY_BYTES}-byte file; remove it (toolhost makes a new key and recompiles)",
        path.display()
    )]
    KeyMalformed {
        /// The key file.
        path: PathBuf,
    },
    /// A cache directory is set but there is no file for its key.
    #[error(
        "cache directory {} has no key file: set cache_key in toolhost.toml (HOME is not set to default to)",
        dir.display()
    )]
    NoKeyFile {
        /// The cache directory.
        dir: PathBuf,
    },
}

/// A directory of compiled artifacts for one engine configuration,
/// authenticated with this user's key.
#[derive(Debug, Clone)]
pub(crate) struct ArtifactCache {
    dir: PathBuf,
    engine_key: String,
    key: HostKey,
}

impl ArtifactCache {
    /// A cache in `dir` for artifacts of `engine`, authenticated with the
    /// key in `key_file`. Both are made if missing, private to this user;
    /// either is refused if someone else owns it or may change it.
    pub(crate) fn new(dir: &Path, key_file: &Path, engine: &Engine) -> Result<Self, CacheError> {
        let io = |source| CacheError::Dir { dir: dir.to_owned(), source };
        private_dir().create(dir).map_err(io)?;
        check_dir(dir, &std::fs::metadata(dir).map_err(io)?, effective_uid())?;
        let key = HostKey::load_or_create(key_file)?;
        let mut hasher = DigestHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(ArtifactCache { dir: dir.to_owned(), engine_key: hex::encode(hasher.0.finalize()), key })
    }

    /// Where the artifact of the component with BLAKE3 digest `content`
    /// lives.
    pub(crate) fn path_for(&self, content: &blake3::Hash) -> PathBuf {
        self.dir.join(format!("{}.cwasm", hex::encode(self.entry_id(content))))
    }

    /// The component with BLAKE3 digest `content` and bytes `wasm`: from
    /// the cache when an authentic artifact is there, else compiled and
    /// stored.
    pub(crate) fn load_or_compile(
        &self,
        engine: &Engine,
        content: &blake3::Hash,
        wasm: &[u8],
    ) -> wasmtime::Result<(Component, CacheUse)> {
        let (path, id) = (self.path_for(content), self.entry_id(content));
        let recovered = match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(format!("unreadable cache file {}: {e}", path.display())),
            Ok(file) => match self.load(engine, &id, &file) {
                Ok(component) => return Ok((component, CacheUse::Hit)),
                Err(why) => Some(format!("cache file {} {why}", path.display())),
            },
        };
        if let Some(why) = &recovered {
            tracing::warn!("{why}; recompiling");
        }
        let component = Component::new(engine, wasm)?;
        let artifact = component.serialize()?;
        if let Err(e) = self.store(&path, &[MAGIC, self.mac(MAGIC, &id, &artifact).as_bytes(), &artifact]) {
            let why = format!("cannot write cache file {}: {e}", path.display());
            tracing::warn!("{why}");
            let why = match recovered {
                Some(recovered) => format!("{recovered}; {why}"),
                None => why,
            };
            return Ok((component, CacheUse::NotStored(why)));
        }
        Ok((component, recovered.map_or(CacheUse::Compiled, CacheUse::Recovered)))
    }

    /// The SHA-256 and manifest kept for the component with BLAKE3 digest
    /// `content`, if an authentic file is there. One that is not is logged
    /// and ignored: the guest is asked again, and `store_manifest` replaces
    /// it.
    pub(crate) fn manifest(&self, content: &blake3::Hash) -> Option<KeptManifest> {
        let (path, id) = (self.manifest_path_for(content), self.entry_id(content));
        let file = match read_regular_file(&path, MAX_MANIFEST_FILE_BYTES) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => Err(format!("could not be read: {e}")),
            Ok(file) => self.authentic_manifest(&id, &file),
        };
        file.inspect_err(|why| tracing::warn!("manifest file {} {why}; asking the plugin again", path.display())).ok()
    }

    /// Keep `manifest` and the SHA-256 `sha256` for the component with
    /// BLAKE3 digest `content`. Failing to is logged: the next load asks
    /// the guest again.
    pub(crate) fn store_manifest(&self, content: &blake3::Hash, sha256: &str, manifest: &GuestManifest) {
        let (path, id) = (self.manifest_path_for(content), self.entry_id(content));
        let stored = serde_json::to_vec(manifest).map_err(std::io::Error::other).and_then(|json| {
            if json.len() as u64 > MAX_MANIFEST_FILE_BYTES {
                return Err(std::io::Error::other(format!("it would be larger than {MAX_MANIFEST_FILE_BYTES} bytes")));
            }
            let body = [sha256.as_bytes(), &json].concat();
            let mac = self.mac(&manifest_domain(), &id, &body);
            self.store(&path, &[MANIFEST_MAGIC, mac.as_bytes(), &body])
        });
        if let Err(e) = stored {
            tracing::warn!("cannot write manifest file {}: {e}", path.display());
        }
    }

    fn manifest_path_for(&self, content: &blake3::Hash) -> PathBuf {
        self.path_for(content).with_extension("manifest")
    }

    fn authentic_manifest(&self, id: &[u8; 32], file: &[u8]) -> Result<KeptManifest, String> {
        let body = file
            .strip_prefix(MANIFEST_MAGIC.as_slice())
            .and_then(|rest| rest.split_at_checked(TAG_BYTES))
            .and_then(|(tag, body)| Some((blake3::Hash::from_bytes(tag.try_into().ok()?), body)))
            .ok_or("is not a toolhost manifest file")
            .and_then(|(tag, body)| {
                // `Hash`'s equality compares in constant time.
                if self.mac(&manifest_domain(), id, body) == tag { Ok(body) } else { Err("failed authentication") }
            })?;
        let (sha256, json) = body
            .split_at_checked(SHA256_HEX_BYTES)
            .filter(|(sha256, _)| sha256.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)))
            .ok_or("holds no SHA-256")?;
        let manifest = serde_json::from_slice(json).map_err(|e| format!("is not a manifest this version reads: {e}"))?;
        Ok(KeptManifest { sha256: String::from_utf8_lossy(sha256).into_owned(), manifest })
    }

    /// What a cache file is for: the layout, the component and the engine.
    /// Its name, and part of what its MAC covers, so that a file moved to
    /// another component's name fails.
    fn entry_id(&self, content: &blake3::Hash) -> [u8; 32] {
        Sha256::new().chain_update(MAGIC).chain_update(content.as_bytes()).chain_update(&self.engine_key).finalize().into()
    }

    /// The MAC of the file of entry `id` whose layout `magic` names, holding
    /// `body`: BLAKE3 keyed with this user's key, a PRF by design, so no HMAC construction is
    /// needed around it. Profiled on this project's 2-core machine, it
    /// reads a 700 KiB artifact in 0.09 ms where HMAC-SHA256 took 0.3 ms
    /// (with the SHA extensions), a sixth of a warm plugin load (issue 17).
    ///
    /// An artifact has one, and so has a manifest file: what the guest
    /// declares (names, levels, capabilities) is as much the host's
    /// trust as its code.
    fn mac(&self, magic: &[u8], id: &[u8; 32], body: &[u8]) -> blake3::Hash {
        let mut mac = blake3::Hasher::new_keyed(&self.key.0);
        mac.update(magic);
        mac.update(id);
        mac.update(body);
        mac.finalize()
    }

    /// Write `parts` to a temporary file, then rename it to `path`.
    fn store(&self, path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        for part in parts {
            file.write_all(part)?;
        }
        file.as_file().sync_all()?;
        file.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    /// Authenticate a cache file and deserialize its artifact.
    fn load(&self, engine: &Engine, id: &[u8; 32], file: &[u8]) -> Result<Component, String> {
        if file.len() < HEADER_BYTES || &file[..MAGIC.len()] != MAGIC {
            return Err("is not a toolhost cache file".into());
        }
        let (tag, artifact) = file[MAGIC.len()..].split_at(TAG_BYTES);
        let tag: [u8; TAG_BYTES] = tag.try_into().expect("the header holds the tag");
        // `Hash`'s equality compares in constant time.
        if self.mac(MAGIC, id, artifact) != blake3::Hash::from_bytes(tag) {
            return Err("failed authentication: its MAC does not match this user's cache key (it is truncated, \
                        corrupted, forged, or was written under another key)"
                .into());
        }
        // SAFETY: wasmtime requires that the bytes were produced by
        // `Component::serialize` of a compatible engine and not tampered
        // with. The MAC, under a key only this user can read, proves that
        // `store` wrote them, from `serialize`, for this very component and
        // engine configuration (wasmtime checks the engine again in its own
        // header), and that they are intact.
        unsafe { Component::deserialize(engine, artifact) }.map_err(|e| format!("was refused by wasmtime: {e}"))
    }
}

/// What a manifest file keeps for a component: its SHA-256, as computed
/// when the file was written, and the manifest its guest returned.
pub(crate) struct KeptManifest {
    pub(crate) sha256: String,
    pub(crate) manifest: GuestManifest,
}

/// What a manifest file's MAC covers before its entry's id: its layout
/// and the version that read it.
fn manifest_domain() -> Vec<u8> {
    [MANIFEST_MAGIC.as_slice(), MANIFEST_READER.as_bytes()].concat()
}

/// The host's secret (the file `cache_key` names): it authenticates the
/// compiled cache, and, under a key derived from it for each other use,
/// what the host hands out to be given back, such as resume tokens. Never
/// printed.
#[derive(Clone)]
pub struct HostKey([u8; KEY_BYTES]);

impl std::fmt::Debug for HostKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HostKey(..)")
    }
}

impl HostKey {
    /// The key in `path`, made first if there is none (32 random bytes,
    /// mode 0600, in a directory only its owner may enter).
    ///
    /// # Errors
    ///
    /// A [`CacheError`] naming the file: it cannot be made or read, belongs
    /// to another user, is open to group or others, or is not a key.
    pub fn load_or_create(path: &Path) -> Result<Self, CacheError> {
        let io = |source| CacheError::Key { path: path.to_owned(), source };
        let mut file = match open_no_follow(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Self::create(path).map_err(io)?;
                open_no_follow(path).map_err(io)?
            }
            opened => opened.map_err(io)?,
        };
        // Checked on the open file, so the checked file is the one read.
        let metadata = file.metadata().map_err(io)?;
        check_key(path, &metadata, effective_uid())?;
        if !metadata.is_file() || metadata.len() != KEY_BYTES as u64 {
            return Err(CacheError::KeyMalformed { path: path.to_owned() });
        }
        let mut key = [0; KEY_BYTES];
        file.read_exact(&mut key).map_err(io)?;
        Ok(HostKey(key))
    }

    /// A key for one use, named by `context` (a fixed string, as
    /// `"toolhost 2026-11 resume tokens"`): BLAKE3's key derivation, so no
    /// two uses share a key and none reveals the host key.
    pub fn derive(&self, context: &str) -> [u8; KEY_BYTES] {
        blake3::derive_key(context, &self.0)
    }

    /// Write a new random key to `path`: to a temporary file (mode 0600)
    /// first, then linked into place unless another process made one first,
    /// which is then used.
    fn create(path: &Path) -> std::io::Result<()> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        private_dir().create(dir)?;
        let mut key = [0; KEY_BYTES];
        getrandom::fill(&mut key).map_err(std::io::Error::other)?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(&key)?;
        file.as_file().sync_all()?;
        match file.persist_noclobber(path) {
            Err(e) if e.error.kind() != std::io::ErrorKind::AlreadyExists => Err(e.error),
            _ => Ok(()),
        }
    }
}

/// Opens `path` for reading, refusing a symbolic link.
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32).open(path)
}

/// Makes directories, and any missing parents, that only their owner may
/// enter.
fn private_dir() -> DirBuilder {
    let mut builder = DirBuilder::new();
    builder.recursive(true).mode(PRIVATE_DIR_MODE);
    builder
}

fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The cache directory must be `me`'s and writable by no one else.
fn check_dir(dir: &Path, metadata: &Metadata, me: u32) -> Result<(), CacheError> {
    private(metadata, me, WRITABLE_BY_OTHERS).map_err(|Exposed { owner, mode, owned }| {
        let dir = dir.to_owned();
        if owned { CacheError::DirShared { dir, owner, mode } } else { CacheError::DirNotOwned { dir, owner, mode } }
    })
}

/// The key file must be `me`'s and neither readable nor writable by anyone
/// else.
fn check_key(path: &Path, metadata: &Metadata, me: u32) -> Result<(), CacheError> {
    private(metadata, me, OPEN_TO_OTHERS).map_err(|Exposed { owner, mode, owned }| {
        let path = path.to_owned();
        if owned { CacheError::KeyShared { path, owner, mode } } else { CacheError::KeyNotOwned { path, owner, mode } }
    })
}

/// A file or directory open to others than its user.
struct Exposed {
    owner: u32,
    /// Its permission bits.
    mode: u32,
    /// Whether the user owns it, so that its mode is what opens it.
    owned: bool,
}

/// `Ok` when `me` owns the file and none of its `shared` mode bits is set.
fn private(metadata: &Metadata, me: u32, shared: u32) -> Result<(), Exposed> {
    let (owner, mode) = (metadata.uid(), metadata.mode() & PERMISSION_BITS);
    if owner == me && mode & shared == 0 { Ok(()) } else { Err(Exposed { owner, mode, owned: owner == me }) }
}

/// Feeds `Hash` output into a SHA-256, so the engine's compatibility hash
/// becomes a stable file-name key.
struct DigestHasher(Sha256);

impl Hasher for DigestHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        unreachable!("only the digest is read")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_or_key_of_another_user_is_refused_naming_owner_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        let metadata = std::fs::metadata(dir.path()).unwrap();
        let someone_else = metadata.uid() + 1;
        let refused = check_dir(dir.path(), &metadata, someone_else).unwrap_err().to_string();
        let expected = format!("cache directory {} (owner uid {}, mode 0", dir.path().display(), metadata.uid());
        assert!(refused.starts_with(&expected), "{refused}");
        assert!(refused.contains("belongs to another user") && refused.contains("set cache_dir"), "{refused}");

        let key = dir.path().join("cache.key");
        std::fs::write(&key, [0; KEY_BYTES]).unwrap();
        let metadata = std::fs::metadata(&key).unwrap();
        let refused = check_key(&key, &metadata, someone_else).unwrap_err().to_string();
        assert!(refused.contains("belongs to another user; remove it"), "{refused}");
    }
}
