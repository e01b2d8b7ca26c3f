"""Hostile variants of real tool docs, modes and group docs: what the fuzz benchmark and the loader's property tests
feed the registry loader.

:func:`mutate` applies one mutation, chosen by a :class:`random.Random` (seeded by the benchmark, driven by
Hypothesis in the tests), to the bytes of a YAML file: bytes inserted, deleted or flipped; control characters and
invalid UTF-8; a value replaced by a random YAML tag with a bad value, by another type, by deep nesting or by a
huge scalar; aliases (billion laughs, recursive, undefined, merge keys, aliases as keys); duplicate and non-string
keys; document markers and directives; tabs; truncation. ``heavy`` allows the sizes that take seconds to load
(megabyte scalars, 100,000-value lists); without it the sizes stay small enough for a unit test, except the one
past the loader's size limit (refused before it is parsed).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "tool_docs"

# key: value lines (top level, nested, or in a block list) whose value a mutation may replace
_VALUE_LINE = re.compile(rb"^(?P<head>[ \t]*(?:- )?[\w-]+:)[ \t]+(?P<value>\S.*)$", re.MULTILINE)

BAD_TAGGED = (
    "!!int x",
    "!!int 0x",
    "!!int 0b2",
    "!!float nope",
    "!!float .nanx",
    "!!bool maybe",
    "!!null x",
    "!!timestamp 2020-13-45",
    "!!timestamp 99999999-01-01",
    "!!timestamp 2001-12-14t21:59:43.10-99:00",
    "!!binary @@@",
    "!!binary aGVsbG8",
    "!!binary /w==",
    "!!int 0x" + "f" * 400,
    "0x" + "f" * 5000,
    "!!map [1, 2]",
    "!!seq {a: 1}",
    "!!str [1, 2]",
    "!!set [1]",
    "!!omap [1, 2]",
    "!!omap [{a: 1, b: 2}]",
    "!!pairs x",
    "!!merge x",
    "!!value x",
    "!!yaml x",
    "!python/object:os.system ls",
    "!!python/name:os.system x",
    "!!python/object/apply:os.system [ls]",
    "!custom x",
    "!<tag:yaml.org,2002:int> x",
    "!<!> x",
    "!e!x y",
)
OTHER_VALUES = (
    "[]",
    "{}",
    "~",
    "null",
    "123",
    "-1",
    "1e309",
    ".inf",
    "-.inf",
    ".nan",
    "0o777",
    "0x1F",
    "yes",
    "no",
    "on",
    "2020-01-01",
    "12:30:45",
    "'quoted'",
    '"escaped \\x41 \\u263A \\U0001F600"',
    '"bad escape \\q"',
    '"\\ud800"',
    "[a, [b, [c]]]",
    "{a: 1, b: [2, 3]}",
    "|\n  block",
    ">-\n  folded",
    "? complex\n: key",
    "*",
    "&",
    "!",
    "@reserved",
    "`reserved",
    "%",
    "- item",
    "[unclosed",
    "{unclosed: 1",
    '"unclosed',
    "'unclosed",
)
CONTROL = ("\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\x9f", "\r", "\t",
           "\u2028", "\u2029", "\ufeff", "\u200b", "\u202e", "\ue000", "\ufffe", "\uffff", "\U000e0041")  # fmt: skip
BAD_UTF8 = (b"\xff", b"\xfe", b"\xc0\x80", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80")
DIRECTIVES = ("%YAML 1.1\n---\n", "%YAML 2.0\n---\n", "%YAML 1.1\n%YAML 1.1\n---\n", "%TAG !e! tag:ex.com,2000:\n---\n",
              "%FOO bar\n---\n", "%TAG ! !\n---\n", "--- !!str\n", "--- |\n")  # fmt: skip
MARKERS = (b"---\n", b"...\n", b"--- \n---\n", b"... # end\n", b"---\n- a\n")


def _lines(data: bytes) -> list[re.Match[bytes]]:
    return list(_VALUE_LINE.finditer(data))


def _replace_value(data: bytes, rng: random.Random, value: bytes) -> bytes:
    """``data`` with the value of a random ``key: value`` line replaced by ``value`` (else ``value`` appended as
    a new key)."""
    lines = _lines(data)
    if not lines:
        return data + b"\nx: " + value + b"\n"
    line = rng.choice(lines)
    return data[: line.start("value")] + value + data[line.end("value") :]


def insert_bytes(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))) + data[at:]


def delete_range(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + data[at + rng.randint(1, 64) :]


def flip_bits(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def truncate(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def control_char(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice(CONTROL).encode("utf-8", "surrogatepass") + data[at:]


def bad_utf8(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice(BAD_UTF8) + data[at:]


def bad_tag(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    return _replace_value(data, rng, rng.choice(BAD_TAGGED).encode())


def other_type(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    return _replace_value(data, rng, rng.choice(OTHER_VALUES).encode())


def deep_nesting(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    depth = rng.choice((50, 99, 101, 150, 400, 1_000, 20_000) if heavy else (50, 99, 101, 150, 400, 1_000))
    kind = rng.randrange(4)
    if kind == 0:
        value = "[" * depth + "x" + "]" * depth
    elif kind == 1:
        value = "{a: " * depth + "x" + "}" * depth
    elif kind == 2:
        value = "[" * depth  # never closed
    else:  # block nesting, one level per line
        depth = min(depth, 400)
        value = "\n" + "".join(f"{'  ' * (i + 1)}- \n" for i in range(depth)) + "  " * (depth + 1) + "- x"
    return _replace_value(data, rng, value.encode())


def huge_scalar(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    sizes = (100_000, 1_000_000, 3_900_000, 4_300_000, 5_000_000) if heavy else (10_000, 100_000, 4_300_000)
    size = rng.choice(sizes)
    style = rng.randrange(3)
    chunk = "".join(rng.choice("abc xyz.é") for _ in range(64))
    body = (chunk * (size // len(chunk) + 1))[:size]
    if style == 0:
        value = f'"{body}"'
    elif style == 1:
        value = "|\n" + "\n".join(f"  {body[i : i + 100]}" for i in range(0, len(body), 100))
    else:
        value = body.replace(" ", "_")  # one plain scalar
    return _replace_value(data, rng, value.encode())


def many_values(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    count = rng.choice((1_000, 10_000, 120_000) if heavy else (1_000, 10_000))
    return _replace_value(data, rng, ("[" + "1," * count + "1]").encode())


def billion_laughs(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    levels = rng.randint(3, 10)
    lines = ['x-l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        lines.append(f"x-l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9)}]")
    block = ("\n".join(lines) + "\n").encode()
    if rng.random() < 0.5:
        return block + data  # top-level keys
    return _replace_value(data, rng, ("\n" + "\n".join("  " + line for line in lines)).encode())


def alias_tricks(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return _replace_value(data, rng, b"&r [*r]")  # recursive
    if kind == 1:
        return _replace_value(data, rng, b"*missing")  # undefined
    if kind == 2:  # an anchor on one value, aliased by another
        lines = _lines(data)
        if len(lines) < 2:
            return data
        first, second = sorted(rng.sample(lines, 2), key=lambda m: m.start())
        head = data[: first.start("value")] + b"&a " + data[first.start("value") : second.start("value")]
        return head + b"*a" + data[second.end("value") :]
    if kind == 3:
        return b"base: &m {name: x, group: y}\n<<: *m\n" + data  # merge key
    if kind == 4:
        return b"<<: [1, 2]\n" + data  # a merge of things that are no mappings
    return b"k: &k key\n*k : value\n" + data  # an alias as a key


def duplicate_key(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    line = rng.choice(lines)
    return data + b"\n" + data[line.start() : line.end()].lstrip() + b"\n"


def non_string_key(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    key = rng.choice((b"1: x\n", b"? [a, b]\n: c\n", b"null: x\n", b"true: y\n", b"2020-01-01: z\n", b"{a: 1}: b\n"))
    return key + data if rng.random() < 0.5 else data + b"\n" + key


def markers(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    at = rng.choice([0, len(data), *(m.start() for m in _lines(data))])
    return data[:at] + rng.choice(MARKERS) + data[at:]


def directive(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    return rng.choice(DIRECTIVES).encode() + data


def tabs(data: bytes, rng: random.Random, heavy: bool) -> bytes:
    lines = [m for m in _lines(data) if data[m.start() : m.start() + 1] in (b" ", b"-")]
    if not lines:
        return data.replace(b": ", b":\t", 1)
    line = rng.choice(lines)
    indent = len(data[line.start() :]) - len(data[line.start() :].lstrip(b" "))
    return data[: line.start()] + b"\t" * max(1, indent // 2) + data[line.start() + indent :]


Mutation = Callable[[bytes, random.Random, bool], bytes]
MUTATIONS: dict[str, Mutation] = {
    "insert bytes": insert_bytes,
    "delete bytes": delete_range,
    "flip bits": flip_bits,
    "truncate": truncate,
    "control character": control_char,
    "invalid UTF-8": bad_utf8,
    "bad tag value": bad_tag,
    "other type": other_type,
    "deep nesting": deep_nesting,
    "huge scalar": huge_scalar,
    "many values": many_values,
    "billion laughs": billion_laughs,
    "alias trick": alias_tricks,
    "duplicate key": duplicate_key,
    "non-string key": non_string_key,
    "document marker": markers,
    "directive": directive,
    "tabs": tabs,
}


def mutate(data: bytes, rng: random.Random, *, heavy: bool = False, count: int = 1) -> tuple[list[str], bytes]:
    """``data`` after ``count`` mutations chosen by ``rng``, and their names."""
    names = []
    for _ in range(count):
        name = rng.choice(sorted(MUTATIONS))
        names.append(name)
        data = MUTATIONS[name](data, rng, heavy)
    return names, data


def shipped_files() -> list[Path]:
    """Every YAML file of the shipped docs: tool docs, modes and group docs."""
    return sorted([*SHIPPED.glob("*.yaml"), *(SHIPPED / "modes").glob("*.yaml"), *(SHIPPED / "groups").glob("*.yaml")])
