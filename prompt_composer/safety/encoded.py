"""Encoded payloads: runs of base64 (standard and URL-safe, also wrapped over lines), hex (plain, ``\\xNN``
escapes, bytes separated by spaces or colons), %-URL-encoding, and ``\\uNNNN`` or ``&#NN;`` character escapes in a
text, decoded when what they hold is readable text, so that the phrase rules can read an order hidden that way.

Only readable text counts: a run decodes to UTF-8 made of printable characters (and whitespace), with letters in
it. A hash, a UUID, an image header or any other binary data decodes to bytes that are not, so legitimate encoded
content is never a finding by itself. Decoding is bounded: runs shorter than ``MIN_*`` are left alone, at most
``MAX_RUNS`` runs of a text and ``MAX_RUN_CHARS`` characters of each are decoded, at most ``MAX_DECODED_CHARS``
characters in all for one text the lint reads (a :class:`Budget`), and the lint decodes what a decoded text holds
at most ``MAX_DEPTH`` levels deep (base64 of hex of an order is found; a third layer is not decoded).
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass

MIN_BASE64 = 20  # characters of a base64 run (15 bytes): shorter ones are words, ids and padding
MIN_HEX_BYTES = 10  # bytes of a hex run
MIN_PERCENT = 3  # %XX escapes in one run of URL-encoding
MAX_RUN_CHARS = 16_384  # characters of one run decoded (a longer run is decoded up to this)
MAX_RUNS = 32  # runs decoded per text
MAX_DEPTH = 2  # how many layers of encoding the lint decodes
MAX_DECODED_CHARS = 65_536  # characters decoded in all, over every layer, for one text the lint reads

_B64_STD = re.compile(rf"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{{{MIN_BASE64},}}={{0,2}}(?![A-Za-z0-9+/=_-])")
_B64_URL = re.compile(rf"(?<![A-Za-z0-9_=-])[A-Za-z0-9_-]{{{MIN_BASE64},}}={{0,2}}(?![A-Za-z0-9_=-])")
_HEX = re.compile(rf"(?<![0-9A-Za-z])(?:0x)?((?:[0-9A-Fa-f]{{2}}){{{MIN_HEX_BYTES},}})(?![0-9A-Za-z])")
_HEX_ESCAPED = re.compile(rf"(?:\\x[0-9A-Fa-f]{{2}}){{{MIN_HEX_BYTES},}}")
_HEX_SPACED = re.compile(
    rf"(?<![0-9A-Za-z])[0-9A-Fa-f]{{2}}(?:[ :][0-9A-Fa-f]{{2}}){{{MIN_HEX_BYTES - 1},}}(?![0-9A-Za-z])"
)
_B64_WRAPPED = re.compile(
    r"(?<![A-Za-z0-9+/=])(?:[A-Za-z0-9+/]{20,}+[ \t]*+\r?\n[ \t]*+)++[A-Za-z0-9+/]{4,}+={0,2}(?![A-Za-z0-9+/=])"
)
_ESCAPES = re.compile(r"(?:\\u[0-9A-Fa-f]{4}){6,}|(?:&#(?:x[0-9A-Fa-f]{1,6}|\d{1,7});){6,}")
# a run starts where a token starts (so the search is linear) and its parts are possessive
_PERCENT = re.compile(rf"(?<![^\s<>\"'`])[^\s%<>\"'`]*+(?:%[0-9A-Fa-f]{{2}}[^\s%<>\"'`]*+){{{MIN_PERCENT},}}")
_LETTERS = re.compile(r"[^\W\d_]{2,}")


@dataclass(frozen=True)
class EncodedRun:
    """``text[start:end]`` is ``encoding`` (base64, base64url, hex or url) and decodes to the readable ``decoded``."""

    start: int
    end: int
    encoding: str
    decoded: str


def readable(data: bytes) -> str | None:
    """``data`` as text when it is readable: UTF-8 of printable characters and whitespace, and either prose (at
    least two words, letters making up a good part of it) or itself one encoded run (a second layer); ``None``
    otherwise (binary data, a hash, a key)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.strip() or any(
        not (ch.isprintable() or ch in "\t\n\r") or unicodedata.category(ch) in ("Co", "Cn") for ch in text
    ):
        return None
    found = _LETTERS.findall(text)
    if len(found) >= 2 and sum(map(len, found)) >= len(re.sub(r"\s", "", text)) * 0.4:
        return text
    bare = text.strip()
    if any(pattern.fullmatch(bare) for pattern in (_B64_STD, _B64_URL, _HEX, _HEX_ESCAPED, _HEX_SPACED, _PERCENT)):
        return text
    return None


def _base64(run: str, *, urlsafe: bool) -> bytes | None:
    body = run.rstrip("=")
    if len(body) % 4 == 1:
        body = body[:-1]
    body += "=" * (-len(body) % 4)
    try:
        return base64.urlsafe_b64decode(body) if urlsafe else base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return None


def _hex(digits: str) -> bytes | None:
    try:
        return bytes.fromhex(re.sub(r"\\x|[ :]", "", digits))
    except ValueError:
        return None


def _percent(run: str) -> bytes | None:
    data = urllib.parse.unquote_to_bytes(run.replace("+", " "))  # form encoding writes a space as +
    return data if data != run.encode("utf-8", errors="replace") else None


def _escapes(run: str) -> bytes | None:
    codes = re.findall(r"\\u([0-9A-Fa-f]{4})|&#x([0-9A-Fa-f]+);|&#(\d+);", run)
    try:
        text = "".join(chr(int(u or x, 16)) if (u or x) else chr(int(d)) for u, x, d in codes)
        return text.encode("utf-8")
    except (ValueError, OverflowError, UnicodeEncodeError):
        return None


@dataclass
class Budget:
    """How many more characters the lint may decode for one text (over every layer)."""

    chars: int = MAX_DECODED_CHARS

    def take(self, size: int) -> bool:
        """Spend ``size`` characters; ``False`` (and nothing spent) when that is more than is left."""
        if size > self.chars:
            return False
        self.chars -= size
        return True


def _candidates(text: str) -> Iterator[tuple[int, int, str, bytes | None]]:
    """``(start, end, encoding, bytes)`` of every run that may be encoded, hex before base64 (hex digits are
    base64 characters too)."""
    for match in _B64_WRAPPED.finditer(text):
        joined = re.sub(r"\s", "", match.group())[:MAX_RUN_CHARS]
        yield match.start(), match.end(), "base64", _base64(joined, urlsafe=False)
    for match in _ESCAPES.finditer(text):
        yield match.start(), match.end(), "escapes", _escapes(match.group()[:MAX_RUN_CHARS])
    for match in _HEX_ESCAPED.finditer(text):
        yield match.start(), match.end(), "hex", _hex(match.group())
    for match in _HEX_SPACED.finditer(text):
        yield match.start(), match.end(), "hex", _hex(match.group())
    for match in _HEX.finditer(text):
        yield match.start(), match.end(), "hex", _hex(match.group(1))
    for match in _B64_STD.finditer(text):
        yield match.start(), match.end(), "base64", _base64(match.group()[:MAX_RUN_CHARS], urlsafe=False)
    for match in _B64_URL.finditer(text):
        if re.search(r"[-_]", match.group()):  # without - or _ it is a standard run, tried above
            yield match.start(), match.end(), "base64url", _base64(match.group()[:MAX_RUN_CHARS], urlsafe=True)
    for match in _PERCENT.finditer(text):
        yield match.start(), match.end(), "url", _percent(match.group()[:MAX_RUN_CHARS])


def encoded_runs(text: str, budget: Budget | None = None) -> list[EncodedRun]:
    """Each run of ``text`` that decodes to readable text, in order of position, none overlapping (the first
    encoding that reads wins), at most ``MAX_RUNS``; decoding stops when ``budget`` is spent."""
    budget = budget if budget is not None else Budget()
    runs: list[EncodedRun] = []
    tried = 0
    for start, end, encoding, data in _candidates(text):
        if any(start < run.end and run.start < end for run in runs):
            continue
        tried += 1
        if tried > MAX_RUNS * 4 or not budget.take(min(end - start, MAX_RUN_CHARS)):
            break
        decoded = readable(data) if data else None
        if decoded is not None:
            runs.append(EncodedRun(start, end, encoding, decoded))
            if len(runs) >= MAX_RUNS:
                break
    return sorted(runs, key=lambda run: run.start)


_PROSE_WORD = re.compile(r"[\"'(\[]?[^\W\d_]{2,}[.,;:!?)\]\"']{0,2}")


def is_prose(text: str) -> bool:
    """Whether decoded ``text`` reads as prose: four words or more, most of its whitespace-separated tokens plain
    words (JSON, tokens and ids are not)."""
    tokens = text.split()
    plain = sum(1 for token in tokens if _PROSE_WORD.fullmatch(token))
    return plain >= 4 and plain >= len(tokens) * 0.6
