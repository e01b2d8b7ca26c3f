"""Per-mode search (issue 32): a mode's ranking depends on its own tools only. Tools outside the mode (another
team's servers, here 500+ real tools of the MetaTool and LiveMCPBench corpora) neither appear in its results nor
shift its scores: the lexical index, its idf and its length norms are built over the mode's tools."""

from __future__ import annotations

import pytest

from benchmarks.search_corpora import livemcp_docs, metatool_docs, missing_files
from prompt_composer import Registry, default_docs_dir, load_registry
from prompt_composer.core.modes import PreselectConfig
from prompt_composer.discovery.preselect import preselect
from prompt_composer.discovery.search import ToolSearch

QUERIES = (
    "find where parse_config is called",
    "run the unit tests and tell me what fails",
    "read the settings file",
    "replace the old function name in utils.py",
    "search the web for the latest release notes",
    "set a breakpoint on line 40 and start the debugger",
    "what is the weather in Paris",
    "list the files in src",
)

pytestmark = pytest.mark.skipif(bool(missing_files()), reason="../shared/corpora is not beside the checkout")


def with_unrelated(base: Registry) -> Registry:
    extra = [d for d in [*metatool_docs(), *livemcp_docs()] if d.name not in base.tools]
    assert len(extra) >= 500
    modes = [base.mode(slug).config for slug in base.modes]
    assert not {d.group for d in extra} & {g for m in modes for g in m.groups}  # outside every shipped mode
    return Registry.from_docs([*base.tools.values(), *extra], modes, root=base.root, groups=base.groups.values())


def test_a_modes_ranking_ignores_tools_outside_it() -> None:
    base = load_registry(default_docs_dir())
    big = with_unrelated(base)
    assert len(big.tools) >= len(base.tools) + 500
    small_search, big_search = ToolSearch(base, embedder=False), ToolSearch(big, embedder=False)
    for slug in ("code", "debug"):
        small_mode, big_mode = base.mode(slug), big.mode(slug)
        assert small_mode.allowed == big_mode.allowed
        for query in QUERIES:
            small_rank, small_result = small_search.rank(query, small_mode, "keyword")
            big_rank, big_result = big_search.rank(query, big_mode, "keyword")
            assert small_rank == big_rank, (slug, query)
            assert small_result == big_result, (slug, query)
            config = PreselectConfig()
            assert preselect(small_search, small_mode, query, config) == preselect(big_search, big_mode, query, config)


def test_the_unrelated_tools_would_shift_a_registry_wide_index() -> None:
    # The control: built over the whole registry (as before), the same query scores the mode's tools differently,
    # so the test above would catch a regression to one shared index.
    from prompt_composer.discovery.lexical import LexicalIndex, doc_fields

    base = load_registry(default_docs_dir())
    big = with_unrelated(base)
    code = base.mode("code")
    whole_small = LexicalIndex((n, doc_fields(d)) for n, d in base.tools.items())
    whole_big = LexicalIndex((n, doc_fields(d)) for n, d in big.tools.items())
    query = "read the settings file"
    assert whole_small.rank(query, code.allows) != whole_big.rank(query, code.allows)
