"""nomos-continue's push configurations in the shapes the A2A SDKs take.

`POST /v1/sessions/{id}/push-configs` (`Client.mint_session_push`) answers
one configuration for every task the session's agent will create: put it
in the SDK client's configuration (`client_config`) and the SDK adds it to
every message. `POST /v1/sessions/{id}/tasks` (`Client.register_task`)
answers one for one task that exists (`task_push_config`). a2a-sdk 1.x
speaks A2A 1.0, 0.x speaks 0.3; whichever is installed is used. The SDK is
imported only when called: this package does not depend on it.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any, Mapping, Optional


def sdk_is_1x() -> bool:
    """Whether the installed a2a-sdk speaks A2A 1.0."""
    return not version("a2a-sdk").startswith("0.")


def push_config(push: Mapping[str, Any], task_id: Optional[str] = None) -> Any:
    """The SDK's push configuration for nomos-continue's answer (its
    `push` object, or a session's configuration): A2A 1.0
    `TaskPushNotificationConfig` with `Authorization` credentials and the
    token (sent as `X-A2A-Notification-Token`); A2A 0.3
    `PushNotificationConfig` with the token."""
    token = push["token"]
    if sdk_is_1x():
        from a2a.types import a2a_pb2 as t  # type: ignore[import-not-found,unused-ignore]

        config = t.TaskPushNotificationConfig(url=push["url"], token=token)
        if task_id:
            config.task_id = task_id
        config.authentication.CopyFrom(t.AuthenticationInfo(scheme="Bearer", credentials=token))
        return config
    from a2a import types as t03  # type: ignore[import-not-found,unused-ignore]

    config03 = t03.PushNotificationConfig(
        url=push["url"],
        token=token,
        authentication=t03.PushNotificationAuthenticationInfo(
            schemes=["Bearer"], credentials=token
        ),
    )
    if task_id:
        return t03.TaskPushNotificationConfig(task_id=task_id, push_notification_config=config03)
    return config03


def client_config(session_push: Mapping[str, Any], **options: Any) -> Any:
    """An a2a-sdk `ClientConfig` that carries a session's push
    configuration into every message (1.x `push_notification_config`, 0.3
    `push_notification_configs`); `options` are the config's other fields
    (`httpx_client`, `streaming`, ...)."""
    from a2a.client import ClientConfig  # type: ignore[import-not-found,unused-ignore]

    if sdk_is_1x():
        return ClientConfig(push_notification_config=push_config(session_push), **options)
    return ClientConfig(push_notification_configs=[push_config(session_push)], **options)


def task_push_config(task_id: str, push: Mapping[str, Any]) -> Any:
    """What to register for one task that exists (1.x
    `create_task_push_notification_config`, 0.3 `set_task_callback`)."""
    return push_config(push, task_id)
