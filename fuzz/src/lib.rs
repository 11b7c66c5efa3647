//! What every fuzz target checks besides "does not panic": the properties
//! a parse keeps on any input (`protocol/src/properties.rs` checks the
//! same on generated input).

use toolhost_protocol::arguments::check as check_call;
use toolhost_protocol::types::ToolCall;
use toolhost_protocol::{Declared, ProtocolId};

/// The tools the targets declare: the names the seeds call.
const DECLARED: [&str; 6] = ["get_weather", "calculate", "now", "forecast", "calc", "python"];

/// Parse `data`, as text, with `protocol`, and check what comes back: calls
/// and warnings point inside the reply, calls come in reply order, the
/// content is no longer than the reply, and each call can be cut from the
/// reply and checked against a declaration of every parameter type.
pub fn parse(protocol: ProtocolId, data: &[u8]) {
    let reply = String::from_utf8_lossy(data);
    let parsed = protocol.protocol().parse(&reply, &Declared::new(DECLARED));
    let mut previous = 0;
    for call in &parsed.calls {
        let span = &call.span;
        assert!(span.start <= span.end && span.end <= reply.len(), "{span:?} outside {}", reply.len());
        assert!(reply.is_char_boundary(span.start) && reply.is_char_boundary(span.end), "{span:?} splits a character");
        assert!(span.start >= previous, "calls out of order at {span:?}");
        previous = span.start;
    }
    for warning in &parsed.warnings {
        assert!(warning.offset <= reply.len(), "warning at {} past {}", warning.offset, reply.len());
    }
    assert!(parsed.warnings.len() <= toolhost_protocol::MAX_WARNINGS + 1, "{} warnings", parsed.warnings.len());
    assert!(parsed.content.len() <= reply.len());
    let spec = toolhost_protocol::forecast();
    for call in ToolCall::from_reply(&reply, &parsed.calls) {
        let _ = check_call(&call, &[&spec]);
    }
}
