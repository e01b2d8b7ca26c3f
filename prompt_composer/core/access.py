"""The access policy's one refusal: a tool the mode does not offer, whether it exists elsewhere or not at all.

Every handler that takes a tool name from the model (fetch, a direct call, ``call_tool``, a text-style call, the
gateway) answers a name outside the mode with :func:`not_in_mode`. Its text depends only on the name asked for
and the tools the mode allows, never on whether the registry holds a tool of that name, so a refusal cannot be
used to find out which tools exist outside the mode. The suggestions are the closest names the mode allows.

A name longer than any valid one is echoed cut, with a note (:func:`~prompt_composer.core.bounds.quoted_name`), and
only its start is matched against the mode's names: a refusal stays short and quick whatever the model sent.
"""

from __future__ import annotations

from .bounds import MAX_ECHOED_NAME, quoted_name
from .modes import Mode


def closest_names(name: str, candidates: tuple[str, ...], *, limit: int = 5) -> list[str]:
    """Allowed names close to ``name``; falls back to the first few candidates so there is always a hint."""
    import difflib  # only when a name is not found: not on every start

    matches = difflib.get_close_matches(name, candidates, n=limit, cutoff=0.5)
    if not matches:
        lowered = name.lower()
        matches = [c for c in candidates if lowered and (lowered in c.lower() or c.lower() in lowered)][:limit]
    return matches or list(candidates[:limit])


def not_in_mode(name: str, mode: Mode, *, consequence: str = "") -> str:
    """The refusal for ``name`` in ``mode`` (``Error: …``), then ``consequence`` (e.g. ``Nothing was run.``)."""
    suggestions = ", ".join(closest_names(name[:MAX_ECHOED_NAME], mode.allowed))
    text = (
        f"Error: there is no tool {quoted_name(name)} in mode {mode.slug!r}. "
        f"Tools of this mode, closest first: {suggestions}."
    )
    return f"{text} {consequence}" if consequence else text
