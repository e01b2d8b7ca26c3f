"""Translating a JavaScript regular expression (Roo Code's ``fileRegex``) into the syntax of the ``regex`` module.

Roo compiles ``fileRegex`` with ``new RegExp(p)`` (no flags); the mode's file restriction
(:class:`prompt_composer.core.modes.FileRestriction`) matches with the ``regex`` module, which reads most of the
syntax the same way. What differs is rewritten here, so a pattern matches the paths it matched in Roo Code.
"""

from __future__ import annotations

import re

# Letter escapes JavaScript gives a meaning without the u flag (Roo compiles fileRegex with `new RegExp(p)`).
# Any other escaped letter is that letter ("identity escape"); the `regex` module would refuse or misread it.
_JS_LETTER_ESCAPES = frozenset("bBdDfnrsStvwW")
_HEX = frozenset("0123456789abcdefABCDEF")
_LITERAL_BRACE = re.compile(r"\{,\d*\}")  # `{,n}`: a quantifier in Python, literal text in JavaScript


def js_file_regex(pattern: str) -> tuple[str, bool]:
    """A Roo Code ``fileRegex`` (JavaScript RegExp syntax) in the syntax of the ``regex`` module, which
    :class:`prompt_composer.core.modes.FileRestriction` matches with, and whether it uses ``\\p{…}``/``\\P{…}``.

    ``(?<name>…)``, variable-length lookbehind and ``\\p{L}`` are ``regex`` syntax already; ``\\k<name>``
    becomes ``(?P=name)``, ``[^]`` and ``[]`` become ``[\\s\\S]`` and ``(?!)``, ``\\cX`` a ``\\xNN`` escape, and
    identity escapes (``\\e``, ``\\x`` without hex digits…) and ``{,n}`` the literal text JavaScript reads.
    ``\\p{…}`` is kept as a Unicode property: that is what its author meant, though Roo, compiling without the
    u flag, reads ``\\p{L}`` as the text ``p{L}``. Python-style patterns valid in both come out unchanged.
    """
    named_groups = re.search(r"\(\?<(?![=!])", pattern) is not None
    out: list[str] = []
    uses_property = False
    in_class = False
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\" and i + 1 < n:
            text, i, is_property = _escape(pattern, i, named_groups=named_groups, in_class=in_class)
            out.append(text)
            uses_property |= is_property
        elif in_class:
            in_class = char != "]"
            out.append(char)
            i += 1
        elif pattern.startswith("[^]", i):
            out.append(r"[\s\S]")
            i += 3
        elif pattern.startswith("[]", i):
            out.append("(?!)")
            i += 2
        elif char == "[":
            in_class = True
            out.append(char)
            i += 1
        elif char == "{" and _LITERAL_BRACE.match(pattern, i):
            out.append("\\{")
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out), uses_property


def _escape(pattern: str, i: int, *, named_groups: bool, in_class: bool) -> tuple[str, int, bool]:
    """The escape at ``pattern[i]`` (a backslash with a character after it) translated, the index after it, and
    whether it is a Unicode property (``\\p{…}``, ``\\P{…}``)."""
    nxt = pattern[i + 1]
    rest = pattern[i + 2 :]
    if nxt in "pP" and rest.startswith("{") and "}" in rest:
        end = i + 2 + rest.index("}")
        return pattern[i : end + 1], end + 1, True
    if nxt == "k" and named_groups and not in_class and rest.startswith("<") and ">" in rest:
        end = i + 2 + rest.index(">")
        return f"(?P={pattern[i + 3 : end]})", end + 1, False
    if nxt == "c" and rest[:1].isascii() and rest[:1].isalpha():
        return f"\\x{ord(rest[0]) % 32:02x}", i + 3, False
    if nxt == "c":
        return "\\\\c", i + 2, False  # JavaScript: a backslash, then c
    if nxt == "x" and len(rest) >= 2 and set(rest[:2]) <= _HEX:
        return pattern[i : i + 4], i + 4, False
    if nxt == "u" and len(rest) >= 4 and set(rest[:4]) <= _HEX:
        return pattern[i : i + 6], i + 6, False
    if nxt.isascii() and nxt.isalpha() and nxt not in _JS_LETTER_ESCAPES:
        return nxt, i + 2, False
    return pattern[i : i + 2], i + 2, False
