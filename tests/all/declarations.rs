//! What a plugin declares reaches the host's prompts and memory only within
//! bounds: declarations cannot inject calls or forge prompt structure, and
//! a manifest larger than the manifest cap is refused.

use crate::built::{BLOATED, CALC, FILES, INJECTOR};
use crate::support::TestHost;
use toolhost::{Declared, ProtocolId};
use toolhost::{PromptCache, ToolCallConfig, prompt::visible_tools};

/// The protocols a prompt is rendered in (`auto` renders as json-block).
const RENDERED: [ProtocolId; 4] = [ProtocolId::Vcp, ProtocolId::JsonBlock, ProtocolId::XmlTag, ProtocolId::Native];
const PARSERS: [ProtocolId; 5] =
    [ProtocolId::Vcp, ProtocolId::JsonBlock, ProtocolId::XmlTag, ProtocolId::Native, ProtocolId::Auto];

/// Whether `parser` reads the example calls of a prompt rendered in
/// `rendered`: its own format, and `auto` reads every format. The native
/// prompt is a schema with no example calls.
fn reads_examples(parser: ProtocolId, rendered: ProtocolId) -> bool {
    rendered != ProtocolId::Native && (parser == rendered || parser == ProtocolId::Auto)
}

fn refusals(host: &TestHost) -> Vec<String> {
    host.registry.catalog().refused.iter().map(|r| r.error.to_string()).collect()
}

#[tokio::test]
async fn an_injecting_plugin_is_refused_naming_the_field() {
    let host = TestHost::new(&[CALC, FILES, INJECTOR], "").await;
    let refused = refusals(&host);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with("injector.wasm: plugin `injector`: the description of tool `format_text` "),
        "the refusal names plugin, tool and field: {}",
        refused[0]
    );
    assert!(refused[0].contains("[END_TOOL_REQUEST]"), "and the marker: {}", refused[0]);
    let catalog = host.registry.catalog();
    assert!(catalog.plugin("calc").is_some() && catalog.plugin("files").is_some(), "the others load");
}

/// Every prompt, parsed by every parser, holds the visible tools' example
/// calls where that parser reads them, and no other call: nothing the
/// injector declared comes back as a call.
#[tokio::test]
async fn no_prompt_holds_a_call_but_the_examples() {
    let host = TestHost::new(&[CALC, FILES, INJECTOR], "").await;
    let catalog = host.registry.catalog();
    let config = ToolCallConfig::on();
    let tools = visible_tools(&catalog, &config);
    let declared = Declared::new(tools.iter().map(|t| t.name.clone()));
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for rendered in RENDERED {
        let prompt = PromptCache::new().render(&catalog, "test", &config, rendered, "{{tools}}");
        for parser in PARSERS {
            let parsed = parser.protocol().parse(&prompt.text, &declared);
            let found: Vec<&str> = parsed.calls.iter().map(|c| c.name.as_str()).collect();
            let expected: &[&str] = if reads_examples(parser, rendered) { &names } else { &[] };
            assert_eq!(found, expected, "{parser:?} parsing the {rendered:?} prompt");
            for call in &parsed.calls {
                let tool = tools.iter().find(|t| t.name == call.name).unwrap();
                for key in call.arguments.keys() {
                    assert!(tool.param(key).is_some(), "{parser:?} on {rendered:?}: `{}` got undeclared `{key}`", call.name);
                }
            }
        }
    }
}

#[tokio::test]
async fn a_manifest_over_the_cap_is_refused_naming_its_size_the_limit_and_the_largest_field() {
    let host = TestHost::new(&[BLOATED, CALC], "").await;
    assert_eq!(
        refusals(&host),
        ["bloated.wasm: plugin `bloated`: manifest of 4.0 MiB exceeds the limit of 256 KiB; \
          its largest field is the description of tool `flood`: 4.0 MiB (limit 16 KiB)"]
    );
    let config = ToolCallConfig::on();
    let prompt = PromptCache::new().render(&host.registry.catalog(), "test", &config, ProtocolId::Vcp, "{{tools}}");
    assert!(prompt.tokens() < 1_000, "only calc is in the prompt: {} tokens", prompt.tokens());
}
