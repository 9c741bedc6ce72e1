"""A real A2A remote agent on a loopback port, for the protocol tests.

Built from the installed `a2a-sdk` (1.x speaks A2A 1.0, 0.3.x speaks
A2A 0.3): the SDK's own server app, request handler, in-memory task and
push-configuration stores and push sender, and the SDK's own client for the
runtime's side (sending the message, registering the push configuration,
asking for the task). Nothing of the protocol is written here: what reaches
nomos-continue is what the SDK sends.

Each task runs a script named by the message's text, after a `working`
status update with a progress message:
  fail      -> an artifact with the partial output, then failed, with a
               status message saying why
  complete  -> an artifact (a text part and a data part), then completed
  input     -> input required, with a status message asking for it
The task is created at once (so the runtime has its id and can mint a push
configuration) and holds in `working` until told to go on, so the push
configuration is in place before the task ends, and a test can end it while
the receiver is down. A script ending in `-now` (`fail-now`) does not hold:
the task ends as soon as it starts, before any per-task configuration can
exist.

Driven by JSON lines on stdin, one answer line on stdout each; the first
line printed is {"listening": "<the agent's JSON-RPC URL>", "sdk": "<version>"}.
  {"op": "send", "script": "fail", "push": <config>?}  -> {"task": <the task as the SDK's client returns it>}
                      (with "push", in this message's configuration)
  {"op": "client", "push": <config>}                  -> {"client": "configured"}
                      (the SDK's own default: a new client whose ClientConfig
                      carries the configuration, which the SDK copies into
                      every message it sends from then on)
  {"op": "push", "task_id": "...", "push": <config>, "id"?: "..."}
                                                      -> {"config": <the stored configuration>}
  {"op": "go", "task_id": "..."}                       -> {"ended": <the task after its script>}
  {"op": "get", "task_id": "..."}                      -> {"task": ...}
where <config> is nomos-continue's answer's "push" object:
{"url", "token", "authentication": {"scheme", "credentials"}}. A task may
have several configurations (a test's recording tap beside nomos-continue),
told apart by "id"; the SDK sends every event to each.
"""

import asyncio
import json
import socket
import sys
from importlib.metadata import version

import httpx
import uvicorn

SDK = version("a2a-sdk")
V1 = not SDK.startswith("0.")

FAILURE = "the export failed: the warehouse refused the credentials"
PROGRESS = "exporting rows"
PARTIAL = "exported 17 of 42 rows before the error"
ARTIFACT_TEXT = "exported 42 rows to report.csv"
ARTIFACT_DATA = {"rows": 42, "file": "report.csv"}
QUESTION = "which account should the export be billed to?"

if V1:
    from google.protobuf.json_format import MessageToDict
    from a2a.client import ClientConfig, ClientFactory
    from a2a.helpers.proto_helpers import new_task, new_text_message
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import (
        BasePushNotificationSender,
        InMemoryPushNotificationConfigStore,
        InMemoryTaskStore,
        TaskUpdater,
    )
    from a2a.types import a2a_pb2 as t
    from starlette.applications import Starlette

    WORKING = t.TASK_STATE_WORKING
else:
    from a2a.client import ClientConfig, ClientFactory
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.apps import A2AStarletteApplication
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.tasks import (
        BasePushNotificationSender,
        InMemoryPushNotificationConfigStore,
        InMemoryTaskStore,
        TaskUpdater,
    )
    from a2a import types as t
    from a2a.utils import new_task as new_task_03

    WORKING = t.TaskState.working


def as_json(obj):
    """The JSON a runtime's client has of an SDK object."""
    if V1:
        return MessageToDict(obj)
    return obj.model_dump(mode="json", exclude_none=True, by_alias=True)


# Where a script stops: its last state, in either version's spelling.
ENDED = {"failed", "completed", "input-required"}


def plain_state(task):
    """`TASK_STATE_INPUT_REQUIRED` and `input-required` alike."""
    return task["status"]["state"].lower().removeprefix("task_state_").replace("_", "-")


def text_of(message):
    if V1:
        return "".join(p.text for p in message.parts if p.HasField("text"))
    return "".join(getattr(p.root, "text", "") for p in message.parts)


class ScriptedExecutor(AgentExecutor):
    """Creates the task, holds it until told, then plays its script."""

    def __init__(self):
        self.gates: dict[str, asyncio.Event] = {}

    def gate(self, task_id):
        return self.gates.setdefault(task_id, asyncio.Event())

    async def execute(self, context, event_queue):
        script = text_of(context.message).strip()
        at_once = script.endswith("-now")
        script = script.removesuffix("-now")
        if V1:
            task = context.current_task or new_task(
                context.task_id, context.context_id, t.TASK_STATE_SUBMITTED
            )
        else:
            task = context.current_task or new_task_03(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if not at_once:
            await self.gate(task.id).wait()
        await updater.update_status(WORKING, self.say(updater, PROGRESS))
        if script == "fail":
            await updater.add_artifact([text_part(PARTIAL)], name="export log")
            await updater.failed(self.say(updater, FAILURE))
        elif script == "complete":
            await updater.add_artifact(artifact_parts(), name="export")
            await updater.complete(self.say(updater, "the export is done"))
        elif script == "input":
            await updater.requires_input(self.say(updater, QUESTION))
        else:
            await updater.failed(self.say(updater, f"unknown script {script!r}"))

    @staticmethod
    def say(updater, text):
        return updater.new_agent_message([text_part(text)])

    async def cancel(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def text_part(text):
    if V1:
        return t.Part(text=text)
    return t.Part(root=t.TextPart(text=text))


def artifact_parts():
    if V1:
        from google.protobuf.struct_pb2 import Value
        from google.protobuf.json_format import ParseDict

        return [t.Part(text=ARTIFACT_TEXT), t.Part(data=ParseDict(ARTIFACT_DATA, Value()))]
    return [text_part(ARTIFACT_TEXT), t.Part(root=t.DataPart(data=ARTIFACT_DATA))]


def agent_card(url):
    if V1:
        return t.AgentCard(
            name="nomos test agent",
            description="scripted tasks for the protocol tests",
            version="1.0.0",
            supported_interfaces=[
                t.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
            ],
            capabilities=t.AgentCapabilities(streaming=False, push_notifications=True),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
        )
    return t.AgentCard(
        name="nomos test agent",
        description="scripted tasks for the protocol tests",
        version="1.0.0",
        url=url,
        preferred_transport="JSONRPC",
        capabilities=t.AgentCapabilities(streaming=False, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[],
    )


def push_config(task_id, push, config_id=None):
    """The SDK's push configuration from nomos-continue's answer."""
    auth = push.get("authentication") or {}
    if V1:
        config = t.TaskPushNotificationConfig(url=push["url"], token=push.get("token", ""))
        if task_id:
            config.task_id = task_id
        if config_id:
            config.id = config_id
        if auth:
            config.authentication.CopyFrom(
                t.AuthenticationInfo(scheme=auth["scheme"], credentials=auth["credentials"])
            )
        return config
    return t.PushNotificationConfig(
        id=config_id,
        url=push["url"],
        token=push.get("token"),
        authentication=t.PushNotificationAuthenticationInfo(
            schemes=[auth["scheme"]], credentials=auth["credentials"]
        )
        if auth
        else None,
    )


class Agent:
    def __init__(self, url, http):
        self.url = url
        self.card = agent_card(url)
        self.executor = ScriptedExecutor()
        store = InMemoryPushNotificationConfigStore()
        handler = DefaultRequestHandler(
            agent_executor=self.executor,
            task_store=InMemoryTaskStore(),
            push_config_store=store,
            push_sender=BasePushNotificationSender(http, store),
            **({"agent_card": self.card} if V1 else {}),
        )
        if V1:
            self.app = Starlette(
                routes=create_agent_card_routes(self.card) + create_jsonrpc_routes(handler, "/")
            )
        else:
            self.app = A2AStarletteApplication(agent_card=self.card, http_handler=handler).build()
        self.http = http
        self.client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(
            self.card
        )

    def configure(self, push):
        """A client whose configuration pushes every task to `push`: the
        SDK puts it in each message it sends (1.x `push_notification_config`,
        0.3 `push_notification_configs`)."""
        if V1:
            config = ClientConfig(
                streaming=False, httpx_client=self.http, push_notification_config=push_config(None, push)
            )
        else:
            config = ClientConfig(
                streaming=False, httpx_client=self.http, push_notification_configs=[push_config(None, push)]
            )
        self.client = ClientFactory(config).create(self.card)

    async def send(self, script, push=None):
        if V1:
            configuration = t.SendMessageConfiguration(return_immediately=True)
            if push:
                configuration.task_push_notification_config.CopyFrom(push_config(None, push))
            request = t.SendMessageRequest(
                message=new_text_message(script, role=t.ROLE_USER), configuration=configuration
            )
            async for response in self.client.send_message(request):
                if response.HasField("task"):
                    return as_json(response.task)
            raise RuntimeError("the agent answered no task")
        from uuid import uuid4

        message = t.Message(role=t.Role.user, parts=[text_part(script)], message_id=str(uuid4()))
        # A field passed as None would override the client's own
        # configuration (the SDK merges the fields set): pass it only when
        # this message carries one.
        inline = {"push_notification_config": push_config(None, push)} if push else {}
        configuration = t.MessageSendConfiguration(blocking=False, **inline)
        async for event in self.client.send_message(message, configuration=configuration):
            task = event[0] if isinstance(event, tuple) else event
            return as_json(task)
        raise RuntimeError("the agent answered no task")

    async def register(self, task_id, push, config_id=None):
        config = push_config(task_id, push, config_id)
        if V1:
            stored = await self.client.create_task_push_notification_config(config)
        else:
            stored = await self.client.set_task_callback(
                t.TaskPushNotificationConfig(task_id=task_id, push_notification_config=config)
            )
        return as_json(stored)

    async def get(self, task_id):
        if V1:
            return as_json(await self.client.get_task(t.GetTaskRequest(id=task_id)))
        return as_json(await self.client.get_task(t.TaskQueryParams(id=task_id)))

    async def go(self, task_id):
        """Ends the task's hold and waits for its script's last state."""
        self.executor.gate(task_id).set()
        # Bounded by the caller's patience (the test reads this answer);
        # the look interval only paces the asking.
        while True:
            task = await self.get(task_id)
            if plain_state(task) in ENDED:
                return task
            await asyncio.sleep(0.01)


async def commands(agent):
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        if not line.strip():
            continue
        command = json.loads(line)
        op = command["op"]
        try:
            if op == "send":
                answer = {"task": await agent.send(command["script"], command.get("push"))}
            elif op == "client":
                agent.configure(command["push"])
                answer = {"client": "configured"}
            elif op == "push":
                config = await agent.register(command["task_id"], command["push"], command.get("id"))
                answer = {"config": config}
            elif op == "go":
                answer = {"ended": await agent.go(command["task_id"])}
            elif op == "get":
                answer = {"task": await agent.get(command["task_id"])}
            elif op == "quit":
                return
            else:
                answer = {"error": f"unknown op {op!r}"}
        except Exception as error:  # the test reads it and fails
            answer = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), flush=True)


async def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    async with httpx.AsyncClient(timeout=10) as http:
        agent = Agent(url, http)
        server = uvicorn.Server(uvicorn.Config(agent.app, log_level="warning"))
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.01)
        print(json.dumps({"listening": url, "sdk": SDK}), flush=True)
        await commands(agent)
        server.should_exit = True
        await serving


if __name__ == "__main__":
    asyncio.run(main())
