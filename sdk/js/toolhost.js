// Write a toolhost tool plugin in JavaScript, built with componentize-qjs.
//
//   import { plugin, tool } from "./toolhost.js";
//   export { manifest, invoke } from "./toolhost.js";
//
//   plugin("wordcount", "0.1.0", "Count words in text");
//
//   tool({
//     name: "count",
//     description: "Count the words in a text",
//     params: { text: { type: "string", description: "the text to count" } },
//     agentCallable: true,
//     run: ({ text }) => ({ words: text.split(/\s+/).filter(Boolean).length }),
//   });
//
// Parameter types: "string", "integer", "number", "boolean", "json";
// `optional: true` makes one optional. `run` gets the arguments by name and
// returns a string (text) or anything JSON.stringify takes (JSON), or
// throws InvalidArgs or Failed; any other exception fails the call with its
// message. Every call runs in a fresh instance, so no module state survives
// between calls.

// The toolhost plugin API these helpers are written against.
const API_VERSION = "0.1.0";

const CHECKS = {
  string: (v) => typeof v === "string",
  integer: (v) => Number.isInteger(v),
  number: (v) => typeof v === "number",
  boolean: (v) => typeof v === "boolean",
  json: () => true,
};

export class InvalidArgs extends Error {}
export class Failed extends Error {}

const declared = { name: "", version: "", description: "", capabilities: { directories: [], env: [], httpHosts: [] } };
const tools = new Map();

// Declare the plugin; `capabilities` may hold `directories` (guest path →
// "read" or "read-write"), `env` and `httpHosts`.
export function plugin(name, version, description, capabilities = {}) {
  Object.assign(declared, { name, version, description });
  declared.capabilities = {
    directories: Object.entries(capabilities.directories ?? {}).map(([guestPath, access]) => ({ guestPath, access })),
    env: capabilities.env ?? [],
    httpHosts: capabilities.httpHosts ?? [],
  };
}

// Declare a tool: name, description, params, run, and optionally
// permission ("public", "moderate", "sensitive"), agentCallable,
// resultApproval, distributedExposed, tags and example (an object).
export function tool(spec) {
  for (const [name, param] of Object.entries(spec.params ?? {})) {
    if (!(param.type in CHECKS)) throw new Error(`parameter ${name} of ${spec.name}: unknown type ${param.type}`);
  }
  tools.set(spec.name, spec);
}

const toolError = (tag, message) => ({ tag, val: String(message) });

export function manifest() {
  return {
    ...declared,
    apiVersion: API_VERSION,
    tools: [...tools.values()].map((t) => ({
      name: t.name,
      description: t.description ?? "",
      params: Object.entries(t.params ?? {}).map(([name, p]) => ({
        name,
        type: p.type,
        description: p.description ?? "",
        required: !p.optional,
      })),
      permission: t.permission ?? "public",
      resultApproval: t.resultApproval ?? false,
      agentCallable: t.agentCallable ?? false,
      distributedExposed: t.distributedExposed ?? false,
      tags: t.tags ?? [],
      example: t.example === undefined ? undefined : JSON.stringify(t.example),
    })),
  };
}

export function invoke(name, argsJson) {
  const spec = tools.get(name);
  if (!spec) throw toolError("unknown-tool", `no tool named \`${name}\``);
  let args;
  try {
    args = JSON.parse(argsJson);
  } catch (e) {
    throw toolError("invalid-args", `the arguments are not JSON: ${e.message}`);
  }
  for (const [key, p] of Object.entries(spec.params ?? {})) {
    if (args[key] === undefined || args[key] === null) {
      if (!p.optional) throw toolError("invalid-args", `missing required argument \`${key}\``);
    } else if (!CHECKS[p.type](args[key])) {
      throw toolError("invalid-args", `argument \`${key}\` must be ${p.type === "integer" ? "an" : "a"} ${p.type}`);
    }
  }
  let result;
  try {
    result = spec.run(args);
  } catch (e) {
    if (e instanceof InvalidArgs) throw toolError("invalid-args", e.message);
    throw toolError("failed", e instanceof Failed ? e.message : `${e?.name ?? "Error"}: ${e?.message ?? e}`);
  }
  return typeof result === "string" ? { tag: "text", val: result } : { tag: "json", val: JSON.stringify(result) };
}
