"""The safety tests' shared fixture: the lint measured on the poisoned corpus and every real catalog tool.

Measuring takes about 12 s of CPU (scanning some 1,200 docs), and three modules check it (test_security.py,
test_lint_precision.py, test_round4.py). It is the same measurement each time, read and never changed by the
tests, so it is made once a session; and the tests that read it share one xdist group, so under
``--dist loadgroup`` one worker makes it, not each worker that happens to get one of them.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CORPORA

MEASURED_GROUP = "safety-measured"
HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def measured() -> Any:
    """``(benchmarks.bench_security, its Measurement)`` of the corpus cases and the clean catalogs (community
    ones included), as each module measured it before it was shared."""
    b = importlib.import_module("benchmarks.bench_security")
    return b, b.measure(b.corpus_cases(), b.clean_catalogs(CORPORA, community=True))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of this folder that reads ``measured`` runs in one xdist group (one worker measures), and is
    ``slow``: the measurement scans some 1,200 docs (``-m "not slow"``, the loop while working, leaves it out)."""
    for item in items:
        if item.path.parent != HERE or "measured" not in getattr(item, "fixturenames", ()):
            continue
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(MEASURED_GROUP))
        item.add_marker(pytest.mark.slow)  # a measurement over the whole corpus: CI runs it, the quick tier not
