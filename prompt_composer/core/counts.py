"""Token counts kept between runs: a command that composes what it composed before counts nothing again, and does
not load the tokenizer at all (loading ``cl100k_base`` is ~0.1 s, most of what a cold ``compose`` spends after
the registry cache has removed the parsing).

One JSON file per docs folder and encoding in ``<cache dir>/tokens/`` (see
:mod:`prompt_composer.shared.cache_files`): the SHA-256 of each text counted (its first 128 bits) and its count.
A count depends on nothing but the text and the encoding, whose ranks tiktoken checks by hash, so an entry never
goes stale. A file that is not such a document (another encoding, a malformed entry, not JSON) is ignored with a
log line and rebuilt. At most :data:`MAX_COUNTS` counts are kept: past that, only those this run used.
"""

from __future__ import annotations

import hashlib
import re
import threading
from pathlib import Path
from typing import Any

from ..shared.cache_files import folder_cache_file, prune, read_cache, write_cache
from ..shared.logs import get_logger

logger = get_logger(__name__)

FORMAT = "prompt-composer token counts"
SCHEMA = 1
MAX_COUNTS = 20_000  # the brief, full and stub forms of a few thousand tools, and many composed prompts
MAX_FOLDERS = 64
WHAT = "token-count cache"
_KEY = re.compile(r"[0-9a-f]{32}")


def _counts(document: Any, encoding: str) -> dict[str, int] | str:
    if not isinstance(document, dict) or document.get("format") != FORMAT or document.get("schema") != SCHEMA:
        return "not a token-count cache of this version"
    if document.get("encoding") != encoding:
        return f"counts of another encoding ({document.get('encoding')!r})"
    counts = document.get("counts")
    if not isinstance(counts, dict):
        return "no counts"
    for key, count in counts.items():
        if not _KEY.fullmatch(key) or type(count) is not int or count < 0:
            return f"a malformed count for {key[:40]!r}"
    return counts


class CountMemo:
    """The kept token counts of the texts composed from the docs folder ``root`` with ``encoding``: give it to a
    :class:`~prompt_composer.core.tokens.TiktokenCounter` (``memo=``), and :meth:`save` what it learned."""

    def __init__(self, root: Path, encoding: str, *, cache_dir: Path | None = None) -> None:
        self.path = folder_cache_file("tokens", root, cache_dir)
        self.encoding = encoding
        self._lock = threading.Lock()
        self._used: dict[str, int] = {}
        self._learned = False
        document, self._existed = read_cache(self.path, WHAT, logger)
        counts = _counts(document, encoding) if document is not None else {}
        if isinstance(counts, str):
            logger.warning("ignoring the %s %s: %s; it will be rebuilt", WHAT, self.path, counts)
            counts = {}
        self._counts = counts

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def get(self, text: str) -> int | None:
        key = self._key(text)
        with self._lock:
            count = self._counts.get(key)
            if count is not None:
                self._used[key] = count
        return count

    def put(self, text: str, count: int) -> None:
        key = self._key(text)
        with self._lock:
            self._counts[key] = self._used[key] = count
            self._learned = True

    def save(self) -> None:
        """Write the counts, atomically, if this run counted anything new; past :data:`MAX_COUNTS`, only the
        counts this run used are kept. A file that cannot be written is logged and left alone."""
        with self._lock:
            if not self._learned:
                return
            counts = self._counts if len(self._counts) <= MAX_COUNTS else dict(self._used)
            document = {"format": FORMAT, "schema": SCHEMA, "encoding": self.encoding, "counts": counts}
            if not write_cache(self.path, document, WHAT, logger):
                return
            self._learned = False
            if not self._existed:
                self._existed = True
                prune(self.path.parent, keep=self.path, most=MAX_FOLDERS)
