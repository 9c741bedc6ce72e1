"""Schemathesis hooks for tests/tests/service/peers.rs (SCHEMATHESIS_HOOKS).

The stock `not_a_server_error` fails on every 5xx. This service answers
503 on purpose when it sheds load (its request pool is full, the store is
unreachable), and always with `Retry-After` so the caller knows when to
come back: that answer is the contract, not a bug. So the run excludes
the stock check and uses this one, which still fails any other 5xx and a
503 without a usable `Retry-After`.
"""

import schemathesis


@schemathesis.check
def no_server_error_but_a_retryable_503(ctx, response, case):
    """Fails a 5xx, except a 503 with a Retry-After of whole seconds."""
    status = response.status_code
    if status < 500:
        return None
    if status == 503:
        retry_after = response.headers.get("retry-after")
        # Requests-style headers may come as a list of values.
        if isinstance(retry_after, list):
            retry_after = retry_after[0] if retry_after else None
        if retry_after is not None and retry_after.strip().isdigit():
            return None
        raise AssertionError(f"503 without a Retry-After of seconds: {retry_after!r}")
    raise AssertionError(f"server error {status}")
