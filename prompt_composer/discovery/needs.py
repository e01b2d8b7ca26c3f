"""Decomposing a multi-step request into its needs (:func:`decompose`), so that search can look for each step."""

from __future__ import annotations

import re

from .tokenize import tokenize

# Real tasks name several steps ("find the paper, read it, then save a summary to notes.md"); one search over the
# whole text finds the step its words dominate. Splitting is lexical: sentences, then connectives ("then",
# "finally", "also", ";"), then a comma or "and" in front of an action verb. No model, so it costs microseconds
# and behaves the same in every process.
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|:\s+|\n+")
_CONNECTIVES = re.compile(
    r"\s*,?\s*\b(?:and then|then|after that|afterwards|finally|also|und dann|dann|danach|anschließend|"
    r"luego|después|despues|puis|ensuite|potem|następnie|затем|потом|e poi|poi|depois)\b\s*,?\s*"
    r"|\s*(?:然后|接着|之后|并且|再把)\s*"
    r"|(?:^|,\s*|\band\s+)next\b\s*,?\s*",  # "next" starts a step at a clause's start only ("the next commit")
    re.IGNORECASE,
)
# Verbs that start a step of a request to an agent with tools; ", VERB" or "and VERB" starts a new need.
_ACTION_VERBS = (  # noqa: SIM905 (a word list reads better as text)
    "add analyse analyze book build calculate change check click collect compare compile compute convert copy count "
    "create delete deploy describe download draft draw edit email estimate evaluate explain export extract fetch "
    "fill find fix generate get give identify import include insert install introduce list load locate look make map "
    "merge move navigate notify open organise organize pick plan plot post print publish pull push read recommend "
    "remind remove rename render replace report research retrieve review run save scan schedule search send set show "
    "sort split store suggest summarise summarize take tell test track translate update upload verify view visualise "
    "visualize write"
).split()
_VERB_SPLIT = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s+and\s+)(?=(?:" + "|".join(_ACTION_VERBS) + r")\b)", re.IGNORECASE)
MAX_NEEDS = 8  # each need costs a lexical pass and, with embeddings, one query embedding


def decompose(query: str) -> list[str]:
    """The needs of a request, in order: its sentences and clauses, split at connectives ("then", "finally",
    "also", ";") and at a comma or "and" before an action verb. Fragments with no searchable word ("Also",
    a base64 blob) are dropped, duplicates too; at most :data:`MAX_NEEDS`. A one-step request gives itself."""
    needs: list[str] = []
    for sentence in _SENTENCES.split(query):
        for clause in _CONNECTIVES.split(sentence):
            for part in _VERB_SPLIT.split(clause):
                text = part.strip(" \t,.;:!?-。！？；，、")
                if text and tokenize(text) and text not in needs:
                    needs.append(text)
    if len(needs) <= 1:
        return [query.strip()] if query.strip() else []
    return needs[:MAX_NEEDS]
