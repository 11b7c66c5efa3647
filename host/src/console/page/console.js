// The toolhost console's page: plain DOM, no framework. Every request
// carries the cookie the printed link set; changes go as JSON POSTs to the
// console's own origin, and live updates arrive as server-sent events.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];

// Characters that make text read as something it is not: controls (but
// newline and tab), line and paragraph separators, bidirectional marks,
// embeddings, overrides and isolates, and invisible format characters
// (soft hyphen, zero-width ones, word joiner, BOM, tag characters) — the
// set toolhost's terminal and MCP questions escape (protocol/src/text.rs).
// `invoice-\u202efdp.exe` must not read as "invoice-exe.pdf" on a card a
// person approves.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff]|\udb40[\udc00-\udc7f]/g;

function codePoint(c) {
  return `U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
}

// Hidden characters of one text marked as elements, at most; the rest show
// the same placeholders as plain text. A text of nothing but hidden
// characters would otherwise be an element each, a page of them.
const MARKED_PER_TEXT = 256;

// `text` with each hidden character as a visible, marked placeholder.
function shown(text) {
  const fragment = document.createDocumentFragment();
  let last = 0;
  let marked = 0;
  for (const match of text.matchAll(HIDDEN)) {
    if (marked === MARKED_PER_TEXT) break;
    if (match.index > last) fragment.append(text.slice(last, match.index));
    fragment.append(el("span", { class: "hidden-char", title: `a hidden character, ${codePoint(match[0])}` }, `⟦${codePoint(match[0])}⟧`));
    last = match.index + match[0].length;
    marked++;
  }
  if (last < text.length) fragment.append(shownText(text.slice(last)));
  return fragment;
}

// The same as plain text, where an element cannot hold markup (an option).
function shownText(text) {
  return text.replace(HIDDEN, (c) => `⟦${codePoint(c)}⟧`);
}

// Replace what `node` shows with `text`, hidden characters marked.
function setText(node, text) {
  node.replaceChildren(shown(String(text)));
}

// Every string child is shown with its hidden characters marked: all text
// on the page that came from a plugin, a model or a client goes through
// here or through `setText`.
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key in node && key !== "list") node[key] = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    if (child instanceof Node) node.append(child);
    else if (tag === "option") node.append(shownText(String(child)));
    else if (String(child).search(HIDDEN) < 0) node.append(String(child));
    else node.append(shown(String(child)));
  }
  return node;
}

async function api(path, body, method) {
  const init = { method: method || (body === undefined ? "GET" : "POST"), headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let value;
  try { value = text ? JSON.parse(text) : {}; } catch { value = { error: text }; }
  if (!response.ok) throw new Error(value.error || `${response.status} ${response.statusText}`);
  return value;
}

function report(error) {
  alert(error.message || String(error));
}

// A tree opens by itself up to this many items, while its view has built
// fewer than `OPEN_VIEW_ITEMS` without a click (a tree of 20 items in
// each of 20 items, four deep, would otherwise open whole).
const OPEN_TREE_ITEMS = 20;
const OPEN_VIEW_ITEMS = 200;
// A tree shows this many items at a time, more at a click, and makes them
// when it is first opened: arguments of a hundred thousand items would
// otherwise be as many elements, made before anyone looks.
const TREE_PAGE_ITEMS = 200;
// A string shows this many characters until all are asked for.
const SHOWN_STRING_CHARS = 4000;
// Hidden characters one view marks as elements; past them, placeholders
// as text.
const MARKED_PER_VIEW = 512;

// `text` for `el`, its hidden characters marked as elements while the
// view's `budget` of marks lasts, as placeholder text after.
function marked(text, budget) {
  if (budget.marks <= 0) return shownText(text);
  budget.marks -= Math.min((text.match(HIDDEN) || []).length, MARKED_PER_TEXT);
  return text;
}

// A JSON value as a collapsible tree, within its view's `budget`.
function jsonTree(value, key, budget) {
  const label = key === undefined ? [] : [el("span", { class: "key" }, marked(JSON.stringify(key), budget)), ": "];
  if (value !== null && typeof value === "object") {
    const isArray = Array.isArray(value);
    const entries = isArray ? value.map((v, i) => [i, v]) : Object.entries(value);
    const [open, close] = isArray ? ["[", "]"] : ["{", "}"];
    const details = el("details", {},
      el("summary", {}, ...label, `${open}${entries.length} ${entries.length === 1 ? "item" : "items"}${close}`));
    const more = el("button", { type: "button", class: "more", hidden: true });
    let made = 0;
    const showMore = () => {
      const page = entries.slice(made, made + TREE_PAGE_ITEMS);
      more.before(...page.map(([k, v]) => el("div", {}, jsonTree(v, isArray ? undefined : k, budget))));
      made += page.length;
      const left = entries.length - made;
      more.hidden = left === 0;
      more.textContent = left === 0 ? "" : `show ${Math.min(left, TREE_PAGE_ITEMS)} more (${left} not shown)`;
    };
    more.addEventListener("click", showMore);
    details.append(more);
    if (entries.length <= OPEN_TREE_ITEMS && entries.length <= budget.items) {
      budget.items -= entries.length;
      details.open = true;
      showMore();
    } else {
      details.addEventListener("toggle", () => { if (details.open && made === 0) showMore(); });
    }
    return details;
  }
  const cls = typeof value === "string" ? "str" : typeof value === "number" ? "num" : "lit";
  const text = JSON.stringify(value);
  if (text.length <= SHOWN_STRING_CHARS) return el("span", {}, ...label, el("span", { class: cls }, marked(text, budget)));
  // Never half of a surrogate pair (a tag character, say) at the cut.
  const cut = SHOWN_STRING_CHARS - (/[\ud800-\udbff]/.test(text[SHOWN_STRING_CHARS - 1]) ? 1 : 0);
  const shownPart = el("span", { class: cls }, `${marked(text.slice(0, cut), budget)}…`);
  const all = el("button", { type: "button", class: "more" }, `show the other ${text.length - cut} characters`);
  all.addEventListener("click", () => { setText(shownPart, text); all.remove(); });
  return el("span", {}, ...label, shownPart, " ", all);
}

function jsonView(value) {
  return el("div", { class: "json" }, jsonTree(value, undefined, { items: OPEN_VIEW_ITEMS, marks: MARKED_PER_VIEW }));
}

// Whether some of a tree's values are not on the page: a part folded, or
// a list or a string shown only in part.
function partlyShown(view) {
  return view.querySelector("details:not([open]), button.more:not([hidden])") !== null;
}

// A call's arguments on a card, saying beside its buttons while any of
// them is not on the page: a person should not approve what they did not
// see without being told so.
function argumentsOnCard(args) {
  const view = jsonView(args);
  const chars = JSON.stringify(args).length;
  const note = el("div", { class: "partly" },
    `Not all of these arguments are shown (${chars.toLocaleString()} characters of JSON): open the folded parts above to see the rest.`);
  const refresh = () => { note.hidden = !partlyShown(view); };
  // After the tree's own handlers, which build what an opening shows.
  view.addEventListener("toggle", () => setTimeout(refresh), true);
  view.addEventListener("click", () => setTimeout(refresh));
  refresh();
  return [view, note];
}

function levelBadge(level) {
  return el("span", { class: `level ${level}` }, level);
}

const FAILED = new Set(["error", "denied", "result-rejected", "not-found", "invalid-args", "timed-out", "out-of-fuel", "limit-exceeded", "cancelled"]);

// ---- tabs ---------------------------------------------------------------

const loaders = {};
function show(tab) {
  for (const button of $$("#tabs button")) button.classList.toggle("active", button.dataset.tab === tab);
  for (const section of $$("main .tab")) section.hidden = section.id !== `tab-${tab}`;
  if (loaders[tab]) loaders[tab]().catch(report);
}
for (const button of $$("#tabs button")) button.addEventListener("click", () => show(button.dataset.tab));

// ---- state and tools ----------------------------------------------------

let state = {};
let tools = [];
// The agent the Tools and Prompt tabs show and toggle: the console's own
// (null) or a door's, picked in the header.
let agent = null;
const forAgent = (path) => (agent ? `${path}?agent=${encodeURIComponent(agent)}` : path);

async function loadState() {
  try {
    state = await api(forAgent("/api/state"));
  } catch (error) {
    if (!agent) throw error;
    agent = null; // its door has gone: back to the console's own
    state = await api("/api/state");
  }
  setText($("#who"), `${state.plugins.length} plugins · ${state.protocol} · v${state.version}`);
  const pick = $("#agent-pick");
  pick.replaceChildren(...state.agents.map((name) => el("option", { value: name }, name)));
  pick.value = state.agent;
  pick.disabled = state.agents.length < 2;
  $("#default-enabled").checked = state.default_tool_enabled;
}

$("#agent-pick").addEventListener("change", (event) => {
  agent = event.target.value;
  loadTools().catch(report);
  if (!$("#tab-prompt").hidden) loadPrompt().catch(report);
});

function capabilityCell(caps) {
  const rows = caps.map((cap) => el("div", {}, `${cap.kind} ${cap.item}${cap.access ? ` (${cap.access})` : ""} → `,
    el("span", { class: cap.granted ? "granted" : "withheld" }, cap.granted ? (cap.how || "granted") : "withheld")));
  return rows.length ? rows : [el("span", { class: "muted" }, "none: computes only")];
}

async function loadTools() {
  await loadState();
  const list = await api(forAgent("/api/tools"));
  tools = list.tools;
  const body = $("#tools-table tbody");
  body.replaceChildren();
  for (const tool of tools) {
    const toggle = el("input", {
      type: "checkbox", checked: tool.offered, disabled: !tool.agent_callable,
      title: tool.agent_callable ? "offer it to the model" : "the plugin does not make it agent-callable",
      onchange: (event) => api("/api/toggles", { agent: state.agent, tool: tool.name, enabled: event.target.checked }).then(loadTools).catch(report),
    });
    const params = tool.params.map((p) => el("div", {}, el("code", {}, p.name), `: ${p.type}${p.required ? "" : "?"}`));
    body.append(el("tr", { "data-tool": tool.name },
      el("td", {}, toggle),
      el("td", {}, el("strong", {}, tool.name), el("div", { class: "muted" }, tool.description)),
      el("td", {}, `${tool.plugin}@${tool.version}`),
      el("td", {}, levelBadge(tool.level), tool.result_approval ? el("div", { class: "badge" }, "result approval") : null),
      el("td", {}, params.length ? params : el("span", { class: "muted" }, "none")),
      el("td", {}, capabilityCell(tool.capabilities))));
  }
  fillRunTools();
}
loaders.tools = loadTools;

$("#default-enabled").addEventListener("change", (event) =>
  api("/api/toggles", { agent: state.agent, enabled: event.target.checked }).then(loadTools).catch(report));

// ---- prompt preview -----------------------------------------------------

let promptProtocol = null;
async function loadPrompt() {
  const preview = await api(forAgent("/api/prompt"));
  const chips = $("#prompt-protocols");
  chips.replaceChildren();
  const chosen = preview.prompts.find((p) => p.protocol === promptProtocol) || preview.prompts.find((p) => p.agent_default) || preview.prompts[0];
  promptProtocol = chosen.protocol;
  for (const prompt of preview.prompts) {
    chips.append(el("button", {
      class: prompt.protocol === chosen.protocol ? "active" : "", "data-protocol": prompt.protocol,
      onclick: () => { promptProtocol = prompt.protocol; loadPrompt().catch(report); },
    }, `${prompt.protocol}${prompt.agent_default ? " (agent's)" : ""}`));
  }
  $("#prompt-size").textContent = `${chosen.tokens} tokens (o200k_base), ${chosen.bytes} bytes, ${preview.tools.length} tools offered`;
  setText($("#prompt-text"), chosen.text);
}
loaders.prompt = loadPrompt;

// ---- parse --------------------------------------------------------------

for (const protocol of ["auto", "vcp", "json-block", "xml-tag", "native"]) {
  $("#parse-protocol").append(el("option", { value: protocol }, protocol));
}

// The text with the calls' spans and the warnings' offsets marked; both
// are byte offsets into the UTF-8 text.
function markText(text, calls, warnings) {
  const bytes = new TextEncoder().encode(text);
  const decode = (from, to) => new TextDecoder().decode(bytes.slice(from, to));
  const cuts = new Set([0, bytes.length]);
  for (const call of calls) { cuts.add(call.span[0]); cuts.add(call.span[1]); }
  for (const warning of warnings) { cuts.add(Math.min(warning.offset, bytes.length)); }
  const points = [...cuts].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const [from, to] = [points[i], points[i + 1]];
    for (const [n, warning] of warnings.entries()) {
      if (warning.offset === from) out.push(el("mark", { class: "warn", title: warning.message }, `⚠${n + 1}`));
    }
    const inCall = calls.find((call) => call.span[0] <= from && to <= call.span[1]);
    out.push(inCall ? el("mark", { class: "call", title: inCall.name }, decode(from, to)) : decode(from, to));
  }
  for (const [n, warning] of warnings.entries()) {
    if (warning.offset >= bytes.length) out.push(el("mark", { class: "warn", title: warning.message }, `⚠${n + 1}`));
  }
  return out;
}

$("#parse-go").addEventListener("click", async () => {
  try {
    const text = $("#parse-text").value;
    const parsed = await api("/api/parse", { text, protocol: $("#parse-protocol").value });
    $("#parse-result").hidden = false;
    $("#parse-calls").replaceChildren(...(parsed.calls.length ? parsed.calls.map((call) =>
      el("li", { class: "call" }, el("strong", { class: "call-name" }, call.name),
        call.undeclared ? el("span", { class: "badge" }, "undeclared") : null, jsonView(call.arguments),
        call.text_input !== undefined ? el("div", { class: "muted" }, "one text input: ", jsonView(call.text_input)) : null))
      : [el("li", { class: "muted" }, "no calls")]));
    $("#parse-warnings").replaceChildren(...(parsed.warnings.length ? parsed.warnings.map((w) =>
      el("li", {}, `at byte ${w.offset}: ${w.message}`)) : [el("li", { class: "muted" }, "none")]));
    $("#parse-marked").replaceChildren(...markText(text, parsed.calls, parsed.warnings));
    setText($("#parse-content"), parsed.content);
  } catch (error) { report(error); }
});

// ---- run ----------------------------------------------------------------

function fillRunTools() {
  const select = $("#run-tool");
  const chosen = select.value;
  select.replaceChildren(...tools.map((t) => el("option", { value: t.name }, `${t.name} (${t.plugin})`)));
  if (tools.some((t) => t.name === chosen)) select.value = chosen;
  buildRunForm();
}

function buildRunForm() {
  const tool = tools.find((t) => t.name === $("#run-tool").value);
  const form = $("#run-form");
  form.replaceChildren();
  if (!tool) return;
  $("#run-about").replaceChildren(levelBadge(tool.level), " ", tool.description);
  const example = tool.example && typeof tool.example === "object" ? tool.example : {};
  for (const param of tool.params) {
    const id = `run-param-${param.name}`;
    const preset = example[param.name];
    let input;
    if (param.type === "boolean") input = el("input", { type: "checkbox", id, name: param.name, checked: preset === true });
    else if (param.type === "integer" || param.type === "number") {
      input = el("input", { type: "number", id, name: param.name, step: param.type === "integer" ? "1" : "any", value: preset ?? "" });
    } else if (param.type === "json") {
      input = el("textarea", { id, name: param.name, rows: 3, value: preset === undefined ? "" : JSON.stringify(preset) });
    } else input = el("input", { type: "text", id, name: param.name, value: preset ?? "" });
    input.dataset.type = param.type;
    form.append(el("div", { class: "field" },
      el("label", { for: id }, param.name, param.required ? " *" : "", el("span", { class: "muted" }, ` ${param.type}`)),
      input, el("div", { class: "about" }, param.description)));
  }
  if (!tool.params.length) form.append(el("p", { class: "muted" }, "no parameters"));
}
$("#run-tool").addEventListener("change", buildRunForm);
$("#run-form").addEventListener("submit", (event) => { event.preventDefault(); $("#run-go").click(); });

function runArguments() {
  const args = {};
  for (const input of $$("#run-form [name]")) {
    const type = input.dataset.type;
    if (type === "boolean") { args[input.name] = input.checked; continue; }
    if (input.value === "") continue;
    if (type === "integer" || type === "number") args[input.name] = Number(input.value);
    else if (type === "json") {
      try { args[input.name] = JSON.parse(input.value); } catch { throw new Error(`${input.name} is not JSON`); }
    } else args[input.name] = input.value;
  }
  return args;
}

let runOutput = "";
$("#run-go").addEventListener("click", async () => {
  const button = $("#run-go");
  try {
    const args = runArguments();
    // The Run form is not asked at the desk (the person chose the call),
    // so a sensitive tool is confirmed here, with what it will be given.
    const tool = tools.find((t) => t.name === $("#run-tool").value);
    if (tool && tool.level === "sensitive"
      && !window.confirm(`Run ${shownText(tool.name)} (sensitive) with ${shownText(JSON.stringify(args))}?`)) return;
    button.disabled = true;
    button.textContent = "Running…";
    const ran = await api("/api/run", { tool: $("#run-tool").value, arguments: args });
    const outcome = ran.outcome;
    const result = $("#run-result");
    result.hidden = false;
    const status = $(".status", result);
    setText(status, outcome.status);
    status.className = `status ${FAILED.has(outcome.status) ? "bad" : "success"}`;
    const fuel = outcome.fuel_used === undefined || outcome.fuel_used === null ? "" : `, ${Number(outcome.fuel_used).toLocaleString()} fuel`;
    $(".timing", result).textContent = `${Number(outcome.duration_ms ?? 0).toFixed(1)} ms${fuel}`;
    const failure = outcome.failure;
    const limit = failure && failure.limit ? ` — the limit ${failure.limit.name} = ${failure.limit.value.toLocaleString()} was reached` : "";
    const hosts = failure && failure.hosts ? ` — not granted: ${failure.hosts.join(", ")}` : "";
    const plugin = failure && failure.plugin ? ` (${failure.plugin}@${failure.plugin_version})` : "";
    setText($(".failure", result), failure ? `${failure.kind}${limit}${hosts}${plugin}` : "");
    runOutput = outcome.output;
    $("#run-output").replaceChildren(ran.output_json ? jsonView(ran.output_json) : el("pre", { class: "block" }, outcome.output));
  } catch (error) { report(error); } finally {
    button.disabled = false;
    button.textContent = "Run";
  }
});
$("#run-copy").addEventListener("click", () => navigator.clipboard.writeText(runOutput).catch(report));

// ---- chat ---------------------------------------------------------------

let streaming = null;   // the assistant message the reply streams into
let streamed = "";      // its text so far
let thinking = null;    // its reasoning
const toolMessages = new Map();

function chatAppend(node) {
  $("#chat-log").append(node);
  node.scrollIntoView({ block: "end" });
  return node;
}

function chatBusy(busy) {
  $("#chat-send").disabled = busy;
  $("#chat-stop").disabled = !busy;
  $("#chat-reset").disabled = busy;
}

function toolMessage(event) {
  const failed = FAILED.has(event.status);
  let output = event.output;
  let body;
  try { const parsed = JSON.parse(output); body = typeof parsed === "object" && parsed !== null ? jsonView(parsed) : null; } catch { body = null; }
  return el("div", { class: `msg tool${failed ? " failed" : ""}`, "data-call": event.id },
    el("div", { class: "head" }, `🔧 ${event.tool} · `, el("span", { class: `status ${failed ? "bad" : "success"}` }, event.status), ` · ${event.duration_ms.toFixed(1)} ms`),
    el("div", { class: "muted" }, event.arguments),
    el("details", {}, el("summary", {}, "result"), body || el("pre", {}, output)));
}

function onChat(event) {
  switch (event.event) {
    case "requesting":
      streaming = null; thinking = null; streamed = "";
      $("#chat-state").textContent = "the model is replying…";
      break;
    case "text-delta":
      if (!streaming) streaming = chatAppend(el("div", { class: "msg assistant" }));
      streaming.append(shown(event.text));
      streamed += event.text;
      break;
    case "reasoning-delta":
      if (!thinking) thinking = chatAppend(el("div", { class: "msg reasoning" }));
      thinking.append(shown(event.text));
      break;
    case "calls-parsed":
      if (event.calls.length) {
        if (!streaming) streaming = chatAppend(el("div", { class: "msg assistant" }));
        showCalls(streaming, streamed, event.calls);
      }
      for (const warning of event.warnings) chatAppend(el("div", { class: "msg note" }, `⚠ ${warning}`));
      break;
    case "awaiting-approval":
      setText($("#chat-state"), `waiting for your approval: ${event.calls.map((c) => c.tool).join(", ")}`);
      for (const call of event.calls) chatAppend(el("div", { class: "msg note", "data-state": "pending", "data-call": call.id }, `⏸ ${call.tool} waits for approval (above)`));
      break;
    case "executing":
      setText($("#chat-state"), `running: ${event.calls.map((c) => c.tool).join(", ")}`);
      for (const call of event.calls) {
        clearProgress(call.id);
        chatAppend(el("div", { class: "msg note", "data-state": "executing", "data-call": call.id }, `▶ ${call.tool} running…`));
      }
      break;
    case "outcome":
      clearProgress(event.id);
      toolMessages.set(event.id, chatAppend(toolMessage(event)));
      streaming = null;
      break;
    case "warning":
      chatAppend(el("div", { class: "msg note" }, `⚠ ${event.message}`));
      break;
    case "error":
      chatAppend(el("div", { class: "msg note error" }, `✗ ${event.message}`));
      break;
    case "finished":
      // A call that never ran (the turn stopped first) leaves no line
      // saying it waits or runs.
      for (const stale of $$("#chat-log .msg.note[data-state]")) stale.remove();
      setText($("#chat-state"), describeStop(event.stop));
      break;
  }
}

// The reply `content` in `node`, each call's text replaced by the call as
// it was read (tool and arguments; the text as written folded away); a
// call the text does not hold (a native one) comes after it.
function showCalls(node, content, calls) {
  const parts = [];
  let rest = content;
  const after = [];
  for (const call of calls) {
    const at = call.raw ? rest.indexOf(call.raw) : -1;
    if (at < 0) { after.push(callCard(call)); continue; }
    parts.push(rest.slice(0, at), callCard(call));
    rest = rest.slice(at + call.raw.length);
  }
  parts.push(rest, ...after);
  node.replaceChildren(...parts.filter((part) => typeof part !== "string" || part.trim()).map((part) => (typeof part === "string" ? shown(part.trim()) : part)));
}

function callCard(call) {
  return el("div", { class: "call", "data-call": call.id },
    el("div", { class: "head" }, `🔧 ${call.tool}`),
    Object.keys(call.arguments).length ? jsonView(call.arguments) : el("span", { class: "muted" }, "no arguments"),
    call.raw ? el("details", {}, el("summary", {}, "as written"), el("pre", {}, call.raw)) : null);
}

// The lines saying call `id` waits or runs: it has moved on.
function clearProgress(id) {
  for (const line of $$("#chat-log .msg.note[data-state]")) {
    if (line.dataset.call === id) line.remove();
  }
}

function describeStop(stop) {
  switch (stop.reason) {
    case "answered": return "";
    case "cancelled": return "stopped";
    case "iteration-limit": return `stopped after ${stop.limit} rounds of tool calls`;
    case "repeated": return `stopped: the model kept calling ${stop.tool}`;
    case "model-failed": return `the model failed: ${stop.message}`;
    default: return stop.reason;
  }
}

async function loadChat() {
  const history = await api("/api/chat");
  chatBusy(Boolean(state.chat && state.chat.busy));
  if (history.busy || !history.entries) return;
  const log = $("#chat-log");
  log.replaceChildren();
  for (const entry of history.entries) {
    if (entry.role === "user") log.append(el("div", { class: "msg user" }, entry.content));
    else if (entry.role === "assistant" && (entry.content || entry.calls)) {
      const message = el("div", { class: "msg assistant" }, entry.content);
      if (entry.calls) showCalls(message, entry.content, entry.calls);
      log.append(message);
    }
    else if (entry.role === "tool") {
      log.append(toolMessage({ id: entry.id, tool: entry.tool, status: entry.status, duration_ms: entry.duration_ms ?? 0, arguments: "", output: entry.content ?? entry.output ?? "" }));
    }
  }
  if (!state.chat || !state.chat.model) $("#chat-state").textContent = "no model: start the console with --base-url URL or --llm NAME to chat";
}
loaders.chat = loadChat;

async function sendChat() {
  const input = $("#chat-input");
  const message = input.value.trim();
  if (!message) return;
  try {
    await api("/api/chat", { message });
    input.value = "";
  } catch (error) { report(error); }
}
$("#chat-send").addEventListener("click", sendChat);
$("#chat-input").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); sendChat(); }
});
$("#chat-stop").addEventListener("click", () => api("/api/chat/stop", {}).catch(report));
$("#chat-reset").addEventListener("click", () => api("/api/chat/reset", {}).then(() => { $("#chat-log").replaceChildren(); $("#chat-state").textContent = ""; }).catch(report));

// ---- the approval desk --------------------------------------------------

const desk = new Map();

function decide(id, body) {
  return api(`/api/pending/${id}`, body).catch(report);
}

function renderPending(item) {
  const card = el("div", { class: "pending", "data-id": item.id, "data-door": item.door });
  card.append(el("div", {},
    el("span", { class: "badge door" }, item.door), " ", el("strong", {}, item.caller), " ",
    el("span", { class: "left muted", "data-expires": item.expires_at_ms }, "")));
  if (item.result) {
    const result = item.result;
    const reason = el("input", { type: "text", class: "reason", placeholder: "why not (the model is told)" });
    card.append(el("div", { class: "call" },
      el("div", {}, "The result of ", el("strong", {}, result.tool), ` (${result.plugin}) · ${result.status} — pass it on to the model?`),
      el("pre", { class: "block" }, result.output + (result.cut ? "\n[…]" : "")),
      result.cut ? el("div", { class: "muted" }, `shown: the first ${result.output.length.toLocaleString()} characters of ${result.total_bytes.toLocaleString()} bytes — Pass passes all of it`) : null,
      el("div", { class: "actions" },
        el("button", { class: "pass", onclick: () => decide(item.id, { verdict: "pass" }) }, result.cut ? `Pass all ${result.total_bytes.toLocaleString()} bytes` : "Pass"),
        reason,
        el("button", { class: "reject", onclick: () => decide(item.id, { verdict: "reject", reason: reason.value }) }, "Reject"))));
    return card;
  }
  item.calls.forEach((call, index) => {
    const reason = el("input", { type: "text", class: "reason", placeholder: "why not (the model is told)" });
    const decided = call.decided;
    card.append(el("div", { class: "call", "data-tool": call.tool },
      el("div", {}, el("strong", {}, call.tool), ` (${call.plugin}) `, levelBadge(call.level), el("span", { class: "muted" }, ` — ${call.reason}`)),
      ...argumentsOnCard(call.args),
      decided ? el("div", { class: "muted" }, `decided: ${decided}`) :
        el("div", { class: "actions" },
          el("button", { class: "approve", onclick: () => decide(item.id, { verdict: "allow", index }) }, "Approve"),
          call.can_remember ? el("button", { class: "always", onclick: () => decide(item.id, { verdict: "always", index }) }, "Always") : null,
          reason,
          el("button", { class: "deny", onclick: () => decide(item.id, { verdict: "deny", index, reason: reason.value }) }, "Deny"))));
  });
  if (item.calls.length > 1) {
    card.append(el("div", { class: "actions" }, el("button", { class: "approve-all", onclick: () => decide(item.id, { verdict: "allow" }) }, "Approve all")));
  }
  return card;
}

// Cards are added, replaced and removed one by one: a reason being typed
// in one card survives what happens to the others.
function renderDesk() {
  const items = $("#desk-items");
  for (const card of $$(".pending", items)) {
    if (!desk.has(Number(card.dataset.id))) card.remove();
  }
  for (const item of desk.values()) {
    const shown = $(`.pending[data-id="${item.id}"]`, items);
    if (shown && shown.dataset.version === String(item.version)) continue;
    const card = renderPending(item);
    card.dataset.version = String(item.version);
    if (shown) shown.replaceWith(card); else items.append(card);
  }
  renderBulk();
  $("#desk").hidden = desk.size === 0;
  tick();
}

// Several requests from one caller of one door (an MCP client's calls at
// once): one button approves every call they hold.
function renderBulk() {
  const groups = new Map();
  for (const item of desk.values()) {
    if (item.result || !item.calls.some((call) => !call.decided)) continue;
    const key = JSON.stringify([item.door, item.caller]);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(item);
  }
  const buttons = [...groups.values()].filter((items) => items.length > 1).map((items) =>
    el("button", { class: "approve-caller", "data-door": items[0].door,
      onclick: () => items.forEach((item) => decide(item.id, { verdict: "allow" })) },
    `Approve all ${items.length} from ${items[0].caller} (${items[0].door})`));
  $("#desk-bulk").replaceChildren(...buttons);
}

// Each update of a request is a new version of its card.
let versions = 0;
function onDesk(item) {
  item.version = ++versions;
  desk.set(item.id, item);
}

function tick() {
  const now = Date.now();
  for (const left of $$("#desk .left")) {
    const seconds = Math.max(0, Math.round((Number(left.dataset.expires) - now) / 1000));
    left.textContent = `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")} left`;
  }
}
setInterval(tick, 1000);

async function loadDesk() {
  const { pending } = await api("/api/pending");
  desk.clear();
  for (const item of pending) onDesk(item);
  renderDesk();
}

// The doors whose questions come here: this process's and other
// processes' (a door started with --console while this page is open).
async function loadDoors() {
  const doors = await api("/api/doors");
  const items = doors.map((d) => el("span", { class: "door", "data-door": d.door, "data-pid": d.pid },
    `${d.door}${d.agent ? ` as ${d.agent}` : ""}${d.remote ? ` (process ${d.pid})` : ""}`,
    d.callers.length ? ` for ${d.callers.join(", ")}` : ""));
  const list = $("#doors");
  list.replaceChildren("Asking here: ", ...items.flatMap((item, i) => (i ? [" · ", item] : [item])));
  // A door that came or went may bring or take an agent to pick.
  const known = new Set(state.agents || []);
  if (doors.some((d) => d.agent && !known.has(d.agent)) || (agent && !doors.some((d) => d.agent === agent))) await loadState();
}
setInterval(() => loadDoors().catch(() => {}), 5000);

// ---- approvals and audit ------------------------------------------------

async function loadApprovals() {
  const list = await api("/api/approvals");
  $("#approvals-file").textContent = `remembered in ${list.file}`;
  const body = $("#approvals-table tbody");
  body.replaceChildren(...(list.remembered.length ? list.remembered.map((r) => el("tr", { "data-tool": r.tool },
    el("td", {}, r.agent), el("td", {}, r.plugin), el("td", {}, r.tool), el("td", {}, r.since),
    el("td", {}, el("button", { class: "revoke", onclick: () => api("/api/approvals", { tool: r.tool, agent: r.agent }, "DELETE").then(loadApprovals).catch(report) }, "Revoke"))))
    : [el("tr", {}, el("td", { colSpan: 5, class: "muted" }, "nothing remembered"))]));
}
loaders.approvals = loadApprovals;

async function loadAudit() {
  const audit = await api("/api/audit");
  $("#audit-file").textContent = audit.file ? `newest first, from ${audit.file}` : "no audit log: set [approval] audit_log in toolhost.toml";
  const body = $("#audit-table tbody");
  body.replaceChildren(...audit.records.map((r) => el("tr", {},
    el("td", {}, r.time), el("td", {}, r.agent), el("td", {}, r.plugin ? `${r.tool} (${r.plugin})` : r.tool),
    el("td", {}, [r.decision, r.by && `by ${r.by}`, r.reason].filter(Boolean).join(" · ") || "—"),
    el("td", {}, r.status ?? r.event), el("td", {}, r.duration_ms))));
}
loaders.audit = loadAudit;

// ---- live updates -------------------------------------------------------

function connect() {
  const source = new EventSource("/api/events");
  source.onopen = () => { $("#link").className = "link up"; loadDesk().catch(() => {}); };
  source.onerror = () => { $("#link").className = "link down"; };
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    switch (event.type) {
      case "pending": onDesk(event); renderDesk(); break;
      case "resolved": desk.delete(event.id); renderDesk(); break;
      case "resync":
        // Events were missed: fetch what they would have said.
        loadDesk().catch(() => {});
        loadState().then(() => { chatBusy(Boolean(state.chat && state.chat.busy)); return loadChat(); }).catch(() => {});
        break;
      case "toggles": loadTools().catch(() => {}); if (!$("#tab-prompt").hidden) loadPrompt().catch(() => {}); break;
      case "approvals": if (!$("#tab-approvals").hidden) loadApprovals().catch(() => {}); break;
      case "chat-started":
        chatBusy(true);
        chatAppend(el("div", { class: "msg user" }, event.message));
        break;
      case "chat": onChat(event); break;
      case "chat-finished":
        chatBusy(false);
        if (event.error) chatAppend(el("div", { class: "msg note error" }, `✗ ${event.error}`));
        break;
    }
  };
}

loadTools().then(() => { document.body.dataset.ready = "true"; }).catch(report);
loadDoors().catch(report);
connect();
