"""The client against a real `serve` (NOMOS_URL, NOMOS_TOKEN: the tests'
harness starts one; without it these skip, except under CI=true)."""

import os
import uuid

import httpx
import pytest

from nomos_continue_client import Client, ProblemError
from nomos_continue_client import a2a

URL = os.environ.get("NOMOS_URL")
TOKEN = os.environ.get("NOMOS_TOKEN")

if not URL:
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI=true but NOMOS_URL is not set: the harness starts serve")
    pytest.skip("no serve to talk to (NOMOS_URL)", allow_module_level=True)


class FlakyOnce(httpx.BaseTransport):
    """Drops the first request of each path before it is sent, then
    passes every request on; records the headers of each try."""

    def __init__(self):
        self.inner = httpx.HTTPTransport()
        self.tries = []
        self.dropped = set()

    def handle_request(self, request):
        self.tries.append((request.url.path, dict(request.headers)))
        if request.url.path not in self.dropped:
            self.dropped.add(request.url.path)
            raise httpx.ConnectError("dropped on purpose", request=request)
        return self.inner.handle_request(request)


def test_a_refusal_is_a_typed_problem():
    with Client(URL, TOKEN) as client:
        with pytest.raises(ProblemError) as refused:
            client.approve(uuid.uuid4(), minutes=99)
        assert refused.value.status == 400
        assert refused.value.kind == "bad-request"
        assert refused.value.request_id
    with Client(URL, "not-the-token", retries=0) as wrong:
        with pytest.raises(ProblemError) as refused:
            wrong.overview()
        assert (refused.value.status, refused.value.kind) == (401, "unauthorized")


def test_a_retried_write_carries_one_key_and_the_trace():
    flaky = FlakyOnce()
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    with Client(URL, TOKEN, http=httpx.Client(transport=flaky)) as client:
        session = uuid.uuid4()
        client.record_turn(session, "user", "deploy the container")
        turns = [h for p, h in flaky.tries if p.endswith("/turns")]
        assert len(turns) == 2, flaky.tries
        keys = {h.get("idempotency-key") for h in turns}
        assert len(keys) == 1 and None not in keys, turns
        client.link_tool_result(session, f"running, execution {uuid.uuid4()}",
                                traceparent=traceparent)
        links = [h for p, h in flaky.tries if p.endswith("/tool-results")]
        assert all(h.get("traceparent") == traceparent for h in links), links


def test_the_protocols_helpers_put_a_session_configuration_where_the_sdk_reads_it():
    with Client(URL, TOKEN) as client:
        session = uuid.uuid4()
        client.approve(session)
        minted = client.mint_session_push(session)
        assert minted["url"].endswith(f"/v1/a2a/sessions/{session}/push")
        config = a2a.client_config(minted, streaming=False)
        if a2a.sdk_is_1x():
            assert config.push_notification_config.url == minted["url"]
            assert config.push_notification_config.authentication.credentials == minted["token"]
        else:
            assert config.push_notification_configs[0].url == minted["url"]
        registered = client.register_task(session, "a2a", "task-1",
                                          agent_url="http://agent.test/a2a")
        per_task = a2a.task_push_config("task-1", registered["push"])
        assert per_task.task_id == "task-1"
        forwarded = client.record_mcp_task(
            {"task": {"taskId": "mcp-1", "status": "working",
                      "createdAt": "2026-12-06T00:00:00Z", "ttl": 60000}})
        assert forwarded["execution_id"]
