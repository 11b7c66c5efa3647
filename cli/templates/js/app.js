// `{{name}}`: a toolhost tool plugin.
import { tool, plugin } from "./toolhost.js";
export { manifest, invoke } from "./toolhost.js";

plugin("{{name}}", "0.1.0", "Count words in text");

tool({
  name: "{{name}}",
  description: "Count the words in a text",
  params: { text: { type: "string", description: "the text to count" } },
  agentCallable: true,
  example: { text: "one two three" },
  run: ({ text }) => ({ words: text.split(/\s+/).filter(Boolean).length }),
});
