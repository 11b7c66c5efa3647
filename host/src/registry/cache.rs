//! The compiled-artifact cache: a component compiled once is kept on disk,
//! keyed by its SHA-256 and the engine's configuration, so the next load
//! skips compilation.
//!
//! A cache file is `MAGIC`, the SHA-256 of the artifact, then the artifact.
//! It is written to a temporary file and renamed into place, so a reader
//! never sees half a file; and it is verified before use, so a truncated,
//! corrupted or foreign file is recompiled, never loaded blindly.
#![allow(unsafe_code, reason = "deserializing a compiled artifact is unsafe in wasmtime; see `load`")]

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The first bytes of every cache file; bump the digit when the layout
/// changes.
const MAGIC: &[u8; 16] = b"toolhost-cwasm1\n";

/// How a component was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheUse {
    /// Loaded from a verified cache file.
    Hit,
    /// Compiled; the cache file was absent (or there is no cache).
    Compiled,
    /// Compiled because the cache file failed verification; says why.
    Recovered(String),
}

/// A directory of compiled artifacts for one engine configuration.
#[derive(Debug, Clone)]
pub struct ArtifactCache {
    dir: PathBuf,
    engine_key: String,
}

impl ArtifactCache {
    /// A cache in `dir` (created if missing) for artifacts of `engine`.
    pub fn new(dir: &Path, engine: &Engine) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut hasher = DigestHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(ArtifactCache { dir: dir.to_owned(), engine_key: hex::encode(hasher.0.finalize()) })
    }

    /// Where the artifact of the component with digest `sha256` lives.
    pub fn path_for(&self, sha256: &str) -> PathBuf {
        let key = Sha256::new().chain_update(sha256).chain_update(&self.engine_key).finalize();
        self.dir.join(format!("{}.cwasm", hex::encode(key)))
    }

    /// The component with digest `sha256` and bytes `wasm`: from the cache
    /// when a verified artifact is there, else compiled and stored.
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        sha256: &str,
        wasm: &[u8],
    ) -> wasmtime::Result<(Component, CacheUse)> {
        let path = self.path_for(sha256);
        let recovered = match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(format!("unreadable cache file {}: {e}", path.display())),
            Ok(file) => match load(engine, &file) {
                Ok(component) => return Ok((component, CacheUse::Hit)),
                Err(why) => Some(format!("cache file {} {why}", path.display())),
            },
        };
        if let Some(why) = &recovered {
            tracing::warn!("{why}; recompiling");
        }
        let component = Component::new(engine, wasm)?;
        if let Err(e) = self.store(&path, &component.serialize()?) {
            tracing::warn!("could not write cache file {}: {e}", path.display());
        }
        Ok((component, recovered.map_or(CacheUse::Compiled, CacheUse::Recovered)))
    }

    fn store(&self, path: &Path, artifact: &[u8]) -> std::io::Result<()> {
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        file.write_all(MAGIC)?;
        file.write_all(&Sha256::digest(artifact))?;
        file.write_all(artifact)?;
        file.as_file().sync_all()?;
        file.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Verify a cache file and deserialize its artifact.
fn load(engine: &Engine, file: &[u8]) -> Result<Component, String> {
    let header = MAGIC.len() + 32;
    if file.len() < header || &file[..MAGIC.len()] != MAGIC {
        return Err("is not a toolhost cache file".into());
    }
    let (digest, artifact) = file[MAGIC.len()..].split_at(32);
    if Sha256::digest(artifact).as_slice() != digest {
        return Err("is truncated or corrupted (checksum mismatch)".into());
    }
    // SAFETY: wasmtime requires that the bytes were produced by
    // `Component::serialize` of a compatible engine and not tampered with.
    // They were written by `store` above from `serialize`; the checksum
    // proves they are intact, and the file name keys them by this engine's
    // compatibility hash (which wasmtime checks again in its own header).
    // The cache directory must be writable only by the host's user.
    unsafe { Component::deserialize(engine, artifact) }.map_err(|e| format!("was refused by wasmtime: {e}"))
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
