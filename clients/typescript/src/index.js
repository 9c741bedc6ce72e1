// The runtime's side of nomos-continue (docs/api.md, docs/webhooks.md,
// docs/protocols.md): the HTTP API a runtime calls, the signed webhook it
// receives, and the A2A push configurations. `fetch` and Web Crypto only;
// the types are in index.d.ts.

/** A refusal of the API: its problem document (RFC 9457), read into fields. */
export class ProblemError extends Error {
  constructor({ status, type, title, detail, requestId, retryAfter, body }) {
    super(`${status} ${title}: ${detail}`);
    this.name = "ProblemError";
    this.status = status;
    this.type = type;
    this.title = title;
    this.detail = detail;
    this.requestId = requestId;
    this.retryAfter = retryAfter;
    this.body = body;
  }

  /** The problem type after `urn:nomos-continue:problem:`. */
  get kind() {
    return this.type.split(":").pop();
  }

  /** A condition that passes: a 429 or 503 that says when to come back. */
  get retryable() {
    return (this.status === 429 || this.status === 503) && this.retryAfter !== undefined;
  }
}

/** No answer at all: the connection failed or timed out. */
export class TransportError extends Error {
  constructor(message, cause) {
    super(message, { cause });
    this.name = "TransportError";
  }
}

/** A webhook request nomos-continue did not send (or sent too long ago). */
export class SignatureError extends Error {
  constructor(message) {
    super(message);
    this.name = "SignatureError";
  }
}

/** A verified webhook request of a `type` this client does not know. */
export class UnknownEventError extends Error {
  constructor(message) {
    super(message);
    this.name = "UnknownEventError";
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One runtime's connection to nomos-continue. */
export class Client {
  constructor(baseUrl, { token, timeoutMs = 10_000, retries = 3, maxBackoffMs = 5_000, fetch: f } = {}) {
    this.base = baseUrl.replace(/\/+$/, "");
    this.headers = token ? { authorization: `Bearer ${token}` } : {};
    this.timeoutMs = timeoutMs;
    this.retries = retries;
    this.maxBackoffMs = maxBackoffMs;
    this.fetch = f ?? globalThis.fetch;
  }

  // sessions
  linkToolResult(sessionId, text, { traceparent } = {}) {
    return this.#write("POST", `/v1/sessions/${sessionId}/tool-results`, { text }, { traceparent });
  }
  decideApproval(sessionId, decision, { route, minutes } = {}) {
    const body = { decision };
    if (route !== undefined) body.route = route;
    if (minutes !== undefined) body.minutes = minutes;
    return this.#write("POST", `/v1/sessions/${sessionId}/approvals`, body);
  }
  approve(sessionId, { minutes, route = "api" } = {}) {
    return this.decideApproval(sessionId, "approve", { route, minutes });
  }
  deny(sessionId) {
    return this.decideApproval(sessionId, "deny");
  }
  recordTurn(sessionId, role, content) {
    return this.#write("POST", `/v1/sessions/${sessionId}/turns`, { role, content }, { keyed: true });
  }
  sessions(query = {}) {
    return this.#read("/v1/sessions", query);
  }
  session(sessionId) {
    return this.#read(`/v1/sessions/${sessionId}`);
  }
  links(sessionId, query = {}) {
    return this.#read(`/v1/sessions/${sessionId}/links`, query);
  }
  deliveries(sessionId, query = {}) {
    return this.#read(`/v1/sessions/${sessionId}/deliveries`, query);
  }
  notices(sessionId, query = {}) {
    return this.#read(`/v1/sessions/${sessionId}/notices`, query);
  }
  overview() {
    return this.#read("/v1/overview");
  }

  // executions
  recordExecution(executionId, status, result, { traceparent } = {}) {
    const body = { status };
    if (result !== undefined) body.result = result;
    return this.#write("PUT", `/v1/executions/${executionId}`, body, { traceparent });
  }
  execution(executionId) {
    return this.#read(`/v1/executions/${executionId}`);
  }

  // protocol tasks
  registerTask(sessionId, protocol, taskId, { agentUrl, agentVersion = "1.0", ttlSeconds } = {}) {
    const body = { protocol, task_id: taskId };
    if (agentUrl !== undefined) body.agent = { url: agentUrl, version: agentVersion };
    if (ttlSeconds !== undefined) body.ttl_seconds = ttlSeconds;
    return this.#write("POST", `/v1/sessions/${sessionId}/tasks`, body);
  }
  mintSessionPush(sessionId, { ttlSeconds } = {}) {
    const body = ttlSeconds === undefined ? {} : { ttl_seconds: ttlSeconds };
    return this.#write("POST", `/v1/sessions/${sessionId}/push-configs`, body);
  }
  recordMcpTask(answer, { taskId, traceparent } = {}) {
    const query = taskId ? `?task_id=${encodeURIComponent(taskId)}` : "";
    return this.#write("POST", `/v1/mcp/tasks${query}`, answer, { traceparent });
  }

  // deliveries, policy, service
  delivery(deliveryId) {
    return this.#read(`/v1/deliveries/${deliveryId}`);
  }
  retry(deliveryId) {
    return this.#write("POST", `/v1/deliveries/${deliveryId}/retry`, {}, { keyed: true });
  }
  policyInfo() {
    return this.#read("/v1/policy");
  }
  healthz() {
    return this.#read("/healthz");
  }
  readyz() {
    return this.#read("/readyz");
  }

  #read(path, query = {}) {
    const params = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
    const suffix = params.size ? `?${params}` : "";
    return this.#send("GET", path + suffix, undefined, {});
  }

  #write(method, path, body, { keyed = false, traceparent } = {}) {
    const headers = { "content-type": "application/json" };
    // One key for every try of this one call.
    if (keyed) headers["idempotency-key"] = crypto.randomUUID();
    if (traceparent) headers.traceparent = traceparent;
    return this.#send(method, path, JSON.stringify(body), headers);
  }

  async #send(method, path, body, headers) {
    let wait = 200;
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= this.retries;
      let response;
      try {
        response = await this.fetch(this.base + path, {
          method,
          body,
          headers: { ...this.headers, ...headers },
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (error) {
        if (last) throw new TransportError(`${method} ${path}: ${error.message}`, error);
        await sleep(wait);
        wait = Math.min(wait * 2, this.maxBackoffMs);
        continue;
      }
      if (response.ok) {
        const text = await response.text();
        return text ? JSON.parse(text) : {};
      }
      const problem = await problemOf(response);
      if (last || !problem.retryable) throw problem;
      await sleep(Math.min((problem.retryAfter ?? wait / 1000) * 1000, this.maxBackoffMs));
      wait = Math.min(wait * 2, this.maxBackoffMs);
    }
  }
}

async function problemOf(response) {
  let body = {};
  try {
    body = await response.json();
  } catch {
    body = {};
  }
  const after = response.headers.get("retry-after");
  return new ProblemError({
    status: response.status,
    type: String(body.type ?? "about:blank"),
    title: String(body.title ?? response.statusText),
    detail: String(body.detail ?? ""),
    requestId: body.request_id ?? response.headers.get("x-request-id") ?? undefined,
    retryAfter: after && /^\d+$/.test(after) ? Number(after) : undefined,
    body,
  });
}

// The webhook -------------------------------------------------------------

/** How far a request's timestamp may be from this clock, either way. */
export const TOLERANCE_SECONDS = 300;

const encoder = new TextEncoder();

function base64(bytes) {
  return Buffer.from(bytes).toString("base64");
}

/** Verifies and reads the webhook's requests for the given secrets (`whsec_…`). */
export class Receiver {
  #keys;
  #accepted = new Set();
  #handling = new Set();

  constructor(secrets, { toleranceSeconds = TOLERANCE_SECONDS } = {}) {
    if (!secrets.length) throw new TypeError("at least one webhook secret (whsec_...)");
    this.#keys = secrets.map((secret) => {
      if (!secret.startsWith("whsec_")) throw new TypeError("a webhook secret starts with whsec_");
      return crypto.subtle.importKey(
        "raw",
        Buffer.from(secret.slice("whsec_".length), "base64"),
        { name: "HMAC", hash: "SHA-256" },
        false,
        ["sign"],
      );
    });
    this.toleranceSeconds = toleranceSeconds;
  }

  /** The event of one request (`body`: the raw bytes or text), or a SignatureError. */
  async verify(body, headers, { now = Date.now() / 1000 } = {}) {
    const get = (name) => (headers instanceof Headers ? headers.get(name) : headers[name]);
    const id = get("webhook-id");
    const stamp = get("webhook-timestamp");
    const signatures = get("webhook-signature");
    if (!id || !stamp || !signatures) {
      throw new SignatureError("missing webhook-id, webhook-timestamp or webhook-signature");
    }
    if (!/^\d+$/.test(stamp)) throw new SignatureError(`webhook-timestamp ${stamp} is not Unix seconds`);
    if (Math.abs(now - Number(stamp)) > this.toleranceSeconds) {
      throw new SignatureError("webhook-timestamp is outside the tolerance (a replay?)");
    }
    const raw = typeof body === "string" ? encoder.encode(body) : new Uint8Array(body);
    const signed = new Uint8Array([...encoder.encode(`${id}.${stamp}.`), ...raw]);
    const expected = await Promise.all(
      this.#keys.map(async (key) => base64(await crypto.subtle.sign("HMAC", await key, signed))),
    );
    const offered = signatures
      .split(" ")
      .filter((entry) => entry.startsWith("v1,"))
      .map((entry) => entry.slice(3));
    if (!offered.some((o) => expected.some((e) => sameText(o, e)))) {
      throw new SignatureError("no signature matches a configured secret");
    }
    return parseEvent(new TextDecoder().decode(raw), get("traceparent") ?? undefined);
  }

  /**
   * The whole receiver as a `(Request) => Promise<Response>` handler: verify,
   * refuse, de-duplicate by key, call `onEvent` once per key (it should store
   * or queue the agent's turn, not run it), and answer as the service expects.
   */
  handler(onEvent) {
    return async (request) => {
      const body = new Uint8Array(await request.arrayBuffer());
      let event;
      try {
        event = await this.verify(body, request.headers);
      } catch (error) {
        if (error instanceof UnknownEventError) return answer(400, error.message);
        if (error instanceof SignatureError) return answer(401, error.message);
        throw error;
      }
      const key = event.idempotencyKey;
      if (this.#accepted.has(key)) return answer(200);
      if (this.#handling.has(key)) return answer(409, "this key is being handled");
      this.#handling.add(key);
      try {
        await onEvent(event);
      } catch (error) {
        this.#handling.delete(key);
        return answer(503, `the runtime could not take it: ${error.message}`);
      }
      this.#handling.delete(key);
      this.#accepted.add(key);
      return answer(200);
    };
  }
}

function sameText(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

function answer(status, detail) {
  const body = detail === undefined ? {} : { detail };
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/** The typed event of a verified body. */
export function parseEvent(text, traceparent) {
  let envelope;
  try {
    envelope = JSON.parse(text);
  } catch (error) {
    throw new UnknownEventError(`not a nomos-continue envelope: ${error.message}`);
  }
  const { type, data, timestamp = "" } = envelope ?? {};
  if (type === "continuation.v1") {
    return {
      type,
      sessionId: data.session_id,
      idempotencyKey: data.idempotency_key,
      executions: data.executions,
      note: data.note,
      soul: data.soul,
      timestamp,
      traceparent,
    };
  }
  if (type === "notice.v1") {
    return {
      type,
      sessionId: data.session_id,
      idempotencyKey: data.idempotency_key,
      notice: data.notice,
      timestamp,
      traceparent,
    };
  }
  throw new UnknownEventError(`unknown event type ${JSON.stringify(type)}`);
}

// A2A ---------------------------------------------------------------------

/**
 * nomos-continue's push configuration (a session's, or a task's `push`) in
 * the JSON shape of the A2A JavaScript SDK's `PushNotificationConfig`: for
 * its client's default configuration, a message's `configuration`, or a
 * task's registration (with `taskId`).
 */
export function pushNotificationConfig(push, taskId) {
  const config = {
    url: push.url,
    token: push.token,
    authentication: { schemes: ["Bearer"], credentials: push.token },
  };
  return taskId === undefined ? config : { taskId, pushNotificationConfig: config };
}
