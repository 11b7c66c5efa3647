//! The modules of each crate form layers: no import cycle between the
//! top-level modules of a crate, nor between the modules inside any module
//! (`sandbox::call` and `sandbox::linking`), read from the source
//! (`crate::…` paths, and `super::…` ones that reach the module holding
//! them, outside unit tests).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each module inside the one whose sources are in `src` (the crate's
/// root, or a module's folder), and the other modules beside it that its
/// code names; `prefix` is the holder's path from the crate's root
/// (`crate::` or `crate::sandbox::`).
fn imports(src: &Path, prefix: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap().map(Result::unwrap) {
        let path = entry.path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if ["lib", "main", "mod"].contains(&name.as_str()) {
            continue;
        }
        files.entry(name).or_default().extend(rust_files(&path));
    }
    let modules: BTreeSet<String> = files.keys().cloned().collect();
    let reexported = reexports(src, &modules);
    files
        .iter()
        .map(|(module, paths)| {
            let named = paths
                .iter()
                .flat_map(|path| {
                    named_modules(&without_unit_tests(&std::fs::read_to_string(path).unwrap()), depth(src, path), prefix)
                })
                .map(|name| reexported.get(&name).cloned().unwrap_or(name))
                .filter(|name| name != module && modules.contains(name))
                .collect();
            (module.clone(), named)
        })
        .collect()
}

/// The names the holder in `src` takes from its own modules with `use`
/// (`pub use limits::{Limits, MAX}`), each with the module it comes from:
/// a module that names `super::Limits` depends on `limits`.
fn reexports(src: &Path, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let holder = ["lib.rs", "main.rs", "mod.rs"].iter().map(|file| src.join(file)).find(|file| file.is_file());
    let Some(holder) = holder else { return BTreeMap::new() };
    let code = without_unit_tests(&std::fs::read_to_string(holder).unwrap());
    let ident = |text: &str| text.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut names = BTreeMap::new();
    for (at, _) in code.match_indices("use ") {
        if code[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let statement = &code[at + 4..];
        let statement = &statement[..statement.find(';').unwrap_or(statement.len())];
        let path = statement.trim().trim_start_matches("self::");
        let module = ident(path);
        if !modules.contains(&module) {
            continue;
        }
        let rest = &path[module.len()..];
        let words = rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|word| !word.is_empty());
        for word in words.filter(|word| !["self", "as", "super", "crate"].contains(word) && !modules.contains(*word)) {
            names.insert(word.to_owned(), module.clone());
        }
    }
    names
}

/// How deep in the crate the module in `file` is: 1 for `src/x.rs` and
/// `src/x/mod.rs`, 2 for `src/x/y.rs`; so many `super::` reach the root.
fn depth(src: &Path, file: &Path) -> usize {
    let parts = file.strip_prefix(src).unwrap().components().count();
    if file.file_name().is_some_and(|name| name == "mod.rs") { parts - 1 } else { parts }
}

fn rust_files(path: &Path) -> Vec<PathBuf> {
    if path.is_dir() {
        std::fs::read_dir(path).unwrap().map(Result::unwrap).flat_map(|entry| rust_files(&entry.path())).collect()
    } else if path.extension().is_some_and(|ext| ext == "rs") && path.file_name().is_some_and(|name| name != "tests.rs") {
        vec![path.to_owned()]
    } else {
        Vec::new()
    }
}

/// `text` without its unit tests (a trailing `#[cfg(test)] mod tests`) and
/// without line comments.
fn without_unit_tests(text: &str) -> String {
    let code = text.find("#[cfg(test)]\nmod tests").map_or(text, |at| &text[..at]);
    code.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// The first segment of every path in `code` that starts at the holding
/// module: `root` (`crate::` for the crate's root), or `super::…` with as
/// many `super`s as the module is `depth` deep below it; braced groups
/// (`use crate::{a::X, b::{Y, Z}}`) included.
fn named_modules(code: &str, depth: usize, root: &str) -> BTreeSet<String> {
    let ident = |text: &str| text.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let to_root = "super::".repeat(depth);
    let mut named = BTreeSet::new();
    for prefix in [root, to_root.as_str()] {
        for (at, _) in code.match_indices(prefix) {
            // Part of a longer path, `a::super::…` or `super::super::…`.
            if code[..at].ends_with("::") || code[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &code[at + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let mut nesting = 0;
                let mut start = true;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => nesting += 1,
                        '}' if nesting == 0 => break,
                        '}' => nesting -= 1,
                        ',' if nesting == 0 => start = true,
                        c if start && !c.is_whitespace() => {
                            named.insert(ident(&group[i..]));
                            start = false;
                        }
                        _ => {}
                    }
                }
            } else {
                named.insert(ident(rest));
            }
        }
    }
    named
}

/// The modules that lie on some cycle of `graph`.
fn in_cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let reaches = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut next: Vec<&str> = graph[from].iter().map(String::as_str).collect();
        while let Some(module) = next.pop() {
            if seen.insert(module.to_owned()) {
                next.extend(graph.get(module).into_iter().flatten().map(String::as_str));
            }
        }
        seen
    };
    graph.keys().filter(|module| reaches(module).contains(*module)).cloned().collect()
}

fn crate_src(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir).join("src")
}

/// The crate's root and every module folder below `src`, each with its
/// path from the root (`crate::`, `crate::sandbox::`).
fn holders(src: &Path) -> Vec<(PathBuf, String)> {
    let mut found = vec![(src.to_owned(), "crate::".to_owned())];
    let mut next = 0;
    while next < found.len() {
        let (dir, prefix) = found[next].clone();
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            if entry.path().is_dir() {
                found.push((entry.path(), format!("{prefix}{}::", entry.file_name().to_string_lossy())));
            }
        }
        next += 1;
    }
    found
}

/// Every holder of `src` whose modules import each other in a circle, with
/// the modules on it.
fn cycles_in(src: &Path) -> Vec<(String, BTreeSet<String>)> {
    holders(src)
        .into_iter()
        .map(|(dir, prefix)| (prefix.clone(), in_cycles(&imports(&dir, &prefix))))
        .filter(|(_, cycle)| !cycle.is_empty())
        .collect()
}

#[test]
fn no_module_has_an_import_cycle_between_the_modules_inside_it() {
    for dir in ["types", "protocol", "support", "runtime", "host", "cli", "sdk", "standin"] {
        let cycles = cycles_in(&crate_src(dir));
        assert!(cycles.is_empty(), "{dir}: modules in an import cycle: {cycles:?}");
    }
}

#[test]
fn a_cycle_inside_a_module_is_found() {
    let src = tempfile::tempdir().unwrap();
    let write = |path: &str, code: &str| {
        let path = src.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, code).unwrap();
    };
    write("lib.rs", "mod outer;\nmod other;\n");
    write("other.rs", "use crate::outer::Thing;\n");
    write("outer/mod.rs", "mod a;\nmod b;\nmod c;\npub(crate) use a::{A, Other as Renamed};\n");
    write("outer/a.rs", "use super::b::B;\n");
    write("outer/b.rs", "use crate::outer::c::C;\n");
    write("outer/c.rs", "use super::{a::A, super::other};\n#[cfg(test)]\nmod tests { use super::super::b; }\n");
    let cycles = cycles_in(src.path());
    assert_eq!(cycles, [("crate::outer::".to_owned(), ["a", "b", "c"].map(String::from).into())]);
    write("outer/c.rs", "pub struct C;\n");
    assert!(cycles_in(src.path()).is_empty());
    // Through a name `outer` takes from `a`: `c` depends on `a` again.
    write("outer/c.rs", "use super::Renamed;\n");
    assert_eq!(cycles_in(src.path()), [("crate::outer::".to_owned(), ["a", "b", "c"].map(String::from).into())]);
}

#[test]
fn the_layers_of_this_crate_hold() {
    let graph = imports(&crate_src("host"), "crate::");
    let below = |module: &str, above: &[&str]| {
        for other in above {
            assert!(!graph[module].contains(*other), "{module} reaches up to {other}");
        }
    };
    // The runtime (sandbox, registry, executor) is a crate below this one
    // (`toolhost-runtime`), so it knows no door and not the assembled
    // policy. Here: the chain hands over to a trait, not to the VCP node;
    // the doors' sections are parsed by their owners, which know only the
    // error type; approval knows no door.
    below("chain", &["vcp_node", "config", "mcp", "console"]);
    below("approval", &["config", "pipeline", "chain", "console", "mcp", "vcp_node"]);
    for door in ["console", "mcp", "vcp_node"] {
        below(door, &["config"]);
    }
}

#[test]
fn the_reader_finds_braced_and_plain_paths_and_skips_comments_and_unit_tests() {
    let code =
        "use crate::{a::X, b::{Y, Z}, c};\nfn f() { crate::d::g(); } // crate::e\n#[cfg(test)]\nmod tests { use crate::f; }";
    let named = named_modules(&without_unit_tests(code), 1, "crate::");
    assert_eq!(named, ["a", "b", "c", "d"].map(String::from).into());
    // From `src/x/y.rs`: `super::super::` is the root, `super::` is `x`.
    let nested = "use super::super::a::X;\nuse super::sibling;\nfn f() { super::super::{b, c::D}; }";
    assert_eq!(named_modules(nested, 2, "crate::"), ["a", "b", "c"].map(String::from).into());
    assert_eq!(named_modules(nested, 1, "crate::x::"), ["sibling", "super"].map(String::from).into());
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", vec!["b"]), ("b", vec!["a"]), ("c", vec!["a"])]
        .map(|(m, to)| (m.to_owned(), to.into_iter().map(String::from).collect()))
        .into();
    assert_eq!(in_cycles(&graph), ["a", "b"].map(String::from).into());
}
