"""The receiver against the reference: requests signed by the
`standardwebhooks` package, as nomos-continue signs them."""

import base64
import json
import os
import time
from datetime import datetime, timezone

import pytest
from standardwebhooks.webhooks import Webhook

from nomos_continue_client import Continuation, Notice, Receiver, SignatureError

SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
OTHER = "whsec_" + base64.b64encode(os.urandom(32)).decode()

CONTINUATION = {
    "type": "continuation.v1",
    "timestamp": "2026-12-01T16:20:31Z",
    "data": {
        "session_id": "0c0ffee0-0000-4000-8000-000000000001",
        "idempotency_key": "c-9f86",
        "executions": [
            {"id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "status": "FAILED",
             "outcome": "failed", "result": "ssh: connection refused"}
        ],
        "note": "execution 3f2504e0 failed: ssh: connection refused",
        "soul": "You will be re-invoked when async steps finish.",
    },
}
NOTICE = {
    "type": "notice.v1",
    "timestamp": "2026-12-01T16:24:02Z",
    "data": {"session_id": "0c0ffee0-0000-4000-8000-000000000001",
             "idempotency_key": "n-6b86", "notice": "the window closed"},
}


def signed(body: dict, *secrets: str, key: str = "c-9f86", at: float = None):
    raw = json.dumps(body).encode()
    when = datetime.fromtimestamp(time.time() if at is None else at, tz=timezone.utc)
    signatures = [Webhook(s).sign(key, when, raw.decode()) for s in secrets]
    headers = {
        "webhook-id": key,
        "webhook-timestamp": str(int(when.timestamp())),
        "webhook-signature": " ".join(signatures),
        "content-type": "application/json",
    }
    return raw, headers


def test_a_continuation_and_a_notice_are_read_into_their_types():
    receiver = Receiver([SECRET])
    event = receiver.verify(*signed(CONTINUATION, SECRET))
    assert isinstance(event, Continuation)
    assert event.note == CONTINUATION["data"]["note"]
    assert event.executions[0].outcome == "failed"
    notice = receiver.verify(*signed(NOTICE, SECRET, key="n-6b86"))
    assert isinstance(notice, Notice) and notice.notice == "the window closed"


def test_a_rotation_accepts_either_secret_and_nothing_else():
    receiver = Receiver([OTHER, SECRET])
    assert receiver.verify(*signed(CONTINUATION, SECRET))
    assert receiver.verify(*signed(CONTINUATION, OTHER))
    with pytest.raises(SignatureError):
        Receiver([OTHER]).verify(*signed(CONTINUATION, SECRET))
    raw, headers = signed(CONTINUATION, SECRET)
    with pytest.raises(SignatureError):
        Receiver([SECRET]).verify(raw + b" ", headers)


def test_an_old_or_future_timestamp_is_refused():
    receiver = Receiver([SECRET])
    for skew in (-301, 301):
        with pytest.raises(SignatureError):
            receiver.verify(*signed(CONTINUATION, SECRET, at=time.time() + skew))
    assert receiver.verify(*signed(CONTINUATION, SECRET, at=time.time() - 200))


def test_the_handler_answers_as_the_service_expects():
    receiver = Receiver([SECRET])
    taken = []
    answer = receiver.handle(*signed(CONTINUATION, SECRET), taken.append)
    assert answer.status == 200 and len(taken) == 1
    # The same key again (a retry after a lost answer): 200, not acted on.
    assert receiver.handle(*signed(CONTINUATION, SECRET), taken.append).status == 200
    assert len(taken) == 1
    # A later version is refused, not guessed at: 400 ends the delivery.
    later = dict(CONTINUATION, type="continuation.v2")
    assert receiver.handle(*signed(later, SECRET, key="c-2"), taken.append).status == 400
    # A forgery: 401.
    assert receiver.handle(*signed(NOTICE, OTHER, key="n-1"), taken.append).status == 401

    def failing(_event):
        raise RuntimeError("the queue is down")

    # The runtime could not take it: 503, and the key is free for the retry.
    assert receiver.handle(*signed(NOTICE, SECRET, key="n-2"), failing).status == 503
    assert receiver.handle(*signed(NOTICE, SECRET, key="n-2"), taken.append).status == 200
    assert len(taken) == 2
