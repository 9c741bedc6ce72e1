"""The seed's story through a client generated from docs/openapi.json.

Run by tests/tests/service/peers.rs with the generated package on
PYTHONPATH. It drives a real server as a runtime would, only through the
generated functions and models (so a document that misdescribes a route
shows up as a failed call or a model that does not parse), and prints one
JSON line of facts for the Rust test to hold against what the webhook
receiver got.

Usage: client_story.py BASE_URL TOKEN
"""

import json
import sys
import time
import uuid

from nomos_continue_client import AuthenticatedClient
from nomos_continue_client.api.executions import record_execution
from nomos_continue_client.api.sessions import (
    decide_approval,
    deliveries,
    link_tool_result,
    links,
    session,
)
from nomos_continue_client.models import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalRoute,
    ApprovalResponse,
    DeliveryKind,
    DeliveryState,
    ExecutionRecorded,
    ExecutionReportRequest,
    LinkResponse,
    PageDelivery,
    PageLink,
    Session,
    Settlement,
    ToolResultRequest,
)

# A bound against a hung server, never the thing measured: a debug build
# on a loaded two-core machine.
DEADLINE_SECONDS = 60
LOOK_SECONDS = 0.05


def ok(response, model):
    """The parsed body of a 200 answer of type `model`, or exit naming it."""
    if response.status_code != 200 or not isinstance(response.parsed, model):
        sys.exit(
            f"expected 200 {model.__name__}, got {response.status_code}: "
            f"{response.content!r}"
        )
    return response.parsed


def main(base_url, token):
    client = AuthenticatedClient(base_url=base_url, token=token, timeout=30.0)
    session_id = uuid.uuid4()
    execution_id = uuid.uuid4()

    # The operator approves by chat: the window opens.
    approved = ok(
        decide_approval.sync_detailed(
            session_id,
            client=client,
            body=ApprovalRequest(
                decision=ApprovalDecision.APPROVE, route=ApprovalRoute.CHAT
            ),
        ),
        ApprovalResponse,
    )
    assert approved.window.open_, approved
    assert approved.window.route == ApprovalRoute.CHAT, approved

    # The agent's tool result names the execution it started.
    linked = ok(
        link_tool_result.sync_detailed(
            session_id,
            client=client,
            body=ToolResultRequest(text=f"started execution {execution_id}"),
        ),
        LinkResponse,
    )
    assert linked.linked == [execution_id], linked

    # The runtime reports it failed, with its error.
    ok(
        record_execution.sync_detailed(
            execution_id,
            client=client,
            body=ExecutionReportRequest(
                status="failed", result="ssh: connection refused"
            ),
        ),
        ExecutionRecorded,
    )

    # Bounded polling until the continuation is delivered.
    started = time.monotonic()
    deadline = started + DEADLINE_SECONDS
    looks = 0
    while True:
        looks += 1
        page = ok(deliveries.sync_detailed(session_id, client=client), PageDelivery)
        delivered = [d for d in page.items if d.state == DeliveryState.DELIVERED]
        if delivered:
            break
        if time.monotonic() > deadline:
            sys.exit(f"no delivered delivery after {DEADLINE_SECONDS}s: {page}")
        time.sleep(LOOK_SECONDS)
    print(
        f"delivered after {time.monotonic() - started:.2f}s ({looks} looks)",
        file=sys.stderr,
    )
    assert len(page.items) == 1, page
    delivery = delivered[0]
    assert delivery.kind == DeliveryKind.CONTINUATION, delivery
    assert delivery.session_id == session_id, delivery
    assert delivery.execution_ids == [execution_id], delivery
    assert f"execution {execution_id} failed" in delivery.note, delivery.note

    # The session and its links, read back through the client.
    read = ok(session.sync_detailed(session_id, client=client), Session)
    assert read.session_id == session_id, read
    assert read.counts.links == 1 and read.counts.deliveries == 1, read.counts
    link_page = ok(links.sync_detailed(session_id, client=client), PageLink)
    assert len(link_page.items) == 1, link_page
    link = link_page.items[0]
    assert link.execution_id == execution_id, link
    assert link.outcome == Settlement.CONTINUED, link
    assert link.execution_status == "failed", link
    assert link.delivery_id == delivery.id, link

    print(
        json.dumps(
            {
                "session_id": str(session_id),
                "execution_id": str(execution_id),
                "delivery_id": str(delivery.id),
                "idempotency_key": delivery.idempotency_key,
                "note": delivery.note,
            }
        )
    )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
