//! Prompts rendered for the bundled plugins in every protocol, compared
//! with golden files; the prompt cache over a real registry.

use crate::built::{CALC, CLOCK, DIRTREE, FILES, HOSTILE, HTTP_GET};
use crate::support::{Plugin, TestHost};
use std::path::Path;
use std::sync::Arc;
use toolhost::ProtocolId;
use toolhost::{PromptCache, ToolCallConfig};

const EXAMPLES: &[Plugin] = &[CALC, CLOCK, DIRTREE, FILES, HTTP_GET];

/// Compare `actual` with `golden/NAME`; `UPDATE_GOLDEN=1` rewrites it.
fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing; run with UPDATE_GOLDEN=1 to write it", path.display()));
    assert!(expected == actual, "{name} differs from its golden file; run with UPDATE_GOLDEN=1 after checking:\n{actual}");
}

#[tokio::test]
async fn every_protocol_renders_the_bundled_plugins_as_its_golden_file() {
    let host = TestHost::new(EXAMPLES, "").await;
    let catalog = host.registry.catalog();
    let config = ToolCallConfig::on();
    for (protocol, file) in [
        (ProtocolId::Vcp, "vcp.txt"),
        (ProtocolId::JsonBlock, "json-block.txt"),
        (ProtocolId::XmlTag, "xml-tag.txt"),
        (ProtocolId::Native, "native.json"),
    ] {
        let prompt = PromptCache::new().render(&catalog, "test", &config, protocol, "{{tools}}");
        golden(file, &prompt.text);
        assert!(prompt.tokens() > 100, "{file}: {} tokens", prompt.tokens());
    }
}

#[tokio::test]
async fn the_prompt_cache_hits_and_a_reload_invalidates_it() {
    let host = TestHost::new(&[CALC], "").await;
    let cache = PromptCache::new();
    let config = ToolCallConfig::on();
    let first = cache.render(&host.registry.catalog(), "a", &config, ProtocolId::Vcp, "{{tools}}");
    let again = cache.render(&host.registry.catalog(), "a", &config, ProtocolId::Vcp, "{{tools}}");
    assert!(Arc::ptr_eq(&first, &again), "the second render is the cached one");
    let other = cache.render(&host.registry.catalog(), "a", &config, ProtocolId::XmlTag, "{{tools}}");
    assert!(!Arc::ptr_eq(&first, &other));
    assert_eq!(cache.len(), 2);

    std::fs::copy(CLOCK.path(), host.dir.path().join("plugins/clock.wasm")).unwrap();
    host.registry.reload().await.unwrap();
    let after = cache.render(&host.registry.catalog(), "a", &config, ProtocolId::Vcp, "{{tools}}");
    assert!(!Arc::ptr_eq(&first, &after));
    assert!(after.text.contains("Tool: convert_time"), "the new plugin's tools are in the new prompt");
    assert_eq!(cache.len(), 1, "entries of the old generation are gone");
}

#[tokio::test]
async fn an_agent_sees_only_its_agent_callable_toggled_tools_in_plugin_order() {
    let host = TestHost::new(&[FILES, CALC, HOSTILE], "").await;
    let mut config = ToolCallConfig::on();
    config.tool_toggles.insert("write_file".into(), false);
    let catalog = host.registry.catalog();
    let names: Vec<&str> = toolhost::prompt::visible_tools(&catalog, &config).iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["calculate", "list_files", "read_file", "spin", "thrash_memory", "wait_ms"], "only agent-callable tools");
}

/// The guidance line that names `tool` in a json-block prompt.
fn guidance_line_of(prompt: &str, tool: &str) -> String {
    let guidance = prompt.split("## When to use them").nth(1).expect("a guidance section");
    let named = |line: &&str| line.split_once("):").is_some_and(|(names, _)| names.split(['(', ',', ' ']).any(|n| n == tool));
    guidance.lines().find(named).unwrap_or_else(|| panic!("{tool} is in no line:\n{guidance}")).to_owned()
}

#[tokio::test]
async fn the_guidance_sorts_tools_by_what_their_grants_let_them_do() {
    let data = tempfile::tempdir().unwrap();
    let config = ToolCallConfig::on();
    let render = |host: &TestHost| {
        PromptCache::new().render(&host.registry.catalog(), "t", &config, ProtocolId::JsonBlock, "{{tools}}").text.clone()
    };
    let grant = |access: &str| {
        format!(
            "[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = {dir:?}, access = \"{access}\" }} }}\n\
             [plugins.dirtree]\nfile = \"dirtree.wasm\"\ndirs = {{ \"/tree\" = {{ host = {dir:?} }} }}\n",
            dir = data.path().display().to_string()
        )
    };

    // Read-only grants: the moderate file readers and the public tree are
    // reading tools, never writing ones; the calculator only computes.
    let host = TestHost::new(EXAMPLES, &grant("read")).await;
    let prompt = render(&host);
    for tool in ["read_file", "list_files", "dir_tree", "http_get"] {
        assert!(guidance_line_of(&prompt, tool).starts_with("- Reading tools"), "{tool}: {prompt}");
    }
    assert!(guidance_line_of(&prompt, "calculate").starts_with("- Query tools"));
    assert!(guidance_line_of(&prompt, "write_file").starts_with("- Dangerous tools"), "sensitive stays dangerous");
    assert!(!prompt.contains("Writing tools"), "no tool can write: {prompt}");
    drop(host);

    // A read-write grant makes the files plugin's moderate tools writers.
    let host = TestHost::new(EXAMPLES, &grant("read-write")).await;
    let prompt = render(&host);
    assert!(guidance_line_of(&prompt, "read_file").starts_with("- Writing tools"), "{prompt}");
    assert!(guidance_line_of(&prompt, "dir_tree").starts_with("- Reading tools"), "{prompt}");
    assert!(guidance_line_of(&prompt, "write_file").starts_with("- Dangerous tools"));
}
