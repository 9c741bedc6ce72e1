// The seed's story, played by a runtime against a running `serve`:
//
//   NOMOS_URL=http://127.0.0.1:7300 NOMOS_TOKEN=... \
//   NOMOS_WEBHOOK_SECRET=whsec_... RECEIVER_PORT=9000 node examples/story.js
//
// with `serve --agent-webhook http://127.0.0.1:9000/hooks/nomos
// --webhook-secret whsec_... --token ...`. The operator approves; a tool
// answers "running" and names its execution; it fails; the continuation
// arrives at this runtime's webhook, its signature checked; the note the
// agent would be re-invoked with is printed.
import { createServer } from "node:http";
import { Client, Receiver } from "../src/index.js";

const receiver = new Receiver([process.env.NOMOS_WEBHOOK_SECRET]);
let arrived;
const continued = new Promise((resolve) => (arrived = resolve));
const handle = receiver.handler((event) => arrived(event));

// node:http to the (Request) => Response handler.
const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const request = new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method,
    headers: req.headers,
    body: Buffer.concat(chunks),
  });
  const response = await handle(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
});
await new Promise((resolve) => server.listen(Number(process.env.RECEIVER_PORT ?? 9000), "127.0.0.1", resolve));

const client = new Client(process.env.NOMOS_URL, { token: process.env.NOMOS_TOKEN });
const [session, execution] = [crypto.randomUUID(), crypto.randomUUID()];
const { window } = await client.approve(session);
console.log(`approved: session ${session} until ${window.expires_at}`);
const linked = await client.linkToolResult(session, `pct_create started: running, execution ${execution}`);
console.log(`linked: ${linked.linked.length} execution(s)`);
await client.recordExecution(execution, "failed", "ssh: connect to host 10.0.0.7 port 22: Connection refused");

const timeout = setTimeout(() => {
  console.error("no continuation within 60 s");
  process.exit(1);
}, 60_000);
const event = await continued;
clearTimeout(timeout);
server.close();
if (event.type !== "continuation.v1" || event.sessionId !== session) {
  console.error(`expected this session's continuation, got ${JSON.stringify(event)}`);
  process.exit(1);
}
console.log(`continued: session ${event.sessionId} (signature checked)`);
console.log("note the agent is re-invoked with:");
console.log(event.note);
