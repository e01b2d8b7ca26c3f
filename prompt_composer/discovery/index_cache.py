"""A mode's keyword index kept between processes: building it (tokenizing every doc of the mode, the BM25F
weights) is most of what a one-shot keyword ``search`` spends after loading the registry (~50 ms of 331 tools);
reading it back is a fifth of that.

The index is a function of the mode's tool docs (the registry's fingerprint hashes them all), which tools the mode
allows, the field weights, and the code that tokenizes, expands and weighs (:func:`~prompt_composer.shared.sources
.source_digest` of those modules); one JSON file per such key in ``<cache dir>/lexical/``, read with the checks of
every cache file (:func:`~prompt_composer.shared.cache_files.read_cache`: this user's own, not writable by others)
and refused whole when its shape is wrong. JSON, never pickle: reading it runs nothing, and floats read back
exact, so a search answers the same from a kept index as from a built one. At most :data:`MAX_FILES` are kept.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from ..core.registry import Registry
from ..shared.cache_dir import default_cache_dir
from ..shared.cache_files import prune, read_cache, write_cache
from ..shared.sources import source_digest
from .lexical import LexicalIndex

logger = logging.getLogger(__name__)

FORMAT = "prompt-composer keyword index"
SCHEMA = 1
MAX_FILES = 64
WHAT = "keyword index cache"
# What builds an index: the search assembles each doc's fields, expand adds the name's words, tokenize splits
# them, lexical weighs them.
CODE = tuple(f"prompt_composer.discovery.{name}" for name in ("search", "expand", "tokenize", "lexical"))


def index_key(registry: Registry, allowed: Collection[str], weights: Mapping[str, tuple[float, float]]) -> str | None:
    """What an index of ``allowed`` built with ``weights`` depends on, as a digest; None when the code's source
    cannot be read, or the registry has no :attr:`~prompt_composer.core.registry.Registry.cache_token` (then nothing
    is kept). The token, which only the user's own parsed-docs cache gives, is what no planted file can name: every
    other part of the key is known to anyone who has the checkout."""
    code = source_digest(CODE)
    if code is None or registry.cache_token is None:
        return None
    what = json.dumps([registry.cache_token, registry.fingerprint, sorted(allowed), sorted(weights.items()), code])
    return hashlib.sha256(what.encode()).hexdigest()


def kept_index(
    registry: Registry,
    allowed: Collection[str],
    weights: Mapping[str, tuple[float, float]],
    build: Callable[[], LexicalIndex],
    *,
    cache_dir: Path | None = None,
) -> LexicalIndex:
    """The index of the tools ``allowed`` (built by ``build``) from the user cache when it was kept for the same
    key (:func:`index_key`), else built and kept. A cache that cannot be read or written costs only the build."""
    key = index_key(registry, allowed, weights)
    try:
        path = (cache_dir or default_cache_dir()) / "lexical" / f"{key}.json" if key is not None else None
    except RuntimeError:  # no home folder to find a cache in
        path = None
    if path is None or key is None:
        return build()
    document, existed = read_cache(path, WHAT, logger)
    if document is not None:
        if isinstance(document, dict) and document.get("format") == FORMAT and document.get("schema") == SCHEMA:
            if document.get("key") == key:
                try:
                    return LexicalIndex.from_data(document.get("index"))
                except (ValueError, TypeError, OverflowError) as exc:
                    logger.warning("ignoring the %s %s: a malformed index (%s); it will be rebuilt", WHAT, path, exc)
        else:
            logger.info("ignoring the %s %s: another format or version; it will be rebuilt", WHAT, path)
    index = build()
    kept = {"format": FORMAT, "schema": SCHEMA, "key": key, "index": index.to_data()}
    if write_cache(path, kept, WHAT, logger) and not existed:
        prune(path.parent, keep=path, most=MAX_FILES)
    return index
