// The receiver: signatures made as Standard Webhooks make them (HMAC-SHA256
// over "id.timestamp.body", base64), rotation, tolerance, the answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { Receiver, SignatureError } from "../src/index.js";

const secret = () => `whsec_${randomBytes(32).toString("base64")}`;
const [SECRET, OTHER] = [secret(), secret()];
const CONTINUATION = {
  type: "continuation.v1",
  timestamp: "2026-12-01T16:20:31Z",
  data: {
    session_id: "0c0ffee0-0000-4000-8000-000000000001",
    idempotency_key: "c-9f86",
    executions: [{ id: "3f25", status: "FAILED", outcome: "failed", result: "ssh: connection refused" }],
    note: "execution 3f25 failed: ssh: connection refused",
    soul: "You will be re-invoked when async steps finish.",
  },
};
const NOTICE = {
  type: "notice.v1",
  timestamp: "2026-12-01T16:24:02Z",
  data: { session_id: "0c0ffee0-0000-4000-8000-000000000001", idempotency_key: "n-6b86", notice: "the window closed" },
};

function signed(body, secrets, { key = body.data.idempotency_key, at = Date.now() / 1000 } = {}) {
  const raw = JSON.stringify(body);
  const stamp = String(Math.floor(at));
  const sign = (s) =>
    "v1," + createHmac("sha256", Buffer.from(s.slice(6), "base64")).update(`${key}.${stamp}.${raw}`).digest("base64");
  const headers = new Headers({
    "webhook-id": key,
    "webhook-timestamp": stamp,
    "webhook-signature": secrets.map(sign).join(" "),
    "content-type": "application/json",
  });
  return { raw, headers };
}

const request = ({ raw, headers }) => new Request("http://runtime.test/hooks/nomos", { method: "POST", body: raw, headers });

test("a continuation and a notice are read into their types", async () => {
  const receiver = new Receiver([SECRET]);
  const { raw, headers } = signed(CONTINUATION, [SECRET]);
  const event = await receiver.verify(raw, headers);
  assert.equal(event.type, "continuation.v1");
  assert.equal(event.note, CONTINUATION.data.note);
  const notice = signed(NOTICE, [SECRET]);
  assert.equal((await receiver.verify(notice.raw, notice.headers)).notice, "the window closed");
});

test("a rotation accepts either secret and nothing else", async () => {
  const receiver = new Receiver([OTHER, SECRET]);
  for (const s of [SECRET, OTHER]) {
    const { raw, headers } = signed(CONTINUATION, [s]);
    await receiver.verify(raw, headers);
  }
  const { raw, headers } = signed(CONTINUATION, [SECRET]);
  await assert.rejects(new Receiver([OTHER]).verify(raw, headers), SignatureError);
  await assert.rejects(new Receiver([SECRET]).verify(raw + " ", headers), SignatureError);
});

test("an old or future timestamp is refused", async () => {
  const receiver = new Receiver([SECRET]);
  for (const skew of [-301, 301]) {
    const { raw, headers } = signed(CONTINUATION, [SECRET], { at: Date.now() / 1000 + skew });
    await assert.rejects(receiver.verify(raw, headers), SignatureError);
  }
});

test("the handler answers as the service expects", async () => {
  const receiver = new Receiver([SECRET]);
  const taken = [];
  const handle = receiver.handler((event) => taken.push(event));
  assert.equal((await handle(request(signed(CONTINUATION, [SECRET])))).status, 200);
  assert.equal((await handle(request(signed(CONTINUATION, [SECRET])))).status, 200);
  assert.equal(taken.length, 1, "a key already taken is answered, not acted on");
  const later = { ...CONTINUATION, type: "continuation.v2" };
  assert.equal((await handle(request(signed(later, [SECRET], { key: "c-2" })))).status, 400);
  assert.equal((await handle(request(signed(NOTICE, [OTHER], { key: "n-1" })))).status, 401);
  const failing = receiver.handler(() => {
    throw new Error("the queue is down");
  });
  assert.equal((await failing(request(signed(NOTICE, [SECRET], { key: "n-2" })))).status, 503);
  assert.equal((await handle(request(signed(NOTICE, [SECRET], { key: "n-2" })))).status, 200);
  assert.equal(taken.length, 2);
});
