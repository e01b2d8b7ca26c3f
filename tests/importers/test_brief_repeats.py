"""Drafted briefs that say something: never the description's own clause again ("Star a GitHub repository. Use it
when you need to star a GitHub repository."), and a when-sentence only where it tells a tool from its siblings."""

from __future__ import annotations

import pytest

from benchmarks.brief_quality import corpus_servers, draft_all, repeats
from prompt_composer.importers.brief import draft_brief
from prompt_composer.importers.tool_list import UpstreamTool
from tests.helpers import CORPORA


def tool(name: str, description: str, required: tuple[str, ...] = (), **properties: str) -> UpstreamTool:
    props = {p: {"type": "string"} for p in (*required, *properties)}
    return UpstreamTool(name, description, {"type": "object", "properties": props, "required": list(required)})


ISSUES = [
    tool("get_issue", "Get details of a specific issue in a GitHub repository.", ("owner", "repo", "issue_number")),
    tool("list_issues", "List issues in a GitHub repository.", ("owner", "repo")),
    tool("search_issues", "Search issues across repositories.", ("query",)),
    tool("star_repository", "Star a GitHub repository.", ("owner", "repo")),
]


def brief(name: str) -> str:
    return draft_brief(next(t for t in ISSUES if t.name == name), server="github", server_tools=ISSUES)


def test_a_when_sentence_tells_a_tool_from_its_siblings_or_there_is_none() -> None:
    # get_issue needs an identifier its sibling list_issues does without (owner and repo every tool needs).
    assert brief("get_issue") == (
        "Get details of a specific issue in a GitHub repository. Use it when you have the issue number."
    )
    assert brief("search_issues") == "Search issues across repositories. Use it when you have the query."
    assert brief("list_issues") == "List issues in a GitHub repository."  # nothing to add: it stops there
    assert brief("star_repository") == "Star a GitHub repository."  # no sibling acts on the same thing
    # An upstream's own when-sentence that only says the first one again is dropped too.
    echo = tool("list_files", "Lists the files of a folder. Use this tool to list the files of a folder.")
    assert draft_brief(echo) == "Lists the files of a folder."
    kept = tool("read_file", "Reads a file. Use this tool when you need to examine a single file's contents.")
    assert draft_brief(kept).endswith("Use this tool when you need to examine a single file's contents.")


def test_the_check_reads_repetition_not_wording() -> None:
    assert repeats("Star a GitHub repository. Use it when you need to star a GitHub repository.")
    assert repeats("Shows the commit logs. Use it when you need the commit logs.")
    assert repeats("Switches branches. Use it when you need to switch branches.")
    assert not repeats("Get an issue. Use it when you have the issue number.")
    assert not repeats("Reads a file. Great for finding files when you don't know their exact location.")


@pytest.mark.skipif(not (CORPORA / "livemcpbench").is_dir(), reason="needs ../shared/corpora")
@pytest.mark.slow  # a measurement over a whole corpus (every server drafted)
def test_no_drafted_brief_of_any_corpus_server_repeats_itself() -> None:
    figures = draft_all(list(corpus_servers(CORPORA)))
    assert figures.servers >= 80 and figures.briefs >= 1000
    assert figures.repeating == (), figures.repeating[:5]
