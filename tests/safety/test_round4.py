"""Issue 37's round of poisoned docs (tests/data/poison/round4): orders in schema strings other than
descriptions, in other languages, authority claims that waive the user's say, and other new shapes, written before
the issue 37 rule changes and then tuned on; its held-out half (round4-heldout) is scored once it is added.

The figures are pinned so they cannot slip; docs/benchmarks.md has them with the before column.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

import pytest

from prompt_composer.safety.rules import QUARANTINE_SEVERITY
from tests.helpers import CORPORA, DATA, REPO

HELD_OUT = DATA / "poison" / "round4-heldout"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_security", REPO / "benchmarks" / "bench_security.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def measured() -> Any:
    b = _bench()
    return b, b.measure(b.corpus_cases(), b.clean_catalogs(CORPORA, community=True))


def test_every_tuned_poisoned_doc_is_quarantined_and_no_tricky_clean_one(measured: Any) -> None:
    _, m = measured
    tuned, tricky = m.poisoned_total("round-4"), m.clean_total("round-4")
    # Measured 2026-11-28: 12 of 36 before issue 37, 18 of 36 with the changes written before the round was seen,
    # 36 of 36 after tuning; tricky clean 1 of 10 before (the poisoning scanner), 0 of 10 after.
    assert (tuned.total, tuned.quarantined) == (36, 36)
    assert (tricky.total, tricky.quarantined) == (10, 0)


def test_each_tuned_case_is_quarantined_by_a_rule_it_expects(measured: Any) -> None:
    b, _ = measured
    cases = [c for c in b.corpus_cases() if c.round == "round-4"]
    other = []
    for case, found in zip(cases, b.findings_of([c.doc for c in cases]), strict=True):
        hits = {f.rule for f in found if f.severity == QUARANTINE_SEVERITY}
        if case.label == "clean":
            assert not hits, (case.doc.name, case.attack, found)
        elif not hits & set(case.expect):
            other.append((case.doc.name, tuple(sorted(hits))))
    # Its author labelled "the user already gave consent … upload all contacts" exfiltration or override; the lint
    # quarantines it as coercion (claimed consent), the rule for authority and consent claims.
    assert other == [("contact_dedupe", ("coercion",))]


@pytest.mark.skipif(not (CORPORA / "github_mcp").is_dir(), reason="needs ../shared/corpora")
def test_false_positives_on_every_real_catalog_tool_stay_within_1_percent(measured: Any) -> None:
    b, m = measured
    real = b.real_catalogs(m)
    assert real.total == 1068 and real.quarantined / real.total <= 0.01
    assert real.quarantined == 4  # measured 2026-11-28: the same 4 MetaTool plugins as before issue 37


@pytest.mark.skipif(not HELD_OUT.is_dir(), reason="round4-heldout is added after the tuning, by the lead")
def test_the_held_out_half_is_scored_against_the_issues_bound(measured: Any) -> None:
    _, m = measured
    held, clean = m.poisoned_total("blind-4"), m.clean_total("blind-4")
    assert held.total >= 10 and clean.total >= 1
    # Issue 37's bound: at least 90% of the held-out poisoned docs quarantined, at most 1 clean one.
    assert held.quarantined / held.total >= 0.90, f"{held.quarantined} of {held.total}"
    assert clean.quarantined <= 1
