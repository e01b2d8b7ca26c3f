"""Test doubles for agents built on prompt-composer: a scripted server on 127.0.0.1 that speaks the Anthropic
Messages API and OpenAI's Chat Completions and Responses APIs (JSON and SSE), and enforces their documented rules
of tool deferral, so the real SDKs can be tested without a network.

``python -m prompt_composer.testing --demo`` starts one from the command line.
"""

from typing import TYPE_CHECKING

from ..shared.lazy import attach

if TYPE_CHECKING:
    from .replies import Reply, error_reply, hosted_search_reply, text_reply, tool_search_reply, tool_use_reply
    from .scripted import Usage
    from .server import RecordedRequest, ScriptedMessagesServer

__all__ = [
    "RecordedRequest",
    "Reply",
    "ScriptedMessagesServer",
    "Usage",
    "error_reply",
    "hosted_search_reply",
    "text_reply",
    "tool_search_reply",
    "tool_use_reply",
]

__getattr__, __dir__ = attach(__name__, __file__)
