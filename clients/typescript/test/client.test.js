// The client against a real `serve` (NOMOS_URL, NOMOS_TOKEN: the tests'
// harness starts one; without it these skip, except under CI=true).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, ProblemError, pushNotificationConfig } from "../src/index.js";

const URL_ = process.env.NOMOS_URL;
const TOKEN = process.env.NOMOS_TOKEN;
if (!URL_ && process.env.CI === "true") throw new Error("CI=true but NOMOS_URL is not set: the harness starts serve");
const live = { skip: URL_ ? false : "no serve to talk to (NOMOS_URL)" };

test("a refusal is a typed problem", live, async () => {
  const client = new Client(URL_, { token: TOKEN });
  const refused = await client.approve(crypto.randomUUID(), { minutes: 99 }).catch((e) => e);
  assert.ok(refused instanceof ProblemError, String(refused));
  assert.equal(refused.status, 400);
  assert.equal(refused.kind, "bad-request");
  assert.ok(refused.requestId);
  const wrong = await new Client(URL_, { token: "not-the-token", retries: 0 }).overview().catch((e) => e);
  assert.deepEqual([wrong.status, wrong.kind], [401, "unauthorized"]);
});

test("a retried write carries one key and the trace", live, async () => {
  const tries = [];
  const dropped = new Set();
  const flaky = async (url, init) => {
    const path = new URL(url).pathname;
    tries.push([path, init.headers]);
    if (!dropped.has(path)) {
      dropped.add(path);
      throw new TypeError("fetch failed (dropped on purpose)");
    }
    return fetch(url, init);
  };
  const client = new Client(URL_, { token: TOKEN, fetch: flaky });
  const session = crypto.randomUUID();
  await client.recordTurn(session, "user", "deploy the container");
  const turns = tries.filter(([p]) => p.endsWith("/turns")).map(([, h]) => h["idempotency-key"]);
  assert.equal(turns.length, 2);
  assert.ok(turns[0] && turns[0] === turns[1], String(turns));
  const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  await client.linkToolResult(session, `running, execution ${crypto.randomUUID()}`, { traceparent });
  const links = tries.filter(([p]) => p.endsWith("/tool-results"));
  assert.ok(links.every(([, h]) => h.traceparent === traceparent));
});

test("the protocols' helpers", live, async () => {
  const client = new Client(URL_, { token: TOKEN });
  const session = crypto.randomUUID();
  await client.approve(session);
  const minted = await client.mintSessionPush(session);
  assert.ok(minted.url.endsWith(`/v1/a2a/sessions/${session}/push`));
  const config = pushNotificationConfig(minted);
  assert.deepEqual(config.authentication, { schemes: ["Bearer"], credentials: minted.token });
  const registered = await client.registerTask(session, "a2a", "task-1", { agentUrl: "http://agent.test/a2a" });
  assert.equal(pushNotificationConfig(registered.push, "task-1").taskId, "task-1");
  const forwarded = await client.recordMcpTask({
    task: { taskId: "mcp-1", status: "working", createdAt: "2026-12-06T00:00:00Z", ttl: 60000 },
  });
  assert.ok(forwarded.execution_id);
});
