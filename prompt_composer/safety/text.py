"""Characters that hide text from a person reading a doc: invisible and look-alike characters, found, shown
escaped, and normalised away so that smuggling cannot hide an instruction from the phrase rules.

Normalising reads text as NFKC, drops invisible characters, reads Unicode tag characters as the ASCII they encode
and Cyrillic/Greek look-alikes as Latin, and remembers where each character came from.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

_ZERO_WIDTH = frozenset(
    {0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFEFF, 0xFFA0}
    | {*range(0x180B, 0x1810), *range(0x200B, 0x200E), *range(0x2060, 0x2065)}
)
_BIDI = frozenset([0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
_EMOJI_VS = frozenset([0xFE0E, 0xFE0F])  # text/emoji presentation selectors: legitimate after emoji


def invisible_kind(ch: str) -> str | None:
    """What kind of hidden character ``ch`` is, or ``None`` for an ordinary one (``\\t``, ``\\n``, ``\\r`` are)."""
    cp = ord(ch)
    if cp < 0x80:
        return "control character" if (cp < 0x20 and ch not in "\t\n\r") or cp == 0x7F else None
    if 0xE0000 <= cp <= 0xE007F:
        return "tag character"
    if cp in _BIDI:
        return "bidirectional control"
    if cp in _ZERO_WIDTH:
        return "zero-width or blank character"
    if (0xFE00 <= cp <= 0xFE0F and cp not in _EMOJI_VS) or 0xE0100 <= cp <= 0xE01EF:
        return "variation selector"
    category = unicodedata.category(ch)
    if category == "Cc":
        return "control character"
    if category == "Cf":  # other format characters (interlinear annotation, shorthand controls …)
        return "format character"
    if category in ("Co", "Cn"):
        return "private-use or unassigned character"
    return None


def escape_invisible(text: str) -> str:
    """``text`` with every hidden character written as ``\\uXXXX`` (newlines and tabs as ``\\n``, ``\\t``)."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif invisible_kind(ch) is not None or (unicodedata.category(ch) in ("Zs", "Zl", "Zp") and ch != " "):
            cp = ord(ch)
            out.append(f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}")
        else:
            out.append(ch)
    return "".join(out)


def _tag_text(run: str) -> str:
    """The ASCII a run of Unicode tag characters spells (what "ASCII smuggling" hides)."""
    return "".join(chr(ord(c) - 0xE0000) for c in run if 0xE0020 <= ord(c) <= 0xE007E)


def _selector_text(run: str) -> str:
    """The text a run of variation selectors spells when each one stands for a byte (VS1–16 for 0–15, VS17–256
    for 16–255, as "emoji smuggling" encodes it); empty unless that is printable ASCII."""
    data = bytearray()
    for c in run:
        cp = ord(c)
        if 0xFE00 <= cp <= 0xFE0F:
            data.append(cp - 0xFE00)
        elif 0xE0100 <= cp <= 0xE01EF:
            data.append(cp - 0xE0100 + 16)
    text = data.decode("ascii", errors="replace")
    return text if len(text) >= 3 and text.isprintable() else ""


def _is_emoji(ch: str) -> bool:
    return bool(ch) and (unicodedata.category(ch) == "So" or 0x1F000 <= ord(ch) <= 0x1FAFF)


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def plain_ascii(text: str) -> bool:
    """Whether ``text`` is ASCII without control characters (tab and line breaks aside): nothing in it is hidden or
    a look-alike, and normalising leaves it as it is (the fast path of most tool text)."""
    return text.isascii() and _ASCII_CONTROL.search(text) is None


def hidden_runs(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, note)`` of each run of hidden characters in ``text``; the note says what they are, and what
    tag characters or variation selectors among them spell."""
    if plain_ascii(text):
        return
    index = 0
    while index < len(text):
        kind = invisible_kind(text[index])
        if kind is None:
            index += 1
            continue
        end = index + 1
        kinds = {kind}
        while end < len(text) and (more := invisible_kind(text[end])) is not None:
            kinds.add(more)
            end += 1
        if text[index:end] == "\u200d" and _is_emoji(text[index - 1 : index]) and _is_emoji(text[end : end + 1]):
            index = end  # a zero-width joiner inside an emoji sequence (👩‍💻) is how such emoji are written
            continue
        hidden, selected = _tag_text(text[index:end]), _selector_text(text[index:end])
        note = ", ".join(sorted(kinds))
        note += f"; the tag characters spell {hidden[:120]!r}" if hidden else ""
        note += f"; the variation selectors spell {selected[:120]!r}" if selected else ""
        yield index, end, note
        index = end


# Cyrillic and Greek letters that look like Latin ones: read as Latin for matching, flagged inside Latin words.
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁԛԝӏАВЕКМНОРСТХІЈЅοαικνρτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdqwlABEKMHOPCTXIJSoaiknptuxABEZHIKMNOPTYX",
)
_LATIN_LETTER = re.compile(r"[A-Za-z]")
_WORD = re.compile(r"\w+")


def _is_confusable(ch: str) -> bool:
    return ch != ch.translate(_CONFUSABLES)


def mixed_script_words(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, note)`` of each word mixing Latin letters with Cyrillic or Greek look-alikes; the note shows
    the word with the look-alikes escaped."""
    if text.isascii():
        return
    for word in _WORD.finditer(text):
        token = word.group()
        if _LATIN_LETTER.search(token) and any(_is_confusable(c) for c in token):
            shown = "".join(f"\\u{ord(c):04x}" if _is_confusable(c) else c for c in token)
            yield word.start(), word.end(), f"look-alike letters: {shown}"


def normalise(text: str) -> tuple[str, list[int]]:
    """The text phrase rules read, and for each of its characters the index of the original character."""
    folded, _, where = normalise_both(text)
    return folded, where


def normalise_both(text: str) -> tuple[str, str, list[int]]:
    """The normalised text twice, and the map back to ``text``: with Cyrillic and Greek look-alikes read as Latin
    (what the English phrase rules read, so that smuggling cannot hide an instruction), and without (what the
    lexicons of other languages read: in a Russian sentence those letters are Russian). Both have the same length,
    so one map serves both."""
    if plain_ascii(text):
        return text, text, list(range(len(text)))
    folded: list[str] = []
    native: list[str] = []
    where: list[int] = []
    for index, ch in enumerate(text):
        cp = ord(ch)
        if 0xE0020 <= cp <= 0xE007E:
            folded.append(chr(cp - 0xE0000))
            native.append(folded[-1])
            where.append(index)
            continue
        if invisible_kind(ch) is not None:
            continue
        if cp < 0x80:
            folded.append(ch)
            native.append(ch)
            where.append(index)
            continue
        for c in unicodedata.normalize("NFKC", ch):
            folded.append(c.translate(_CONFUSABLES))
            native.append(c)
            where.append(index)
    return "".join(folded), "".join(native), where
