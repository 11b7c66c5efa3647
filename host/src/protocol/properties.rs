//! Properties every parser keeps on any input: it returns (never panics),
//! calls and warnings point inside the reply, and the time grows linearly
//! with the reply even on adversarial input.

use super::{Declared, ProtocolId};
use proptest::prelude::*;
use std::time::{Duration, Instant};

const ALL: [ProtocolId; 5] = [ProtocolId::Vcp, ProtocolId::JsonBlock, ProtocolId::XmlTag, ProtocolId::Native, ProtocolId::Auto];

/// Fragments models and attackers write, so random input hits the parsers'
/// interesting paths rather than only prose.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<<<[TOOL_REQUEST]>>>".to_owned()),
        Just("<<<[END_TOOL_REQUEST]>>>".to_owned()),
        Just("tool_name:「始」calc「末」,".to_owned()),
        Just("a:「始ESCAPE」".to_owned()),
        Just("「末ESCAPE」".to_owned()),
        Just("「始」".to_owned()),
        Just("「末」".to_owned()),
        Just("<think>".to_owned()),
        Just("</think>".to_owned()),
        Just("```json\n".to_owned()),
        Just("```".to_owned()),
        Just("<tool_call>".to_owned()),
        Just("</tool_call>".to_owned()),
        Just("[TOOL_CALLS]".to_owned()),
        Just("<|python_tag|>".to_owned()),
        Just("<function=calc>".to_owned()),
        Just("{\"name\": \"calc\", \"arguments\": ".to_owned()),
        Just("[calc(x=".to_owned()),
        Just("{'a': True,}".to_owned()),
        Just("\"\\u00e9\\".to_owned()),
        "[{}\\[\\]\"',:=()a-z0-9 \n\t]{0,12}",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parsing_any_input_returns_offsets_inside_the_reply(parts in proptest::collection::vec(fragment(), 0..24)) {
        let reply = parts.concat();
        let declared = Declared::new(["calc"]);
        for protocol in ALL {
            let parsed = protocol.protocol().parse(&reply, &declared);
            for call in &parsed.calls {
                prop_assert!(call.span.end <= reply.len() && call.span.start <= call.span.end);
            }
            for warning in &parsed.warnings {
                prop_assert!(warning.offset <= reply.len(), "{protocol:?}: {warning}");
            }
            prop_assert!(parsed.content.len() <= reply.len());
        }
    }
}

/// The fastest of three parses of `reply` with `protocol`.
fn time(protocol: ProtocolId, reply: &str) -> Duration {
    let declared = Declared::new(["calc"]);
    (0..3)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(protocol.protocol().parse(reply, &declared));
            start.elapsed()
        })
        .min()
        .expect("three runs")
}

/// Adversarial inputs of 1 MB parse in time proportional to their size:
/// ten times the input may take at most 30 times as long (a quadratic
/// parser would take about 100 times as long). A ratio, not a deadline, so
/// a slow or busy machine does not fail it.
#[test]
fn adversarial_input_parses_in_linear_time() {
    let patterns = [
        "<<<[TOOL_REQUEST]>>>",
        "<<<[TOOL_REQUEST]>>>tool_name:「始」",
        "「始ESCAPE」",
        "{\"name\": \"calc\", \"arguments\": {",
        "[[[[{{{{",
        "[calc(x=",
        "<tool_call>",
        "```json\n{",
        "<think>",
        "[TOOL_CALLS]calc{",
    ];
    for pattern in patterns {
        let small = pattern.repeat(100_000 / pattern.len());
        let large = pattern.repeat(1_000_000 / pattern.len());
        for protocol in ALL {
            let (t_small, t_large) = (time(protocol, &small), time(protocol, &large));
            let ratio = t_large.as_secs_f64() / t_small.as_secs_f64().max(1e-6);
            assert!(
                ratio < 30.0 || t_large < Duration::from_millis(20),
                "{protocol:?} on {pattern:?}: 100 KB took {t_small:?}, 1 MB took {t_large:?} ({ratio:.0}x)"
            );
        }
    }
}
