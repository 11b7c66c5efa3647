//! Loading: pins, API versions, name collisions, the compiled cache and
//! reloads.

use crate::built::{API_MISMATCH, CALC, CLOCK, DIRTREE, FILES, FROZEN_V0_1, HTTP_GET, IMPOSTOR, SQUATTER};
use crate::support::{Plugin, TestHost, policy_in};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost::Policy;
use toolhost::Registry;
use toolhost::registry::component_files;
use toolhost::{
    CheckedCall, Executor, Status, ToolCall, ToolSpec,
    contract::Contract,
    policy_check::check_policy,
    prompt::visible_tools,
    registry::{CacheUse, LoadError, LockFile, PinState},
};
use toolhost_support::digest::sha256_hex;

fn refusals(registry: &Registry) -> Vec<String> {
    registry.catalog().refused.iter().map(|r| r.error.to_string()).collect()
}

#[tokio::test]
async fn the_example_plugins_load_with_their_tools() {
    let host = TestHost::new(&[CALC, CLOCK, DIRTREE, FILES, HTTP_GET], "").await;
    let catalog = host.registry.catalog();
    assert!(catalog.refused.is_empty(), "{:?}", refusals(&host.registry));
    let names: Vec<&str> = catalog.plugins.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["calc", "clock", "dirtree", "files", "http_get"]);
    let (_, read_file) = catalog.tool("read_file").unwrap();
    assert!(read_file.result_approval, "read_file needs result approval");
    let (_, write_file) = catalog.tool("write_file").unwrap();
    assert!(!write_file.result_approval);
    assert_eq!(write_file.permission, toolhost::Permission::Sensitive);
}

#[tokio::test]
async fn a_component_that_does_not_compile_is_refused_alone_keeping_wasmtimes_error_as_source() {
    let host = TestHost::new(&[CALC], "").await;
    // A component's header, then a truncated section.
    std::fs::write(host.dir.path().join("plugins/broken.wasm"), b"\0asm\x0d\0\x01\0\x01\xff\xff").unwrap();
    host.registry.reload().await.unwrap();
    let catalog = host.registry.catalog();
    assert!(catalog.plugin("calc").is_some(), "the others still load");
    let [refusal] = &catalog.refused[..] else { panic!("{:?}", refusals(&host.registry)) };
    assert!(matches!(refusal.error, LoadError::Compile { .. }), "{:?}", refusal.error);
    let source = std::error::Error::source(&refusal.error).expect("wasmtime's error is kept");
    let said = toolhost_support::error_chain::error_chain(&refusal.error);
    assert!(said.starts_with("broken.wasm is not a loadable component: ") && said.contains(&source.to_string()), "{said}");
}

#[tokio::test]
async fn an_incompatible_api_version_is_refused_naming_both() {
    let host = TestHost::new(&[API_MISMATCH, CALC], "").await;
    assert_eq!(
        refusals(&host.registry),
        ["api_mismatch.wasm: plugin `api_mismatch` was built against toolhost API 9.0.0, which this host \
          (API 0.1.0) cannot load: ^9.0.0 does not admit 0.1.0"]
    );
    assert!(host.registry.catalog().plugin("calc").is_some(), "the others still load");
}

#[tokio::test]
async fn a_component_built_against_the_frozen_first_contract_loads_and_runs() {
    let host = TestHost::new(&[FROZEN_V0_1], "").await;
    assert!(refusals(&host.registry).is_empty(), "{:?}", refusals(&host.registry));
    let catalog = host.registry.catalog();
    let frozen = catalog.plugin("frozen").expect("loaded");
    assert_eq!(frozen.contract, Contract::V0_1);
    assert_eq!(frozen.contract.to_string(), "toolhost:plugin@0.1.0");
    let outcome = host.call("echo_v0_1", serde_json::json!({"a": 1})).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    assert_eq!(outcome.output, r#"0.1.0 echoes {"a":1}"#);
}

/// `wasm` with every `toolhost:plugin/INTERFACE@0.1.0` named in `renamed`
/// moved to `@0.9.0`: the same length, so the component stays well formed.
fn built_against(wasm: &[u8], renamed: &[&str]) -> Vec<u8> {
    let mut wasm = wasm.to_vec();
    for interface in renamed {
        let (from, to) = (format!("toolhost:plugin/{interface}@0.1.0"), format!("toolhost:plugin/{interface}@0.9.0"));
        let mut at = 0;
        while let Some(found) = wasm[at..].windows(from.len()).position(|w| w == from.as_bytes()) {
            wasm[at + found..at + found + to.len()].copy_from_slice(to.as_bytes());
            at += found + to.len();
        }
    }
    wasm
}

#[tokio::test]
async fn a_component_built_against_a_contract_the_host_does_not_run_is_refused_naming_it() {
    let host = TestHost::new(&[CALC], "").await;
    let frozen = std::fs::read(FROZEN_V0_1.path()).unwrap();
    let plugins = host.dir.path().join("plugins");
    std::fs::write(plugins.join("newer.wasm"), built_against(&frozen, &["host", "types"])).unwrap();
    std::fs::write(plugins.join("mixed.wasm"), built_against(&frozen, &["host"])).unwrap();
    host.registry.reload().await.unwrap();
    let catalog = host.registry.catalog();
    assert!(catalog.refused.iter().all(|r| matches!(r.error, LoadError::Contract { .. })), "{:?}", refusals(&host.registry));
    assert_eq!(
        refusals(&host.registry),
        [
            "mixed.wasm is refused: it imports `toolhost:plugin` at more than one version (0.1.0, 0.9.0); build it against one",
            "newer.wasm is refused: it was built against toolhost:plugin@0.9.0, which this host does not run (it runs 0.1.0); \
             update toolhost, or build the plugin against the contract `toolhost wit` writes",
        ]
    );
    assert!(catalog.plugin("calc").is_some(), "the others still load");
}

#[tokio::test]
async fn a_tool_name_collision_refuses_every_plugin_declaring_it_naming_them() {
    let host = TestHost::new(&[CALC, IMPOSTOR, CLOCK], "").await;
    assert_eq!(
        refusals(&host.registry),
        [
            "plugins/calc.wasm is refused: tool `calculate` of plugin `calc` is also offered by plugin `impostor` \
             (plugins/impostor.wasm); every plugin offering one tool name is refused (remove the one you do not \
             trust, or rename the tool in [plugins.calc] with `rename` or `tool_prefix`)",
            "plugins/impostor.wasm is refused: tool `calculate` of plugin `impostor` is also offered by plugin `calc` \
             (plugins/calc.wasm); every plugin offering one tool name is refused (remove the one you do not \
             trust, or rename the tool in [plugins.impostor] with `rename` or `tool_prefix`)",
        ]
    );
    let catalog = host.registry.catalog();
    assert!(catalog.tool("calculate").is_none(), "no plugin gets the contested name");
    assert!(catalog.tool("convert_time").is_some(), "the others still load");
}

#[tokio::test]
async fn components_claiming_one_plugin_name_are_all_refused_whatever_their_order() {
    let host = TestHost::new(&[FILES], "").await;
    let plugins = host.dir.path().join("plugins");
    // Sorting before and after the genuine file: neither order wins.
    for squatter in ["00_files_update.wasm", "zz_files.wasm"] {
        std::fs::copy(SQUATTER.path(), plugins.join(squatter)).unwrap();
        host.registry.reload().await.unwrap();
        let catalog = host.registry.catalog();
        assert!(catalog.plugin("files").is_none(), "{squatter}: a plugin named `files` loaded");
        let refused = refusals(&host.registry);
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(
            refused.contains(&format!(
                "plugins/files.wasm is refused: it claims plugin name `files`, as plugins/{squatter} also does; \
                 every component claiming one name is refused (remove the one you do not trust)"
            )),
            "{refused:?}"
        );
        let claim = format!("plugins/{squatter} is refused: it claims plugin name `files`, as plugins/files.wasm also does");
        assert!(refused.iter().any(|r| r.starts_with(&claim)), "{refused:?}");
        std::fs::remove_file(plugins.join(squatter)).unwrap();
    }
    host.registry.reload().await.unwrap();
    assert!(host.registry.catalog().plugin("files").is_some(), "alone again, the genuine plugin loads");
}

/// `calc` as `plugins/calc.wasm` and `impostor`, which declares `calculate`
/// too, as `more/calc.wasm`: one tool name, and one file name, in two plugin
/// directories, loaded under `policy`. (One registry at a time: each
/// reserves terabytes of address space.)
async fn two_calculates(policy: &str) -> (tempfile::TempDir, Arc<Registry>) {
    let dir = tempfile::tempdir().unwrap();
    for (plugins, component) in [("plugins", CALC), ("more", IMPOSTOR)] {
        std::fs::create_dir(dir.path().join(plugins)).unwrap();
        std::fs::copy(component.path(), dir.path().join(plugins).join("calc.wasm")).unwrap();
    }
    let mut policy = policy_in(dir.path(), policy);
    policy.plugin_dirs.push(dir.path().join("more"));
    let registry = Arc::new(Registry::load(policy).await.unwrap());
    (dir, registry)
}

/// `tool` on `6*7` through `registry`: the outcome's status and output.
async fn calculate(registry: &Arc<Registry>, tool: &str) -> (Status, String) {
    let args = serde_json::json!({ "expression": "6*7" }).as_object().unwrap().clone();
    let outcome = Executor::new(registry.clone()).call(&ToolCall::new("1", tool, args)).await;
    (outcome.status, outcome.output)
}

/// What `impostor` answers to every call.
const IMPOSTORS_ANSWER: (Status, &str) = (Status::Success, "not really");

#[tokio::test]
async fn one_tool_name_in_two_directories_refuses_both_naming_each_by_its_path() {
    let (_dir, registry) = two_calculates("").await;
    assert_eq!(
        refusals(&registry),
        [
            "plugins/calc.wasm is refused: tool `calculate` of plugin `calc` is also offered by plugin `impostor` \
             (more/calc.wasm); every plugin offering one tool name is refused (remove the one you do not trust, \
             or rename the tool in [plugins.calc] with `rename` or `tool_prefix`)",
            "more/calc.wasm is refused: tool `calculate` of plugin `impostor` is also offered by plugin `calc` \
             (plugins/calc.wasm); every plugin offering one tool name is refused (remove the one you do not trust, \
             or rename the tool in [plugins.impostor] with `rename` or `tool_prefix`)",
        ]
    );
}

#[tokio::test]
async fn a_renamed_tool_is_known_by_its_new_name_and_its_plugin_is_called_by_its_own() {
    let policy = "[plugins.calc]\nrename = { calculate = \"misc_calculate\" }\n\
                  [agents.coder]\nenabled = true\ntool_toggles = { calculate = false }\n";
    let (dir, registry) = two_calculates(policy).await;
    assert!(refusals(&registry).is_empty(), "{:?}", refusals(&registry));
    let catalog = registry.catalog();
    let (calc, spec) = catalog.tool("misc_calculate").unwrap();
    assert_eq!((calc.name(), calc.declared_name(&spec.name)), ("calc", "calculate"));
    // calc answers only to the name it declares: its result shows it was
    // called `calculate`.
    let (status, output) = calculate(&registry, "misc_calculate").await;
    assert_eq!(status, Status::Success, "{output}");
    assert!(output.contains("42"), "{output}");
    assert_eq!(
        calculate(&registry, "calculate").await,
        (IMPOSTORS_ANSWER.0, IMPOSTORS_ANSWER.1.into()),
        "the old name is the other plugin's"
    );
    let offered: Vec<&str> = visible_tools(&catalog, &Policy::load(&dir.path().join("toolhost.toml")).unwrap().agents["coder"])
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(offered, ["misc_calculate"], "a toggle names the tool as the host knows it");
}

#[tokio::test]
async fn a_tool_prefix_renames_every_tool_of_its_plugin() {
    let (_dir, registry) = two_calculates("[plugins.impostor]\ntool_prefix = \"fake_\"\n").await;
    assert!(refusals(&registry).is_empty(), "{:?}", refusals(&registry));
    assert_eq!(calculate(&registry, "fake_calculate").await, (IMPOSTORS_ANSWER.0, IMPOSTORS_ANSWER.1.into()));
    let (status, output) = calculate(&registry, "calculate").await;
    assert!(status == Status::Success && output.contains("42"), "{status:?}: {output}");
}

#[tokio::test]
async fn a_new_name_that_cannot_be_is_refused_naming_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("toolhost.toml");
    std::fs::write(&file, "[plugins.calc]\nrename = { calculate = \"[calculate(\" }\n").unwrap();
    let error = Policy::load(&file).unwrap_err().to_string();
    assert!(
        error.ends_with(
            "plugins.calc.rename.calculate = \"[calculate(\" is invalid: a tool name must match ^[A-Za-z0-9_-]{1,64}$, \
             as a declared one does"
        ),
        "{error}"
    );

    let prefix = "p".repeat(60);
    let (_dir, registry) = two_calculates(&format!("[plugins.calc]\ntool_prefix = \"{prefix}\"\n")).await;
    assert_eq!(
        refusals(&registry),
        [format!(
            "plugins/calc.wasm is refused: plugins.calc.tool_prefix gives its tool `calculate` the name \
             `{prefix}calculate`, which is longer than a tool name may be (64 bytes)"
        )]
    );
    assert_eq!(
        calculate(&registry, "calculate").await,
        (IMPOSTORS_ANSWER.0, IMPOSTORS_ANSWER.1.into()),
        "the other plugin loads"
    );
    drop(registry);

    // Renamed into another plugin's name: a collision, which says so.
    let policy = "[plugins.calc]\nrename = { calculate = \"fake_calculate\" }\n[plugins.impostor]\ntool_prefix = \"fake_\"\n";
    let (_dir, registry) = two_calculates(policy).await;
    let refused = refusals(&registry);
    assert!(
        refused[0].starts_with(
            "plugins/calc.wasm is refused: tool `fake_calculate` (renamed from `calculate`) of plugin `calc` is also \
             offered by plugin `impostor` (more/calc.wasm)"
        ),
        "{refused:?}"
    );
    assert_eq!(refused.len(), 2, "{refused:?}");
}

#[tokio::test]
async fn a_rename_of_no_tool_is_warned_about_with_the_closest_name() {
    let host = TestHost::new(&[CALC], "[plugins.calc]\nrename = { calculate = \"misc_calculate\", calculat = \"x\" }\n").await;
    let warnings: Vec<String> = check_policy(&host.config, &host.registry.catalog()).iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        ["plugins.calc.rename.calculat: the plugin declares no tool `calculat`, so the rename does nothing \
          (it declares calculate); did you mean `calculate`?"]
    );
}

#[tokio::test]
async fn a_pin_mismatch_refuses_the_plugin_and_prints_both_hashes() {
    let host = TestHost::new(&[CALC, CLOCK], "").await;
    let calc = sha256_hex(&std::fs::read(CALC.path()).unwrap());
    let wrong = "0".repeat(64);
    host.write_lock(&[("calc.wasm", &calc), ("clock.wasm", &wrong)]);
    let clock = sha256_hex(&std::fs::read(CLOCK.path()).unwrap());
    let registry = Registry::load(host.policy("")).await.unwrap();
    assert_eq!(
        refusals(&registry),
        [format!("plugins/clock.wasm does not match its pin: pinned sha256:{wrong}, found sha256:{clock}")]
    );
    assert!(registry.catalog().plugin("calc").is_some());
}

#[tokio::test]
async fn an_unpinned_plugin_is_refused_once_a_lock_file_exists() {
    let host = TestHost::new(&[CALC, CLOCK], "").await;
    let calc = sha256_hex(&std::fs::read(CALC.path()).unwrap());
    host.write_lock(&[("calc.wasm", &calc)]);
    let registry = Registry::load(host.policy("")).await.unwrap();
    let refused = refusals(&registry);
    assert_eq!(refused.len(), 1);
    assert!(refused[0].starts_with("plugins/clock.wasm is not pinned in "), "{refused:?}");
    assert!(matches!(registry.catalog().refused[0].error, LoadError::NotPinned { .. }));
}

#[tokio::test]
async fn one_file_name_in_two_plugin_directories_has_a_pin_of_its_own() {
    let host = TestHost::new(&[CALC], "").await;
    let more = host.dir.path().join("more");
    std::fs::create_dir(&more).unwrap();
    std::fs::copy(CLOCK.path(), more.join("calc.wasm")).unwrap();
    let mut policy = host.policy("");
    policy.plugin_dirs.push(more.clone());
    let pins = component_files(&policy.plugin_dirs)
        .unwrap()
        .into_iter()
        .map(|path| (LockFile::key(&policy.lock_file, &path), sha256_hex(&std::fs::read(&path).unwrap())));
    LockFile::new(pins).write(&policy.lock_file).unwrap();

    let registry = Registry::load(policy).await.unwrap();
    assert!(refusals(&registry).is_empty(), "{:?}", refusals(&registry));
    let catalog = registry.catalog();
    assert!(catalog.plugins.iter().all(|p| p.pin == PinState::Matches));
    assert!(catalog.tool("calculate").is_some() && catalog.tool("convert_time").is_some());

    std::fs::copy(DIRTREE.path(), more.join("calc.wasm")).unwrap();
    registry.reload().await.unwrap();
    let refused = refusals(&registry);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].starts_with("more/calc.wasm does not match its pin"), "{refused:?}");
    assert!(registry.catalog().tool("calculate").is_some(), "the other calc.wasm keeps its own pin");
}

#[tokio::test]
async fn the_compiled_cache_is_reused_and_recovers_from_bad_files() {
    let host = TestHost::new(&[CALC, CLOCK], "").await;
    let cache = tempfile::tempdir().unwrap();
    let mut policy = host.policy("");
    policy.cache_dir = Some(cache.path().to_owned());
    let uses = |registry: &Registry| -> Vec<CacheUse> { registry.catalog().plugins.iter().map(|p| p.cache.clone()).collect() };

    let cold = Registry::load(policy.clone()).await.unwrap();
    assert_eq!(uses(&cold), [CacheUse::Compiled, CacheUse::Compiled]);
    let warm = Registry::load(policy.clone()).await.unwrap();
    assert_eq!(uses(&warm), [CacheUse::Hit, CacheUse::Hit]);

    let files = artifacts_in(cache.path());
    assert_eq!(files.len(), 2, "one artifact per component");
    assert_eq!(files_in(cache.path()).len(), 4, "and one manifest, no temporary files left");
    let truncated = std::fs::read(&files[0]).unwrap();
    std::fs::write(&files[0], &truncated[..truncated.len() / 2]).unwrap();
    std::fs::write(&files[1], b"not a cache file at all").unwrap();
    // In place, under a registry that loaded them: it keeps its own copy
    // of the code (a mapped file would now kill the process with SIGBUS).
    let warm = std::sync::Arc::new(warm);
    let call = toolhost::ToolCall::new("1", "calculate", serde_json::json!({ "expression": "6*7" }).as_object().unwrap().clone());
    let outcome = toolhost::Executor::new(warm).call(&call).await;
    assert!(outcome.output.contains("42"), "{}", outcome.output);

    let recovered = Registry::load(policy.clone()).await.unwrap();
    for use_ in uses(&recovered) {
        let CacheUse::Recovered(why) = use_ else { panic!("expected a recompile, got {use_:?}") };
        assert!(why.contains("its MAC does not match") || why.contains("is not a toolhost cache file"), "{why}");
    }
    let recovered = std::sync::Arc::new(recovered);
    let outcome = toolhost::Executor::new(recovered).call(&call).await;
    assert!(outcome.output.contains("42"), "{}", outcome.output);
    let again = Registry::load(policy).await.unwrap();
    assert_eq!(uses(&again), [CacheUse::Hit, CacheUse::Hit], "the recompiled artifacts were stored");
}

#[tokio::test]
async fn a_cache_file_that_cannot_be_read_or_written_costs_only_its_component_the_cache() {
    let host = TestHost::new(&[CALC, CLOCK], "").await;
    let cache = tempfile::tempdir().unwrap();
    let mut policy = host.policy("");
    policy.cache_dir = Some(cache.path().to_owned());
    Registry::load(policy.clone()).await.unwrap();
    let files = artifacts_in(cache.path());
    // A directory where one artifact was: neither read nor replaced.
    std::fs::remove_file(&files[0]).unwrap();
    std::fs::create_dir(&files[0]).unwrap();

    let registry = Registry::load(policy).await.unwrap();
    let catalog = registry.catalog();
    assert!(catalog.refused.is_empty(), "{:?}", refusals(&registry));
    let mut uses: Vec<CacheUse> = catalog.plugins.iter().map(|p| p.cache.clone()).collect();
    uses.sort_by_key(|use_| *use_ != CacheUse::Hit);
    assert_eq!(uses.len(), 2);
    assert_eq!(uses[0], CacheUse::Hit, "the other component still comes from the cache");
    let CacheUse::NotStored(why) = &uses[1] else { panic!("{:?}", uses[1]) };
    let entry = files[0].display().to_string();
    assert!(
        why.contains(&format!("unreadable cache file {entry}")) && why.contains(&format!("cannot write cache file {entry}")),
        "{why}"
    );
    let call = ToolCall::new("1", "calculate", serde_json::json!({ "expression": "6*7" }).as_object().unwrap().clone());
    let outcome = Executor::new(Arc::new(registry)).call(&call).await;
    assert!(outcome.output.contains("42"), "{}", outcome.output);
}

/// How long the test below waits before it stops waiting for the load and
/// feeds the cache file itself: far longer than a load takes.
const RESCUE_AFTER: std::time::Duration = std::time::Duration::from_secs(20);

/// Loading reads and compiles on blocking threads, so the runtime's own
/// threads keep serving other tasks. The compiled-cache file is made a
/// FIFO, so reading it waits for a writer; on a current-thread runtime the
/// writer is a task on the runtime's one thread, which can run only if the
/// load leaves that thread free. Otherwise a watchdog thread writes,
/// and the test fails.
#[test]
fn loading_reads_and_compiles_off_the_runtime_thread() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::copy(CALC.path(), dir.path().join("plugins/calc.wasm")).unwrap();
    let mut policy = policy_in(dir.path(), "");
    let cache = dir.path().join("cache");
    policy.cache_dir = Some(cache.clone());
    runtime.block_on(Registry::load(policy.clone())).unwrap();
    let entry = only_artifact(&cache);
    std::fs::remove_file(&entry).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&entry).status().unwrap().success());

    let (done, finished) = std::sync::mpsc::channel::<()>();
    let fifo = entry.clone();
    let watchdog = std::thread::spawn(move || {
        let rescued = finished.recv_timeout(RESCUE_AFTER).is_err();
        if rescued {
            std::fs::write(&fifo, b"written by the watchdog").unwrap();
        }
        rescued
    });
    let registry = runtime.block_on(async {
        let feeder = tokio::spawn(feed_fifo(entry.clone()));
        let registry = Registry::load(policy).await.unwrap();
        // Done, or waiting for a reader that came and went: not needed now.
        feeder.abort();
        registry
    });
    // After a rescue the watchdog no longer listens.
    let _ = done.send(());
    assert!(!watchdog.join().unwrap(), "the load held the runtime's thread while it read the cache file");
    let CacheUse::Recovered(why) = &registry.catalog().plugins[0].cache else { panic!("the FIFO was not read") };
    assert!(why.contains("is not a toolhost cache file"), "{why}");
}

/// Write to the FIFO at `path` once a reader has it open, without ever
/// blocking the runtime's thread.
async fn feed_fifo(path: std::path::PathBuf) {
    use rustix::fs::{Mode, OFlags};
    loop {
        // Without a reader, a non-blocking open for writing fails (ENXIO).
        match rustix::fs::open(&path, OFlags::WRONLY | OFlags::NONBLOCK, Mode::empty()) {
            Ok(fd) => {
                std::io::Write::write_all(&mut std::fs::File::from(fd), b"written by a task").unwrap();
                return;
            }
            Err(rustix::io::Errno::NXIO) => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
            Err(e) => panic!("opening {}: {e}", path.display()),
        }
    }
}

/// The files in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// The compiled artifacts in `dir`, sorted.
fn artifacts_in(dir: &Path) -> Vec<PathBuf> {
    files_in(dir).into_iter().filter(|file| file.extension().is_some_and(|e| e == "cwasm")).collect()
}

/// The one compiled artifact in `dir`.
fn only_artifact(dir: &Path) -> PathBuf {
    let files = artifacts_in(dir);
    let [file] = &files[..] else { panic!("one artifact expected in {}: {files:?}", dir.display()) };
    file.clone()
}

/// A host over the one plugin `name`, with a compiled cache and a cache key
/// of its own, loaded once so the cache holds its artifact; and that file.
async fn cached_alone(plugin: Plugin) -> (TestHost, Policy, PathBuf) {
    let host = TestHost::new(&[plugin], "").await;
    let mut policy = host.policy("");
    policy.cache_dir = Some(host.dir.path().join("cache"));
    policy.cache_key = Some(host.dir.path().join("state/cache.key"));
    Registry::load(policy.clone()).await.unwrap();
    let entry = only_artifact(&host.dir.path().join("cache"));
    (host, policy, entry)
}

#[tokio::test]
async fn a_forged_cache_entry_with_a_valid_plain_sha256_is_recompiled_not_loaded() {
    let (_calc, policy, entry) = cached_alone(CALC).await;
    let (_clock, _, clock_entry) = cached_alone(CLOCK).await;
    // Clock's native code in calc's place, under a genuine header and a
    // correct plain SHA-256 where the MAC goes.
    let (header, clock_file) = (std::fs::read(&entry).unwrap(), std::fs::read(&clock_entry).unwrap());
    let code = &clock_file[HEADER_BYTES..];
    let checksum = sha256_hex(code);
    let forged = [&header[..MAGIC_BYTES], &hex_bytes(&checksum), code].concat();
    std::fs::write(&entry, forged).unwrap();

    let registry = Registry::load(policy.clone()).await.unwrap();
    let catalog = registry.catalog();
    assert_eq!(catalog.plugins[0].name(), "calc", "the forged artifact was loaded in calc's place");
    let CacheUse::Recovered(why) = &catalog.plugins[0].cache else { panic!("{:?}", catalog.plugins[0].cache) };
    assert!(why.contains("failed authentication: its MAC does not match this user's cache key"), "{why}");
    assert!(calc_on(registry).await.contains("42"));
    let again = Registry::load(policy).await.unwrap();
    assert_eq!(again.catalog().plugins[0].cache, CacheUse::Hit, "the recompiled artifact replaced the forgery");
}

/// The first bytes of a manifest file, before its MAC.
const MANIFEST_MAGIC: &[u8] = b"toolhost-mfst2\n\n";

/// A manifest file for the cache entry `artifact`, holding `body` (the
/// component's SHA-256 in hex, then the manifest's JSON), with the MAC the
/// host makes under `key`: over the layout, the version that read it (the
/// workspace's, as this crate's) and the entry's id, its file name.
fn manifest_file(artifact: &Path, key: &[u8; 32], body: &[u8]) -> Vec<u8> {
    let id = hex_bytes(artifact.file_stem().unwrap().to_str().unwrap());
    let mut mac = blake3::Hasher::new_keyed(key);
    mac.update(MANIFEST_MAGIC).update(env!("CARGO_PKG_VERSION").as_bytes()).update(&id).update(body);
    let mac = mac.finalize();
    [MANIFEST_MAGIC, mac.as_bytes(), body].concat()
}

#[tokio::test]
async fn a_warm_load_takes_the_kept_manifest_and_refuses_one_not_made_under_the_key() {
    let (_host, policy, artifact) = cached_alone(CALC).await;
    let manifest = artifact.with_extension("manifest");
    let kept = std::fs::read(&manifest).expect("the cold load kept the guest's manifest");
    let body = &kept[MANIFEST_MAGIC.len() + 32..];
    let description = |registry: &Registry| registry.catalog().tool("calculate").unwrap().1.description.clone();
    let original = description(&Registry::load(policy.clone()).await.unwrap());
    let changed = String::from_utf8(body.to_vec()).unwrap().replace(&original, "kept beside the artifact");
    assert_ne!(changed.as_bytes(), body, "the manifest file holds the tool's description");

    // Made under the user's key, as the host makes them: a warm load reads
    // it and does not ask the guest.
    let key: [u8; 32] = std::fs::read(policy.cache_key.as_ref().unwrap()).unwrap().try_into().unwrap();
    std::fs::write(&manifest, manifest_file(&artifact, &key, changed.as_bytes())).unwrap();
    let warm = Registry::load(policy.clone()).await.unwrap();
    assert_eq!(warm.catalog().plugins[0].cache, CacheUse::Hit);
    assert_eq!(description(&warm), "kept beside the artifact");

    // The same change under a plain hash, or under another key, or another
    // component's manifest: the guest is asked again, and its answer kept.
    let forgeries = [
        [MANIFEST_MAGIC, blake3::hash(changed.as_bytes()).as_bytes(), changed.as_bytes()].concat(),
        manifest_file(&artifact, &[7; 32], changed.as_bytes()),
        manifest_file(&artifact.with_file_name("00".repeat(32) + ".cwasm"), &key, changed.as_bytes()),
        {
            // Under the key, but as another version would have kept it.
            let id = hex_bytes(artifact.file_stem().unwrap().to_str().unwrap());
            let mut mac = blake3::Hasher::new_keyed(&key);
            mac.update(MANIFEST_MAGIC).update(b"0.0.0").update(&id).update(changed.as_bytes());
            [MANIFEST_MAGIC, mac.finalize().as_bytes(), changed.as_bytes()].concat()
        },
        b"toolhost-mfst2\n\nshort".to_vec(),
    ];
    for forged in forgeries {
        std::fs::write(&manifest, forged).unwrap();
        assert_eq!(description(&Registry::load(policy.clone()).await.unwrap()), original);
        assert_eq!(std::fs::read(&manifest).unwrap(), kept, "the guest's own manifest replaced the forgery");
    }
}

#[tokio::test]
async fn a_warm_load_pins_by_the_sha256_kept_beside_the_artifact() {
    let (host, policy, artifact) = cached_alone(CALC).await;
    let calc = sha256_hex(&std::fs::read(CALC.path()).unwrap());
    let kept = std::fs::read(artifact.with_extension("manifest")).unwrap();
    assert_eq!(&kept[MANIFEST_MAGIC.len() + 32..][..64], calc.as_bytes(), "the manifest file keeps the component's SHA-256");

    host.write_lock(&[("calc.wasm", &calc)]);
    let pinned = Registry::load(policy.clone()).await.unwrap().catalog();
    let plugin = pinned.plugin("calc").expect("a matching pin loads");
    assert_eq!((&plugin.cache, &plugin.pin, plugin.sha256.as_str()), (&CacheUse::Hit, &PinState::Matches, calc.as_str()));

    // Under the key, a kept SHA-256 is the one the lock is checked against.
    let other = "ab".repeat(32);
    let key: [u8; 32] = std::fs::read(policy.cache_key.as_ref().unwrap()).unwrap().try_into().unwrap();
    let body = [other.as_bytes(), &kept[MANIFEST_MAGIC.len() + 32 + 64..]].concat();
    std::fs::write(artifact.with_extension("manifest"), manifest_file(&artifact, &key, &body)).unwrap();
    let registry = Registry::load(policy.clone()).await.unwrap();
    assert_eq!(
        refusals(&registry),
        [format!("plugins/calc.wasm does not match its pin: pinned sha256:{calc}, found sha256:{other}")]
    );

    // Another component in calc's place has another entry: its own digest
    // is computed and checked.
    std::fs::copy(CLOCK.path(), host.dir.path().join("plugins/calc.wasm")).unwrap();
    let clock = sha256_hex(&std::fs::read(CLOCK.path()).unwrap());
    let registry = Registry::load(policy).await.unwrap();
    assert_eq!(
        refusals(&registry),
        [format!("plugins/calc.wasm does not match its pin: pinned sha256:{calc}, found sha256:{clock}")]
    );
}

#[tokio::test]
async fn a_cache_written_under_another_key_is_recompiled() {
    let (_host, policy, _) = cached_alone(CALC).await;
    std::fs::remove_file(policy.cache_key.as_ref().unwrap()).unwrap();
    let registry = Registry::load(policy).await.unwrap();
    let CacheUse::Recovered(why) = &registry.catalog().plugins[0].cache else { panic!("a foreign file was loaded") };
    assert!(why.contains("its MAC does not match"), "{why}");
}

#[tokio::test]
async fn cache_files_swapped_between_components_are_recompiled() {
    let host = TestHost::new(&[CALC, CLOCK], "").await;
    let mut policy = host.policy("");
    policy.cache_dir = Some(host.dir.path().join("cache"));
    Registry::load(policy.clone()).await.unwrap();
    let files = artifacts_in(&host.dir.path().join("cache"));
    let [a, b] = &files[..] else { panic!("two cache files expected: {files:?}") };
    let (a_bytes, b_bytes) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    std::fs::write(a, b_bytes).unwrap();
    std::fs::write(b, a_bytes).unwrap();

    let catalog = Registry::load(policy).await.unwrap().catalog();
    let names: Vec<&str> = catalog.plugins.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["calc", "clock"], "each component runs its own code");
    for plugin in &catalog.plugins {
        let CacheUse::Recovered(why) = &plugin.cache else { panic!("{}: {:?}", plugin.name(), plugin.cache) };
        assert!(why.contains("its MAC does not match"), "{why}");
    }
}

#[test]
fn a_cache_directory_others_may_write_is_refused_naming_it_its_owner_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o775)).unwrap();
    let mut policy = policy_in(dir.path(), "");
    policy.cache_dir = Some(cache.clone());
    let error = Registry::new(policy).err().expect("a group-writable cache directory is refused");
    let owner = std::fs::metadata(&cache).unwrap().uid();
    assert_eq!(
        error.to_string(),
        format!(
            "cache directory {cache} (owner uid {owner}, mode 0775) is writable by group or others, who could make \
             toolhost run their code; run `chmod go-w {cache}`, or set cache_dir to a directory of your own",
            cache = cache.display()
        )
    );
}

#[test]
fn the_cache_key_is_made_once_readable_by_its_owner_alone_and_refused_when_it_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, key) = (dir.path().join("new/cache"), dir.path().join("state/toolhost/cache.key"));
    let mut policy = policy_in(dir.path(), "");
    (policy.cache_dir, policy.cache_key) = (Some(cache.clone()), Some(key.clone()));
    let mode = |path: &Path| std::fs::metadata(path).unwrap().mode() & 0o777;
    Registry::new(policy.clone()).unwrap();
    assert_eq!(mode(&cache), 0o700, "a new cache directory is the user's alone");
    assert_eq!(mode(&key), 0o600);
    let secret = std::fs::read(&key).unwrap();
    assert_eq!(secret.len(), 32);
    Registry::new(policy.clone()).unwrap();
    assert_eq!(std::fs::read(&key).unwrap(), secret, "the key is made once");

    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
    let error = Registry::new(policy).err().expect("a key others can read is refused").to_string();
    let owner = std::fs::metadata(&key).unwrap().uid();
    let expected = format!("cache key file {} (owner uid {owner}, mode 0640) is open to group or others", key.display());
    assert!(error.starts_with(&expected), "{error}");
}

/// The header of a cache file: its magic line, then a 32-byte tag.
const MAGIC_BYTES: usize = 16;
const HEADER_BYTES: usize = MAGIC_BYTES + 32;

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

/// `calculate` on `6*7` through a bare registry, returning the output.
async fn calc_on(registry: Registry) -> String {
    calculate(&Arc::new(registry), "calculate").await.1
}

#[tokio::test]
async fn reload_picks_up_added_changed_and_removed_components() {
    let host = TestHost::new(&[CALC], "").await;
    let mut events = host.registry.subscribe();
    let plugins = host.dir.path().join("plugins");
    assert_eq!(host.registry.catalog().generation, 1);

    std::fs::copy(CLOCK.path(), plugins.join("clock.wasm")).unwrap();
    let added = host.registry.reload().await.unwrap();
    assert_eq!(added.added, ["clock.wasm"]);
    assert_eq!(events.recv().await.unwrap(), added, "subscribers hear of it");
    assert!(host.registry.catalog().tool("convert_time").is_some());

    // The same name with other bytes: dirtree's component under calc's name.
    std::fs::copy(DIRTREE.path(), plugins.join("calc.wasm")).unwrap();
    let changed = host.registry.reload().await.unwrap();
    assert_eq!(changed.changed, ["calc.wasm"]);
    let catalog = host.registry.catalog();
    assert!(catalog.tool("calculate").is_none());
    assert!(catalog.tool("dir_tree").is_some());

    std::fs::remove_file(plugins.join("clock.wasm")).unwrap();
    let removed = host.registry.reload().await.unwrap();
    assert_eq!(removed.removed, ["clock.wasm"]);
    assert_eq!(removed.generation, 4);
    assert!(host.registry.catalog().tool("convert_time").is_none());
}

#[tokio::test]
async fn a_call_is_checked_only_against_its_catalogs_own_declaration() {
    let host = TestHost::new(&[CALC], "").await;
    let catalog = host.registry.catalog();
    let (_, own) = catalog.tool("calculate").unwrap();
    // A declaration of the same name from elsewhere, asking for nothing.
    let stranger = ToolSpec::new("calculate", "calc", "a stranger's declaration");
    let call = ToolCall::new("1", "calculate", serde_json::json!({}));
    let refused = CheckedCall::check_among(&call, &catalog, &[&stranger]).expect_err("not this catalog's tool");
    assert!(refused.unknown_tool, "{refused}");
    let refused = CheckedCall::check_among(&call, &catalog, &[&stranger, own]).expect_err("checked against its own");
    assert!(!refused.unknown_tool && refused.message.contains("expression"), "{refused}");
    // A declaration of a tool the catalog does not have at all.
    let nowhere = ToolSpec::new("nowhere", "calc", "no plugin's");
    let call = ToolCall::new("3", "nowhere", serde_json::json!({}));
    assert!(CheckedCall::check_among(&call, &catalog, &[&nowhere]).expect_err("not loaded").unknown_tool);
    let call = ToolCall::new("2", "calculate", serde_json::json!({ "expression": "6*7" }));
    let checked = CheckedCall::check_among(&call, &catalog, &[&stranger, own]).unwrap();
    assert!(std::ptr::eq(checked.spec(), own));
}

/// A component file is read as the lock file and `toolhost add` read
/// theirs: a FIFO put where a component was (between the directory's
/// listing and the read) is refused without waiting for a writer, and a
/// file larger than any component toolhost takes is refused unread.
#[test]
fn a_fifo_or_a_huge_file_in_place_of_a_component_is_refused_unread() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::copy(CALC.path(), dir.path().join("plugins/calc.wasm")).unwrap();
    let registry = runtime.block_on(Registry::load(policy_in(dir.path(), ""))).unwrap();
    let fifo = dir.path().join("swapped.wasm");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let huge = dir.path().join("huge.wasm");
    std::fs::File::create(&huge).unwrap().set_len(toolhost::registry::MAX_COMPONENT_BYTES + 1).unwrap();
    let refusals = runtime.block_on(async {
        let mut refusals = Vec::new();
        for path in [&fifo, &huge] {
            let inspected = tokio::time::timeout(std::time::Duration::from_secs(20), registry.inspect(path)).await;
            let Ok(Err(error)) = inspected else { panic!("{}: not refused in time", path.display()) };
            refusals.push(error.to_string());
        }
        refusals
    });
    // A read stuck on the FIFO would hold the runtime's shutdown.
    runtime.shutdown_background();
    assert!(refusals[0].contains("is a FIFO, not a regular file; it was not read"), "{}", refusals[0]);
    assert!(refusals[1].contains("larger than"), "{}", refusals[1]);
}
