"""How the test server writes a scripted reply on the wire: the Messages API's server-sent events, and the
OpenAI Chat Completions bodies, chunks and errors (the Responses API's are in :mod:`.responses_api`).

The shapes follow the real APIs closely enough for the ``anthropic`` and ``openai`` SDKs to parse them; every
value is derived from the :class:`~.scripted.ScriptedReply` and the ids the server hands in, so output is reproducible.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any

from .scripted import ScriptedReply as Reply

# A fixed ``created`` / ``created_at`` keeps OpenAI-format responses reproducible.
_CREATED = 1_700_000_000


# --------------------------------------------------------------------------- Anthropic SSE


def _chunks(text: str, parts: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_events(reply: Reply, *, msg_id: str, model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs the real API streams for ``reply``.

    ``message_start`` carries the message with empty content and the scripted
    input/cache token counts with ``output_tokens`` ``min(1, N)``; then a
    ``ping``; per block ``content_block_start`` (text ``""`` / tool ``input: {}``),
    ``text_delta`` chunks or ``input_json_delta`` pieces (the first one ``""``,
    as the API does), ``content_block_stop``; then ``message_delta`` whose
    ``usage`` holds the cumulative totals (all four counts, so the SDK's
    accumulator ends with exactly the scripted usage) and ``message_stop``.
    """
    usage = reply.usage.to_dict()
    start = reply.message(msg_id=msg_id, model=model)
    start.update(content=[], stop_reason=None, usage={**usage, "output_tokens": min(1, reply.usage.output_tokens)})
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(reply.content):
        btype = block.get("type")
        if btype == "text":
            first: dict[str, Any] = {**block, "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _chunks(str(block["text"]), 2)]
        elif btype == "tool_use":
            first = {**block, "input": {}}
            pieces = ["", *_chunks(json.dumps(block.get("input", {})), 3)]
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        else:
            first, deltas = dict(block), []
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": first}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
            "usage": usage,
        },
    )
    yield "message_stop", {"type": "message_stop"}


def sse_frames(events: Iterable[tuple[str, dict[str, Any]]]) -> Iterator[bytes]:
    """The events as written on the wire: an ``event:`` and a ``data:`` line each, then a blank line."""
    return (f"event: {event}\ndata: {json.dumps(data)}\n\n".encode() for event, data in events)


# --------------------------------------------------------------------------- OpenAI


def chat_completion_body(reply: Reply, *, completion_id: str, model: str) -> dict[str, Any]:
    """The full Chat Completions response body for ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None, "annotations": []}
    calls = reply.tool_calls()
    if calls:
        message["tool_calls"] = calls
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": _CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}],
        "usage": reply.usage.chat_usage(),
        "system_fingerprint": None,
    }


def chat_completion_chunks(
    reply: Reply, *, completion_id: str, model: str, include_usage: bool = False
) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects the real API streams for ``reply``
    (each sent as a ``data:`` line; ``data: [DONE]`` follows them).

    First a chunk whose delta is ``{"role": "assistant", "content": ""}``
    (``content`` ``null`` when the reply has no text, so the accumulated message
    matches the non-streamed one); then the text in content deltas (two pieces
    when it is at least two characters long); per tool call a delta carrying
    ``index``, ``id``, ``type``, ``function.name`` and ``arguments`` ``""``, then
    argument pieces carrying only ``index`` and ``function.arguments``; then an
    empty delta with the ``finish_reason``.  With ``include_usage`` every chunk
    has ``"usage": null`` and a last chunk with ``choices: []`` holds the usage.
    """
    head: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": model,
        "system_fingerprint": None,
    }
    if include_usage:
        head["usage"] = None

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**head, "choices": [choice]}

    text = reply.text
    yield chunk({"role": "assistant", "content": None if text is None else "", "refusal": None})
    for piece in _chunks(text or "", 2):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls()):
        function = call["function"]
        start = {"index": index, "id": call["id"], "type": "function"}
        yield chunk({"tool_calls": [{**start, "function": {"name": function["name"], "arguments": ""}}]})
        for piece in _chunks(function["arguments"], 3):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish_reason)
    if include_usage:
        yield {**head, "choices": [], "usage": reply.usage.chat_usage()}


def chunk_frames(chunks: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """The chunks as written on the wire: a ``data:`` line each, then ``data: [DONE]``."""
    frames = (f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
    return itertools.chain(frames, [b"data: [DONE]\n\n"])
