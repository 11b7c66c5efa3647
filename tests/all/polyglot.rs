//! The Python, JavaScript, C and Go examples, each built with its own
//! component toolchain and helper, loaded and run through the same registry
//! and sandbox as the Rust ones: the manifest as declared, a real call, a
//! bad argument refused by the helper or the tool, and a limit that stops
//! the call, with the host answering the next one.

use crate::built::{CHECKSUM, JSONPATH, SEMVER, TEXTSTATS};
use crate::support::{Plugin, TestHost, polyglot_built};
use serde_json::{Value, json};
use toolhost::{ParamType, Permission, Status};

/// Fuel too small for any call of these examples (the cheapest, C's, uses
/// about 16 000 units).
const STARVING_FUEL: u64 = 5_000;

/// A declared parameter: name, type, required.
type Param<'a> = (&'a str, ParamType, bool);

/// Load `example`, check its tools' declarations, and return the host.
async fn load(example: Plugin, tools: &[(&str, &[Param<'_>])]) -> TestHost {
    let host = TestHost::new(&[example], "").await;
    let catalog = host.registry.catalog();
    let refused: Vec<String> = catalog.refused.iter().map(|r| r.error.to_string()).collect();
    assert!(refused.is_empty(), "{refused:?}");
    let plugin = catalog.plugin(example.name).unwrap_or_else(|| panic!("{} did not load", example.name));
    assert_eq!(plugin.manifest.api_version.to_string(), toolhost::types::HOST_API_VERSION);
    let declared: Vec<&str> = plugin.manifest.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(declared, tools.iter().map(|(name, _)| *name).collect::<Vec<_>>());
    for (tool, params) in tools {
        let (_, spec) = catalog.tool(tool).unwrap();
        let got: Vec<(&str, ParamType, bool)> = spec.params.iter().map(|p| (p.name.as_str(), p.ty, p.required)).collect();
        assert_eq!(&got, params, "params of {tool}");
        assert_eq!(spec.permission, Permission::Public, "{tool}");
        assert!(spec.agent_callable, "{tool} is agent-callable");
        assert!(!spec.description.is_empty(), "{tool} has a description");
    }
    host
}

/// A successful call's output, as JSON.
async fn call_json(host: &TestHost, tool: &str, args: Value) -> Value {
    let outcome = host.call(tool, args).await;
    assert_eq!(outcome.status, Status::Success, "{tool}: {}", outcome.output);
    serde_json::from_str(&outcome.output).unwrap_or_else(|e| panic!("{tool} returned no JSON ({e}): {}", outcome.output))
}

/// `tool` refuses `args`, saying `says`: `invalid-args` where the helper
/// or the tool said the arguments were wrong, `error` where it failed.
async fn refuses(host: &TestHost, tool: &str, args: Value, says: &str) {
    let outcome = host.call(tool, args).await;
    assert!(matches!(outcome.status, Status::InvalidArgs | Status::Error), "{tool}: {:?} {}", outcome.status, outcome.output);
    assert!(outcome.output.contains(says), "{tool}: expected {says:?} in {:?}", outcome.output);
}

/// With fuel for nothing, `tool` runs out of it, and a host with normal
/// limits then answers the same call.
async fn starves(example: Plugin, tool: &str, args: Value) {
    let name = example.name;
    let host = TestHost::new(&[example], &format!("[plugins.{name}]\nlimits = {{ fuel = {STARVING_FUEL} }}\n")).await;
    let outcome = host.call(tool, args.clone()).await;
    assert_eq!(outcome.status, Status::OutOfFuel, "{tool}: {}", outcome.output);
    assert_eq!(outcome.output, "out of fuel after 5 000 units");
    let host = TestHost::new(&[example], "").await;
    assert_eq!(host.call(tool, args).await.status, Status::Success, "{tool} with the default fuel");
}

#[tokio::test]
async fn python_textstats_declares_from_signatures_counts_refuses_and_stops_at_its_fuel() {
    if !polyglot_built(TEXTSTATS) {
        return;
    }
    let host = load(
        TEXTSTATS,
        &[
            ("text_stats", &[("text", ParamType::String, true), ("top", ParamType::Integer, false)]),
            (
                "regex_find",
                &[
                    ("pattern", ParamType::String, true),
                    ("text", ParamType::String, true),
                    ("ignore_case", ParamType::Boolean, false),
                ],
            ),
        ],
    )
    .await;
    let stats = call_json(&host, "text_stats", json!({ "text": "The cat sat. The cat ran!", "top": 2 })).await;
    assert_eq!(
        stats,
        json!({ "characters": 25, "words": 6, "sentences": 2, "lines": 1, "average_word_length": 3.0,
                "top_words": [["cat", 2], ["the", 2]] })
    );
    let found = call_json(&host, "regex_find", json!({ "pattern": "C(a)", "text": "cat cab", "ignore_case": true })).await;
    assert_eq!(found["count"], 2);
    assert_eq!(found["matches"][1], json!({ "match": "ca", "start": 4, "end": 6, "groups": ["a"] }));
    refuses(&host, "text_stats", json!({ "text": "x", "top": -1 }), "`top` must be 0 or more").await;
    refuses(&host, "text_stats", json!({ "text": 7 }), "argument `text` must be a string").await;
    refuses(&host, "regex_find", json!({ "pattern": "(", "text": "x" }), "`pattern` is not a valid regular expression").await;
    starves(TEXTSTATS, "text_stats", json!({ "text": "one two" })).await;
}

#[tokio::test]
async fn js_jsonpath_queries_refuses_bad_paths_and_stops_at_its_fuel() {
    if !polyglot_built(JSONPATH) {
        return;
    }
    let host = load(JSONPATH, &[("json_query", &[("document", ParamType::Json, true), ("path", ParamType::String, true)])]).await;
    let document = json!({ "store": { "book": [{ "title": "Dune", "price": 9 }, { "title": "Emma", "price": 5 }] } });
    let prices = call_json(&host, "json_query", json!({ "document": document, "path": "$..price" })).await;
    assert_eq!(prices["count"], 2);
    assert_eq!(prices["matches"][1], json!({ "path": "$[\"store\"][\"book\"][1][\"price\"]", "value": 5 }));
    let last = call_json(&host, "json_query", json!({ "document": document, "path": "$.store.book[-1]['title']" })).await;
    assert_eq!(last["matches"][0]["value"], "Emma");
    refuses(&host, "json_query", json!({ "document": document, "path": "store" }), "a path starts with `$`").await;
    refuses(&host, "json_query", json!({ "document": document, "path": "$.store]" }), "unexpected `]` at offset 7").await;
    refuses(&host, "json_query", json!({ "document": 1, "path": 2 }), "argument `path` must be a string").await;
    starves(JSONPATH, "json_query", json!({ "document": [1], "path": "$[0]" })).await;
}

#[tokio::test]
async fn c_checksum_hashes_exact_bytes_refuses_unknown_algorithms_and_stops_at_its_fuel() {
    if !polyglot_built(CHECKSUM) {
        return;
    }
    let host = load(
        CHECKSUM,
        &[
            ("hash_text", &[("text", ParamType::String, true), ("algorithm", ParamType::String, false)]),
            (
                "verify_digest",
                &[
                    ("text", ParamType::String, true),
                    ("expected", ParamType::String, true),
                    ("algorithm", ParamType::String, false),
                ],
            ),
        ],
    )
    .await;
    let sha = call_json(&host, "hash_text", json!({ "text": "hello" })).await;
    assert_eq!(
        sha,
        json!({ "algorithm": "sha256", "hex": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "bytes": 5 })
    );
    let crc = call_json(&host, "hash_text", json!({ "text": "hello", "algorithm": "crc32" })).await;
    assert_eq!(crc["hex"], "3610a686");
    // Escapes decode to the exact bytes: "é" is two, and a quote one.
    let escaped = call_json(&host, "hash_text", json!({ "text": "h\u{e9}\"llo\u{1F600}", "algorithm": "fnv1a" })).await;
    assert_eq!(escaped["bytes"], 11);
    let check = call_json(&host, "verify_digest", json!({ "text": "hello", "expected": "3610A686", "algorithm": "crc32" })).await;
    assert_eq!(check["matches"], true);
    refuses(
        &host,
        "hash_text",
        json!({ "text": "x", "algorithm": "md5" }),
        "unknown algorithm `md5`: use sha256, crc32 or fnv1a",
    )
    .await;
    starves(CHECKSUM, "hash_text", json!({ "text": "hello" })).await;
}

#[tokio::test]
async fn go_semver_compares_by_precedence_refuses_bad_versions_and_stops_at_its_fuel() {
    if !polyglot_built(SEMVER) {
        return;
    }
    let host = load(
        SEMVER,
        &[
            ("semver_compare", &[("a", ParamType::String, true), ("b", ParamType::String, true)]),
            ("semver_sort", &[("versions", ParamType::Json, true)]),
        ],
    )
    .await;
    let compared = call_json(&host, "semver_compare", json!({ "a": "1.10.0", "b": "1.2.3" })).await;
    assert_eq!(compared, json!({ "order": 1, "relation": "a > b" }));
    let sorted =
        call_json(&host, "semver_sort", json!({ "versions": ["1.10.0", "1.2.0", "1.2.0-rc.1", "1.2.0-alpha", "1.2.0-alpha.1"] }))
            .await;
    assert_eq!(sorted["sorted"], json!(["1.2.0-alpha", "1.2.0-alpha.1", "1.2.0-rc.1", "1.2.0", "1.10.0"]));
    refuses(&host, "semver_compare", json!({ "a": "1.2", "b": "1.0.0" }), "`1.2` is not MAJOR.MINOR.PATCH").await;
    refuses(&host, "semver_sort", json!({ "versions": "1.0.0" }), "argument `versions` must be []string").await;
    starves(SEMVER, "semver_compare", json!({ "a": "1.0.0", "b": "1.0.1" })).await;
}
