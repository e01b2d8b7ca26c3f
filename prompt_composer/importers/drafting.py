"""Drafting tool docs from upstream tools: names, placement, brief and full text, put together.

An import turns upstream tool definitions into tool docs: the full form is the upstream description plus a
parameter reference rendered from the input schema (:mod:`.render`); the brief is *drafted* from the description
(:mod:`.brief`) and marked ``brief_source: drafted`` for human review; the group follows the tool's effect
(:mod:`.placement`). Names the APIs refuse are mapped to valid ones (``--prefix`` renames them all, mentions of
the server's tools in the texts included) and the original is kept in ``origin`` so calls can be routed back.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..core.docs import NAME_PATTERN, Origin, ToolDoc
from ..errors import ImporterError
from .brief import ServerShape, draft_brief
from .deadline import NO_DEADLINE, Deadline
from .placement import Placement, place
from .render import render_full
from .siblings import SiblingIndex, text_words
from .tool_list import UpstreamTool

_NAME_RE = re.compile(NAME_PATTERN)


def api_name(original: str, *, prefix: str = "") -> str:
    """A name the Anthropic and OpenAI APIs accept (``^[a-zA-Z0-9_-]{1,64}$``), as close to ``original`` as may be."""
    name = prefix + original
    if _NAME_RE.match(name):
        return name
    mapped = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_") or "tool"
    if len(mapped) > 64:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        mapped = f"{mapped[:55].rstrip('_-')}_{digest}"
    return mapped


def _distinctive(name: str) -> bool:
    """A name no sentence uses as a plain word (``read_text_file``, ``createEntities``, ``get-env``)."""
    return any(c in name for c in "_-.") or any(c.isupper() or c.isdigit() for c in name[1:])


_WORDISH = re.compile(r"[\w-]")
_WORD_CHAR = re.compile(r"\w")
_QUOTES = frozenset("`'\"")
_END = ""  # the trie key under which a node holds the name that ends there


class _Mentions:
    """Mentions of the server's tools, renamed to the names they are imported as (``--prefix``, mapping).

    A distinctive name is replaced wherever it stands as a whole word (not after a word character or ``-``, not
    before one, nor before ``.`` and a word character); a plain word (``add``, ``fetch``) only where it is quoted
    as code, since "add" in a sentence is seldom the tool. Where several names start at one place, the longest
    that fits wins. The names are held in a trie built once per import and each text is read once, left to right
    (a regex alternation of every name made an import of 5,000 renamed tools quadratic: minutes).
    """

    def __init__(self, renamed: Mapping[str, str]) -> None:
        self.renamed = dict(renamed)
        self._distinctive = {original: _distinctive(original) for original in self.renamed}
        self._trie: dict[str, Any] = {}
        for original in self.renamed:
            node = self._trie
            for char in original:
                node = node.setdefault(char, {})
            node[_END] = original

    def _fits(self, text: str, start: int, end: int, name: str) -> bool:
        """Whether ``name`` stands where a mention of it counts (``start`` is never after a word character)."""
        if self._distinctive[name]:
            dotted = text[end : end + 1] == "." and _WORD_CHAR.match(text, end + 1) is not None
            return not _WORDISH.match(text, end) and not dotted
        return start > 0 and text[start - 1] in _QUOTES and text[end : end + 1] in _QUOTES

    def _longest(self, text: str, start: int) -> str | None:
        """The longest name that starts at ``start`` and fits where it stands."""
        node, found, index = self._trie, None, start
        while True:
            name = node.get(_END)
            if name is not None and self._fits(text, start, index, name):
                found = name
            if index == len(text) or text[index] not in node:
                return found
            node = node[text[index]]
            index += 1

    def __call__(self, text: str) -> str:
        if not self.renamed or not text:
            return text
        out: list[str] = []
        done = index = 0
        while index < len(text):
            if text[index] in self._trie and (index == 0 or not _WORDISH.match(text, index - 1)):
                name = self._longest(text, index)
                if name is not None:
                    out += [text[done:index], self.renamed[name]]
                    index = done = index + len(name)
                    continue
            index += 1
        return "".join([*out, text[done:]])


def _with_renamed_mentions(tool: UpstreamTool, mentions: _Mentions) -> UpstreamTool:
    """``tool`` as the drafts see it: its description and parameter descriptions naming the imported names."""

    def schema(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: mentions(v) if k == "description" and isinstance(v, str) else schema(v) for k, v in node.items()}
        return [schema(v) for v in node] if isinstance(node, list) else node

    if not mentions.renamed:
        return tool
    return replace(tool, description=mentions(tool.description), input_schema=schema(tool.input_schema))


def _doc(
    upstream: UpstreamTool,
    tool: UpstreamTool,
    name: str,
    group: str,
    *,
    server: str,
    siblings: list[str],
    server_tools: Sequence[UpstreamTool] | ServerShape = (),
) -> ToolDoc:
    """The drafted doc of ``upstream`` (``tool`` is it with renamed mentions); a doc that does not validate is
    an :class:`ImporterError` naming the tool, one problem after another."""
    try:
        return ToolDoc(
            name=name,
            group=group,
            brief=draft_brief(tool, server=server, siblings=siblings, server_tools=server_tools),
            full=render_full(tool, name),
            input_schema=upstream.input_schema,
            brief_source="drafted",
            origin=Origin(server=server, name=upstream.name),
        )
    except ValueError as exc:  # pydantic's ValidationError: one line per problem, prefixed with the tool
        detail = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {str(e['msg']).removeprefix('Value error, ')}"
            for e in getattr(exc, "errors", lambda: [])()
        )
        raise ImporterError(f"tool {upstream.name!r} of {server!r}: {detail or exc}") from None


def draft_docs(
    tools: Sequence[UpstreamTool],
    *,
    server: str,
    group: str = "mcp",
    write_group: str | None = None,
    prefix: str = "",
    deadline: Deadline = NO_DEADLINE,
) -> list[tuple[ToolDoc, Placement]]:
    """One drafted tool doc per upstream tool, with where it goes (:func:`place`) and why.

    Read-only tools go to ``group``, writing ones to ``write_group`` (default ``<group>-write``; pass ``group``
    to keep them together). Two originals mapping to one name (or file) are an error. When names change
    (``prefix``, or a name the APIs refuse), mentions of the server's tools in the texts follow.
    """
    by_name: dict[str, str] = {}
    out: list[tuple[ToolDoc, Placement]] = []
    names = {tool.name: api_name(tool.name, prefix=prefix) for tool in tools}
    mentions = _Mentions({original: mapped for original, mapped in names.items() if original != mapped})
    index = SiblingIndex((original, n) for original, mapped in names.items() for n in (original, mapped))
    shape = ServerShape(tools)  # what tells each tool from its siblings, worked out once for the server
    for number, upstream in enumerate(tools):
        deadline.check(f"drafting the docs ({number:,} of {len(tools):,} drafted)")
        name = names[upstream.name]
        clash = by_name.get(name.casefold())
        if clash is not None:
            raise ImporterError(
                f"tools {clash!r} and {upstream.name!r} of {server!r} both map to the name {name!r} "
                "(names must match ^[a-zA-Z0-9_-]{1,64}$ and differ in more than case)"
            )
        by_name[name.casefold()] = upstream.name
        placement = place(upstream, group=group, write_group=write_group)
        tool = _with_renamed_mentions(upstream, mentions)
        siblings = index.among(text_words([tool.description]), owner=upstream.name)
        doc = _doc(upstream, tool, name, placement.group, server=server, siblings=siblings, server_tools=shape)
        out.append((doc, placement))
    return out


def tool_docs_from_upstream(
    tools: Sequence[UpstreamTool],
    *,
    server: str,
    group: str = "mcp",
    prefix: str = "",
    write_group: str | None = None,
) -> list[ToolDoc]:
    """One drafted tool doc per upstream tool (see :func:`draft_docs`, which also says where each went)."""
    return [doc for doc, _ in draft_docs(tools, server=server, group=group, write_group=write_group, prefix=prefix)]
