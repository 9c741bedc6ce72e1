"""The seed's story, played by a runtime against a running `serve`.

The operator approves the plan; a tool answers "running" and names its
execution; the execution fails; nomos-continue POSTs the continuation to
this runtime's webhook, whose signature is checked; the note the agent
would be re-invoked with is printed.

    NOMOS_URL=http://127.0.0.1:7300 NOMOS_TOKEN=... \
    NOMOS_WEBHOOK_SECRET=whsec_... RECEIVER_PORT=9000 python examples/story.py

with `serve --agent-webhook http://127.0.0.1:9000/hooks/nomos
--webhook-secret whsec_... --token ...`.
"""

import os
import queue
import sys
import threading
import uuid
from wsgiref.simple_server import WSGIRequestHandler, make_server

from nomos_continue_client import Client, Continuation, Notice, Receiver
from nomos_continue_client.webhooks import wsgi


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):  # the story prints what matters
        pass


def main() -> int:
    events: "queue.Queue[Continuation | Notice]" = queue.Queue()
    receiver = Receiver([os.environ["NOMOS_WEBHOOK_SECRET"]])
    port = int(os.environ.get("RECEIVER_PORT", "9000"))
    server = make_server("127.0.0.1", port, wsgi(receiver, events.put), handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    session, execution = uuid.uuid4(), uuid.uuid4()
    with Client(os.environ["NOMOS_URL"], os.environ.get("NOMOS_TOKEN")) as client:
        window = client.approve(session)["window"]
        print(f"approved: session {session} until {window['expires_at']}")
        linked = client.link_tool_result(
            session, f"pct_create started: running, execution {execution}"
        )
        print(f"linked: {len(linked['linked'])} execution(s)")
        client.record_execution(
            execution, "failed", "ssh: connect to host 10.0.0.7 port 22: Connection refused"
        )
        event = events.get(timeout=60)
    server.shutdown()
    if not isinstance(event, Continuation) or event.session_id != str(session):
        print(f"expected this session's continuation, got {event!r}", file=sys.stderr)
        return 1
    print(f"continued: session {event.session_id} (signature checked)")
    print("note the agent is re-invoked with:")
    print(event.note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
