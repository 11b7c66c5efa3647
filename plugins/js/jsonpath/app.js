// `jsonpath`: select values from a JSON document with a JSONPath expression.
import { InvalidArgs, plugin, tool } from "./toolhost.js";
export { manifest, invoke } from "./toolhost.js";

plugin("jsonpath", "0.1.0", "Query JSON documents with JSONPath");

// The most values one query returns, so a broad path cannot flood the reply.
const MAX_RESULTS = 200;

// `$.a.b[0]['c d'][*]..e` as steps: { key }, { index }, { wildcard }, { descend }.
function compile(path) {
  if (!path.startsWith("$")) throw new InvalidArgs("a path starts with `$`");
  const steps = [];
  // `..`, then `.name` / `.*` (the dot optional right after `..`), or `[…]`.
  const token = /(\.\.)|(\.)?(\*|[A-Za-z_$][\w$-]*)|\[(\*|-?\d+|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\]/y;
  token.lastIndex = 1;
  let afterDescend = false;
  while (token.lastIndex < path.length) {
    const at = token.lastIndex;
    const m = token.exec(path);
    if (!m || (m[3] !== undefined && !m[2] && !afterDescend)) {
      throw new InvalidArgs(`unexpected \`${path.slice(at)}\` at offset ${at} of the path`);
    }
    afterDescend = Boolean(m[1]);
    const part = m[3] ?? m[4];
    if (m[1]) steps.push({ descend: true });
    else if (part === "*") steps.push({ wildcard: true });
    else if (/^-?\d+$/.test(part)) steps.push({ index: Number(part) });
    else steps.push({ key: /^['"]/.test(part) ? JSON.parse(`"${part.slice(1, -1).replace(/\\'/g, "'")}"`) : part });
  }
  return steps;
}

function children(value, path) {
  if (Array.isArray(value)) return value.map((v, i) => [v, `${path}[${i}]`]);
  if (value && typeof value === "object") return Object.entries(value).map(([k, v]) => [v, `${path}[${JSON.stringify(k)}]`]);
  return [];
}

function step(nodes, s) {
  const out = [];
  for (const [value, path] of nodes) {
    if (s.wildcard) out.push(...children(value, path));
    else if (s.descend) {
      const stack = [[value, path]];
      while (stack.length) {
        const node = stack.pop();
        out.push(node);
        stack.push(...children(...node).reverse());
      }
    } else if (s.index !== undefined && Array.isArray(value)) {
      const i = s.index < 0 ? value.length + s.index : s.index;
      if (i >= 0 && i < value.length) out.push([value[i], `${path}[${i}]`]);
    } else if (s.key !== undefined && value && typeof value === "object" && !Array.isArray(value) && s.key in value) {
      out.push([value[s.key], `${path}[${JSON.stringify(s.key)}]`]);
    }
  }
  return out;
}

tool({
  name: "json_query",
  description: "Select values from a JSON document with a JSONPath expression ($, .key, ['key'], [index], [*], ..).",
  params: {
    document: { type: "json", description: "the JSON document (an object, array or scalar)" },
    path: { type: "string", description: "a JSONPath such as $.store.book[0].title or $..price" },
  },
  agentCallable: true,
  tags: ["json"],
  example: { document: { book: [{ title: "Dune" }] }, path: "$.book[0].title" },
  run({ document, path }) {
    const nodes = compile(path).reduce(step, [[document, "$"]]);
    const matches = nodes.slice(0, MAX_RESULTS).map(([value, at]) => ({ path: at, value }));
    return { count: nodes.length, truncated: nodes.length > MAX_RESULTS, matches };
  },
});
