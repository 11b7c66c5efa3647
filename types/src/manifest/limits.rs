//! How much a manifest may declare. Every declaration is copied into the
//! host and most of it into every prompt, so each is capped; the caps are
//! generous for real tools and far below what would hurt the host or
//! crowd a model's context. The whole manifest is capped too, by
//! [`MAX_PLUGIN_MANIFEST_BYTES`].

/// Bytes of a whole manifest as the plugin returns it: the output limit
/// under which the registry reads it (`Limits::for_manifest`).
pub const MAX_PLUGIN_MANIFEST_BYTES: usize = 256 << 10;

/// The longest plugin, tool or parameter name every text protocol can
/// carry.
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// Bytes of a plugin's description: a paragraph or two about what it is
/// for, shown by `list` and `inspect`.
pub const MAX_PLUGIN_DESCRIPTION_BYTES: usize = 4 << 10;
/// Bytes of a tool's description. A few KiB is normal for a real tool
/// (usage notes, caveats, a worked example); four times that still leaves
/// room, while a hundred such tools would already fill a model's context.
pub const MAX_TOOL_DESCRIPTION_BYTES: usize = 16 << 10;
/// Bytes of a parameter's description: a sentence, or a short list of the
/// values it takes.
pub const MAX_PARAM_DESCRIPTION_BYTES: usize = 4 << 10;
/// Tags on one tool: labels for filtering, a handful in practice.
pub const MAX_TAGS: usize = 32;
/// Bytes of one tag: a word or two.
pub const MAX_TAG_BYTES: usize = 64;
/// Bytes of a tool's example, as JSON text: one call's arguments, shown in
/// the prompt beside the tool.
pub const MAX_EXAMPLE_BYTES: usize = 8 << 10;
/// Tools in one plugin: as many as OpenAI accepts in one request.
pub const MAX_TOOLS: usize = 128;
/// Parameters of one tool: more than any tool a model can use well takes.
pub const MAX_PARAMS: usize = 64;
/// Entries in each capability list (directories, environment variables,
/// HTTP hosts).
pub const MAX_CAPABILITY_ENTRIES: usize = 64;
/// Bytes of one capability entry: a path up to Linux's `PATH_MAX`, which
/// also holds any host name (253) or variable name.
pub const MAX_CAPABILITY_ENTRY_BYTES: usize = 4 << 10;
/// Bytes of a version string: semver with pre-release and build metadata.
pub const MAX_VERSION_BYTES: usize = 128;
/// What each string of a manifest counts beyond its bytes toward the
/// manifest's size: its pointer and length in the canonical ABI, so that
/// a million empty strings are not free.
pub const STRING_OVERHEAD_BYTES: usize = 8;
