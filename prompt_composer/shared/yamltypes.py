"""What reading YAML with line numbers deals in, apart from the parser: where each value is (a key path's line,
a scalar's place), and the bounds every YAML file is read within. :mod:`.yamlfile` is the API; :mod:`.yamlparse` the
parser, which a process that reads no YAML text never imports."""

from __future__ import annotations

from dataclasses import dataclass

LineMap = dict[tuple[str | int, ...], int]


@dataclass(frozen=True)
class Scalar:
    """A scalar value where a YAML text writes it: the line it starts on, its style (``|`` or ``>`` for a block,
    a quote, or ``None`` when plain) and its value (a ``|`` block's value has one line per line of the file)."""

    line: int
    style: str | None
    value: str


ScalarMap = dict[tuple[str | int, ...], Scalar]

# A tool doc or mode is a few kilobytes; this bounds what a mistaken or hostile file can make a loader hold.
MAX_YAML_BYTES = 4 * 1024 * 1024
# A tool doc has a few hundred values (the largest imported schemas a few thousand). Composing is what costs
# (PyYAML keeps an object and two marks per value: 4 MB of "[1,1,1,…" took 70 s and 1.7 GB), so composing stops
# past this many values; and a document whose aliases, expanded, make more values than this (a "billion laughs"
# file: a few lines that every consumer of the data would expand to 10^9 values) is refused.
MAX_YAML_VALUES = 100_000
# Real docs nest at most about a dozen levels; deeper nesting exhausts the recursion of whatever walks the data.
MAX_YAML_DEPTH = 100


# Composing stops at this depth (a problem at the line of the value that goes deeper): far past MAX_YAML_DEPTH,
# whose nodes are still reported one by one, and far short of the interpreter's recursion limit, so the outcome
# depends on neither the stack nor the parser.
MAX_COMPOSE_DEPTH = 2 * MAX_YAML_DEPTH
