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
a connection is its own task, as before.

A task belongs to one principal. With authorization, the store key is the token's principal, then the task id
(:func:`store_key`): ``token/<variable>/<task>`` for a static token, ``subject/<sha256 of issuer and sub>/<task>``
for a JWT (any token whose verifier names a subject; the store's keys do not show who its users are), so two
principals that pick the same task id never share a task, whatever their issuer, subject or client id spell. A
client id is no principal: every user of one OAuth client shares it. A token that names no user (a JWT without
``sub``) cannot name a task: its request is answered with an error saying so. Without authorization the key is the
task id alone.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, NoReturn

from .auth import Principal, principal_of

TASK_HEADER = "prompt-composer-task"
_TASK_ID = re.compile(r"[A-Za-z0-9._:@-]{1,128}")


def store_key(principal: Principal | None, task_id: str) -> str:
    """The session-store key of task ``task_id`` of ``principal`` (``None``: a gateway without authorization).
    Injective: a task id holds no ``/`` and a principal's key no unescaped one, so no two (principal, task) pairs
    share a key. In Redis the store's prefix comes first (``prompt-composer:session:token/CODE/task-1``)."""
    return task_id if principal is None else f"{principal.key()}/{task_id}"


def task_key(ctx: Any) -> str | None:
    """The store key of the task the request names, or ``None`` when it names none (stdio, or no header).
    A malformed id, or a token that names no user, raises the SDK's invalid-params error, which the client reads
    as the request's answer."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    value = headers.get(TASK_HEADER)
    if value is None:
        return None
    if not _TASK_ID.fullmatch(value):
        shown = value[:40] + ("…" if len(value) > 40 else "")
        _refuse(f"the {TASK_HEADER} header {shown!r} is not a task id: 1-128 of A-Z a-z 0-9 . _ : @ -")
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    access = getattr(user, "access_token", None)
    if access is None:  # no authorization: the id alone names the task
        return store_key(None, value)
    principal = principal_of(access)
    if principal is None:
        _refuse(
            f"the {TASK_HEADER} header needs a token that names its user: this token has no subject (a JWT "
            "without a 'sub' claim), so its task could not be told apart from another user's. Send the request "
            "without the header (it then stands alone), or use a token with 'sub'"
        )
    return store_key(principal, value)


def _refuse(message: str) -> NoReturn:
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    raise MCPError(code=INVALID_PARAMS, message=message)


def event_task_id(key: str) -> str:
    """What the event log calls the task: a digest, so a log never holds a principal's name or task id."""
    return "mcp-" + hashlib.sha256(key.encode()).hexdigest()[:12]
