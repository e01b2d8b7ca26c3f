"""The YAML parser behind :mod:`.yamlfile`: libyaml's C parser where PyYAML has it (else PyYAML's pure-Python one),
composed by one bounded composer, every key's line recorded, every problem a ``(message, line)``. Imported at the
first text parsed (``import yaml`` is a tenth of what a warm command's start costs; a command whose docs all come
from the cache parses none)."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.reader import Reader
from yaml.resolver import Resolver

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml: the pure-Python parser does it all
    CParser = None  # type: ignore[assignment,misc]

from ..errors import Problem
from .yamltypes import MAX_COMPOSE_DEPTH, MAX_YAML_DEPTH, MAX_YAML_VALUES, LineMap, Scalar, ScalarMap

_STR_TAG = "tag:yaml.org,2002:str"


_INT_TAG = "tag:yaml.org,2002:int"
_BINARY_TAG = "tag:yaml.org,2002:binary"
_MAX_INT_CHARS = 300  # far past any number a doc holds; a longer one could exceed what str() and JSON can write
_SURROGATE = re.compile("[\ud800-\udfff]")
# What only the Python parser reads (see _loader): a character YAML does not allow (PyYAML's reader's own
# pattern), a tab, or a "!" where a token can start. Three searches: one pattern of all three alternatives tries
# the lookbehind at every character, ten times slower on a doc.
_BANG = r"(?:^|(?<=[\s\[{,]))!"  # compiled at the first parse


def _python_only(text: str) -> bool:
    """Whether ``text`` is one the Python parser reads (see :func:`_loader`)."""
    return (
        "\t" in text
        or Reader.NON_PRINTABLE.search(text) is not None
        or ("!" in text and re.search(_BANG, text) is not None)
    )


def _surrogate(node: yaml.ScalarNode, problems: list[tuple[str, int]]) -> bool:
    """Report a scalar holding a lone surrogate (an escape such as ``"\\ud800"``): no character, so no text that
    holds it can be written as UTF-8 (the registry's fingerprint, a prompt, a log line)."""
    found = _SURROGATE.search(str(node.value))
    if found is None:
        return False
    message = f"invalid YAML: U+{ord(found.group()):04X} is a lone surrogate, not a character (an escape writes it)"
    problems.append((message, node.start_mark.line + 1))
    return True


def _walk(
    node: yaml.Node,
    path: tuple[str | int, ...],
    lines: LineMap,
    problems: list[tuple[str, int]],
    ancestors: frozenset[int] = frozenset(),
    visited: set[int] | None = None,
    scalars: ScalarMap | None = None,
) -> None:
    """Record the line of every key path (and in ``scalars``, when given, every scalar value); collect duplicate
    keys, non-string keys, lone surrogates, nesting too deep and recursive aliases.

    Each node is walked once (an alias points at a node already walked), so "billion laughs" files stay cheap.
    """
    visited = set() if visited is None else visited
    if len(path) > MAX_YAML_DEPTH:
        problems.append((f"nested more than {MAX_YAML_DEPTH} levels deep", node.start_mark.line + 1))
        return
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.ScalarNode):
        _surrogate(node, problems)
        digits = len(str(node.value))
        if node.tag == _INT_TAG and digits > _MAX_INT_CHARS:  # 0xfff… makes an int no one can print
            problems.append((f"invalid YAML: an integer of {digits:,} characters", node.start_mark.line + 1))
        elif node.tag == _BINARY_TAG:  # bytes: no text, and not UTF-8 text at that (nothing could write them)
            problems.append(("invalid YAML: a !!binary value; a doc holds text", node.start_mark.line + 1))
        if scalars is not None:
            style = node.style or None  # libyaml says "" where PyYAML says None (a plain scalar)
            scalars.setdefault(path, Scalar(node.start_mark.line + 1, style, str(node.value)))
    if id(node) in ancestors:
        problems.append((f"recursive YAML alias at {'.'.join(map(str, path)) or 'the top'}", node.start_mark.line + 1))
        return
    if id(node) in visited:
        return
    visited.add(id(node))
    inner = ancestors | {id(node)}
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):  # its repr could be as large as the file, or larger
                kind = "mapping" if isinstance(key_node, yaml.MappingNode) else "sequence"
                problems.append((f"a {kind} as a key: keys must be strings", line))
                continue
            key = str(key_node.value)
            if key_node.tag != _STR_TAG:
                problems.append((f"key {key[:80]!r} must be a string (quote it)", line))
                continue
            if _surrogate(key_node, problems):
                continue
            if key in seen:
                problems.append((f"duplicate key {'.'.join(map(str, (*path, key)))!r}", line))
            seen.add(key)
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, problems, inner, visited, scalars)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, problems, inner, visited, scalars)


class _BoundError(yaml.composer.ComposerError):
    """A document past a bound of this module (too many values, nested too deeply): the same under both parsers."""


class _Bounded(yaml.composer.Composer):
    """PyYAML's composer, stopping (an error at the value's line) once it has composed too many values or gone
    too deep. Mixed in before a parser, it composes the events of either parser into the same nodes."""

    _values = 0
    _depth = 0
    anchored = False  # whether the document defines an anchor (without one, it has no alias to expand)

    if TYPE_CHECKING:  # what the parser and constructor mixed in with it give

        def peek_event(self) -> Any: ...
        def construct_document(self, node: yaml.Node) -> Any: ...
        def dispose(self) -> None: ...

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._values += 1
        if self._values > MAX_YAML_VALUES:
            mark = self.peek_event().start_mark
            raise _BoundError(
                None, None, f"more than {MAX_YAML_VALUES:,} values: far more than a tool doc or mode holds", mark
            )
        if self._depth >= MAX_COMPOSE_DEPTH:
            mark = self.peek_event().start_mark
            raise _BoundError(None, None, f"nested too deeply (more than {MAX_COMPOSE_DEPTH} levels)", mark)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self.anchored = self.anchored or bool(self.anchors)
        return node


class _BoundedLoader(_Bounded, yaml.SafeLoader):
    """The pure-Python safe loader, bounded."""


if CParser is not None:

    class _CBoundedLoader(_Bounded, CParser, SafeConstructor, Resolver):
        """libyaml's events, composed by the bounded composer, built by the safe constructor."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            yaml.composer.Composer.__init__(self)


def _loader(text: str, parser: str) -> _Bounded:
    """The bounded loader of ``parser`` for ``text``.

    A few kinds of text always go to the Python parser, where the two parsers part ways: one holding a character
    YAML does not allow (libyaml checks characters as it goes; PyYAML's reader checks the whole text first and
    names the character) or a lone surrogate (libyaml reads UTF-8 only); one holding a tab (libyaml takes a tab
    where PyYAML refuses one, as after ``key:``); and one that may hold a tag (a ``!`` where a token can start:
    the parsers end a tag at different characters, and read the non-specific ``!`` differently). No shipped or
    imported doc holds a tab or a tag, so real docs take the fast path; the rest keep today's reading."""
    if parser == "libyaml" and CParser is not None and not _python_only(text):
        try:
            return _CBoundedLoader(text)
        except UnicodeEncodeError:
            pass
    return _BoundedLoader(text)


# The fast path (see _fast): libyaml composes the nodes in C, and one pass in Python builds the data and the line
# map together. libyaml's composer recurses in C without a bound (a text nested 50,000 deep overflows the stack),
# so it is only given a text whose depth is bounded before it is parsed: every collection starts at a character
# of its own among "[", "{", ":", "?" and a "-" before a blank, so a text with few of them cannot nest deeply.
_FAST_MAX_CHARS = 64 * 1024  # the largest shipped or imported doc is ~15 KB; past this the bounded composer reads it
# Real docs have ~330 at most. 1,000 levels took libyaml's composer under 512 KB of stack (and crashed a thread of
# 256 KB), so it runs on the main thread only, whose stack is the process's (8 MB, usually); a thread, whose stack
# may be as small as 128 KB (musl), reads with the bounded composer.
_FAST_MAX_OPENERS = 1_000
_OPENERS = r"[\[{:?]|-(?=\s|\Z)"  # compiled at the first text that needs it
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"


class _Fallback(Exception):
    """The fast path met what it leaves to the bounded composer (a problem to report, a tag it does not build)."""


if CParser is not None:

    class _CLoader(CParser, SafeConstructor, Resolver):
        """libyaml's parser and composer, with the safe constructor for the scalars that are not strings."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            # libyaml's composer asks this of every scalar (25,000 in a 331-tool folder): a plain scalar's tag is a
            # function of its text alone (the resolvers are the class's, fixed, and this loader has no path
            # resolvers), so the answers of the short, repeated ones (keys, "string", "true") are kept.
            if kind is yaml.ScalarNode and implicit[0] and len(value) <= _TAG_MEMO_CHARS:
                tag = _TAGS.get(value)
                if tag is None:
                    tag = _RESOLVE(self, kind, value, implicit)
                    if len(_TAGS) < _TAG_MEMO_SIZE:
                        _TAGS[value] = tag
                return tag
            return _RESOLVE(self, kind, value, implicit)


_RESOLVE: Any = Resolver.resolve  # PyYAML's, untyped
_TAGS: dict[str, str] = {}  # a plain scalar's text -> its implicit tag (see _CLoader.resolve)
_TAG_MEMO_CHARS = 64
_TAG_MEMO_SIZE = 8192


def _fast(text: str) -> tuple[Any, LineMap] | None:
    """The data and line map of a clean document, as :func:`parse` makes them, faster; None when the text is not
    one the fast path takes (too long, too many openers) or holds anything :func:`parse` would report or build
    differently: that text is parsed again by :func:`parse`'s own path, which says what is wrong.

    A collection met twice (an alias of it, which could expand without bound, or hold itself) goes to that path
    too; without one there is at most one value a character of the text, so the value bound cannot be reached."""
    if len(text) > _FAST_MAX_CHARS or threading.current_thread() is not threading.main_thread():
        return None
    rough = sum(text.count(char) for char in "[{:?-")  # a bound on the openers, ten times cheaper to count
    if rough > _FAST_MAX_OPENERS and len(re.findall(_OPENERS, text)) > _FAST_MAX_OPENERS:
        return None
    loader = _CLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        lines: LineMap = {}
        data = _build(root, (), lines, loader, set())
    except (_Fallback, yaml.YAMLError, *_CONSTRUCT_ERRORS):
        return None
    finally:
        loader.dispose()
    return data, lines


def _build(node: yaml.Node, path: tuple[str | int, ...], lines: LineMap, loader: Any, seen: set[int]) -> Any:
    """The value of ``node`` as the safe constructor builds it, each key path's line recorded as :func:`_walk`
    records it; :class:`_Fallback` at anything :func:`_walk` would report or the constructor builds otherwise, and
    at a collection already in ``seen`` (the ids of those built)."""
    if len(path) > MAX_YAML_DEPTH:
        raise _Fallback
    lines.setdefault(path, node.start_mark.line + 1)
    tag = node.tag
    if isinstance(node, yaml.ScalarNode):
        value = node.value
        if node.style == '"' and _SURROGATE.search(value):  # only an escape makes one (libyaml reads UTF-8)
            raise _Fallback
        if tag == _STR_TAG:
            return value
        if tag == _INT_TAG and len(value) > _MAX_INT_CHARS:
            raise _Fallback
        if tag not in _SCALAR_TAGS:  # merge and value keys, and anything else, built as the slow path builds them
            raise _Fallback
        return loader.construct_object(node)
    if id(node) in seen:
        raise _Fallback
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        if tag != _MAP_TAG:
            raise _Fallback
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _STR_TAG:
                raise _Fallback
            key = key_node.value
            if key in mapping or (key_node.style == '"' and _SURROGATE.search(key)):
                raise _Fallback
            key_path = (*path, key)
            lines[key_path] = key_node.start_mark.line + 1
            mapping[key] = _build(value_node, key_path, lines, loader, seen)
        return mapping
    if tag != _SEQ_TAG:
        raise _Fallback
    return [_build(item, (*path, index), lines, loader, seen) for index, item in enumerate(node.value)]


# The implicit scalar tags the safe constructor builds from a plain scalar (the merge "<<" and value "=" keys
# excepted: the constructor folds those into their mapping).
_SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp"))


def _expansion_problem(root: yaml.Node) -> tuple[str, int] | None:
    """A problem when the document, its aliases expanded, holds more than MAX_YAML_VALUES values: at the line of the
    first value (in document order) whose expansion passes the limit. Each node is sized once (sizes are shared
    through the aliases), so this costs as little as the document itself."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children) if id(child) not in sizes)
            continue
        size = 1 + sum(sizes[id(child)] for child in children)
        if size > MAX_YAML_VALUES:
            return (
                f'invalid YAML: its aliases expand to more than {MAX_YAML_VALUES:,} values (a "billion laughs" file)',
                node.start_mark.line + 1,
            )
        sizes[id(node)] = size
    return None


_CONSTRUCT_ERRORS = (ValueError, TypeError, KeyError, AttributeError, OverflowError, IndexError)


def _bad_scalar(loader: yaml.SafeLoader, node: yaml.Node, seen: set[int] | None = None) -> tuple[yaml.Node, str] | None:
    """The first scalar whose explicit tag cannot build its value (``!!int x``, ``!!timestamp 2020-13-45``)."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return None
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        try:
            loader.construct_object(node, deep=True)
        except (*_CONSTRUCT_ERRORS, yaml.YAMLError) as exc:
            return node, str(exc) or type(exc).__name__
        return None
    children: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            children += [key, value]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    for child in children:
        found = _bad_scalar(loader, child, seen)
        if found is not None:
            return found
    return None


def _marked_problem(path: Path, exc: yaml.MarkedYAMLError) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark else 1
    message = f"invalid YAML: {exc.problem or exc}"
    if exc.context and exc.context_mark and exc.problem_mark and exc.context_mark.line != exc.problem_mark.line:
        message += f" ({exc.context} at line {exc.context_mark.line + 1})"
    return Problem(path, line, message)


def parse(text: str, path: Path, parser: str) -> tuple[Any, LineMap, list[Problem]]:
    """:func:`~.yamlfile.parse_yaml` with ``parser`` ("libyaml" where PyYAML has it, else "python")."""
    if parser == "libyaml" and CParser is not None and not _python_only(text):
        try:
            done = _fast(text)
        except UnicodeEncodeError:  # a lone surrogate in the text: the Python parser reads (and reports) it
            done = None
        if done is not None:
            return done[0], done[1], []
    try:
        loader = _loader(text, parser)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, most C0 controls, DEL …)
        line = text.count("\n", 0, exc.position) + 1
        char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        return None, {}, [Problem(path, line, f"invalid YAML: the character {char} is not allowed in YAML")]
    fast = not isinstance(loader, _BoundedLoader)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}, [Problem(path, 1, "file is empty")]
        lines: LineMap = {}
        found: list[tuple[str, int]] = []
        _walk(node, (), lines, found)
        if not found and loader.anchored:  # (a recursive alias has no finite expansion: it is reported as such)
            found += filter(None, [_expansion_problem(node)])
        if found:  # constructing a recursive, too large or non-string-keyed document would fail or mislead
            return None, lines, [Problem(path, line, message) for message, line in found]
        try:
            data = loader.construct_document(node)
        except _CONSTRUCT_ERRORS:
            bad = _bad_scalar(yaml.SafeLoader(""), node)
            where, why = (bad[0].start_mark.line + 1, bad[1]) if bad else (1, "a value cannot be built")
            tag = bad[0].tag.rsplit(":", 1)[-1] if bad else "value"
            return None, lines, [Problem(path, where, f"invalid YAML: not a valid !!{tag}: {why}")]
    except _BoundError as exc:
        return None, {}, [_marked_problem(path, exc)]
    except yaml.YAMLError as exc:
        if fast:
            return parse(text, path, "python")
        if isinstance(exc, yaml.MarkedYAMLError):
            return None, {}, [_marked_problem(path, exc)]
        return None, {}, [Problem(path, 1, f"invalid YAML: {exc}")]
    except RecursionError:
        return None, {}, [Problem(path, 1, "invalid YAML: nested too deeply")]
    finally:
        loader.dispose()
    return data, lines, []


def layout(text: str, parser: str) -> tuple[LineMap, ScalarMap]:
    """:func:`~.yamlfile.yaml_layout` with ``parser``."""
    lines: LineMap = {}
    scalars: ScalarMap = {}
    for each in dict.fromkeys((parser, "python")):  # libyaml first; a text it refuses, as parse_yaml does
        try:
            loader = _loader(text, each)
            try:
                node = loader.get_single_node()
            finally:
                loader.dispose()
        except (yaml.YAMLError, RecursionError):
            continue
        if node is not None:
            _walk(node, (), lines, [], scalars=scalars)
        return lines, scalars
    return {}, {}
