"""A scripted reply as data: its token :class:`Usage` and the :class:`ScriptedReply` every wire format is written
from. Below the modules that write those formats (:mod:`.wire`, :mod:`.responses_api`), which take a reply, and
the one that builds replies (:mod:`.replies`, whose :class:`~.replies.Reply` adds the OpenAI bodies), so none of
them imports another back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Stop reasons without a Chat Completions counterpart (pause_turn, refusal, ...) become "stop".
_FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


@dataclass(frozen=True)
class Usage:
    """Token counts, echoed exactly in a Messages response's ``usage`` (OpenAI
    formats fold the cache counts in, see :meth:`chat_usage`)."""

    input_tokens: int = 10
    output_tokens: int = 5
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens,
        }

    @property
    def prompt_tokens(self) -> int:
        """Every input token, cached or not (OpenAI counts cache hits inside the prompt)."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def chat_usage(self) -> dict[str, Any]:
        """The Chat Completions ``usage``: ``prompt_tokens`` is :attr:`prompt_tokens`,
        ``prompt_tokens_details.cached_tokens`` the cache reads."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.output_tokens,
            "total_tokens": self.prompt_tokens + self.output_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cache_read_input_tokens},
        }

    def responses_usage(self) -> dict[str, Any]:
        """The Responses API ``usage``, counted like :meth:`chat_usage`; also
        ``input_tokens_details.cache_write_tokens`` (cache creation), which the
        ``openai`` SDK's model requires."""
        return {
            "input_tokens": self.prompt_tokens,
            "input_tokens_details": {
                "cached_tokens": self.cache_read_input_tokens,
                "cache_write_tokens": self.cache_creation_input_tokens,
            },
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.prompt_tokens + self.output_tokens,
        }


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted answer as data: a message (``status == 200``) or an API error, with its Messages API forms and
    the parts of its OpenAI forms that need no more than itself. :class:`~.replies.Reply` adds the whole OpenAI
    bodies, which :mod:`.wire` and :mod:`.responses_api` build from this."""

    content: tuple[dict[str, Any], ...] = ()
    stop_reason: str | None = "end_turn"
    usage: Usage = field(default_factory=Usage)
    status: int = 200
    error_type: str = "api_error"
    error_message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        return self.status >= 400

    def message(self, *, msg_id: str, model: str) -> dict[str, Any]:
        """The full Messages API response body for this reply."""
        return {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [dict(block) for block in self.content],
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": self.usage.to_dict(),
        }

    def error_body(self) -> dict[str, Any]:
        return {"type": "error", "error": {"type": self.error_type, "message": self.error_message}}

    # -- parts of the OpenAI wire formats
    @property
    def text(self) -> str | None:
        """The text blocks joined with ``""``; ``None`` when there are none."""
        texts = [str(block.get("text", "")) for block in self.content if block.get("type") == "text"]
        return "".join(texts) if texts else None

    @property
    def finish_reason(self) -> str:
        """``stop_reason`` as a Chat Completions ``finish_reason``."""
        return chat_finish_reason(self.stop_reason)

    def tool_calls(self) -> list[dict[str, Any]]:
        """The ``tool_use`` blocks as Chat Completions ``tool_calls``."""
        return chat_tool_calls(self.content)

    def openai_error_body(self) -> dict[str, Any]:
        """This error in OpenAI's shape (``error_type`` and message kept as scripted)."""
        return openai_error(self.error_type, self.error_message)


def chat_finish_reason(stop_reason: str | None) -> str:
    """A Messages ``stop_reason`` as a Chat Completions ``finish_reason``."""
    return _FINISH_REASONS.get(stop_reason or "", "stop")


def chat_tool_calls(content: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``tool_use`` blocks of ``content`` as Chat Completions ``tool_calls``."""
    return [
        {
            "id": str(block["id"]),
            "type": "function",
            "function": {"name": str(block["name"]), "arguments": json.dumps(block.get("input", {}))},
        }
        for block in content
        if block.get("type") == "tool_use"
    ]


def openai_error(etype: str, message: str, param: str | None = None) -> dict[str, Any]:
    """An error body in OpenAI's shape."""
    return {"error": {"message": message, "type": etype, "param": param, "code": None}}
