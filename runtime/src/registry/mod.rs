//! The registry: every component in the plugin directories, loaded,
//! verified and ready to run.
//!
//! Loading a component means: read it and take its SHA-256; check it against
//! its pin when a lock file exists; compile it (or take the verified
//! artifact from the `ArtifactCache`); link it once; read its manifest in
//! a tightly limited sandbox with no grants; validate the manifest (semver,
//! API compatibility, names); and resolve its grants against the policy
//! section of its name, if that section is bound to this component (see
//! `binding`). A component that fails any step is refused with the reason,
//! and the others load.
//!
//! A plugin name, and a tool name, belongs to one component. When several
//! claim one, every one of them is refused and each refusal names the
//! others, by path: "first wins" would let a file that sorts first take the
//! name. Tool names are those the policy gives (`names`): renamed first,
//! then checked, so renaming one of two tools lets both plugins load.
//!
//! The loaded set is an immutable [`Catalog`] snapshot; [`Registry::reload`]
//! builds a new one (reusing unchanged plugins) and notifies subscribers.
//!
//! File I/O and compilation run on tokio's blocking threads (see
//! `blocking`): a cold load compiles for a tenth of a second per
//! component, which would stall every other task on a runtime thread.

pub(crate) mod binding;
mod cache;
mod files;
mod lock;
mod magic;
pub(crate) mod names;
mod policy;
mod report;
mod watch;

/// Why a lock or policy file was refused as not the user's own
/// ([`LockError::Untrusted`]).
pub use crate::trust::UntrustedFile;
pub(crate) use binding::ComponentId;
pub use binding::UnboundSection;
pub(crate) use cache::{ArtifactCache, KeptManifest};
pub use cache::{CacheError, CacheUse, HostKey};
pub use lock::{LockError, LockFile, PinChange, PinState};
#[doc(hidden)]
pub use policy::PluginSection;
pub use policy::{Binding, DEFAULT_LOCK_FILE, PluginPolicy, RuntimePolicy};
pub use watch::DEFAULT_WATCH_INTERVAL;

/// The largest component file toolhost reads (a Python component is
/// about 40 MiB): a larger one in a plugin directory is refused unread,
/// as is one `toolhost add` would download.
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;
// Public through `cli_support`, which the CLI uses.
pub use files::component_files;

use crate::contract::{Contract, ContractError};
use crate::declaration::{ManifestError, RawManifest};
use crate::digest::sha256_hex;
use crate::error_chain::caught;
use crate::manifest::{PluginManifest, ToolSpec};
use crate::printable::printable;
use crate::regular_file::read_regular_file;
use crate::sandbox::{
    CallFailure, Export, Grants, GuestManifest, Invocation, Limits, Prepared, Returned, Sandbox, SandboxError, Withheld,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use wasmtime::component::Component;

/// A plugin that loaded.
#[non_exhaustive]
pub struct LoadedPlugin {
    /// The component file.
    pub path: PathBuf,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// Its validated manifest, each tool under the name the host gives it
    /// (renamed as the policy says; [`LoadedPlugin::declared_name`] is the
    /// plugin's own).
    pub manifest: PluginManifest,
    /// Its effective grants.
    pub grants: Grants,
    /// Its per-call limits.
    pub limits: Limits,
    /// Where it stands with the lock file: in a catalog, no lock file or a
    /// matching pin (anything else is refused); from [`Registry::inspect`],
    /// any state.
    pub pin: PinState,
    /// Why the policy section of its name gave it nothing, if it did not
    /// apply to this component.
    pub unbound: Option<UnboundSection>,
    /// Whether it came from the compiled cache.
    pub cache: CacheUse,
    /// The version of the plugin contract it was built against.
    pub contract: Contract,
    /// The component as the lock file names it ([`LockFile::key`]).
    key: String,
    /// The declared name of each tool the policy renamed, by its new name.
    renamed: BTreeMap<String, String>,
    prepared: Prepared,
}

impl LoadedPlugin {
    /// The directories and HTTP hosts it asks for that the policy
    /// withholds: where it would use them, its tools fail.
    pub fn missing_grants(&self) -> impl Iterator<Item = &Withheld> {
        self.grants.withheld.iter().filter(|withheld| matches!(withheld, Withheld::Directory { .. } | Withheld::HttpHost { .. }))
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// `name@version`.
    pub fn label(&self) -> String {
        format!("{}@{}", self.manifest.name, self.manifest.version)
    }

    /// The name the plugin itself declares for its tool `tool` (a name the
    /// host knows it by): `tool` unless the policy renamed it. A call
    /// reaches the plugin under this name.
    pub fn declared_name<'a>(&'a self, tool: &'a str) -> &'a str {
        self.renamed.get(tool).map_or(tool, String::as_str)
    }
}

/// Why a component was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A lock file exists and does not pin this component.
    #[error("{file} is not pinned in {}; run `toolhost lock` to pin it", lock.display())]
    NotPinned {
        /// The component, as the lock file names it ([`LockFile::key`]).
        file: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// The component's digest differs from its pin.
    #[error("{file} does not match its pin: pinned sha256:{pinned}, found sha256:{actual}")]
    PinMismatch {
        /// The component, as the lock file names it ([`LockFile::key`]).
        file: String,
        /// The pinned digest.
        pinned: String,
        /// The file's digest.
        actual: String,
    },
    /// The component did not compile or link.
    #[error("{file} is not a loadable component: {reason}")]
    Compile {
        /// The file name.
        file: String,
        /// What is wrong, in words.
        reason: String,
        /// What wasmtime said, where it was wasmtime that refused it.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The component was built against a version of the plugin contract
    /// this host does not run.
    #[error("{file} is refused: {error}")]
    Contract {
        /// The file name.
        file: String,
        /// Which version, and why it cannot run.
        #[source]
        error: ContractError,
    },
    /// The host panicked while it compiled or prepared the component (a
    /// compiler bug it triggered, say); only this component is refused.
    #[error("{file} is refused: the host failed while {stage} it: {message}")]
    Panicked {
        /// The file name.
        file: String,
        /// What the host was doing: `compiling`, `preparing`.
        stage: &'static str,
        /// The panic's message.
        message: String,
    },
    /// Reading the manifest failed (a trap or a limit).
    #[error("reading the manifest of {file} failed: {failure}")]
    Manifest {
        /// The file name.
        file: String,
        /// What happened.
        #[source]
        failure: CallFailure,
    },
    /// The manifest is invalid.
    #[error("{file}: {error}")]
    Invalid {
        /// The file name.
        file: String,
        /// What is wrong.
        error: Box<ManifestError>,
    },
    /// The policy gives one of the component's tools a name it cannot have
    /// (`rename` or `tool_prefix` in its section).
    #[error("{file} is refused: {key} gives its tool `{tool}` the name `{name}`, which {why}")]
    ToolName {
        /// The component, as the lock file names it ([`LockFile::key`]).
        file: String,
        /// The policy key that gives the name, e.g. `plugins.calc.rename.calculate`.
        key: String,
        /// The tool, as the plugin declares it.
        tool: String,
        /// The name it would get.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// Other components claim the same plugin name; all of them are refused.
    #[error(
        "{file} is refused: it claims plugin name `{plugin}`, as {} also does; every component \
         claiming one name is refused (remove the one you do not trust)",
        and_list(others)
    )]
    DuplicatePlugin {
        /// The plugin name.
        plugin: String,
        /// The refused component, as the lock file names it ([`LockFile::key`]).
        file: String,
        /// The other components claiming the name, named the same way.
        others: Vec<String>,
    },
    /// Other plugins offer the same tool name; all of them are refused.
    #[error(
        "{file} is refused: tool `{tool}`{} of plugin `{plugin}` is also offered by {}; every \
         plugin offering one tool name is refused (remove the one you do not trust, or rename the \
         tool in [plugins.{plugin}] with `rename` or `tool_prefix`)",
        renamed_from(declared.as_deref()),
        and_list(others)
    )]
    Collision {
        /// The tool name, as the host knows it.
        tool: String,
        /// The name the plugin declares for it, when the policy renamed it.
        declared: Option<String>,
        /// The refused plugin.
        plugin: String,
        /// Its component, as the lock file names it ([`LockFile::key`]).
        file: String,
        /// The other plugins offering it.
        others: Vec<Claimant>,
    },
}

/// A plugin that claims a name, and the component it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Claimant {
    /// The plugin name.
    pub plugin: String,
    /// Its component, as the lock file names it ([`LockFile::key`]): the
    /// path relative to the lock file's directory (absolute when not below
    /// it), so that one file name in two plugin directories is told apart.
    pub file: String,
}

impl std::fmt::Display for Claimant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "plugin `{}` ({})", self.plugin, self.file)
    }
}

/// ` (renamed from `calculate`)` for a renamed tool, else nothing.
fn renamed_from(declared: Option<&str>) -> String {
    declared.map_or_else(String::new, |declared| format!(" (renamed from `{declared}`)"))
}

/// `a`, `a and b`, `a, b and c`.
fn and_list<T: std::fmt::Display>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(ToString::to_string).collect();
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// A refused component and why.
#[derive(Debug)]
#[non_exhaustive]
pub struct Refusal {
    /// The component file.
    pub path: PathBuf,
    /// Why it was refused.
    pub error: LoadError,
}

/// An error that stops the registry as a whole.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The engine could not be set up.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The lock file is unreadable or malformed.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A plugin directory could not be listed.
    #[error("cannot list plugin directory {}: {source}", dir.display())]
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The compiled cache, or its key, is unusable or not private.
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// An immutable snapshot of the loaded plugins.
#[non_exhaustive]
pub struct Catalog {
    /// Increases by one on every reload.
    pub generation: u64,
    /// The loaded plugins, in directory then file-name order.
    pub plugins: Vec<Arc<LoadedPlugin>>,
    /// The refused components.
    pub refused: Vec<Refusal>,
    index: HashMap<String, (usize, usize)>,
}

impl Catalog {
    /// The tool named `name` and its plugin.
    pub fn tool(&self, name: &str) -> Option<(&Arc<LoadedPlugin>, &ToolSpec)> {
        let &(p, t) = self.index.get(name)?;
        let plugin = &self.plugins[p];
        Some((plugin, &plugin.manifest.tools[t]))
    }

    /// Every tool with its plugin, in plugin then declaration order.
    pub fn tools(&self) -> impl Iterator<Item = (&Arc<LoadedPlugin>, &ToolSpec)> {
        self.plugins.iter().flat_map(|p| p.manifest.tools.iter().map(move |t| (p, t)))
    }

    /// The plugin named `name`.
    pub fn plugin(&self, name: &str) -> Option<&Arc<LoadedPlugin>> {
        self.plugins.iter().find(|p| p.name() == name)
    }
}

/// What a reload changed, by component file name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegistryEvent {
    /// The new catalog's generation.
    pub generation: u64,
    /// Components that appeared.
    pub added: Vec<String>,
    /// Components that disappeared.
    pub removed: Vec<String>,
    /// Components whose bytes changed.
    pub changed: Vec<String>,
}

/// Progress while loading, for a caller that shows it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LoadProgress<'a> {
    /// The component about to be compiled (not in the cache).
    pub file: &'a Path,
    /// Its position, from 1.
    pub index: usize,
    /// How many components there are.
    pub total: usize,
}

/// The set of loaded plugins, their sandbox, and change notifications.
pub struct Registry {
    sandbox: Arc<Sandbox>,
    policy: RuntimePolicy,
    cache: Option<ArtifactCache>,
    catalog: RwLock<Arc<Catalog>>,
    events: broadcast::Sender<RegistryEvent>,
    reloading: tokio::sync::Mutex<()>,
}

impl Registry {
    /// Load every component in the policy's plugin directories, in a
    /// sandbox of its own sized as the policy's `[sandbox]` says.
    ///
    /// # Errors
    ///
    /// A [`RegistryError`] when the sandbox cannot be set up, the lock file is
    /// unreadable or malformed, a plugin directory cannot be listed, or the
    /// compiled cache is unusable. A component that fails its checks is not an
    /// error: it is refused, with the reason, in the catalog's `refused`.
    pub async fn load(policy: impl Into<RuntimePolicy>) -> Result<Self, RegistryError> {
        Self::load_with_progress(policy, &|_| {}).await
    }

    /// [`Registry::load`], calling `progress` before each compilation.
    ///
    /// # Errors
    ///
    /// As [`Registry::load`].
    pub async fn load_with_progress(
        policy: impl Into<RuntimePolicy>,
        progress: &(dyn Fn(LoadProgress<'_>) + Sync),
    ) -> Result<Self, RegistryError> {
        let policy = policy.into();
        let registry = blocking(move || Self::new(policy)).await?;
        registry.populate(progress).await
    }

    /// Load every component in the policy's plugin directories into
    /// `sandbox`, which other registries may share: its engines, its pool
    /// and its limit on calls at once (the policy's `[sandbox]` is not
    /// used).
    ///
    /// # Errors
    ///
    /// As [`Registry::load`], but for the sandbox, which is set up already.
    pub async fn load_in(sandbox: Arc<Sandbox>, policy: impl Into<RuntimePolicy>) -> Result<Self, RegistryError> {
        let policy = policy.into();
        let registry = blocking(move || Self::with_sandbox(sandbox, policy)).await?;
        registry.populate(&|_| {}).await
    }

    /// Fill the catalog from the plugin directories.
    async fn populate(self, progress: &(dyn Fn(LoadProgress<'_>) + Sync)) -> Result<Self, RegistryError> {
        let lock = self.read_lock().await?;
        let catalog = self.scan(&Catalog::empty(), lock.as_ref(), progress).await?;
        report::log_catalog(&catalog);
        *self.catalog.write().expect("catalog lock") = Arc::new(catalog);
        Ok(self)
    }

    /// A registry with a sandbox of its own (sized as the policy's
    /// `[sandbox]` says) and the cache set up, and nothing loaded, for
    /// [`Registry::inspect`] and [`Registry::survey`].
    ///
    /// # Errors
    ///
    /// A [`RegistryError`] when the sandbox cannot be set up or the compiled
    /// cache is unusable.
    pub fn new(policy: impl Into<RuntimePolicy>) -> Result<Self, RegistryError> {
        let policy = policy.into();
        let sandbox = Arc::new(Sandbox::with_size(policy.sandbox)?);
        Self::with_sandbox(sandbox, policy)
    }

    /// A registry over `sandbox`, which other registries may share, with
    /// the cache set up and nothing loaded.
    ///
    /// # Errors
    ///
    /// [`RegistryError::Cache`] when the compiled cache, or its key, is
    /// unusable or not private.
    pub fn with_sandbox(sandbox: Arc<Sandbox>, policy: impl Into<RuntimePolicy>) -> Result<Self, RegistryError> {
        let policy = policy.into();
        let cache = match (&policy.cache_dir, &policy.cache_key) {
            (Some(dir), Some(key_file)) => Some(ArtifactCache::new(dir, key_file, sandbox.engine())?),
            (Some(dir), None) => return Err(CacheError::NoKeyFile { dir: dir.clone() }.into()),
            (None, _) => None,
        };
        Ok(Registry {
            sandbox,
            policy,
            cache,
            catalog: RwLock::new(Arc::new(Catalog::empty())),
            events: broadcast::channel(16).0,
            reloading: tokio::sync::Mutex::new(()),
        })
    }

    /// The sandbox calls run in.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    /// Every component in the plugin directories loaded as if there were no
    /// lock file, with every other check and refusal: what `toolhost lock`
    /// is about to pin. The registry's own catalog is left as it is.
    ///
    /// # Errors
    ///
    /// A [`RegistryError`] when a plugin directory cannot be listed; a
    /// component that fails its checks is refused in the catalog instead.
    pub async fn survey(&self, progress: &(dyn Fn(LoadProgress<'_>) + Sync)) -> Result<Catalog, RegistryError> {
        self.scan(&Catalog::empty(), None, progress).await
    }

    /// The current snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().expect("catalog lock").clone()
    }

    /// The part of the policy the registry was loaded with: the doors'
    /// sections stay with the `config::Policy` it came from.
    pub fn policy(&self) -> &RuntimePolicy {
        &self.policy
    }

    /// Receive a [`RegistryEvent`] after every reload.
    pub fn subscribe(&self) -> broadcast::Receiver<RegistryEvent> {
        self.events.subscribe()
    }

    /// Rescan the plugin directories: pick up added, removed and changed
    /// components, keep unchanged ones as they are, and notify subscribers.
    ///
    /// # Errors
    ///
    /// A [`RegistryError`] when the lock file is unreadable or malformed or a
    /// plugin directory cannot be listed; the catalog is then left as it was.
    pub async fn reload(&self) -> Result<RegistryEvent, RegistryError> {
        let _one_at_a_time = self.reloading.lock().await;
        let old = self.catalog();
        let lock = self.read_lock().await?;
        let new = self.scan(&old, lock.as_ref(), &|_| {}).await?;
        report::log_catalog(&new);
        let files =
            |c: &Catalog| -> HashMap<PathBuf, String> { c.plugins.iter().map(|p| (p.path.clone(), p.sha256.clone())).collect() };
        let (before, after) = (files(&old), files(&new));
        let name = |p: &Path| p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let paths: BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
        let mut event = RegistryEvent { generation: new.generation, ..RegistryEvent::default() };
        for path in paths {
            match (before.get(path), after.get(path)) {
                (None, Some(_)) => event.added.push(name(path)),
                (Some(_), None) => event.removed.push(name(path)),
                (Some(a), Some(b)) if a != b => event.changed.push(name(path)),
                _ => {}
            }
        }
        *self.catalog.write().expect("catalog lock") = Arc::new(new);
        // No subscriber is not an error.
        let _ = self.events.send(event.clone());
        Ok(event)
    }

    /// Run `tool` of `plugin` (the name the host knows it by; the plugin is
    /// called with its own) with `args_json` in a fresh instance under the
    /// plugin's limits and grants, in shard `shard` (see `Sandbox`):
    /// callers running at once pass different shards; `in_batch` when more
    /// calls of a parallel batch follow in the caller's task.
    #[allow(clippy::too_many_arguments, reason = "one call's every input, each used once")]
    pub(crate) async fn invoke(
        &self,
        plugin: &LoadedPlugin,
        shard: usize,
        tool: &str,
        args_json: &str,
        in_batch: bool,
        limits: &Limits,
        cancel: &CancellationToken,
    ) -> Invocation {
        let export = Export::Invoke { tool: plugin.declared_name(tool), args_json, in_batch };
        // Boxed once here: each async fn that awaits it in place holds it
        // twice over, so the call's future grew at every level to 1 688
        // bytes, copied whole as it went (784 now; memcpy went from 13% to
        // 10% of an idle call's path, measured with `perf`).
        let (result, fuel_used, duration) =
            Box::pin(self.sandbox.run(&plugin.prepared, shard, plugin.name(), &plugin.grants, limits, export, cancel)).await;
        let result = result.and_then(|returned| match returned {
            Returned::Invoke(r) => r.map_err(CallFailure::Tool),
            Returned::Manifest(_) => unreachable!("invoke returns an invoke result"),
        });
        Invocation { result, fuel_used, duration }
    }

    /// Load every plugin of the catalog into every engine now, and make
    /// its memory images, rather than when a call first lands in an engine
    /// (about a millisecond per plugin and engine, which that call waits
    /// for): for a server whose calls should never wait so, or a test that
    /// counts what the host holds. Plugins loaded later are not.
    pub async fn ready_every_engine(&self) {
        for plugin in &self.catalog().plugins {
            self.sandbox.ready_everywhere(&plugin.prepared, plugin.name()).await;
        }
    }

    /// Time `times` calls on one reused instance: with no `idle`, back to
    /// back, their total; with one, each alone after the thread has idled
    /// that long, each call's time. For benchmarks only: the floor that a
    /// fresh instance per call is measured against.
    #[doc(hidden)]
    pub async fn bench_reused_instance(
        &self,
        plugin: &LoadedPlugin,
        tool: &str,
        args_json: &str,
        times: u32,
        idle: Option<std::time::Duration>,
    ) -> anyhow::Result<Vec<std::time::Duration>> {
        let tool = plugin.declared_name(tool);
        Ok(self.sandbox.invoke_reused(&plugin.prepared, &plugin.grants, tool, args_json, times, idle).await?)
    }

    /// Load one component file outside the catalog, as `toolhost inspect`
    /// does: the same checks, but no pin and no collision check. Its grants
    /// are those it would get in the catalog.
    ///
    /// # Errors
    ///
    /// The [`LoadError`] that would refuse it in the catalog: the file cannot
    /// be read or is not a component, or its manifest, API version, names or
    /// grants fail their checks.
    pub async fn inspect(&self, path: &Path) -> Result<LoadedPlugin, LoadError> {
        // Both reads in one trip to a blocking thread: a trip costs about
        // 14 µs, 2% of a warm load.
        let reader = self.component_reader(path);
        let lock_file = self.policy.lock_file.clone();
        let (file, lock) = blocking(move || {
            // An unreadable lock pins nothing; the caller reports it.
            reader().map(|file| (file, LockFile::read(&lock_file).ok().flatten()))
        })
        .await?;
        let pin = PinState::of(lock.as_ref(), &file.key, &file.sha256);
        self.load_component(path, file, pin).await
    }

    async fn read_lock(&self) -> Result<Option<LockFile>, LockError> {
        let lock_file = self.policy.lock_file.clone();
        blocking(move || LockFile::read(&lock_file)).await
    }

    /// Read the component at `path`, on a blocking thread.
    async fn read_component(&self, path: &Path) -> Result<ComponentFile, LoadError> {
        blocking(self.component_reader(path)).await
    }

    /// What reads the component at `path` (its bytes, digests, lock key,
    /// whether the cache holds it and the manifest kept there), to run on a
    /// blocking thread.
    fn component_reader(&self, path: &Path) -> impl FnOnce() -> Result<ComponentFile, LoadError> + Send + 'static {
        let (path, lock_file, cache) = (path.to_owned(), self.policy.lock_file.clone(), self.cache.clone());
        move || {
            let wasm =
                read_regular_file(&path, MAX_COMPONENT_BYTES).map_err(|source| LoadError::Read { path: path.clone(), source })?;
            let content = blake3::hash(&wasm);
            let kept = cache.as_ref().and_then(|cache| cache.manifest(&content));
            // The SHA-256 kept beside the cache entry was computed from
            // these very bytes: the entry is named by their BLAKE3.
            let (sha256, kept) = match kept {
                Some(KeptManifest { sha256, manifest }) => (sha256, Some(manifest)),
                None => (sha256_hex(&wasm), None),
            };
            let cached = cache.is_some_and(|cache| cache.path_for(&content).exists());
            Ok(ComponentFile { key: LockFile::key(&lock_file, &path), wasm, content, sha256, cached, kept })
        }
    }

    async fn scan(
        &self,
        previous: &Catalog,
        lock: Option<&LockFile>,
        progress: &(dyn Fn(LoadProgress<'_>) + Sync),
    ) -> Result<Catalog, RegistryError> {
        let dirs = self.policy.plugin_dirs.clone();
        let files = blocking(move || component_files(&dirs)).await?;
        let mut loaded = Vec::with_capacity(files.len());
        for (position, path) in files.iter().enumerate() {
            let position = LoadProgress { file: path, index: position + 1, total: files.len() };
            loaded.push((path.clone(), self.load_file(path, lock, previous, position, progress).await));
        }
        let mut conflicts = conflicts(&loaded);
        let (mut plugins, mut refused) = (Vec::new(), Vec::new());
        let mut index: HashMap<String, (usize, usize)> = HashMap::new();
        for (position, (path, result)) in loaded.into_iter().enumerate() {
            match result.and_then(|plugin| conflicts.remove(&position).map_or(Ok(plugin), Err)) {
                Ok(plugin) => {
                    for (t, tool) in plugin.manifest.tools.iter().enumerate() {
                        index.insert(tool.name.clone(), (plugins.len(), t));
                    }
                    plugins.push(plugin);
                }
                Err(error) => {
                    tracing::info!("refused: {}", printable(&error.to_string()));
                    refused.push(Refusal { path, error });
                }
            }
        }
        Ok(Catalog { generation: previous.generation + 1, plugins, refused, index })
    }

    async fn load_file(
        &self,
        path: &Path,
        lock: Option<&LockFile>,
        previous: &Catalog,
        position: LoadProgress<'_>,
        progress: &(dyn Fn(LoadProgress<'_>) + Sync),
    ) -> Result<Arc<LoadedPlugin>, LoadError> {
        let file = self.read_component(path).await?;
        let pin = match PinState::of(lock, &file.key, &file.sha256) {
            PinState::NotPinned => return Err(LoadError::NotPinned { file: file.key, lock: self.policy.lock_file.clone() }),
            PinState::Mismatch { pinned, actual } => return Err(LoadError::PinMismatch { file: file.key, pinned, actual }),
            loadable @ (PinState::NoLockFile | PinState::Matches) => loadable,
        };
        if let Some(same) = previous.plugins.iter().find(|p| p.path == path && p.sha256 == file.sha256 && p.pin == pin) {
            return Ok(same.clone());
        }
        if !file.cached {
            progress(position);
        }
        self.load_component(path, file, pin).await.map(Arc::new)
    }

    async fn load_component(&self, path: &Path, component: ComponentFile, pin: PinState) -> Result<LoadedPlugin, LoadError> {
        let ComponentFile { wasm, content, sha256, key, cached: _, kept } = component;
        let file = file_name(path);
        if let Some(reason) = magic::not_a_component(&wasm) {
            return Err(LoadError::Compile { file, reason, source: None });
        }
        let compile_error =
            |e: wasmtime::Error| LoadError::Compile { file: file.clone(), reason: format!("{e:#}"), source: Some(e.into()) };
        let panicked = |stage, message| LoadError::Panicked { file: file.clone(), stage, message };
        let (sandbox, cache) = (self.sandbox.clone(), self.cache.clone());
        let (component, cache) = blocking_caught(move || {
            let engine = sandbox.engine();
            wasmtime::Result::Ok(match &cache {
                Some(cache) => cache.load_or_compile(engine, &content, &wasm)?,
                None => (Component::new(engine, &wasm)?, CacheUse::Compiled),
            })
        })
        .await
        .map_err(|message| panicked("compiling", message))?
        .map_err(compile_error)?;
        // The manifest kept beside a component from the compiled cache
        // spares asking its guest.
        let kept = kept.filter(|_| cache == CacheUse::Hit);
        let contract = Contract::of(&component).map_err(|error| LoadError::Contract { file: file.clone(), error })?;
        let prepare = |grants: &Grants| {
            caught(|| self.sandbox.prepare(&component, contract, grants))
                .map_err(|message| panicked("preparing", message))?
                .map_err(compile_error)
        };
        // Without a kept manifest the guest is asked, with no grants (calls
        // run with the plugin's).
        let (guest, bare) = match kept.filter(|kept| kept.contract() == contract) {
            Some(kept) => (kept, None),
            None => {
                let bare = prepare(&Grants::none())?;
                let (returned, _, _) = self
                    .sandbox
                    .run(&bare, 0, &file, &Grants::none(), &Limits::for_manifest(), Export::Manifest, &CancellationToken::new())
                    .await;
                let guest = match returned {
                    Ok(Returned::Manifest(guest)) => guest,
                    Ok(Returned::Invoke(_)) => unreachable!("manifest returns a manifest"),
                    Err(failure) => return Err(LoadError::Manifest { file, failure }),
                };
                (guest, Some(bare))
            }
        };
        // A manifest the guest just returned is kept once it passed
        // validation: one that fails is never written, whatever its size.
        let to_keep = bare.is_some().then(|| guest.clone());
        let mut manifest = RawManifest::from(guest)
            .validate_for(&contract.version(), Limits::for_manifest().output_bytes)
            .map_err(|error| LoadError::Invalid { file: file.clone(), error: Box::new(error) })?;
        if let (Some(guest), Some(artifacts)) = (to_keep, self.cache.clone().filter(|_| !matches!(cache, CacheUse::NotStored(_))))
        {
            let digest = sha256.clone();
            blocking(move || artifacts.store_manifest(&content, &digest, &guest)).await;
        }
        let section = self.policy.plugins.get(&manifest.name);
        let renamed = names::rename_tools(&mut manifest, section, &key)?;
        let identity = ComponentId { file: &file, sha256: &sha256, pinned: pin.is_pinned() };
        let policy = binding::apply(&self.policy, &manifest.name, &identity);
        let grants = Grants::resolve(&manifest.capabilities, &policy.allowance);
        let (reach, floor) = (grants.reach(), grants.level_floor());
        for tool in &mut manifest.tools {
            tool.reach = reach;
            tool.permission = tool.declared_permission.max(floor);
        }
        // Linking looks only at the HTTP grant: without one, the plugin
        // prepared to read its manifest is the plugin prepared for calls.
        let prepared = match bare {
            Some(bare) if !grants.http() => bare,
            _ => prepare(&grants)?,
        };
        Ok(LoadedPlugin {
            path: path.to_owned(),
            grants,
            limits: policy.limits,
            pin,
            unbound: policy.unbound,
            sha256,
            manifest,
            cache,
            contract,
            key,
            renamed,
            prepared,
        })
    }
}

/// A component file as read: its bytes, their digests, its key in the lock
/// file, whether the compiled cache has an artifact for it, and the
/// manifest kept there.
struct ComponentFile {
    wasm: Vec<u8>,
    /// BLAKE3: names its cache entry.
    content: blake3::Hash,
    /// SHA-256, hex: what lock files pin.
    sha256: String,
    key: String,
    cached: bool,
    kept: Option<GuestManifest>,
}

/// Run `work` on one of tokio's blocking threads and wait for it. A panic
/// in it is resumed here, as if it had run in place.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(error) => panic!("the runtime shut down while loading plugins: {error}"),
    }
}

/// Like [`blocking`], but a panic in `work` is returned as its message:
/// for work on one component (compiling it), whose failure, even a
/// compiler's panic, refuses that component and not the whole load.
async fn blocking_caught<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    blocking(move || caught(work)).await
}

impl Catalog {
    fn empty() -> Self {
        Catalog { generation: 0, plugins: Vec::new(), refused: Vec::new(), index: HashMap::new() }
    }
}

/// Why each loaded component that shares a plugin or tool name with another
/// is refused, by position. Decided over the whole set, so the order of the
/// files changes nothing.
fn conflicts(loaded: &[(PathBuf, Result<Arc<LoadedPlugin>, LoadError>)]) -> HashMap<usize, LoadError> {
    let plugins: Vec<(usize, &LoadedPlugin)> =
        loaded.iter().enumerate().filter_map(|(i, (_, r))| Some((i, r.as_deref().ok()?))).collect();
    let mut by_name: BTreeMap<&str, Vec<(usize, &LoadedPlugin)>> = BTreeMap::new();
    let mut by_tool: BTreeMap<&str, Vec<(usize, &LoadedPlugin)>> = BTreeMap::new();
    for &(i, plugin) in &plugins {
        by_name.entry(plugin.name()).or_default().push((i, plugin));
        for tool in &plugin.manifest.tools {
            by_tool.entry(&tool.name).or_default().push((i, plugin));
        }
    }
    let others = |claims: &[(usize, &LoadedPlugin)], me: usize| -> Vec<Claimant> {
        claims
            .iter()
            .filter(|(i, _)| *i != me)
            .map(|(_, p)| Claimant { plugin: p.name().to_owned(), file: p.key.clone() })
            .collect()
    };
    let mut refused = HashMap::new();
    for &(i, plugin) in &plugins {
        let file = plugin.key.clone();
        let same_name = others(&by_name[plugin.name()], i);
        let error = if !same_name.is_empty() {
            let others = same_name.into_iter().map(|c| c.file).collect();
            LoadError::DuplicatePlugin { plugin: plugin.name().to_owned(), file, others }
        } else {
            let Some((tool, others)) = plugin.manifest.tools.iter().find_map(|tool| {
                let others = others(&by_tool[tool.name.as_str()], i);
                (!others.is_empty()).then_some((tool, others))
            }) else {
                continue;
            };
            let declared = Some(plugin.declared_name(&tool.name)).filter(|d| *d != tool.name).map(str::to_owned);
            LoadError::Collision { tool: tool.name.clone(), declared, plugin: plugin.name().to_owned(), file, others }
        };
        refused.insert(i, error);
    }
    refused
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_in_work_on_one_component_is_returned_not_resumed() {
        let said = blocking_caught(|| -> u32 { panic!("compiler bug") }).await;
        assert_eq!(said, Err("compiler bug".to_owned()));
        let formatted = blocking_caught(|| -> u32 { panic!("index {} out of range", 3) }).await;
        assert_eq!(formatted, Err("index 3 out of range".to_owned()));
        assert_eq!(blocking_caught(|| 7).await, Ok(7));
    }
}
