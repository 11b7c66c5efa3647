use super::GlobalOptions;
use super::output;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Write a new plugin project with one sample tool.
///
/// Write a new plugin project: the WIT, the language's helper, one sample
/// tool (named NAME, counting the words of its `text` parameter), the build
/// file and a README with the one build command. Built as the README says,
/// the component loads and its tool runs through `toolhost call` as it is.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost new words --lang rust\n  toolhost new words --lang python --dir plugins/words"
)]
pub(super) struct NewCommand {
    /// The project's name, also its plugin's and its sample tool's
    ///
    /// Lowercase letters, digits, `_` and `-`, starting with a letter.
    name: String,
    /// The language.
    #[arg(long, value_enum)]
    lang: Language,
    /// Where to write it [default: ./NAME]; must be missing or empty.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// The languages `toolhost new` writes projects in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Language {
    /// cargo and the toolhost SDK (written into the project).
    Rust,
    /// componentize-py.
    Python,
    /// componentize-qjs (QuickJS).
    Js,
    /// clang with wasi-libc, wit-bindgen c, wasm-tools.
    C,
    /// Go (wasip1, c-shared), wit-bindgen go, wasm-tools.
    Go,
}

/// The longest project name: a plugin name's limit.
const MAX_NAME_LEN: usize = 64;
/// What the build writes into; `--plugins dist` finds only the component
/// there, not the build's other `.wasm` files.
const DIST_DIR: &str = "dist";
/// The WASI preview1 adapter C and Go builds turn their module into a
/// component with; the reactor kind, for a library without `main`.
const ADAPTER_FILE: &str = "wasi_snapshot_preview1.reactor.wasm";

/// One file of a project: its path and text, `{{name}}` and `{{file}}`
/// (the name as a file name: `-` as `_`, as cargo writes it) substituted.
type Template = (&'static str, &'static str);

const RUST: &[Template] = &[
    ("Cargo.toml", include_str!("../templates/rust/Cargo.toml")),
    (".cargo/config.toml", include_str!("../templates/rust/.cargo/config.toml")),
    ("src/lib.rs", include_str!("../templates/rust/src/lib.rs")),
    ("README.md", include_str!("../templates/rust/README.md")),
    // The SDK itself, so the project builds without this repository.
    ("toolhost-sdk/Cargo.toml", include_str!("../../sdk/Cargo.toml")),
    ("toolhost-sdk/src/lib.rs", include_str!("../../sdk/src/lib.rs")),
    ("toolhost-sdk/src/args.rs", include_str!("../../sdk/src/args.rs")),
    ("toolhost-sdk/src/http.rs", include_str!("../../sdk/src/http.rs")),
    ("toolhost-sdk/src/log.rs", include_str!("../../sdk/src/log.rs")),
    ("toolhost-sdk/src/manifest.rs", include_str!("../../sdk/src/manifest.rs")),
    ("toolhost-sdk/src/output.rs", include_str!("../../sdk/src/output.rs")),
    ("toolhost-sdk/wit/plugin.wit", toolhost::contract::PLUGIN_WIT),
];
const PYTHON: &[Template] = &[
    ("app.py", include_str!("../templates/python/app.py")),
    ("toolhost.py", include_str!("../../sdk/python/toolhost.py")),
    ("README.md", include_str!("../templates/python/README.md")),
];
const JS: &[Template] = &[
    ("app.js", include_str!("../templates/js/app.js")),
    ("toolhost.js", include_str!("../../sdk/js/toolhost.js")),
    ("package.json", include_str!("../templates/js/package.json")),
    ("README.md", include_str!("../templates/js/README.md")),
];
const C: &[Template] = &[
    ("plugin.c", include_str!("../templates/c/plugin.c")),
    ("toolhost.h", include_str!("../../sdk/c/toolhost.h")),
    ("toolhost.c", include_str!("../../sdk/c/toolhost.c")),
    ("Makefile", include_str!("../templates/c/Makefile")),
    ("README.md", include_str!("../templates/c/README.md")),
];
const GO: &[Template] = &[
    ("export_wit_world/plugin.go", include_str!("../templates/go/export_wit_world/plugin.go")),
    ("toolhost/toolhost.go", include_str!("../../sdk/go/toolhost/toolhost.go")),
    ("Makefile", include_str!("../templates/go/Makefile")),
    ("README.md", include_str!("../templates/go/README.md")),
];

impl Language {
    fn templates(self) -> &'static [Template] {
        match self {
            Language::Rust => RUST,
            Language::Python => PYTHON,
            Language::Js => JS,
            Language::C => C,
            Language::Go => GO,
        }
    }

    /// Whether its build turns a core module into a component with the
    /// WASI adapter, which the project then carries.
    fn needs_adapter(self) -> bool {
        matches!(self, Language::C | Language::Go)
    }
}

impl NewCommand {
    pub(super) async fn execute(self, _global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        check_name(&self.name)?;
        let dir = self.dir.clone().unwrap_or_else(|| PathBuf::from(&self.name));
        if std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.next().is_some()) {
            bail!("{} is not empty; choose another directory with --dir", dir.display());
        }
        write_project(&dir, self.lang, &self.name).with_context(|| format!("writing the project into {}", dir.display()))?;
        output::note(format_args!(
            "wrote a {:?} plugin project in {}; its README says how to build it",
            self.lang,
            dir.display()
        ));
        Ok(ExitCode::SUCCESS)
    }
}

/// A name every toolchain and the host accept as a plugin, tool, crate,
/// npm package and file name.
fn check_name(name: &str) -> anyhow::Result<()> {
    let mut chars = name.chars();
    let first_is_letter = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_fits = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !(first_is_letter && rest_fits && name.len() <= MAX_NAME_LEN) {
        bail!(
            "`{name}` cannot name a plugin project: use lowercase letters, digits, `_` and `-`, \
             starting with a letter, at most {MAX_NAME_LEN} characters"
        );
    }
    Ok(())
}

fn write_project(dir: &Path, lang: Language, name: &str) -> std::io::Result<()> {
    let file = name.replace('-', "_");
    for (path, text) in lang.templates() {
        write(&dir.join(path), text.replace("{{name}}", name).replace("{{file}}", &file).as_bytes())?;
    }
    if lang != Language::Rust {
        toolhost::contract::write_wit(&dir.join("wit"))?;
        write(&dir.join(DIST_DIR).join(".gitignore"), b"*\n")?;
    }
    if lang.needs_adapter() {
        write(&dir.join(ADAPTER_FILE), wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER)?;
    }
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_the_rule_is_named() {
        for good in ["wordcount", "word-count", "w0_rd"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "WordCount", "1count", "word count", "../up", &"a".repeat(MAX_NAME_LEN + 1)] {
            let error = check_name(bad).unwrap_err().to_string();
            assert!(error.contains("use lowercase letters, digits, `_` and `-`, starting with a letter"), "{bad}: {error}");
        }
    }

    #[test]
    fn every_language_writes_its_sample_tool_and_a_readme_with_one_build_command() {
        for lang in [Language::Rust, Language::Python, Language::Js, Language::C, Language::Go] {
            let dir = tempfile::tempdir().unwrap();
            write_project(dir.path(), lang, "my-tool").unwrap();
            let readme = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
            assert!(!readme.contains("{{"), "{lang:?}: a placeholder is left in the README");
            let build = readme.split("## Build").nth(1).and_then(|s| s.split("```sh\n").nth(1)).unwrap_or_default();
            assert_eq!(build.split("```").next().unwrap_or_default().lines().count(), 1, "{lang:?}: {readme}");
            let wit = if lang == Language::Rust { "toolhost-sdk/wit/plugin.wit" } else { "wit/plugin.wit" };
            assert_eq!(std::fs::read_to_string(dir.path().join(wit)).unwrap(), toolhost::contract::PLUGIN_WIT, "{lang:?}");
            assert_eq!(dir.path().join(ADAPTER_FILE).exists(), lang.needs_adapter(), "{lang:?}");
            let source = std::fs::read_to_string(dir.path().join(lang.templates()[0].0)).unwrap();
            assert!(source.contains("\"my-tool\"") && !source.contains("{{name}}"), "{lang:?}: {source}");
        }
    }
}
