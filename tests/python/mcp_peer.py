"""A real MCP task tool and a runtime's MCP client, for the protocol tests.

Built from the installed `mcp` package (1.30, the 2025-11-25 tasks of its
`experimental` modules): a low-level server whose tools support
task-augmented calls (`execution.taskSupport: "optional"`) and run as the
SDK's tasks (`run_task`), and the SDK's client session calling one of them
task-augmented, then polling `tasks/get` and asking `tasks/result`. The two
meet over the SDK's in-memory transport; every JSON-RPC message the server
sends is recorded as the stdio transport would write it.

The tools:
  fail      -> a tool result with isError: true, two text blocks: the
               failure and the partial output (the SDK ends the task
               `completed`; the specification says `failed`)
  raise     -> the work raises: the SDK ends the task `failed`
  complete  -> text content and structuredContent
  input     -> the work asks the client for input (an elicitation): the
               task is `input_required` until answered; this client never
               answers, it forwards that state and stops

    mcp_peer.py <tool>
        prints one JSON object: what the client got, in order
        ({"created", "polls", "result", "notifications", "wire"}; no result
        for `input`)
    mcp_peer.py <tool> --nomos <base URL> --token <runtime token> --session <id>
        acts as the runtime: posts the task-creating result as the session's
        tool result (POST /v1/sessions/{id}/tool-results, {"text": <its JSON>}),
        forwards each tasks/get answer (and each notifications/tasks/status
        that came meanwhile) and then the tasks/result answer to
        POST /v1/mcp/tasks, and prints one JSON line per call it made:
        {"path", "body", "status", "answer"}.
The work waits until the client has posted the creating result and polled
once, so a `working` answer is always forwarded before the end.
"""

import argparse
import json
import sys

import anyio
import httpx
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

FAILURE = "the export failed: the warehouse refused the credentials"
PARTIAL = "exported 17 of 42 rows before the error"
QUESTION = "which account should the export be billed to?"
TOOLS = ("fail", "raise", "complete", "input")
DONE = "exported 42 rows to report.csv"
STRUCTURED = {"rows": 42, "file": "report.csv"}


def as_json(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def task_server(started: anyio.Event) -> Server:
    server = Server("nomos-test-tools")
    server.experimental.enable_tasks()
    optional = types.ToolExecution(taskSupport=types.TASK_OPTIONAL)

    @server.list_tools()
    async def list_tools():
        return [
            types.Tool(name=name, inputSchema={"type": "object"}, execution=optional)
            for name in TOOLS
        ]

    @server.call_tool()
    async def call_tool(name, arguments):
        context = server.request_context

        async def work(task):
            await started.wait()
            if name == "fail":
                texts = [FAILURE, PARTIAL]
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=t) for t in texts], isError=True
                )
            if name == "input":
                schema = {"type": "object", "properties": {"account": {"type": "string"}}}
                await task.elicit(message=QUESTION, requestedSchema=schema)
            if name == "raise":
                raise RuntimeError(FAILURE)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=DONE)],
                structuredContent=STRUCTURED,
            )

        return await context.experimental.run_task(work)

    return server


class Tap:
    """Records what passes a memory stream, as the wire would carry it."""

    def __init__(self, inner, record):
        self.inner, self.record = inner, record

    async def send(self, message):
        if isinstance(message, SessionMessage):
            self.record.append(as_json(message.message))
        await self.inner.send(message)

    async def aclose(self):
        await self.inner.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()


async def run(tool, forward):
    """Calls `tool` task-augmented; `forward(path, body)` plays the runtime."""
    record = {"created": None, "polls": [], "result": None, "notifications": [], "wire": []}
    started = anyio.Event()
    server = task_server(started)

    async def on_message(message):
        if isinstance(message, types.ServerNotification):
            record["notifications"].append(as_json(message.root))

    to_client_send, to_client = anyio.create_memory_object_stream(16)
    to_server_send, to_server = anyio.create_memory_object_stream(16)
    async def never_answers(context, params):
        # Declares the elicitation capability; the person never answers
        # within the test (the task stays input_required).
        await anyio.sleep_forever()

    async with anyio.create_task_group() as group:
        group.start_soon(
            lambda: server.run(
                to_server, Tap(to_client_send, record["wire"]), server.create_initialization_options()
            )
        )
        async with ClientSession(
            to_client, to_server_send, message_handler=on_message, elicitation_callback=never_answers
        ) as session:
            await session.initialize()
            created = await session.experimental.call_tool_as_task(tool, {})
            record["created"] = as_json(created)
            task_id = created.task.taskId
            await forward("tool-result", record["created"])
            forwarded = 0
            while True:
                answer = await session.experimental.get_task(task_id)
                record["polls"].append(as_json(answer))
                await forward("mcp-task", record["polls"][-1])
                # A status notification that came meanwhile is forwarded
                # too (a runtime may, though it must not rely on them).
                while forwarded < len(record["notifications"]):
                    await forward("mcp-task", record["notifications"][forwarded])
                    forwarded += 1
                started.set()
                if answer.status == "input_required":
                    group.cancel_scope.cancel()
                    return record
                if answer.status in ("completed", "failed", "cancelled"):
                    break
                await anyio.sleep(0.02)
            # Generic: a failed task's tasks/result is no CallToolResult.
            result = await session.experimental.get_task_result(task_id, types.GetTaskPayloadResult)
            record["result"] = as_json(result)
            await forward("mcp-task", record["result"])
        group.cancel_scope.cancel()
    return record


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tool", choices=TOOLS)
    parser.add_argument("--nomos")
    parser.add_argument("--token")
    parser.add_argument("--session")
    args = parser.parse_args()

    if not args.nomos:

        async def forward(kind, body):
            return None

        print(json.dumps(await run(args.tool, forward)))
        return

    async with httpx.AsyncClient(
        base_url=args.nomos, headers={"authorization": f"Bearer {args.token}"}, timeout=10
    ) as http:

        async def forward(kind, body):
            if kind == "tool-result":
                path = f"/v1/sessions/{args.session}/tool-results"
                sent = {"text": json.dumps(body)}
            else:
                path, sent = "/v1/mcp/tasks", body
            response = await http.post(path, json=sent)
            try:
                answer = response.json()
            except ValueError:
                answer = response.text
            line = {"path": path, "body": sent, "status": response.status_code, "answer": answer}
            print(json.dumps(line), flush=True)

        await run(args.tool, forward)


if __name__ == "__main__":
    anyio.run(main)
    sys.exit(0)
