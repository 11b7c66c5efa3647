//! `docs/API.md`: the library's public names, read from the source with
//! `syn` so that the list cannot drift from the code. `cargo xtask api`
//! rewrites the file; a test fails when the file and the source disagree.
//!
//! What counts as public: a `pub` item or `pub use` name, in the crate root
//! or in a `pub mod` (inline or in its own file), followed into the types
//! and protocol crates that `toolhost` re-exports whole and into the
//! runtime crate's modules it re-exports (`pub use toolhost_runtime::sandbox`).
//! Items that are `#[doc(hidden)]` or compiled only for tests are left out.

use anyhow::{Context, bail};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use syn::{Attribute, Item, UseTree, Visibility};

/// Where the list is written, from the workspace's root.
pub(crate) const API_FILE: &str = "docs/API.md";

/// The workspace's crates `toolhost` re-exports, whole or in part, and
/// their roots.
const CRATES: &[(&str, &str)] = &[
    ("toolhost_types", "types/src/lib.rs"),
    ("toolhost_protocol", "protocol/src/lib.rs"),
    ("toolhost_runtime", "runtime/src/lib.rs"),
];

/// Rewrite `docs/API.md` from the source.
pub(crate) fn write(root: &Path) -> anyhow::Result<()> {
    let path = root.join(API_FILE);
    std::fs::write(&path, render(root)?).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// The whole of `docs/API.md`, as the source gives it.
pub(crate) fn render(root: &Path) -> anyhow::Result<String> {
    let mut out = String::from(
        "# The public API of `toolhost`\n\n\
         Generated from the source by `cargo xtask api`; a test fails when this\n\
         file and the source disagree. The root holds the items most programs\n\
         use; each module holds one concept, the root's items among them.\n\n\
         What is stable: every name below, in the default build (the\n\
         `unchecked` feature, which runs a tool by name without the pipeline,\n\
         is for the project's own tests and is not; nor is the internal\n\
         `toolhost-support` crate the command shares). Adding a variant\n\
         to a non-exhaustive enum, a field to a non-exhaustive struct, a policy\n\
         key or a name is not a breaking change; any other change to a listed\n\
         name is, and comes with a new minor version while toolhost is 0.x.\n\n\
         Public enums are `#[non_exhaustive]`, so that a new variant is not a\n\
         breaking change, except those a program must match in full: the ones\n\
         mirroring the WIT contract (`ParamType`, `Permission`, `DirAccess`,\n\
         `ToolOutput`, `ToolFailureKind`), which change only with a new contract\n\
         version, `sandbox::Withheld` (one variant per capability, which only a\n\
         new contract adds), and `approval::Assessment`, `Settled`,\n\
         `CallDecision` and `ResultDecision` (a wildcard arm there could run a\n\
         call or pass a withheld result). So are the structs the library\n\
         hands out (outcomes, reports, events, errors) and the configurations\n\
         a program builds: see the last section.\n",
    );
    let crate_root = Module::read(&root.join("host/src/lib.rs"))?;
    crate_root.render(root, "toolhost", &mut out)?;
    let listed = out.clone();
    render_open_structs(root, &listed, &mut out)?;
    Ok(out)
}

/// The structs with only public fields that stay exhaustive, each with
/// why: a program builds them with every field and matches on them, and
/// they change only with what they mirror.
const EXHAUSTIVE: &[(&str, &str)] = &[
    ("ParamSpec", "the WIT contract"),
    ("ToolSpec", "the WIT contract"),
    ("DirRequest", "the WIT contract"),
    ("Capabilities", "the WIT contract"),
    ("PluginManifest", "the WIT contract"),
    ("ToolFailure", "the WIT contract"),
    ("Invocation", "the WIT contract"),
    ("RawManifest", "the WIT contract, as a guest declares it"),
    ("RawTool", "the WIT contract, as a guest declares it"),
    ("Message", "a chat message on the wire"),
    ("NativeCall", "a chat message on the wire"),
    ("ParsedCall", "a call as a reply spells it"),
    ("Warning", "a parse warning, which is where and what"),
    ("ServerRound", "a VCP server's reply, as observed"),
    ("Reported", "a VCP server's reply, as observed"),
    ("ChatRequest", "the `LlmClient` trait, which implementors build against"),
    ("Reply", "the `LlmClient` trait, which implementors build against"),
    ("Usage", "the `LlmClient` trait, which implementors build against"),
    ("PendingCall", "the `Approver` trait, which implementors build against"),
    ("Answer", "the `Approver` trait, which implementors build against"),
    ("ResultAnswer", "the `Approver` trait, which implementors build against"),
];

/// The last section: which structs with only public fields are
/// `#[non_exhaustive]` and which stay exhaustive, and why. Fails when a
/// struct listed above is exhaustive without a reason in [`EXHAUSTIVE`],
/// or a reason there names no such struct.
fn render_open_structs(root: &Path, listed: &str, out: &mut String) -> anyhow::Result<()> {
    let mut open = Vec::new();
    for (_, path) in CRATES.iter().chain(&[("toolhost", "host/src/lib.rs")]) {
        let dir = root.join(path).parent().context("a crate root has a folder")?.to_owned();
        collect_open_structs(&dir, &mut open)?;
    }
    open.retain(|(name, _)| listed.contains(&format!("`{name}`")));
    open.sort();
    open.dedup();
    let mut grown = Vec::new();
    let mut fixed: Vec<(&str, Vec<&str>)> = Vec::new();
    for (name, exhaustive) in &open {
        let reason = EXHAUSTIVE.iter().find(|(n, _)| n == name).map(|(_, reason)| *reason);
        match (exhaustive, reason) {
            (false, _) => grown.push(format!("`{name}`")),
            (true, Some(reason)) => match fixed.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, names)) => names.push(name),
                None => fixed.push((reason, vec![name])),
            },
            (true, None) => bail!(
                "`{name}` has only public fields and is exhaustive, so a new field breaks every program that builds it: \
                 mark it #[non_exhaustive] (with `Default` or a constructor), or say in xtask/src/api.rs EXHAUSTIVE why not"
            ),
        }
    }
    for (name, _) in EXHAUSTIVE {
        if !open.iter().any(|(n, exhaustive)| n == name && *exhaustive) {
            bail!("xtask/src/api.rs EXHAUSTIVE names `{name}`, which is no exhaustive public struct: take it out");
        }
    }
    out.push_str(
        "\n## Structs with public fields\n\n\
         These are `#[non_exhaustive]`, so that a new field (a new policy key, a\n\
         new option, a new detail in a report) breaks nobody: the library hands\n\
         them out, or a program builds one from `default()` or a constructor\n\
         (`ToolCallConfig::on`, `Turn::for_agent`) and sets the fields it needs.\n\n",
    );
    let _ = writeln!(out, "{}", wrap(&grown.join(", "), 100));
    out.push_str(
        "\nThese stay exhaustive: a program builds them whole or matches on them,\n\
         and each changes only with what it stands for:\n\n",
    );
    for (reason, names) in fixed {
        let names: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
        let _ = writeln!(out, "- {reason}: {}", names.join(", "));
    }
    Ok(())
}

/// Every struct under `dir` whose fields are all public (at least one),
/// with whether it is exhaustive. Hidden and test-only ones are left out.
fn collect_open_structs(dir: &Path, open: &mut Vec<(String, bool)>) -> anyhow::Result<()> {
    fn walk(items: &[Item], open: &mut Vec<(String, bool)>) {
        for item in items {
            match item {
                Item::Mod(module) if !module.attrs.iter().any(hides) => {
                    if let Some((_, items)) = &module.content {
                        walk(items, open);
                    }
                }
                Item::Struct(def) if shown(item) => {
                    let fields: Vec<_> = def.fields.iter().collect();
                    if !fields.is_empty() && fields.iter().all(|field| matches!(field.vis, Visibility::Public(_))) {
                        let exhaustive = !def.attrs.iter().any(|attr| attr.path().is_ident("non_exhaustive"));
                        open.push((def.ident.to_string(), exhaustive));
                    }
                }
                _ => {}
            }
        }
    }
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect_open_structs(&path, open)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let parsed = syn::parse_file(&text).with_context(|| format!("parsing {}", path.display()))?;
            walk(&parsed.items, open);
        }
    }
    Ok(())
}

/// One module's public names and submodules, from its source.
struct Module {
    /// Its file (a module inline in a file has that file's, for finding
    /// its own `mod x;` children).
    file: PathBuf,
    /// The first paragraph of its documentation.
    summary: String,
    items: Vec<Item>,
}

/// What a module makes public.
struct Public {
    /// Its names, sorted.
    names: Vec<String>,
    /// Its submodules, in source order.
    children: Vec<(String, Child)>,
}

/// A public submodule: where its items are.
enum Child {
    /// Written in this crate: `pub mod x { … }` or `pub mod x;`.
    Module(Module),
    /// Another workspace crate re-exported whole: `pub use toolhost_types as types;`.
    Crate(&'static str, Module),
}

impl Module {
    fn read(file: &Path) -> anyhow::Result<Module> {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let parsed = syn::parse_file(&text).with_context(|| format!("parsing {}", file.display()))?;
        Ok(Module { file: file.to_owned(), summary: summary(&parsed.attrs), items: parsed.items })
    }

    /// The file of its child module `name`, declared `mod name;`.
    fn child_file(&self, name: &str) -> anyhow::Result<PathBuf> {
        let stem = self.file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let dir = self.file.parent().context("a module file has a folder")?;
        let dir = if ["lib", "mod", "main"].contains(&stem) { dir.to_owned() } else { dir.join(stem) };
        for candidate in [dir.join(format!("{name}.rs")), dir.join(name).join("mod.rs")] {
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
        bail!("no file for `mod {name};` beside {}", self.file.display())
    }

    /// Whether it declares `pub mod name;`.
    fn declares_module(&self, name: &str) -> bool {
        self.items.iter().any(|item| matches!(item, Item::Mod(module) if module.ident == name && shown(item)))
    }

    /// Whether it exports the macro `name`.
    fn exports_macro(&self, name: &str) -> bool {
        self.items.iter().any(|item| {
            matches!(item, Item::Macro(mac) if mac.ident.as_ref().is_some_and(|ident| ident == name) && exported(&mac.attrs))
        })
    }

    /// Its public names and submodules.
    fn public(&self, root: &Path) -> anyhow::Result<Public> {
        let mut names = Vec::new();
        let mut children = Vec::new();
        for item in &self.items {
            if !shown(item) {
                continue;
            }
            match item {
                Item::Mod(module) => {
                    let name = module.ident.to_string();
                    let child = match &module.content {
                        Some((_, items)) => {
                            Module { file: self.file.clone(), summary: summary(&module.attrs), items: items.clone() }
                        }
                        None => Module::read(&self.child_file(&name)?)?,
                    };
                    children.push((name, Child::Module(child)));
                }
                Item::Use(item) => {
                    if let Some((krate, alias)) = whole_crate(&item.tree) {
                        let (name, path) = CRATES.iter().find(|(name, _)| *name == krate).context("a re-exported crate")?;
                        let mut module = Module::read(&root.join(path))?;
                        let own = summary(&item.attrs);
                        if !own.is_empty() {
                            module.summary = own;
                        }
                        children.push((alias, Child::Crate(name, module)));
                    } else if let Some((path, taken)) = from_crate(&item.tree) {
                        let krate = Module::read(&root.join(path))?;
                        for name in taken {
                            if krate.declares_module(&name) {
                                children.push((name.clone(), Child::Module(Module::read(&krate.child_file(&name)?)?)));
                            } else if krate.exports_macro(&name) {
                                names.push(format!("{name}!"));
                            } else {
                                names.push(name);
                            }
                        }
                    } else {
                        use_names(&item.tree, &mut names);
                    }
                }
                Item::Macro(item) if item.mac.path.is_ident("macro_rules") && exported(&item.attrs) => {
                    names.push(format!("{}!", item.ident.as_ref().map(ToString::to_string).unwrap_or_default()));
                }
                item => names.extend(item_name(item)),
            }
        }
        names.sort();
        names.dedup();
        Ok(Public { names, children })
    }

    /// This module's section and its submodules' after it.
    fn render(&self, root: &Path, path: &str, out: &mut String) -> anyhow::Result<()> {
        let Public { names, children } = self.public(root)?;
        let is_root = !path.contains("::");
        let _ = write!(out, "\n## {}\n\n", if is_root { "At the root".to_owned() } else { format!("`{path}`") });
        if !is_root && !self.summary.is_empty() {
            let _ = write!(out, "{}\n\n", self.summary);
        }
        if names.is_empty() {
            out.push_str("(no names of its own)\n");
        } else {
            let listed: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
            let _ = writeln!(out, "{}", wrap(&listed.join(", "), 100));
        }
        if is_root {
            let modules: Vec<String> = children.iter().map(|(name, _)| format!("`{name}`")).collect();
            let _ = write!(out, "\nModules: {}.\n", wrap(&modules.join(", "), 100));
        }
        for (name, child) in children {
            let path = format!("{path}::{name}");
            match child {
                Child::Module(module) => module.render(root, &path, out)?,
                Child::Crate(krate, module) => {
                    let _ = write!(out, "\n## `{path}`: the `{}` crate\n", krate.replace('_', "-"));
                    module.render_crate(root, &path, out)?;
                }
            }
        }
        Ok(())
    }

    /// A re-exported crate's root, without a heading of its own.
    fn render_crate(&self, root: &Path, path: &str, out: &mut String) -> anyhow::Result<()> {
        let Public { names, children } = self.public(root)?;
        let _ = write!(out, "\n{}\n\n", self.summary);
        let listed: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
        let _ = writeln!(out, "{}", wrap(&listed.join(", "), 100));
        for (name, child) in children {
            if let Child::Module(module) = child {
                module.render(root, &format!("{path}::{name}"), out)?;
            }
        }
        Ok(())
    }
}

/// Whether an item is part of the documented public API: `pub`, not
/// hidden, not compiled for tests only.
fn shown(item: &Item) -> bool {
    let (vis, attrs) = match item {
        Item::Const(i) => (&i.vis, &i.attrs),
        Item::Enum(i) => (&i.vis, &i.attrs),
        Item::Fn(i) => (&i.vis, &i.attrs),
        Item::Mod(i) => (&i.vis, &i.attrs),
        Item::Static(i) => (&i.vis, &i.attrs),
        Item::Struct(i) => (&i.vis, &i.attrs),
        Item::Trait(i) => (&i.vis, &i.attrs),
        Item::Type(i) => (&i.vis, &i.attrs),
        Item::Union(i) => (&i.vis, &i.attrs),
        Item::Use(i) => (&i.vis, &i.attrs),
        Item::Macro(i) => return exported(&i.attrs),
        _ => return false,
    };
    matches!(vis, Visibility::Public(_)) && !attrs.iter().any(hides)
}

/// `#[doc(hidden)]`, or a `#[cfg(…)]` naming `test`.
fn hides(attr: &Attribute) -> bool {
    let path = attr.path();
    let tokens = || attr.meta.require_list().map(|list| list.tokens.to_string()).unwrap_or_default();
    (path.is_ident("doc") && tokens() == "hidden") || (path.is_ident("cfg") && tokens().contains("test"))
}

/// `#[macro_export]`.
fn exported(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("macro_export"))
}

/// The name a `pub` item defines, for the items that define one.
fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// `toolhost_types as types`: a workspace crate re-exported whole.
fn whole_crate(tree: &UseTree) -> Option<(String, String)> {
    match tree {
        UseTree::Rename(rename) if CRATES.iter().any(|(name, _)| rename.ident == name) => {
            Some((rename.ident.to_string(), rename.rename.to_string()))
        }
        _ => None,
    }
}

/// `toolhost_runtime::{registry, sandbox}`: names taken straight from a
/// workspace crate's root, and that crate's root file.
fn from_crate(tree: &UseTree) -> Option<(&'static str, Vec<String>)> {
    let UseTree::Path(path) = tree else { return None };
    let (_, root) = CRATES.iter().find(|(name, _)| path.ident == name)?;
    let name = |tree: &UseTree| match tree {
        UseTree::Name(name) => Some(name.ident.to_string()),
        _ => None,
    };
    let names = match &*path.tree {
        UseTree::Group(group) => group.items.iter().map(name).collect::<Option<Vec<_>>>()?,
        tree => vec![name(tree)?],
    };
    Some((root, names))
}

/// The names a `use` tree brings in (a glob as `path::*`).
fn use_names(tree: &UseTree, names: &mut Vec<String>) {
    match tree {
        UseTree::Path(path) => use_names(&path.tree, names),
        UseTree::Name(name) if name.ident != "self" => names.push(name.ident.to_string()),
        UseTree::Name(_) => {}
        UseTree::Rename(rename) => names.push(rename.rename.to_string()),
        UseTree::Glob(_) => names.push("*".to_owned()),
        UseTree::Group(group) => group.items.iter().for_each(|tree| use_names(tree, names)),
    }
}

/// The first paragraph of the doc comments in `attrs`, on one line.
fn summary(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        let syn::Meta::NameValue(meta) = &attr.meta else { continue };
        let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(text), .. }) = &meta.value else { continue };
        let line = text.value().trim().to_owned();
        if line.is_empty() {
            if lines.is_empty() {
                continue;
            }
            break;
        }
        lines.push(line);
    }
    without_links(&lines.join(" "))
}

/// Rustdoc's intra-doc links as plain code: "[`Limits`]" and
/// "[`Limits`](crate::Limits)" both become "`Limits`".
fn without_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[`") {
        let Some(end) = rest[start..].find("`]").map(|end| start + end) else { break };
        out.push_str(&rest[..start]);
        out.push_str(&rest[start + 1..end + 1]);
        rest = &rest[end + 2..];
        if rest.starts_with('(')
            && let Some(close) = rest.find(')')
        {
            rest = &rest[close + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// `text` broken at spaces into lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split(' ') {
        if line > 0 && line + 1 + word.len() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_api_md_lists_the_public_api_as_the_source_gives_it() {
        let root = crate::workspace_root();
        let written = std::fs::read_to_string(root.join(API_FILE)).unwrap_or_default();
        let source = render(&root).unwrap();
        assert!(written == source, "{API_FILE} is out of date with the source: run `cargo xtask api` to rewrite it");
    }

    #[test]
    fn the_root_holds_fewer_than_half_the_names_it_once_had() {
        // 164 names once sat flat at the root; each concept is a module now.
        let root = crate::workspace_root();
        let Public { names, .. } = Module::read(&root.join("host/src/lib.rs")).unwrap().public(&root).unwrap();
        assert!(names.len() < 164 / 2, "{} names at the root: move the less used into their modules", names.len());
    }

    #[test]
    fn a_module_lists_its_public_names_and_only_those() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib.rs");
        let source = "//! The crate.\n\
                      mod private;\n\
                      pub use private::{Shown, Other as Renamed};\n\
                      pub(crate) use private::Kept;\n\
                      #[doc(hidden)]\n\
                      pub fn hidden() {}\n\
                      #[cfg(test)]\n\
                      pub fn for_tests() {}\n\
                      /// The inline one.\n\
                      pub mod inline { pub const LIMIT: u32 = 1; pub struct Thing; fn private() {} }\n\
                      #[macro_export]\n\
                      macro_rules! shout { () => {} }\n";
        std::fs::write(&lib, source).unwrap();
        let module = Module::read(&lib).unwrap();
        let mut out = String::new();
        module.render(dir.path(), "demo", &mut out).unwrap();
        assert_eq!(
            out,
            "\n## At the root\n\n`Renamed`, `Shown`, `shout!`\n\nModules: `inline`.\n\n## `demo::inline`\n\nThe inline one.\n\n`LIMIT`, `Thing`\n"
        );
    }

    #[test]
    fn intra_doc_links_read_as_code() {
        assert_eq!(without_links("under [`Limits`], see [`size`](crate::size) and [x]"), "under `Limits`, see `size` and [x]");
    }
}
