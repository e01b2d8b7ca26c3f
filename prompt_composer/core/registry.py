"""The registry: every tool doc and mode of a folder, validated together, immutable, fingerprinted."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import LoadError, Problem, UnknownModeError, UnknownToolError
from ..shared.journal_state import journal_problems
from ..shared.logs import get_logger
from ..shared.model_records import dumps
from ..shared.yamlcache import YamlCache
from ..shared.yamlfile import ValidatedModels, YamlReader, line_of, read_yaml, yaml_files
from .cards import SERVERS_FOLDER, ServerCard, card_of, example_problems, load_card_file
from .docs import GroupDoc, ToolDoc, load_group_file, load_tool_file
from .modes import Mode, ModeConfig, apply_overlay, load_mode_file, load_overlay_file, resolve_mode

logger = get_logger(__name__)

_FINGERPRINT = "registry fingerprint"
_TOKEN = "registry cache token"
# Registry._build hashes, model_records.dumps writes the text hashed
_FINGERPRINT_CODE = (__name__, "prompt_composer.shared.model_records")


def default_docs_dir() -> Path:
    """The shipped ``tool_docs/``: inside the installed wheel, or at the top of a source checkout."""
    packaged = Path(str(resources.files("prompt_composer"))) / "tool_docs"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "tool_docs"


@dataclass(frozen=True)
class Registry:
    """Validated tool docs and modes. Build with :func:`load_registry` or :meth:`from_docs`."""

    tools: Mapping[str, ToolDoc]
    modes: Mapping[str, Mode]
    fingerprint: str
    root: Path | None = None
    # Optional workflow guidance per tool group (``groups/<group>.yaml``); a folder without it has none.
    groups: Mapping[str, GroupDoc] = field(default_factory=lambda: MappingProxyType({}))
    # Optional: what each MCP server the tools came from is for (``servers/<server>.yaml``), by server name.
    servers: Mapping[str, ServerCard] = field(default_factory=lambda: MappingProxyType({}))
    # A random token the user's parsed-docs cache keeps for this folder while its files are unchanged, given only
    # when the cache vouched for every file by its identity (shared/yamlcache.py): what keys the values others keep
    # for this registry (discovery's keyword index), so that no cache file planted by a checkout can name them.
    # None when loaded without the cache (then nothing is kept for it).
    cache_token: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # resolve_mode never allows a quarantined tool; a Mode built by hand (or swapped in) must not either.
        for slug, mode in self.modes.items():
            for name in mode.allowed:
                doc = self.tools.get(name)
                if doc is not None and doc.quarantined:
                    problem = Problem(Path(f"<mode {slug}>"), 1, f"mode {slug!r} allows quarantined tool {name!r}")
                    raise LoadError([problem])

    @classmethod
    def from_docs(
        cls,
        tools: Iterable[ToolDoc],
        modes: Iterable[ModeConfig] = (),
        *,
        root: Path | None = None,
        groups: Iterable[GroupDoc] = (),
        servers: Iterable[ServerCard] = (),
    ) -> Registry:
        """Build a registry from models in memory (raises :class:`LoadError` like loading does)."""
        by_name: dict[str, ToolDoc] = {}
        problems: list[Problem] = []
        for doc in tools:
            if doc.name in by_name:
                problems.append(Problem(Path(f"<tool {doc.name}>"), 1, f"duplicate tool name {doc.name!r}"))
            by_name[doc.name] = doc
        resolved: dict[str, Mode] = {}
        for config in modes:
            mode, mode_problems = resolve_mode(config, by_name)
            problems += mode_problems
            if config.slug in resolved:
                problems.append(Problem(Path(f"<mode {config.slug}>"), 1, f"duplicate mode slug {config.slug!r}"))
            if mode is not None:
                resolved[config.slug] = mode
        group_docs: dict[str, GroupDoc] = {}
        for group in groups:
            if group.name in group_docs:
                problems.append(Problem(Path(f"<group {group.name}>"), 1, f"duplicate group {group.name!r}"))
            group_docs[group.name] = group
        cards: dict[str, ServerCard] = {}
        for card in servers:
            if card.name in cards:
                problems.append(Problem(Path(f"<server {card.name}>"), 1, f"duplicate server card {card.name!r}"))
            cards[card.name] = card
            problems += example_problems(card, by_name, Path(f"<server {card.name}>"), {})
        if problems:
            raise LoadError(problems)
        return cls._build(by_name, resolved, root, group_docs, cards)

    @classmethod
    def _build(
        cls,
        tools: dict[str, ToolDoc],
        modes: dict[str, Mode],
        root: Path | None,
        groups: dict[str, GroupDoc] | None = None,
        servers: dict[str, ServerCard] | None = None,
        fingerprint: str | None = None,
        cache_token: str | None = None,
    ) -> Registry:
        """``fingerprint``: what computing it from these very models gave before (see :func:`_load`)."""
        tools = dict(sorted(tools.items()))
        modes = dict(sorted(modes.items()))
        groups = dict(sorted((groups or {}).items()))
        servers = dict(sorted((servers or {}).items()))
        if fingerprint is None:
            fingerprint = _fingerprint(tools, modes, groups, servers)
        return cls(
            MappingProxyType(tools),
            MappingProxyType(modes),
            fingerprint,
            root,
            MappingProxyType(groups),
            MappingProxyType(servers),
            cache_token,
        )

    def mode(self, slug: str) -> Mode:
        try:
            return self.modes[slug]
        except KeyError:
            raise UnknownModeError(slug, list(self.modes)) from None

    def tool(self, name: str) -> ToolDoc:
        try:
            return self.tools[name]
        except KeyError:
            raise UnknownToolError(name, list(self.tools)) from None

    def card_of(self, name: str) -> ServerCard | None:
        """The card of the server the tool ``name`` was imported from, if it has one."""
        doc = self.tools.get(name)
        return card_of(doc, self.servers) if doc is not None else None


def _fingerprint(
    tools: dict[str, ToolDoc], modes: dict[str, Mode], groups: dict[str, GroupDoc], servers: dict[str, ServerCard]
) -> str:
    """The registry's fingerprint: a hash of each model as ``model_dump(mode="json")`` writes it. :func:`dumps` writes
    the same without pydantic's serializer, which a registry rebuilt from the cache's records would have to build
    first (``dumped`` is the serializer's own text, for what the two could write differently)."""
    payload: dict[str, Any] = {
        # `quarantine` only when set, so registries without quarantined tools keep their fingerprint
        "tools": [
            {name: getattr(doc, name) for name in type(doc).model_fields if name != "quarantine" or doc.quarantine}
            for doc in tools.values()
        ],
        "modes": [mode.config for mode in modes.values()],
    }
    if groups:  # only when present, so folders without groups/ keep their fingerprint
        payload["groups"] = list(groups.values())
    if servers:  # likewise: a folder without servers/ keeps its fingerprint
        payload["servers"] = list(servers.values())

    def dumped() -> dict[str, Any]:
        return {
            "tools": [
                doc.model_dump(mode="json", exclude=None if doc.quarantine else {"quarantine"})
                for doc in tools.values()
            ],
            "modes": [mode.config.model_dump(mode="json") for mode in modes.values()],
            **({"groups": [group.model_dump(mode="json") for group in groups.values()]} if groups else {}),
            **({"servers": [card.model_dump(mode="json") for card in servers.values()]} if servers else {}),
        }

    text = dumps(payload, dumped, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_registry(
    directory: str | Path | None = None, *, overlay: str | Path | None = None, cache: bool = True
) -> Registry:
    """Load ``directory/*.yaml`` (tools), ``directory/modes/*.yaml`` (modes), the optional
    ``directory/groups/*.yaml`` (group workflows) and ``directory/servers/*.yaml`` (server cards, see
    :mod:`~prompt_composer.core.cards`), all or nothing.

    ``overlay`` is a per-user file, ``{mode slug: {permanent: [...], recent_size: N}}``, whose values replace the
    mode files' (see :class:`~prompt_composer.modes.ModeOverlay`); its problems (an unknown mode, a permanent
    tool the mode does not allow) are reported at its own lines like any other file's.

    Every problem in every file is collected; if there is any, :class:`LoadError` lists them all and no
    registry is returned. A folder with an interrupted import that had committed (a staging folder with
    ``COMMITTED``: it may hold a mix of old and new files) is a :class:`LoadError` naming the staging folder and
    what recovery would do; loading never completes, undoes or deletes a journal (``prompt-composer import
    --recover`` does, for one it wrote). An import that had not committed left the folder as it was: it is
    loaded, with a warning on the ``prompt_composer.shared.journal_state`` logger.

    A folder without ``modes/`` is a registry with zero modes (``validate`` calls that an error:
    :func:`modes_folder_problem`); a ``modes`` that is not a folder is an error here.

    ``cache``: the folder's files are parsed and validated once and kept in the user cache
    (:mod:`prompt_composer.shared.yamlcache`); a later load reads again only the files that changed, and
    validates again only those (or all, when this package, pydantic or a model's definition changed). Whatever
    spans files (a mode's tools, duplicates, a doc's name against its file) is checked on every load, and a load
    that finds a problem parses and validates every file again, so problems are placed exactly. ``cache=False``
    parses every file and leaves the cache alone.
    """
    root = Path(directory) if directory is not None else default_docs_dir()
    try:
        is_dir = root.is_dir()
    except (OSError, ValueError) as exc:  # a name too long for the system, or holding a NUL: no folder to load
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise LoadError([Problem(root, 1, f"tool docs folder cannot be read: {reason}")]) from None
    if not is_dir:
        raise LoadError([Problem(root, 1, "tool docs folder does not exist")])
    problems = journal_problems(root)
    if problems:  # the folder may be half old, half new: its other problems would only mislead
        raise LoadError(problems)
    files = _cache_of(root) if cache else None
    if files is None:
        return _load(root, overlay, read_yaml)
    try:
        return _load(root, overlay, files.read, files)
    except LoadError:
        if not files.hits:  # nothing came from the cache: these problems are a fresh parse's
            raise
        return _load(root, overlay, files.parse)  # (raises again, now with every problem at its line)
    finally:
        files.save()


def _cache_of(root: Path) -> YamlCache | None:
    """The parsed-file cache of ``root``, or None when there is no user cache folder to keep it in (no home
    folder): the folder then loads as without a cache."""
    try:
        return YamlCache(root)
    except (RuntimeError, OSError) as exc:  # Path.home() raises RuntimeError when there is no home to find
        logger.info("loading %s without the parsed-file cache: %s", root, exc)
        return None


def _load(root: Path, overlay: str | Path | None, read: YamlReader, cache: YamlCache | None = None) -> Registry:
    """:func:`load_registry` of the folder ``root``, its YAML files read with ``read`` and validated unless
    the ``cache`` holds what validating the same bytes gave before. Everything that spans files is checked here
    either way. The fingerprint is the cache's too when every file came from it as before (without an overlay):
    a function of the models, so of those files' bytes, the models' definitions and this module's code."""
    models: ValidatedModels | None = cache
    problems: list[Problem] = []
    tools: dict[str, ToolDoc] = {}
    broken: set[str] = set()
    for path in yaml_files(root):
        doc, doc_problems = load_tool_file(path, read=read, models=models)
        problems += doc_problems
        if doc is None:
            broken.add(path.stem)
        else:
            if doc.name in tools:
                problems.append(Problem(path, 1, f"duplicate tool name {doc.name!r}"))
            tools[doc.name] = doc
    modes: dict[str, Mode] = {}
    if (root / "modes").exists() and not (root / "modes").is_dir():
        problems.append(Problem(root / "modes", 1, "modes is not a folder: mode files go in modes/<slug>.yaml"))
    for path in yaml_files(root / "modes"):
        config, lines, mode_problems = load_mode_file(path, read=read, models=models)
        problems += mode_problems
        if config is None:
            continue
        mode, resolve_problems = resolve_mode(config, tools, path=path, lines=lines, broken=frozenset(broken))
        problems += resolve_problems
        if mode is not None:
            if config.slug in modes:
                problems.append(Problem(path, 1, f"duplicate mode slug {config.slug!r}"))
            modes[config.slug] = mode
    if overlay is not None:
        problems += _apply_overlay_file(Path(overlay), modes, tools, {p.stem for p in yaml_files(root / "modes")})
    groups: dict[str, GroupDoc] = {}
    for path in yaml_files(root / "groups"):
        group, group_problems = load_group_file(path, read=read, models=models)
        problems += group_problems
        if group is not None:
            if group.name in groups:
                problems.append(Problem(path, 1, f"duplicate group {group.name!r}"))
            groups[group.name] = group
    servers, server_problems = _load_cards(root / SERVERS_FOLDER, read, models, tools, frozenset(broken))
    problems += server_problems
    if problems:
        raise LoadError(problems)
    if cache is None or overlay is not None:
        return Registry._build(tools, modes, root, groups, servers)
    known = cache.derived(_FINGERPRINT, _FINGERPRINT_CODE)
    token = cache.derived(_TOKEN, _FINGERPRINT_CODE)
    if token is None:  # a new one, given out only when the cache keeps it (else nothing could find what it keys)
        fresh = os.urandom(16).hex()
        token = fresh if cache.keep_derived(_TOKEN, _FINGERPRINT_CODE, fresh) else None
    registry = Registry._build(tools, modes, root, groups, servers, fingerprint=known, cache_token=token)
    if known is None:
        cache.keep_derived(_FINGERPRINT, _FINGERPRINT_CODE, registry.fingerprint)
    return registry


def _load_cards(
    folder: Path,
    read: YamlReader,
    models: ValidatedModels | None,
    tools: Mapping[str, ToolDoc],
    broken: frozenset[str],
) -> tuple[dict[str, ServerCard], list[Problem]]:
    """The server cards of ``folder`` by name (each read with ``read`` and validated unless ``models`` holds it, so
    cached like the other files), and their problems, their examples checked against ``tools`` (a card no tool
    refers to is only a warning: :func:`~prompt_composer.core.cards.unused_cards`)."""
    problems: list[Problem] = []
    if folder.exists() and not folder.is_dir():
        return {}, [Problem(folder, 1, "servers is not a folder: server cards go in servers/<server>.yaml")]
    cards: dict[str, ServerCard] = {}
    for path in yaml_files(folder):
        card, lines, card_problems = load_card_file(path, read=read, models=models)
        problems += card_problems
        if card is not None:
            if card.name in cards:
                problems.append(Problem(path, line_of(lines, ("name",)), f"duplicate server card {card.name!r}"))
            cards[card.name] = card
            problems += example_problems(card, tools, path, lines, broken=broken)
    return cards, problems


def modes_folder_problem(root: Path) -> Problem | None:
    """The problem of a docs folder with no ``modes/`` folder: it loads (a tool-only folder is fine to search or
    list), but no mode can show its tools, which is what ``validate`` is asked."""
    modes = root / "modes"
    if modes.is_dir():
        return None
    if modes.exists():
        return Problem(modes, 1, "modes is not a folder: mode files go in modes/<slug>.yaml")
    return Problem(
        modes,
        1,
        "no modes/ folder: no mode can show these tools; add modes/<slug>.yaml (as shipped), or let "
        f"`prompt-composer init {root} --add-mode NAME` write one allowing every group here",
    )


def _apply_overlay_file(
    path: Path, modes: dict[str, Mode], tools: Mapping[str, ToolDoc], stems: set[str]
) -> list[Problem]:
    """Replace the modes an overlay names (in place); the overlay's problems. A mode whose own file failed to
    load (its slug is a file stem in ``stems``) is reported there, not again as unknown here."""
    entries, lines, problems = load_overlay_file(path)
    for slug, entry in entries.items():
        if slug not in modes:
            if slug not in stems:
                known = ", ".join(sorted(modes)) or "none"
                problems.append(Problem(path, line_of(lines, (slug,)), f"unknown mode {slug!r} (modes: {known})"))
            continue
        mode, mode_problems = apply_overlay(modes[slug], entry, tools, path=path, lines=lines)
        problems += mode_problems
        if mode is not None:
            modes[slug] = mode
    return problems
