"""Patterns the model passes to the workspace tools: regexes checked before they are compiled, and globs matched
against paths as a walk goes.

Regexes run on the ``regex`` package, whose matching takes a timeout (the search enforces it); what it cannot
bound is compiling, so patterns whose compiling alone would be slow (huge or nested counted repeats) are refused
here, as are overlong ones. Nor can it bound the memory of a pattern that calls a group (recursion: ``(?R)``,
``(?0)``, ``(?1)``, ``(?+1)``, ``(?-1)``, ``(?&name)``, ``(?P>name)``, ``(?P&name)``): a call that consumes
nothing recurses without end, and the match's stack grows by hundreds of megabytes a second, faster than the
timeout stops it, until the process runs out of memory. Group calls are refused before compiling.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import PurePosixPath
from typing import Any

import regex

from ..errors import ExecutorError

_MAX_REGEX = 2000  # characters
_MAX_EXPANSION = 100_000  # items the regex package may unroll counted repeats into (see _expansion)

# -- regexes -------------------------------------------------------------------------------------------

_COUNTED = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def _expansion(source: str) -> int:
    """About how many items the ``regex`` package makes of ``source`` when compiling it. It unrolls counted
    repeats (``x{1000}`` is a thousand items), so nested ones multiply: ``(a{1000}){1000}`` takes seconds to
    compile, and compiling has no timeout. Flags change how sets (nested in V1) and ``#`` (a comment under
    ``x``) read, and a group closed too early would hide a repeat's size: so the pattern is read all four ways
    and the largest size is taken."""
    return max(
        _size(source, nested=nested, comments=comments) for nested in (False, True) for comments in (False, True)
    )


def _size(source: str, *, nested: bool, comments: bool) -> int:
    """Each item counts 1, a repeat multiplies what it repeats (a group: the group's size) by its largest count;
    an escape or a set is one item. Stops counting past _MAX_EXPANSION."""
    sizes = [0]  # size of each open group, innermost last
    last = 0  # size of the item a repeat would apply to
    i = 0
    while i < len(source) and sum(sizes) <= _MAX_EXPANSION:
        char = source[i]
        counted = _COUNTED.match(source, i) if char == "{" else None
        if counted and (counted[1] or counted[2]):
            times = max(int(counted[1] or 0), int(counted[2] or 0))
            sizes[-1] += last * (times - 1)  # the item itself was counted once already
            last *= times
            i = counted.end()
        elif char == "(":
            sizes.append(0)
            last, i = 0, i + 1
        elif char == ")" and len(sizes) > 1:
            last = max(sizes.pop(), 1)
            sizes[-1] += last
            i += 1
        elif char == "#" and comments:
            end = source.find("\n", i)
            i = len(source) if end < 0 else end + 1
        else:
            i = i + 2 if char == "\\" else _set_end(source, i, nested) if char == "[" else i + 1
            last = 1
            sizes[-1] += 1
    return sum(sizes)


def _set_end(source: str, i: int, nested: bool) -> int:
    """The index just past the set that opens at ``source[i]`` (a ``]`` right after ``[`` or ``[^`` is a
    literal); ``nested``: a ``[`` inside opens an inner set, as in the regex package's V1."""
    depth = 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            i += 2
        elif char == "[" and (nested or depth == 0):
            depth += 1
            i += 1
            i += source.startswith("^", i)
            i += source.startswith("]", i)
        else:
            i += 1
            if char == "]":
                depth -= 1
                if depth == 0:
                    break
    return i


def _group_call(source: str, *, nested: bool, comments: bool) -> tuple[int, str] | None:
    """Where ``source`` calls a group, and the call's opening (``(?R``, ``(?1``, ``(?&``, ``(?P>`` …), read with
    or without nested sets and ``#`` comments (see :func:`_expansion`); ``None`` when it calls none. Escapes, sets
    and comments are skipped, as the regex package's parser skips them."""
    i = 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            i += 2
        elif char == "[":
            i = _set_end(source, i, nested)
        elif char == "#" and comments:
            end = source.find("\n", i)
            i = len(source) if end < 0 else end + 1
        elif source.startswith("(?#", i):  # a comment group: up to the first unescaped ")"
            i += 3
            while i < len(source) and source[i] != ")":
                i += 2 if source[i] == "\\" else 1
            i += 1
        elif char == "(":
            call = _CALL.match(source, i)
            if call is not None:
                return i, call.group()
            i += 1
        else:
            i += 1
    return None


# What opens a group call in the regex package: (?R) (?0) (?1) (?+1) (?-1) (?&name); (?P>name) and (?P&name),
# where a verbose pattern may put spaces and comments between the P and the > (this pattern allows them always).
_CALL = re.compile(r"\(\?(?:R|\d|[+-]\d|&|P(?:\s|#[^\n]*(?:\n|$))*[>&])")


def compile_regex(source: str) -> Any:
    """``source`` compiled by the regex package (Perl/``re`` syntax), or an ExecutorError saying why not."""
    if len(source) > _MAX_REGEX:
        raise ExecutorError(f"the regex is too long ({len(source):,} characters; at most {_MAX_REGEX:,})")
    for nested in (False, True):
        for comments in (False, True):
            found = _group_call(source, nested=nested, comments=comments)
            if found is not None:
                raise ExecutorError(
                    f"the regex {source[:100]!r} calls a group ({found[1]!r} at position {found[0]}): recursive "
                    "patterns ((?R), (?0), (?1), (?&name), (?P>name) …) are refused, since their memory cannot be "
                    "bounded; write the pattern without them"
                )
    if _expansion(source) > _MAX_EXPANSION:
        raise ExecutorError(
            f"the regex {source[:100]!r} repeats too much: its counted repeats (such as {{1000}}, nested) would "
            f"unroll into more than {_MAX_EXPANSION:,} items; use + or * instead of large counts"
        )
    try:
        return regex.compile(source)
    except regex.error as exc:
        raise ExecutorError(f"invalid regex {source!r}: {exc}") from None
    except (RecursionError, OverflowError, ValueError) as exc:  # e.g. groups nested too deep for the parser
        raise ExecutorError(f"invalid regex {source[:100]!r}: {type(exc).__name__}") from None


# -- globs ---------------------------------------------------------------------------------------------


class Glob:
    """A glob matched against paths below the starting directory, as pathlib does: ``*``, ``?`` and ``[...]``
    within one name, ``**`` for any number of directories (a final ``**`` matches directories only). Matching
    runs the segments as a small NFA over the path's names, so a walk can also tell whether a directory can
    lead to a match at all and skip it if not."""

    def __init__(self, pattern: str) -> None:
        parts = PurePosixPath(pattern).parts
        if not parts:
            raise ExecutorError(f"pattern {pattern!r} names no files; give a glob such as *.py or **/*.py")
        # fnmatch.translate's regexes do not backtrack badly (CPython 3.9+) and names are at most 255 bytes.
        self.segments = [None if part == "**" else re.compile(fnmatch.translate(part)) for part in parts]

    def _close(self, states: set[int]) -> set[int]:
        """Add the states reached by ``**`` matching no directory."""
        for i in range(len(self.segments)):
            if i in states and self.segments[i] is None:
                states.add(i + 1)
        return states

    def states(self, parts: tuple[str, ...]) -> set[int]:
        """Segments reached after matching ``parts`` (``len(segments)``: all of them)."""
        states = self._close({0})
        for name in parts:
            following: set[int] = set()
            for i in states:
                if i == len(self.segments):
                    continue
                segment = self.segments[i]
                if segment is None:  # ** takes this directory and stays
                    following.add(i)
                elif segment.match(name):
                    following.add(i + 1)
            states = self._close(following)
        return states

    def matches(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        if self.segments[-1] is None and not is_dir:
            return False
        return len(self.segments) in self.states(parts)

    def leads_on(self, parts: tuple[str, ...]) -> bool:
        """Whether something below the directory ``parts`` could match."""
        return any(i < len(self.segments) for i in self.states(parts))
