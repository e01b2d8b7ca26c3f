"""The lint's semantic layer on the command line (``audit --security --semantic``): the default multilingual
embedder handed to :class:`~prompt_composer.safety.semantic.SemanticLayer` (the lint cannot import discovery; the
command line sits above both). The embedder, and numpy with it, is imported only when the layer is made: every
other command starts without them."""

from __future__ import annotations

import argparse
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
    from ..safety.semantic import SemanticLayer

    try:
        from ..discovery.embeddings import default_embedder  # numpy and the model package: only when asked for

        return SemanticLayer(default_embedder())
    except EmbeddingUnavailable:
        if choice == "on":
            raise
        return None
    except ImportError as exc:  # numpy itself missing: the extra is not installed
        if choice == "on":
            raise EmbeddingUnavailable(f"{exc}: pip install 'prompt-composer-tooldocs[embeddings]'") from exc
        return None
