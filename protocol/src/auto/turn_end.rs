//! The tokens that end a turn, a message or the text, left at the end of a
//! reply when an engine keeps special tokens (as it must for the calls'
//! tokens to reach a parser): Llama 3's `<|eom_id|>` after a call, ChatML's
//! `<|im_end|>`, Harmony's `<|return|>` and the like. At the very end of a
//! reply such a token is where generation stopped, not prose, so it is
//! left out of the content; anywhere else it stays (it is being quoted).
//! SentencePiece's `</s>` (Mistral, GigaChat) ends the turn only in a reply
//! with no `<s>`, whose strikethrough it would close.

use super::super::scan::{Collector, find};
use super::prefixed::PYTHON_TAG;

/// SentencePiece's end of sentence.
const SENTENCE_END: &str = "</s>";
/// What opens the strikethrough `</s>` also closes, bare or with
/// attributes.
const STRIKETHROUGH: [&str; 2] = ["<s>", "<s "];

/// Every token that ends a turn, a message or the text, by family.
pub(crate) const TOKENS: [&str; 24] = [
    // Llama 3.x, and Llama 3 based Nemotron.
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end_of_text|>",
    // Llama 4; Jamba.
    "<|eot|>",
    "<|eom|>",
    // ChatML: Qwen, Hermes, Kimi, InternLM, LFM2, OLMo, Hunyuan.
    "<|im_end|>",
    "<|endoftext|>",
    // Harmony and Phi.
    "<|end|>",
    "<|return|>",
    "<|call|>",
    // Gemma, Gemma 4, FunctionGemma's stop before a result.
    "<end_of_turn>",
    "<turn|>",
    "<start_function_response>",
    // DeepSeek, in its fullwidth bars and with `_` or spaces for `▁`.
    "<｜end▁of▁sentence｜>",
    "<｜end_of_sentence｜>",
    "<｜end of sentence｜>",
    // Command R.
    "<|END_OF_TURN_TOKEN|>",
    // Seed-OSS, MiniMax, Apertus, Hunyuan-A13B.
    "<seed:eos>",
    "[e~[",
    "<|assistant_end|>",
    "<|eos|>",
    // Ling (Bailing) V3.
    "<|role_end|>",
    // GLM stops before the next role's token.
    "<|user|>",
    "<|observation|>",
];

/// Leaves the end-of-turn tokens at the end of `reply` (and a Llama
/// `<|python_tag|>` with nothing after it) out of the content.
pub(super) fn scan(reply: &str, out: &mut Collector<'_>) {
    let end = start(reply);
    if end < reply.len() {
        out.markup(end..reply.len());
    }
}

/// Where the end-of-turn tokens at the end of `reply` start: its length if
/// there are none.
pub(super) fn start(reply: &str) -> usize {
    let mut end = reply.len();
    // Looked for once, and only for a reply that ends with `</s>`: a search
    // per stripped token would be quadratic in a reply of many `</s>`, and
    // a search of every reply would cost prose a pass of its own.
    let mut struck = None;
    loop {
        let rest = reply[..end].trim_end();
        let token = match TOKENS.iter().chain([&PYTHON_TAG]).find(|token| rest.ends_with(**token)) {
            Some(token) => token,
            None if rest.ends_with(SENTENCE_END)
                && !*struck.get_or_insert_with(|| STRIKETHROUGH.iter().any(|tag| find(reply, 0, tag).is_some())) =>
            {
                SENTENCE_END
            }
            None => return end,
        };
        end = rest.len() - token.len();
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, one, parse, prose};
    use super::TOKENS;
    use serde_json::json;

    #[test]
    fn a_turn_ending_token_at_the_end_is_no_content() {
        let llama = "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eom_id|>";
        assert_eq!(calls(llama), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(llama).content, "");
        for token in TOKENS {
            assert_eq!(parse(&format!("It is sunny.{token}")).content, "It is sunny.", "{token}");
            let call = format!("<tool_call>{{\"name\": \"now\", \"arguments\": {{}}}}</tool_call>\n{token}\n");
            assert_eq!((calls(&call).len(), parse(&call).content.as_str()), (1, ""), "{token}");
        }
        assert_eq!(parse("Done.<|eom_id|><|eot_id|>\n").content, "Done.", "several");
        assert_eq!(parse("It is sunny.</s>").content, "It is sunny.", "SentencePiece's end of sentence");
        assert_eq!(parse("Let me check.<|python_tag|>").content, "Let me check.", "a python tag with nothing after it");
        let harmony = "<|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>";
        assert_eq!(parse(harmony).content, "It is sunny.");
    }

    #[test]
    fn a_turn_ending_token_before_more_text_is_quoted() {
        prose("ChatML ends a turn with <|im_end|> and Llama 3 with <|eot_id|>, as documented.");
        prose("`<|im_end|>`");
        prose("This is <s>struck</s>");
        prose("Price: <s style=\"color:red\">$10</s>");
    }
}
