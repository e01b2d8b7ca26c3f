"""The lint's semantic layer on the command line (``audit --security --semantic``): the default multilingual
embedder handed to :class:`~prompt_composer.safety.semantic.SemanticLayer` (the lint cannot import discovery; the
command line sits above both). The embedder, and numpy with it, is imported only when the layer is made: every
other command starts without them."""

from __future__ import annotations

import argparse
import threading
from typing import TYPE_CHECKING

from ..errors import EmbeddingUnavailable

if TYPE_CHECKING:
    from ..safety.semantic import SemanticLayer

SEMANTIC_CHOICES = ("auto", "on", "off")


def add_semantic_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--semantic",
        choices=SEMANTIC_CHOICES,
        default="auto",
        help="with --security: also compare each sentence in meaning with known attacks, in 16 languages (needs "
        "the embeddings extra); auto (the default) when the extra is installed, on requires it, off runs the "
        "phrases and lexicons alone (about ten times faster on a large catalog)",
    )


def semantic_layer(choice: str) -> SemanticLayer | None:
    """The semantic layer ``choice`` asks for: none for ``off``; for ``auto``, one when the embedder loads; for
    ``on``, one or the :class:`~prompt_composer.errors.EmbeddingUnavailable` that says why not."""
    if choice == "off":
        return None
    try:
        return _default_layer()
    except EmbeddingUnavailable:
        if choice == "on":
            raise
        return None
    except ImportError as exc:  # numpy itself missing: the extra is not installed
        if choice == "on":
            raise EmbeddingUnavailable(f"{exc}: pip install 'prompt-composer-tooldocs[embeddings]'") from exc
        return None


def _default_layer() -> SemanticLayer:
    """The layer over the process-wide default embedder, kept while that embedder is the default: the sentences it
    has scored, and its exemplars' vectors, serve every later ``audit`` run in the process (``main()`` called again
    by a program or a test session), not only the first. The default is asked for each time (it may fail, or
    change). Its scores grow with the distinct sentences audited, a few numbers each."""
    from ..discovery.embeddings import default_embedder  # numpy and the model package: only when asked for
    from ..safety.semantic import SemanticLayer

    global _kept
    embedder = default_embedder()
    with _kept_lock:
        if _kept is None or _kept[0] is not embedder:
            _kept = (embedder, SemanticLayer(embedder))
        return _kept[1]


_kept: tuple[object, SemanticLayer] | None = None
_kept_lock = threading.Lock()
