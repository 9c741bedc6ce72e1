// What a tool result names for the host to watch: protocol tasks and
// execution ids.
//
// The same search as the Rust policy's (guest/src/links.rs, whose doc names
// each shape): when the trimmed text is a JSON object or array, it is
// searched for MCP task-creating results (2025-11-25 `{"task": {"taskId"}}`,
// the 2026-07-28 tasks extension's `"resultType": "task"`), A2A Tasks (1.0
// with `contextId`, 0.3 with `"kind": "task"`, bare or under `task`) and A2A
// Messages naming a `taskId`, inside JSON-RPC responses and inside the text
// blocks and structured content of an MCP CallToolResult, to a bounded
// depth. Then execution ids are found in the text as extract.js finds them.
// Tasks come first, then execution ids; no link twice, at most MAX_LINKS.
//
// Links have the contract's `link-ref` shape: `{ tag: 'execution', val: id }`
// or `{ tag: 'task', val: { protocol, id } }`.

import { MAX_IDS, extractExecutionIds } from './extract.js';
import { trim, utf8 } from './text.js';

/** At most this many links from one tool result (the cap on ids). */
export const MAX_LINKS = MAX_IDS;
/** The longest task id linked, in UTF-8 bytes; a longer one is ignored. */
export const MAX_TASK_ID_BYTES = 1024;
/** How deep results nest inside each other before the search stops. */
const MAX_DEPTH = 4;
/** serde_json refuses nesting deeper than this; the JSON is then no JSON. */
const SERDE_DEPTH = 128;

/** What `text` names, in the order described above. */
export function extractLinks(text) {
  const links = [];
  const value = jsonOf(text);
  if (value !== undefined) findTasks(value, 0, links);
  for (const id of extractExecutionIds(text)) push(links, { tag: 'execution', val: id });
  return links;
}

/** The JSON value of `text` if, trimmed, it is an object or array serde_json reads too. */
function jsonOf(text) {
  const trimmed = trim(text);
  if (!(trimmed.startsWith('{') || trimmed.startsWith('['))) return undefined;
  let value;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  return readable(value, 1) ? value : undefined;
}

// A UTF-16 surrogate without its other half.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const whole = (s) => !LONE_SURROGATE.test(s);

/** Not nested past serde_json's limit, and no lone surrogate (JSON.parse lets one through). */
function readable(value, depth) {
  if (typeof value === 'string') return whole(value);
  if (value === null || typeof value !== 'object') return true;
  if (depth > SERDE_DEPTH) return false;
  const entries = Array.isArray(value) ? value.map((v) => ['', v]) : Object.entries(value);
  return entries.every(([k, v]) => whole(k) && readable(v, depth + 1));
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const own = (o, key) => (isObject(o) && Object.hasOwn(o, key) ? o[key] : undefined);
const text = (o, key) => {
  const v = own(o, key);
  return typeof v === 'string' ? v : undefined;
};

function same(a, b) {
  if (a.tag !== b.tag) return false;
  return a.tag === 'execution' ? a.val === b.val : a.val.protocol === b.val.protocol && a.val.id === b.val.id;
}

function push(links, link) {
  if (links.length < MAX_LINKS && !links.some((known) => same(known, link))) links.push(link);
}

function pushTask(links, protocol, id) {
  if (id.length > 0 && utf8(id).length <= MAX_TASK_ID_BYTES) push(links, { tag: 'task', val: { protocol, id } });
}

function findTasks(value, depth, links) {
  if (depth > MAX_DEPTH || links.length >= MAX_LINKS) return;
  if (Array.isArray(value)) {
    for (const item of value.slice(0, MAX_LINKS)) findTasks(item, depth + 1, links);
  } else if (isObject(value)) {
    findInObject(value, depth, links);
  }
}

function findInObject(object, depth, links) {
  // A JSON-RPC response: its result is what the tool answered.
  if (text(object, 'jsonrpc') !== undefined) {
    if (Object.hasOwn(object, 'result')) findTasks(object.result, depth + 1, links);
    return;
  }
  // MCP 2026-07-28: the task's fields beside the discriminator.
  if (text(object, 'resultType') === 'task') {
    const id = text(object, 'taskId');
    if (id !== undefined) pushTask(links, 'mcp', id);
  }
  // MCP 2025-11-25 `task.taskId`; A2A 1.0's SendMessage answer `task`.
  const task = own(object, 'task');
  if (isObject(task)) {
    const id = text(task, 'taskId');
    if (id !== undefined) pushTask(links, 'mcp', id);
    else a2aTask(task, links);
  }
  a2aTask(object, links);
  const message = own(object, 'message');
  if (isObject(message)) a2aMessage(message, links);
  a2aMessage(object, links);
  // An MCP CallToolResult: a tool may return task JSON as its text.
  const blocks = own(object, 'content');
  if (Array.isArray(blocks)) {
    for (const block of blocks.slice(0, MAX_LINKS)) {
      const body = text(block, 'text');
      if (text(block, 'type') === 'text' && body !== undefined) {
        const inner = jsonOf(body);
        if (inner !== undefined) findTasks(inner, depth + 1, links);
      }
    }
  }
  if (Object.hasOwn(object, 'structuredContent')) findTasks(object.structuredContent, depth + 1, links);
}

/** An A2A Task: an `id` and a `status` holding a `state`, marked by 0.3's `kind` or 1.0's `contextId`. */
function a2aTask(object, links) {
  const hasState = text(own(object, 'status'), 'state') !== undefined;
  const marked = text(object, 'kind') === 'task' || text(object, 'contextId') !== undefined;
  const id = text(object, 'id');
  if (hasState && marked && id !== undefined) pushTask(links, 'a2a', id);
}

/** An A2A Message (`messageId` and `role`) naming the task it belongs to. */
function a2aMessage(object, links) {
  const isMessage = text(object, 'messageId') !== undefined && text(object, 'role') !== undefined;
  const id = text(object, 'taskId');
  if (isMessage && id !== undefined) pushTask(links, 'a2a', id);
}
