"""Reading an upstream tool's prose: its sentences, its opening paragraph, and the verbs that say what it does.

Shared by brief drafting (:mod:`.brief`), which keeps some sentences and derives a "Use it when …" from a verb,
and placement (:mod:`.placement`), which reads a name and a first sentence as read-only or writing.
"""

from __future__ import annotations

import re

_ABBREVIATION_END = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl)$", re.IGNORECASE)
_ABBREVIATION_WINDOW = 16  # characters: more than the longest abbreviation and the character before it
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f]+(?=\s|$)")
_SECTION_HEAD = re.compile(
    r"^\s*(?:#+\s|args?:|arguments:|parameters?:|params:|inputs?:|returns?:|example|usage:|note:|error\s+responses?:|```)",
    re.IGNORECASE,
)
LIST_ITEM = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s)")
# "This tool …", "Allows you to …", "Can be used to …": what comes before the verb that says what a tool does.
LEAD_IN = re.compile(
    r"^(?:this\s+(?:tool|function|endpoint|operation)\s+(?:will\s+|can\s+)?|(?:an?\s+)?(?:tool|function)\s+(?:to|that)\s+"
    r"|allows?\s+(?:you\s+|the\s+user\s+|users\s+)?to\s+|lets?\s+(?:you|the\s+user)\s+|(?:can\s+be\s+)?used\s+to\s+)",
    re.IGNORECASE,
)


def sentences(text: str) -> list[str]:
    """Split prose into sentences the way the brief validator counts them (``e.g.`` ends nothing)."""
    out, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        # Only the few characters before the full stop can end in an abbreviation: searching them alone keeps a
        # long text linear (searching all the text before each sentence end made a 5 MB description quadratic).
        end = match.start()
        if match.group() == "." and _ABBREVIATION_END.search(text, max(0, end - _ABBREVIATION_WINDOW), end):
            continue
        out.append(text[start : match.end()].strip())
        start = match.end()
    if text[start:].strip():
        out.append(text[start:].strip())
    return [s for s in out if s]


def lead_prose(description: str) -> str:
    """The description's opening prose: up to the first parameter list, heading, example or bullet list."""
    lines: list[str] = []
    for line in description.strip().splitlines():
        if _SECTION_HEAD.match(line) or (LIST_ITEM.match(line) and lines):
            break
        lines.append(LIST_ITEM.sub("", line).strip())
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


# --- verbs -----------------------------------------------------------------------------------------------------


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``: a table of words written as prose."""
    return frozenset(text.split())


_verbs = word_set


# Verbs that change state whatever else a name says ("get_or_create_user" writes), and verbs that do when they
# lead a name or a description ("commit", "add"; as nouns they are common: "get_commit"). Everything else that is
# not read below is unsure, and unsure is writing: the MCP spec's default is readOnlyHint false.
STRONG_WRITE_VERBS = _verbs(
    """write create delete remove update upsert edit modify move rename reset push kill drop destroy purge overwrite
    insert append replace truncate wipe install uninstall deploy publish merge rebase revert restore checkout submit
    send assign unassign archive unarchive fork approve dismiss cancel terminate execute exec trigger unstage"""
)
WRITE_VERBS = STRONG_WRITE_VERBS | _verbs(
    """commit add set unset close reopen lock unlock star unstar follow unfollow comment label tag record run rerun
    start stop restart stage apply mark manage toggle enable disable copy clone upload transfer switch resolve reply
    request post put patch save store import sync pull share invite grant revoke register unregister subscribe
    unsubscribe click type fill press drag select navigate mkdir touch rm mv cp schedule abort clear empty batch
    generate evaluate handle resize hover login logout authenticate simulate"""
)
READ_VERBS = _verbs(
    """get list read search show status diff fetch find query lookup look view describe inspect count stat info
    explain browse retrieve return tree ls cat grep head tail display preview compare analyze analyse summarize
    calculate compute validate verify whoami echo wait"""
)
# Verbs a drafted "Use it when you need to …" may start with, beyond the two lists above.
_OTHER_VERBS = _verbs(
    """convert compress decompress open take capture check test format parse translate extract render scroll measure
    monitor track notify plan solve build make download encode decode sort filter map perform provide"""
)
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def name_words(name: str) -> list[str]:
    """``git_create_branch``, ``createBranch``, ``API-get-user`` → their lower-case words."""
    return [w.lower() for w in _NAME_WORD.findall(name)]


def base_verb(word: str) -> str | None:
    """The known verb ``word`` is a form of ("Shows" → "show", "Switches" → "switch"), or ``None``."""
    w = word.lower()
    forms = (
        w,
        w[:-1] if w.endswith("s") else "",
        w[:-2] if w.endswith("es") else "",
        w[:-3] + "y" if w.endswith("ies") else "",
    )
    for candidate in forms:
        if candidate in WRITE_VERBS or candidate in READ_VERBS or candidate in _OTHER_VERBS:
            return candidate
    return None
