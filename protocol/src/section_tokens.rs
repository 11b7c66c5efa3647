//! The special tokens that open a section of tool calls in the families
//! whose models may call a tool before closing their `<think>` (Kimi K2's
//! thinking models; DeepSeek's; GLM-4.6 and later, whose `<tool_call>` is a
//! special token): read by those families (`auto`) and by the
//! scanner, which ends an unclosed thinking block at them (`scan`), as the
//! engines' reasoning parsers do; and the tokens two family readers share,
//! kept here so that neither imports the other.

/// Kimi K2 opens its calls.
pub(crate) const KIMI_SECTION_BEGIN: &str = "<|tool_calls_section_begin|>";
/// What every tag of Muse Glimmer's ATEM markup starts with; a Harmony-like
/// message whose body starts so is a call's.
pub(crate) const ATEM_NAMESPACE: &str = "<atem:";
/// Kimi K2's section token as some outputs write it, without the `s`.
pub(crate) const KIMI_SECTION_BEGIN_SINGULAR: &str = "<|tool_call_section_begin|>";
/// Kimi K2 opens one call: some outputs leave the section out (vLLM's
/// Kimi parser ends reasoning at it too).
pub(crate) const KIMI_CALL_BEGIN: &str = "<|tool_call_begin|>";
/// DeepSeek V3 and R1 open their calls.
pub(crate) const DEEPSEEK_SECTION_BEGIN: &str = "<｜tool▁calls▁begin｜>";
/// DeepSeek V3 and R1 open their calls, written with ASCII bars.
pub(crate) const DEEPSEEK_ASCII_SECTION_BEGIN: &str = "<|tool▁calls▁begin|>";
/// DeepSeek V3.2 opens its DSML calls.
pub(crate) const DSML_FUNCTION_CALLS_BEGIN: &str = "<｜DSML｜function_calls>";
/// DeepSeek V4 opens its DSML calls.
pub(crate) const DSML_TOOL_CALLS_BEGIN: &str = "<｜DSML｜tool_calls>";
/// Solar Open 2 opens a call, before or after closing its reasoning.
pub(crate) const SOLAR_CALL_START: &str = "<|tool_call:start|>";
/// DeepSeek V4.1 opens its DSML calls, a space after `｜DSML｜`.
pub(crate) const DSML_SPACED_CALLS_BEGIN: &str = "<｜DSML｜ calls>";

/// GLM's (and Hermes') call: it ends an unclosed `<think>` only when calls
/// end the reply, as the same markup also stands in thoughts.
pub(crate) const TOOL_CALL: (&str, &str) = ("<tool_call>", "</tool_call>");

/// Every token above but [`TOOL_CALL`]: where an unclosed `<think>` ends.
pub(crate) const CALLS_END_THINKING: [&str; 8] = [
    KIMI_SECTION_BEGIN,
    KIMI_SECTION_BEGIN_SINGULAR,
    KIMI_CALL_BEGIN,
    DEEPSEEK_SECTION_BEGIN,
    DEEPSEEK_ASCII_SECTION_BEGIN,
    DSML_FUNCTION_CALLS_BEGIN,
    DSML_TOOL_CALLS_BEGIN,
    DSML_SPACED_CALLS_BEGIN,
];
