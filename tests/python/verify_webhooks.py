"""Checks webhook deliveries with the `standardwebhooks` package, exactly as
a receiver would, for the Rust tests (tests/tests/service/webhooks.rs).

Reads one JSON object on stdin and writes one on stdout:

    {"verify": [{"secret": "whsec_...", "headers": {...}, "body": "..."}],
     "sign":   [{"secret": "whsec_...", "id": "...", "timestamp": 1800000000,
                 "body": "..."}]}
    ->
    {"verify": [{"ok": true, "payload": {...}} | {"ok": false, "error": "..."}],
     "sign":   ["v1,..."]}

Nothing is decided here: the Rust test says what must verify and what must
not, so a wrong expectation fails there, with the delivery in hand.
"""

import datetime
import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def verify(check):
    # Header names as a receiver's framework hands them over: lower case.
    headers = {name.lower(): value for name, value in check["headers"].items()}
    try:
        payload = Webhook(check["secret"]).verify(check["body"], headers)
    except WebhookVerificationError as error:
        return {"ok": False, "error": str(error)}
    return {"ok": True, "payload": payload}


def sign(request):
    at = datetime.datetime.fromtimestamp(request["timestamp"], tz=datetime.timezone.utc)
    return Webhook(request["secret"]).sign(request["id"], at, request["body"])


def main():
    asked = json.load(sys.stdin)
    answer = {
        "verify": [verify(check) for check in asked.get("verify", [])],
        "sign": [sign(request) for request in asked.get("sign", [])],
    }
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
