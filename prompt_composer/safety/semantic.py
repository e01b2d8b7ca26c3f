"""The lint's semantic layer: each sentence of a doc compared in meaning with sentences that ask the model to act
against the user (``exemplars.yaml``), by a multilingual sentence encoder, so an attack worded unlike any phrase,
or written in a language the lexicons do not know, can still be found.

The encoder is injected (:class:`SentenceEncoder`, which :class:`~prompt_composer.discovery.embeddings.Embedder`
satisfies): the lint sits below discovery and does not import it; the command line hands the default embedder in
when the ``embeddings`` extra is installed. Without it the lint runs its phrases and lexicons alone (see
docs/security.md for what each layer catches).

A sentence is a finding when its nearest attack exemplar is at least :data:`THRESHOLD` similar (cosine) and closer
than the nearest honest exemplar by :data:`MARGIN`: honest sentences about the same subjects (a tool that reads
the SSH config, sends email, asks the user to confirm) keep a doc about secrets or messages from looking like an
attack on its subject alone. Both numbers were chosen on a tuning set (docs/benchmarks.md). The finding is reported
under the exemplar's rule, at quarantine severity, with the exemplar and the similarity in its note.

Sentences are cut from the normalised text (hidden characters dropped, as written otherwise); each distinct sentence
is encoded once per layer (:meth:`SemanticLayer.prime` encodes a whole registry in one batch). numpy comes with the
encoder: it is imported only when a layer is made.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..errors import LoadError
from ..shared.yamlfile import load_model
from .matching import TextMatch, excerpt_of
from .rules import QUARANTINE_SEVERITY, RULES
from .text import normalise_both

EXEMPLARS_FILE = Path(__file__).with_name("exemplars.yaml")

THRESHOLD = 0.72  # cosine similarity to the nearest attack exemplar …
MARGIN = 0.10  # … and how much nearer it must be than the nearest honest exemplar

_MIN_WORDS = 4  # a shorter sentence (a title, a value) says too little to be judged by its meaning alone
_MIN_CHARS = 8  # … in a script written without spaces
_MAX_CHARS = 400  # a longer "sentence" (a list run together) is cut: its meaning is spread too thin past this
_BATCH = 64  # sentences encoded at once
_SPACELESS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u0e00-\u0e7f]")
# Where a sentence ends: . ! ? (and their full-width forms) before a space or the end, a line break.
_STOP = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f\u0964])|\n+")


class SentenceEncoder(Protocol):
    """Turns sentences into unit vectors, one row each (a multilingual encoder puts a sentence and its translation
    close together)."""

    @property
    def name(self) -> str:
        """Identifies the model and its version."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Any:
        """An ``(n, d)`` float matrix of unit rows, one per text, in order."""
        ...


class _ExemplarsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    attacks: dict[str, list[str]]
    honest: list[str] = Field(min_length=1)


@dataclass(frozen=True)
class Exemplars:
    """The attack sentences with their rules, and the honest ones."""

    attacks: tuple[tuple[str, str], ...]  # (rule, sentence)
    honest: tuple[str, ...]


def load_exemplars(path: Path = EXEMPLARS_FILE) -> Exemplars:
    """The exemplars of ``path``; a rule that the lint does not know, or an empty file, is a
    :class:`~prompt_composer.errors.LoadError` naming the file and line."""
    spec, lines, problems = load_model(path, _ExemplarsFile)
    if spec is None:
        raise LoadError(problems)
    from ..errors import Problem
    from ..shared.yamlfile import line_of

    unknown = [rule for rule in spec.attacks if rule not in RULES]
    if unknown:
        raise LoadError(
            [Problem(path, line_of(lines, ("attacks", unknown[0])), f"attacks: unknown rule {unknown[0]!r}")]
        )
    attacks = tuple((rule, text) for rule, texts in spec.attacks.items() for text in texts)
    if not attacks:
        raise LoadError([Problem(path, line_of(lines, ("attacks",)), "attacks: no exemplar")])
    return Exemplars(attacks, tuple(spec.honest))


def sentences(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, sentence)`` of each sentence of ``text`` worth judging by its meaning, located in ``text``;
    the sentence as read (normalised as the lexicons read it, look-alikes left as written: in Russian they are
    Russian letters; whitespace collapsed, cut at :data:`_MAX_CHARS`)."""
    _, normal, where = normalise_both(text)
    out: list[tuple[int, int, str]] = []
    begin = 0
    for stop in [*_STOP.finditer(normal), None]:
        end = stop.start() if stop is not None else len(normal)
        piece = normal[begin:end]
        lead = len(piece) - len(piece.lstrip())
        said = " ".join(piece.split())[:_MAX_CHARS]
        spaceless = _SPACELESS.search(said) is not None
        if (len(said.split()) >= _MIN_WORDS or (spaceless and len(said) >= _MIN_CHARS)) and where:
            lo = where[min(begin + lead, len(where) - 1)]
            hi = where[min(max(end - 1, begin), len(where) - 1)] + 1
            out.append((lo, hi, said))
        begin = stop.end() if stop is not None else len(normal)
    return out


class SemanticLayer:
    """The semantic layer over one encoder: :meth:`prime` encodes sentences ahead (a registry at once), and
    :meth:`matches` gives a text's findings."""

    def __init__(
        self,
        encoder: SentenceEncoder,
        *,
        threshold: float = THRESHOLD,
        margin: float = MARGIN,
        exemplars: Exemplars | None = None,
    ) -> None:
        import numpy as np  # comes with the encoder (the embeddings extra); the lint without this layer needs none

        self._np = np
        self.encoder = encoder
        self.threshold = threshold
        self.margin = margin
        self.exemplars = exemplars if exemplars is not None else load_exemplars()
        self._attacks = np.asarray(encoder.embed_documents([t for _, t in self.exemplars.attacks]), dtype=np.float32)
        self._honest = np.asarray(encoder.embed_documents(list(self.exemplars.honest)), dtype=np.float32)
        self._scores: dict[str, tuple[float, int, float]] = {}  # sentence -> (attack score, exemplar, honest score)

    @property
    def name(self) -> str:
        return self.encoder.name

    def prime(self, texts: Iterable[str]) -> None:
        """Encode, in one batch, every sentence of ``texts`` not scored yet."""
        self._encode({said for text in texts for _, _, said in sentences(text)})

    def _encode(self, wanted: set[str]) -> None:
        fresh = sorted(wanted - self._scores.keys(), key=len)
        np = self._np
        # Batches of sentences of about one length: an encoder pads a batch to its longest text, so one batch of
        # everything costs about twice as much.
        for begin in range(0, len(fresh), _BATCH):
            batch = fresh[begin : begin + _BATCH]
            vectors = np.asarray(self.encoder.embed_documents(batch), dtype=np.float32)
            attack = vectors @ self._attacks.T
            honest = vectors @ self._honest.T
            best = attack.argmax(axis=1)
            for row, said in enumerate(batch):
                self._scores[said] = (float(attack[row, best[row]]), int(best[row]), float(honest[row].max()))

    def score(self, sentence: str) -> tuple[float, str, float]:
        """``(similarity to the nearest attack, that exemplar, similarity to the nearest honest sentence)`` of one
        sentence, read as :func:`sentences` reads it."""
        found = sentences(sentence)
        said = found[0][2] if found else " ".join(sentence.split())
        self._encode({said})
        attack, index, honest = self._scores[said]
        return attack, self.exemplars.attacks[index][1], honest

    def matches(self, text: str) -> list[TextMatch]:
        """The findings of ``text``: each sentence near an attack (see the module's docstring)."""
        found = sentences(text)
        self.prime(said for _, _, said in found)
        out: list[TextMatch] = []
        for start, end, said in found:
            attack, index, honest = self._scores[said]
            if attack >= self.threshold and attack - honest >= self.margin:
                rule, exemplar = self.exemplars.attacks[index]
                note = f"close in meaning ({attack:.2f}) to an attack: {exemplar!r}"
                out.append(TextMatch(rule, start, end, excerpt_of(text, start, end), QUARANTINE_SEVERITY, note))
        return out
