"""Which task an HTTP request belongs to, across gateway replicas.

A task (its recent-use FIFO, what it fetched or was shown) is named by the client: the ``Prompt-Composer-Task``
header, on every request of the task, in either protocol era. The gateway then keeps the task in its session
store (:class:`~prompt_composer.core.session.InMemorySessionStore` by default; a
:class:`~prompt_composer.core.redis_store.RedisSessionStore` shared by every replica with ``serve
--session-store redis://...``), so any replica can answer any request of it: a 2026-07-28 request has no
connection to tie it to a process, and a session-era client whose replica died opens a new session elsewhere
and continues the same task.

A header, not ``_meta``: a load balancer can read it (to route by task, if wanted) without parsing JSON-RPC
bodies, and it rides the ``initialize`` of a session-era client and every stateless request alike. Without it,
a connection is its own task, as before. With authorization, the store key is prefixed with the token's client
id, so two principals that pick the same task id never share a task.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

TASK_HEADER = "prompt-composer-task"
_TASK_ID = re.compile(r"[A-Za-z0-9._:@-]{1,128}")


def task_key(ctx: Any) -> str | None:
    """The store key of the task the request names, or ``None`` when it names none (stdio, or no header).
    A malformed id raises the SDK's invalid-params error, which the client reads as the request's answer."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    value = headers.get(TASK_HEADER)
    if value is None:
        return None
    if not _TASK_ID.fullmatch(value):
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_PARAMS

        shown = value[:40] + ("…" if len(value) > 40 else "")
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"the {TASK_HEADER} header {shown!r} is not a task id: 1-128 of A-Z a-z 0-9 . _ : @ -",
        )
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    access = getattr(user, "access_token", None)
    principal = getattr(access, "client_id", None)
    return f"{principal}/{value}" if principal else value


def event_task_id(key: str) -> str:
    """What the event log calls the task: a digest, so a log never holds a principal's name or task id."""
    return "mcp-" + hashlib.sha256(key.encode()).hexdigest()[:12]
