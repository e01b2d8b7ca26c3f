"""What a request hands a tool: the values it names, the tools whose parameters take them, and what search matches
once the values are put as the kind of thing they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prompt_composer import Registry
from prompt_composer.core.docs import ToolDoc
from prompt_composer.discovery.affordances import (
    affordance_shares,
    request_values,
    takers,
    tool_slots,
    without_values,
)
from prompt_composer.discovery.search import ToolSearch
from tests.helpers import search_mode as mode


@pytest.fixture(autouse=True)
def user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("PROMPT_COMPOSER_CACHE", str(path))
    return path


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("Stage only src/app.py and src/utils.py for the next commit.", {"path"}),
        ("When was ~/shared/uploads/contract.pdf created?", {"path"}),
        ("Make a new folder reports/2026/q4, parents included.", {"path"}),
        ("Show me the contents of pyproject.toml.", {"path"}),
        ("Fetch https://peps.python.org/pep-0008/ and sum it up.", {"url"}),
        ("What did commit 4f9c2e1 change?", {"hex"}),
        ("Give me the text of Notion page 1f2e3d4c5b6a47988776655443322110.", {"id"}),
        ("Read page 123e4567-e89b-12d3-a456-426614174000", {"id"}),
        ("Pause tools/migrate.py at line 88.", {"path", "line"}),
        ("Someone opened PR #57. What does it change?", {"number"}),
        # a bare "a/b" is a repository or a branch as often as a folder; a project's name is not a file
        ("List the open pull requests of octo-org/widgets on GitHub.", set()),
        ("Create a branch named fix/typo from main.", set()),
        ("Build the login page in Next.js.", set()),
        ("The fix ships in 2.3.1, released 2026-11-28.", set()),
        ("What do you remember about the payments service?", set()),
    ],
)
def test_a_request_names_the_kinds_of_value_it_hands_on(text: str, kinds: set[str]) -> None:
    assert request_values(text) == kinds


def test_values_are_put_as_the_kind_of_thing_they_are() -> None:
    assert without_values("Stage only src/app.py and src/utils.py for the next commit.") == (
        "Stage only py file and py file for the next commit."
    )
    assert without_values("Save it to /root/markdown/Rome.md.") == "Save it to md file."
    assert without_values("What did commit 4f9c2e1 change in PR #57?") == "What did commit change in PR ?"
    # a URL keeps its site, which often says which tool ("youtube", "arxiv")
    assert without_values("Get https://www.youtube.com/watch?v=x1 transcript") == "Get URL youtube transcript"
    assert without_values("nothing to put") == "nothing to put"


def _schema(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}}


def test_a_tool_takes_the_kinds_its_parameter_names_say() -> None:
    assert tool_slots(_schema("repo_path", "files")) == {"path"}
    assert tool_slots(_schema("source", "destination")) == {"path"}
    assert tool_slots(_schema("filePath", "startLine")) == {"path", "line"}
    assert tool_slots(_schema("owner", "repo", "pullNumber")) == {"number"}
    assert tool_slots(_schema("revision")) == {"revision"}
    assert tool_slots(_schema("page_id")) == {"id"}
    assert tool_slots(_schema("url")) == {"url"}
    assert tool_slots(_schema("query", "limit")) == set()
    assert tool_slots(None) == set()
    assert tool_slots({"properties": ["not", "a", "mapping"]}) == set()


def test_each_tool_gets_its_share_of_the_values_it_takes() -> None:
    taking = takers(
        [("show", frozenset({"revision"})), ("page", frozenset({"id"})), ("read", frozenset({"path", "line"}))]
    )
    assert taking["hex"] == ("show", "page")  # a short hash may be a commit or an id: both take it
    assert affordance_shares(frozenset({"hex"}), taking) == {"show": 1.0, "page": 1.0}
    assert affordance_shares(frozenset({"path", "line"}), taking) == {"read": 1.0}
    assert affordance_shares(frozenset({"path", "url"}), taking) == {"read": 0.5}
    assert affordance_shares(frozenset(), taking) == {}


def _doc(name: str, brief: str, *params: str, group: str = "git") -> ToolDoc:
    return ToolDoc(name=name, group=group, brief=brief, full=f"## {name}\n{brief}", input_schema=_schema(*params))


@pytest.fixture(scope="module")
def registry() -> Registry:
    docs = [
        # the words of the request ("stage", "src", "app") are not the words of the tool that does it
        _doc("git_add", "Add file contents to the index.", "repo_path", "files"),
        _doc("app_store_search", "Search the app store for an app by name.", "query"),
        _doc("source_stats", "Count the lines of source code in the src tree of a project.", "language"),
        _doc("secret_files", "Read files of the vault.", "path", group="vault"),
    ]
    return Registry.from_docs(docs, [mode("git", ["git"]), mode("vault", ["git", "vault"])])


def test_a_path_no_longer_matches_tools_by_its_letters_and_lifts_the_tools_that_take_one(registry: Registry) -> None:
    query = "Stage only src/app.py for the next commit"
    lifted = ToolSearch(registry, embedder=False, cache_path=False)
    ranked, _ = lifted.rank(query, registry.mode("git"), "keyword")
    assert ranked[0] == "git_add"
    # the same search reading the path's letters, without the lift: the app and the src tools come first
    plain = ToolSearch(registry, embedder=False, cache_path=False, mask_values=False, affordance_weight=0.0)
    ranked, _ = plain.rank(query, registry.mode("git"), "keyword")
    assert ranked[0] != "git_add"


def test_the_lift_never_reaches_a_tool_outside_the_mode(registry: Registry) -> None:
    search = ToolSearch(registry, embedder=False, cache_path=False, affordance_weight=5.0)
    query = "Read vault/keys/prod.pem for me"
    ranked, result = search.rank(query, registry.mode("git"), "keyword")
    assert "secret_files" not in ranked
    assert all(hit.name != "secret_files" for hit in result.hits)
    assert search.rank(query, registry.mode("vault"), "keyword")[0][0] == "secret_files"  # where it is allowed


def test_long_and_hostile_texts_are_read_alike_and_not_kept() -> None:
    long = "word " * 1_000 + "then open src/app.py"
    assert request_values(long) == {"path"}
    assert without_values(long).endswith("then open py file")
    # texts built to make a backtracking pattern slow read in one pass (a hang here fails the suite's timeout)
    for hostile in ("a." * 50_000, "/" + "a" * 100_000 + "%", "a/" * 50_000, "#1" * 50_000, "0f" * 50_000):
        request_values(hostile)
        without_values(hostile)
