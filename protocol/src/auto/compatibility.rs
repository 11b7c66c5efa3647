//! The README's compatibility table, held here as data the tests check:
//! each family's sample reply must parse to its one call, and the table
//! the README shows between its markers must be the one [`render`] writes
//! from [`FAMILIES`]. `TOOLHOST_BLESS=1 cargo test -p toolhost-protocol --lib
//! compatibility` rewrites the README's copy.
//!
//! The engine columns name the parser an engine selects for the family
//! (`--tool-call-parser` in vLLM and SGLang, `--dyn-tool-call-parser` in
//! Dynamo) or, where an engine picks it from the chat template (llama.cpp,
//! Ollama, LM Studio) or the name is not an option, a ✓. They were read
//! from each engine's parser registry: vLLM's `vllm/tool_parsers`,
//! SGLang's `FunctionCallParser`, llama.cpp's chat formats, Dynamo's
//! parser map and TensorRT-LLM's `serve/tool_parser`, Ollama's
//! `model/parsers` and its template-driven JSON parser, and LM Studio's
//! list of models with native tool use.

/// The engines, in the table's column order.
pub(crate) const ENGINES: [&str; 6] = ["vLLM", "SGLang", "llama.cpp", "TensorRT-LLM / Dynamo", "Ollama", "LM Studio"];

/// What an engine cell says when the engine has no parser for the family.
const NONE: &str = "—";

/// One family of tool-call markup.
pub(crate) struct Family {
    /// Its name.
    pub(crate) name: &'static str,
    /// The models that write it.
    pub(crate) models: &'static str,
    /// A reply calling `get_weather` with `{"city": "Paris"}`, as the
    /// family's template writes it.
    pub(crate) sample: &'static str,
    /// Per engine of [`ENGINES`]: its parser's name, ✓, or [`NONE`].
    pub(crate) engines: [&'static str; 6],
    /// What `auto` does with it besides finding the call.
    pub(crate) auto: &'static str,
}

/// Every family `auto` reads, in the README's order.
pub(crate) const FAMILIES: &[Family] = &[
    Family {
        name: "Hermes JSON in `<tool_call>`",
        models: "Hermes 2 Pro, Hermes 3, Qwen 2.5, Qwen 3, QwQ, Granite 4",
        sample: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        engines: ["`hermes`, `granite4`", "`hermes`, `qwen25`", "✓", "`hermes`, `qwen25`; TRT-LLM ✓", "✓", "✓"],
        auto: "`arguments`, `parameters` or `args`, before or after `name`; pythonic calls and Harmony messages inside the tag too",
    },
    Family {
        name: "Qwen3-Coder XML",
        models: "Qwen3-Coder, Step 3.5, Nemotron Nano 3, MiMo-V2-Flash",
        sample: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        engines: [
            "`qwen3_coder`, `qwen3_xml`, `step3p5`",
            "`qwen3_coder`, `step3p5`",
            "✓",
            "`qwen3_coder`, `nemotron_nano`; TRT-LLM ✓",
            "✓",
            NONE,
        ],
        auto: "values typed by the declared schema, or as SGLang types them without one; with or without the `<tool_call>`; `<param=KEY>` and quoted names too; a value quoting `</parameter>` keeps it; MiMo's parameters written before their `<function=…>`",
    },
    Family {
        name: "Seed-OSS",
        models: "Seed-OSS 36B",
        sample: "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n</seed:tool_call>",
        engines: ["`seed_oss`", NONE, "✓", NONE, NONE, NONE],
        auto: "`<seed:think>` is reasoning: a call shown inside it is not a call; Doubao Seed 2.0's `<parameter name=\"KEY\" string=\"true\">`",
    },
    Family {
        name: "GLM",
        models: "GLM-4.5, 4.6, 4.7, Laguna, Poolside",
        sample: "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
        engines: ["`glm45`, `glm47`", "`glm45`, `glm47`", "✓", "`glm47`; TRT-LLM ✓", "✓", NONE],
        auto: "values typed by the declared schema; with or without line breaks; calls after a `<think>` never closed; a left-out `<arg_key>` or `<arg_value>`, a doubled tag and a stray closing tag forgiven; Laguna's `<user>` in place of `<tool_call>` and Poolside's `get weather` for a declared tool",
    },
    Family {
        name: "Hunyuan V3",
        models: "Hunyuan (HY) V3",
        sample: "<tool_calls:opensource><tool_call:opensource>get_weather<tool_sep:opensource><arg_key:opensource>city</arg_key:opensource><arg_value:opensource>Paris</arg_value:opensource></tool_call:opensource></tool_calls:opensource>",
        engines: ["`hy_v3`", "`hunyuan`", NONE, NONE, NONE, NONE],
        auto: "its tokens with the shipped tokenizer's `:opensource` suffix or without; values typed by the declared schema; `<think:opensource>` is reasoning",
    },
    Family {
        name: "Kimi K2",
        models: "Kimi K2, K2 Thinking",
        sample: "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>",
        engines: ["`kimi_k2`", "`kimi_k2`", "✓", "`kimi_k2`; TRT-LLM ✓", NONE, NONE],
        auto: "`functions.NAME:IDX` is the call's id; calls after a `<think>` never closed; a call's end token left out",
    },
    Family {
        name: "Kimi K3",
        models: "Kimi K3",
        sample: "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",
        engines: ["`kimi_k3`", "`kimi_k3`", NONE, "TRT-LLM ✓", NONE, NONE],
        auto: "values decoded as their tag types them, or one `<|open|>json` object; the think channel is reasoning; calls without the `tools` channel when they stand apart from the prose; the response channel's tokens left out of the content",
    },
    Family {
        name: "DeepSeek V3, R1",
        models: "DeepSeek V3, R1, R1-0528",
        sample: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        engines: ["`deepseek_v3`", "`deepseekv3`", "✓", "`deepseek_v3`; TRT-LLM ✓", NONE, NONE],
        auto: "`_` or spaces for `▁`, ASCII `|` for `｜`; calls after a `<think>` never closed",
    },
    Family {
        name: "DeepSeek V3.1",
        models: "DeepSeek V3.1",
        sample: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        engines: ["`deepseek_v31`", "`deepseekv31`", "✓", "`deepseek_v3_1`; TRT-LLM ✓", NONE, NONE],
        auto: "as V3",
    },
    Family {
        name: "DeepSeek DSML",
        models: "DeepSeek V3.2, V4, V4.1",
        sample: "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        engines: [
            "`deepseek_v32`, `deepseek_v4`",
            "`deepseekv32`, `deepseekv4`, `deepseekv41`",
            NONE,
            "`deepseek_v3_2`, `deepseek_v4`; TRT-LLM ✓",
            NONE,
            NONE,
        ],
        auto: "`string=\"true\"` values kept as text, others decoded as JSON; an invoke holding one JSON object; the closing tag may be left out; V4.1's tags with a space after `｜DSML｜`; quantized V4's `</｜DSML｜inv>`",
    },
    Family {
        name: "MiniMax",
        models: "MiniMax-M2, M2.1, M2.5",
        sample: "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n</invoke>\n</minimax:tool_call>",
        engines: ["`minimax_m2`", "`minimax-m2`", "✓", "`minimax_m2`; TRT-LLM ✓", "✓", NONE],
        auto: "values typed by the declared schema; the closing tag may be left out, and both section tags when the invoke tags stand on their own lines (or in Anthropic's `<function_calls>`)",
    },
    Family {
        name: "MiniMax M3",
        models: "MiniMax M3",
        sample: "]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name=\"get_weather\">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
        engines: ["`minimax_m3`", "`minimax-m3`", NONE, NONE, NONE, NONE],
        auto: "arguments as elements named by their keys: nested elements are objects, `<item>`s arrays, a repeated key an array; top-level values typed by the declared schema; `<mm:think>` is reasoning",
    },
    Family {
        name: "Step3",
        models: "Step3",
        sample: "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"get_weather\"><steptml:parameter name=\"city\">Paris</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        engines: ["`step3`", "`step3`", NONE, NONE, NONE, NONE],
        auto: "values typed by the declared schema, a string's white space kept; calls without `function<｜tool_sep｜>` or with a separator between them",
    },
    Family {
        name: "Harmony",
        models: "gpt-oss",
        sample: "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
        engines: ["`openai`", "`gpt-oss`", "✓", "`harmony`", "✓", NONE],
        auto: "with or without the leading tokens or `<|constrain|>`, its type in any case or `code`, `json` glued to the name; every token stripped (`assistantcommentary to=functions.NAME json{…}`) for a declared tool; the analysis channel is reasoning",
    },
    Family {
        name: "Gemma 4",
        models: "Gemma 4",
        sample: "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
        engines: ["`gemma4`", "`gemma4`", "✓", "`gemma4`", "✓", NONE],
        auto: "strings between `<|\"|>` kept exactly, bare values typed by the declared schema; `call:NAME(…)` in parentheses, a quote token left out; a declared tool's `call:NAME{…}` without its opening token, on a line of its own or after the reasoning; `<turn|>` or nothing may close it; `<|channel>…<channel|>` is reasoning, and so is the start of a reply up to a `<channel|>` nothing opened",
    },
    Family {
        name: "Gemma `tool_code`",
        models: "Gemma 2, Gemma 3 (Google's function-calling prompt)",
        sample: "```tool_code\nget_weather(city=\"Paris\")\n```",
        engines: [NONE, NONE, NONE, NONE, NONE, NONE],
        auto: "pythonic calls in a ```` ```tool_code ```` block (only for a declared tool, as in any fence) or a `<tool_code>` element; `print(…)` around a call, and Gemini's `default_api.` before its name, left out",
    },
    Family {
        name: "FunctionGemma",
        models: "FunctionGemma 270M",
        sample: "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>",
        engines: ["`functiongemma`", NONE, "✓", NONE, "✓", NONE],
        auto: "as Gemma 4, with `<escape>` around strings",
    },
    Family {
        name: "Mistral `[TOOL_CALLS]`",
        models: "Mistral 7B v0.3, Nemo, Small 3.2, Devstral, Magistral",
        sample: "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
        engines: ["`mistral`", "`mistral`", "✓", "`mistral`", "✓", NONE],
        auto: "`[{…}]`, `name{…}`, `name[ARGS]{…}` and `name[CALL_ID]ID[ARGS]{…}` (the id answered by the result), objects apart by commas without the brackets; `name{…}` with the tokens stripped, for a declared tool on a line of its own; `[THINK]…[/THINK]` is reasoning",
    },
    Family {
        name: "Llama 3 JSON",
        models: "Llama 3.1, 3.2, 3.3",
        sample: "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
        engines: ["`llama3_json`", "`llama3`", "✓", "`llama3_json`", "✓", "✓"],
        auto: "with or without `<|python_tag|>` (without it, only for a declared tool); `\"type\": \"function\"` before the name, as small models write it; built-in tools as `<|python_tag|>NAME.call(…)`, several with `;` between them",
    },
    Family {
        name: "Pythonic list",
        models: "Llama 3.2, Llama 4",
        sample: "[get_weather(city=\"Paris\")]",
        engines: ["`pythonic`, `llama4_pythonic`", "`pythonic`", NONE, "`pythonic`", NONE, NONE],
        auto: "only for declared tools when bare, and no word after it on its line; Python or JSON literals; a reply of nothing but such calls needs no brackets",
    },
    Family {
        name: "LFM2, Llama 4 tokens",
        models: "LFM2, Llama 4",
        sample: "<|tool_call_start|>[get_weather(city=\"Paris\")]<|tool_call_end|>",
        engines: ["`lfm2`", "`lfm2`", "✓", NONE, "✓", NONE],
        auto: "pythonic calls between `<|tool_call_start|>` or `<|python_start|>` and their closing tokens",
    },
    Family {
        name: "OLMo 3",
        models: "OLMo 3",
        sample: "<function_calls>\nget_weather(city=\"Paris\")\n</function_calls>",
        engines: ["`olmo3`", NONE, NONE, NONE, "✓", NONE],
        auto: "one pythonic call per line",
    },
    Family {
        name: "`<tool_calls>` JSON",
        models: "Jamba, Hunyuan-A13B, MiniMax-M1",
        sample: "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</tool_calls>",
        engines: ["`jamba`, `hunyuan_a13b`, `minimax`", NONE, NONE, "`jamba`", NONE, NONE],
        auto: "a JSON array of calls, or MiniMax-M1's one call a line",
    },
    Family {
        name: "Nemotron `<TOOLCALL>`",
        models: "Llama-Nemotron, Nemotron Nano 2",
        sample: "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</TOOLCALL>",
        engines: [NONE, NONE, "✓", "`nemotron_deci`", NONE, NONE],
        auto: "a JSON array of calls",
    },
    Family {
        name: "LongCat",
        models: "LongCat-Flash",
        sample: "<longcat_tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</longcat_tool_call>",
        engines: ["`longcat`", NONE, NONE, NONE, "✓", NONE],
        auto: "JSON, GLM-style `<longcat_arg_key>` tags typed by the declared schema, or the name and a JSON object",
    },
    Family {
        name: "Granite 3",
        models: "Granite 3.x",
        sample: "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
        engines: ["`granite`", NONE, "✓", NONE, "✓", NONE],
        auto: "nothing closes it: the array ends the calls; a `<|/tool_call|>` after it is no content",
    },
    Family {
        name: "InternLM",
        models: "InternLM2, InternLM2.5, Intern-S1",
        sample: "<|action_start|><|plugin|>\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|action_end|>",
        engines: ["`internlm`", "`interns1`", NONE, NONE, NONE, NONE],
        auto: "one JSON call or an array",
    },
    Family {
        name: "Apertus",
        models: "Apertus",
        sample: "<|tools_prefix|>[{\"get_weather\": {\"city\": \"Paris\"}}]<|tools_suffix|>",
        engines: ["`apertus`", "`apertus2509`", "✓", NONE, "✓", NONE],
        auto: "`{NAME: arguments}` objects; `<|inner_prefix|>…<|inner_suffix|>` is reasoning",
    },
    Family {
        name: "GigaChat 3",
        models: "GigaChat 3, 3.1",
        sample: "function call<|role_sep|>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
        engines: ["`gigachat3`", "`gigachat3`", "✓", NONE, NONE, NONE],
        auto: "up to `<|message_sep|>` or the reply's end; 3.1's `<|function_call|>{…}` too; the `<|message_sep|>` before the call and a final `</s>` are no content",
    },
    Family {
        name: "GigaChat 3.5 GCML",
        models: "GigaChat 3.5",
        sample: "<｜GCML｜tool_calls><｜GCML｜invoke name=\"get_weather\"><｜GCML｜parameter name=\"city\" string=\"true\">Paris</｜GCML｜parameter></｜GCML｜invoke></｜GCML｜tool_calls>",
        engines: ["`gigachat35`", "✓", NONE, NONE, NONE, NONE],
        auto: "read as DeepSeek's DSML: `string=\"true\"` values kept as text, others decoded as JSON",
    },
    Family {
        name: "Command R7B",
        models: "Command R7B, Command A",
        sample: "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}]<|END_ACTION|>",
        engines: ["`cohere_command3`", NONE, "✓", NONE, "✓", NONE],
        auto: "`tool_call_id` is the call's id; `<|START_THINKING|>` is reasoning",
    },
    Family {
        name: "Cohere cofl",
        models: "Command A Reasoning",
        sample: "<cofl:tool_calls><cofl:tool_call id=\"0\" name=\"get_weather\"><cofl:value name=\"city\" type=\"raw\">Paris</cofl:value></cofl:tool_call></cofl:tool_calls>",
        engines: [NONE, NONE, NONE, NONE, NONE, NONE],
        auto: "`raw`, `json`, `dict` and `list` values as typed, and the flat `<cofl:tool_param string=…>` form; XML escapes undone; `id` is the call's id; after an `<|END_THINKING|>` the prompt opened; without the section's tags when the calls stand apart",
    },
    Family {
        name: "ATEM",
        models: "Muse Glimmer",
        sample: "<|start|>assistant to=get_weather<|message|><atem:function_calls><atem:invoke name=\"get_weather\"><atem:parameter name=\"city\">Paris</atem:parameter></atem:invoke></atem:function_calls>",
        engines: [NONE, NONE, NONE, NONE, NONE, NONE],
        auto: "the Harmony-like header left out of the content; `to=self` messages are reasoning and `to=user` ones the answer, markup in either quoted, not calls; values typed by the declared schema",
    },
    Family {
        name: "Functionary v3.2",
        models: "Functionary v3.2",
        sample: ">>>get_weather\n{\"city\": \"Paris\"}",
        engines: [NONE, NONE, "✓", NONE, NONE, NONE],
        auto: "`>>>all` prose segments left out of the content; `>>>python` code as `{\"code\": …}`",
    },
    Family {
        name: "MiniCPM3",
        models: "MiniCPM3",
        sample: "<|tool_call_start|>\n```python\nget_weather(city=\"Paris\")\n```\n<|tool_call_end|>",
        engines: ["`minicpm` (the model's plugin)", NONE, NONE, NONE, NONE, NONE],
        auto: "pythonic or JSON calls, one a line, in a fence inside LFM2's tokens",
    },
    Family {
        name: "MiniCPM 5",
        models: "MiniCPM 5",
        sample: "<function name=\"get_weather\"><param name=\"city\">Paris</param></function>",
        engines: ["`minicpm5`", NONE, NONE, NONE, NONE, NONE],
        auto: "`<![CDATA[…]]>` values kept exactly, markup and all; others typed by the declared schema",
    },
    Family {
        name: "ReAct",
        models: "Command R, LangChain agents' fine-tunes",
        sample: "Action: get_weather\nAction Input: {\"city\": \"Paris\"}",
        engines: [NONE, NONE, NONE, NONE, NONE, NONE],
        auto: "one `Action:` / `Action Input:` pair per call, the input JSON or one text for the tool's one parameter; any tool after a `Thought:` line or at the reply's start, else only a declared one",
    },
    Family {
        name: "Solar Open 2",
        models: "Upstage Solar Open 2",
        sample: "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Paris<|tool_arg:end|>\n<|tool_call:end|>",
        engines: ["✓", NONE, NONE, NONE, NONE, NONE],
        auto: "values typed by the declared schema; the closing token may be left out at the reply's end; `<|think:start|>…<|think:end|>` is reasoning",
    },
    Family {
        name: "K2 Horizon",
        models: "K2 Horizon",
        sample: "<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value>Paris</ifm|arg_value></ifm|tool_call></ifm|tool_calls>",
        engines: ["✓", NONE, NONE, NONE, NONE, NONE],
        auto: "GLM-like `ifm|` tags, a value's type between its key and its value skipped (the declared schema types it); a JSON call in the element too",
    },
    Family {
        name: "Cline, Roo Code",
        models: "models prompted by Cline or Roo Code, or trained on their traces",
        sample: "<get_weather>\n<city>Paris</city>\n</get_weather>",
        engines: [NONE, NONE, NONE, NONE, NONE, NONE],
        auto: "a declared tool's element holding an element per argument and nothing else; values typed by the declared schema",
    },
    Family {
        name: "Qwen-Agent",
        models: "Qwen2, Qwen2.5 under Qwen-Agent's function-calling prompt",
        sample: "✿FUNCTION✿: get_weather\n✿ARGS✿: {\"city\": \"Paris\"}",
        engines: [NONE, NONE, NONE, NONE, NONE, NONE],
        auto: "one `✿FUNCTION✿:` / `✿ARGS✿:` pair per call; any tool at the reply's start, else only a declared one; a `✿RESULT✿` left at the end goes with the calls",
    },
    Family {
        name: "Command R `Action:` block",
        models: "Command R, Command R+",
        sample: "Action: ```json\n[\n    {\n        \"tool_name\": \"get_weather\",\n        \"parameters\": {\"city\": \"Paris\"}\n    }\n]\n```",
        engines: [NONE, NONE, NONE, NONE, NONE, NONE],
        auto: "only for a declared tool, as fenced JSON; the `Action:` label is no content",
    },
    Family {
        name: "LangChain JSON agents",
        models: "LangChain structured chat and JSON agents' fine-tunes",
        sample: "Action:\n```json\n{\n  \"action\": \"get_weather\",\n  \"action_input\": {\"city\": \"Paris\"}\n}\n```",
        engines: [NONE, NONE, NONE, NONE, NONE, NONE],
        auto: "only for a declared tool; `\"action\": \"Final Answer\"` is no call, and its text is the content; the `Action:` label is no content",
    },
    Family {
        name: "Glaive `<functioncall>`",
        models: "fine-tunes on Glaive's function-calling data",
        sample: "<functioncall> {\"name\": \"get_weather\", \"arguments\": '{\"city\": \"Paris\"}'} <|endoftext|>",
        engines: [NONE, NONE, NONE, NONE, NONE, NONE],
        auto: "nothing closes it: the object ends the call; arguments as a single-quoted JSON string too",
    },
    Family {
        name: "Granite-20B `<function_call>`",
        models: "Granite-20B-FunctionCalling",
        sample: "<function_call> {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
        engines: ["`granite-20b-fc`", NONE, NONE, NONE, NONE, NONE],
        auto: "an opener before each call, none closing them; Hermes' JSON in `<function_call>…</function_call>`, or for a declared tool in `<tools>…</tools>`, as llama.cpp takes them too",
    },
    Family {
        name: "JSON around a call",
        models: "any, through llama.cpp's generic format or an OpenAI-shaped answer",
        sample: "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}",
        engines: [NONE, NONE, "✓", NONE, NONE, NONE],
        auto: "also an OpenAI item, `{\"type\": \"function\", \"function\": {…}}`, bare or in an array; only for a declared tool",
    },
    Family {
        name: "`<function=NAME>` JSON",
        models: "Functionary v3.1, Llama 3.1 custom tools",
        sample: "<function=get_weather>{\"city\": \"Paris\"}</function>",
        engines: [NONE, NONE, "✓", NONE, NONE, NONE],
        auto: "also `<function name=\"NAME\">{…}</function>`",
    },
];

/// Where the generated table starts in the README.
pub(crate) const BEGIN: &str = "<!-- compatibility table: generated from protocol/src/auto/compatibility.rs; TOOLHOST_BLESS=1 cargo test -p toolhost-protocol --lib compatibility rewrites it -->";
/// Where it ends.
pub(crate) const END: &str = "<!-- end of the compatibility table -->";

/// The table as markdown, from its header row to its last row.
pub(crate) fn render() -> String {
    let cell = |text: &str| text.replace('|', "\\|");
    let mut table = format!("| family | models | {} | what `auto` does |\n", ENGINES.join(" | "));
    table.push_str(&"| --- ".repeat(ENGINES.len() + 3));
    table.push_str("|\n");
    for family in FAMILIES {
        let engines: Vec<String> = family.engines.iter().map(|e| cell(e)).collect();
        table.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            cell(family.name),
            cell(family.models),
            engines.join(" | "),
            cell(family.auto)
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, one, parse};
    use super::{BEGIN, END, FAMILIES, render};
    use serde_json::json;

    #[test]
    fn every_family_in_the_table_is_read_as_its_one_call() {
        for family in FAMILIES {
            assert_eq!(calls(family.sample), one("get_weather", json!({"city": "Paris"})), "{}: {}", family.name, family.sample);
            let parsed = parse(family.sample);
            assert_eq!(parsed.content.trim(), "", "{}: its markup is no content", family.name);
            let reasoned = format!("<think>I could write {} here.</think>It is sunny.", family.sample);
            assert_eq!(calls(&reasoned), vec![], "{}: a call shown in reasoning is reasoning", family.name);
        }
    }

    #[test]
    fn the_readmes_compatibility_table_is_the_one_the_tests_render() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let start = readme.find(BEGIN).map(|at| at + BEGIN.len() + 1).expect("the README marks where the table starts");
        let end = readme[start..].find(END).map(|at| start + at).expect("the README marks where the table ends");
        let table = render();
        if std::env::var_os("TOOLHOST_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(path, format!("{}{table}{}", &readme[..start], &readme[end..])).unwrap();
            return;
        }
        assert!(
            readme[start..end] == table,
            "the README's compatibility table differs from the families in compatibility.rs; run `TOOLHOST_BLESS=1 cargo test -p toolhost-protocol --lib compatibility` to rewrite it"
        );
    }
}
