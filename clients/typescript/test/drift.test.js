// Every operation of docs/openapi.json has a method (its operationId in
// camelCase), or is on the reviewed list of those left out on purpose
// (clients/left-out.json, shared by every client's drift test).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Client } from "../src/index.js";

const document = JSON.parse(readFileSync(new URL("../../../docs/openapi.json", import.meta.url)));
const LEFT_OUT = JSON.parse(readFileSync(new URL("../../left-out.json", import.meta.url))).left_out;
const camel = (id) => id.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

test("every operation has a method or a reason", () => {
  const ops = Object.values(document.paths).flatMap((item) =>
    Object.entries(item)
      .filter(([method]) => ["get", "put", "post", "delete", "patch"].includes(method))
      .map(([, op]) => op.operationId),
  );
  assert.ok(ops.length > 20, String(ops));
  const missing = ops.filter((op) => !(op in LEFT_OUT) && typeof Client.prototype[camel(op)] !== "function");
  assert.deepEqual(missing, [], "operations without a client method");
  const stale = Object.keys(LEFT_OUT).filter((op) => !ops.includes(op));
  assert.deepEqual(stale, [], "LEFT_OUT names operations the document no longer has");
});
