"""The merge plan of a tool import: what it does to each doc, computed in memory, and then written all at once.

Imports are all-or-nothing and re-imports merge (see :func:`plan_import`): every doc is built and the folder's
whole registry validated in memory first; files are written to a staging folder and moved into place only
when everything is valid (:func:`apply_plan`).

What the importer wrote last time is recorded in the import state (:mod:`.folder`): per doc, its origin, its
group and a hash of the brief and of the full text as written. A doc whose text no longer hashes to the record
was edited by a person and is kept (an edited brief becomes ``brief_source: human``, and a brief a person marked
``human`` is kept too); one that still does is regenerated. Likewise a group a person changed is theirs. Hashing
what was *written* (rather than re-deriving it from the old upstream definition) keeps the merge right even when
the drafting rules change.

Tool poisoning: every imported doc goes through the security lint (:mod:`prompt_composer.safety.lint`). Drafted
briefs never carry an upstream's orders (hidden markup and invisible characters are stripped, sentences that
address the model dropped). A doc with a finding at ``QUARANTINE_SEVERITY`` or above is still written, but
*quarantined*: ``quarantine: [rule ids]`` (with a comment on top of the file saying why and how to clear it), and
no mode allows it. The import report lists each quarantined tool with its findings at ``path:line``. A person
clears a quarantine by reviewing the file and deleting the ``quarantine:`` key; the state file records (under
``scan``) a hash of what upstream sent, so a re-import leaves a cleared doc alone while that is unchanged and
scans it again when upstream changes it (a "rug pull").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..core.cards import ServerCard, card_path, card_stem
from ..core.docs import ToolDoc
from ..core.registry import Registry
from ..errors import ImporterError, LoadError
from ..safety.lint import Finding, full_size_limit, quarantine_rules, scan
from ..safety.rules import SEVERITY_RANK
from ..safety.text import escape_invisible
from ..shared.files import read_text
from .cards import CardChange, drafted_card, merge_card
from .deadline import NO_DEADLINE, Deadline
from .drafting import draft_docs
from .folder import (
    STATE_FILE,
    STATE_VERSION,
    empty_state,
    files_summary,
    load_output_folder,
    read_state,
    state_text,
    text_hash,
    write_files,
)
from .placement import Placement
from .siblings import SiblingIndex, strings, text_words
from .tool_list import UpstreamTool
from .yaml_out import doc_yaml


@dataclass(frozen=True)
class DocChange:
    """What an import does to one doc.

    ``updated`` names the fields regenerated (brief, full, input_schema, group, quarantine); ``kept`` what a
    person's hand kept ("edited brief", "reviewed brief", "edited full", "group"). ``placement`` is where the
    importer would put the tool and why; ``group`` where the doc is after the import (a person's group stands).
    """

    name: str
    origin: str
    action: Literal["add", "update", "unchanged"]
    updated: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    placement: Placement | None = None
    group: str = ""

    def describe(self) -> str:
        notes = []
        if self.updated:
            notes.append("updated " + ", ".join(self.updated))
        if self.kept:
            notes.append("kept " + ", ".join(self.kept))
        suffix = f": {'; '.join(notes)}" if notes else ""
        return f"{self.action:<9} {self.name}  ({self.origin}){suffix}"

    def placed(self, modes: Sequence[str], *, quarantined: bool = False) -> str:
        """``git_status → mcp (read-only: readOnlyHint) → modes ask, code``: where it went, why, who may call it."""
        if self.placement is None:
            why = "group given"
        elif self.placement.group == self.group:
            why = self.placement.describe()
        else:
            why = f"kept: a person's group; the importer reads it as {self.placement.describe()}"
        allowed = f"modes {', '.join(modes)}" if modes else "no mode"
        if quarantined:
            allowed = "no mode: quarantined"
        return f"{self.name} → {self.group} ({why}) → {allowed}"


@dataclass(frozen=True)
class ImportPlan:
    """Everything an import would do; :func:`apply_plan` writes ``files`` (paths relative to ``out``)."""

    out: Path
    server: str
    changes: tuple[DocChange, ...]
    vanished: tuple[str, ...]  # docs of this server whose tool is no longer listed upstream (left in place)
    files: Mapping[str, str]  # relative path -> text, only files whose text changes
    state: Mapping[str, Any]
    registry: Registry  # the folder's registry after the import, validated
    # Docs of this import that are quarantined after it, with their findings (located in their files).
    quarantined: Mapping[str, tuple[Finding, ...]] = field(default_factory=dict)
    # Docs a person cleared whose upstream text is unchanged: left cleared, though the lint still flags them.
    cleared: tuple[str, ...] = ()
    # What the import did to the server's card (servers/<server>.yaml); None when the import carried no card.
    card: CardChange | None = None

    @property
    def drafted(self) -> tuple[str, ...]:
        return tuple(n for n, d in self.registry.tools.items() if d.brief_source == "drafted")

    def report(self, *, dry_run: bool = False, summary: bool = True) -> list[str]:
        """The report's lines; ``summary``: end with how many files were (or would be) written."""
        lines = [c.describe() for c in self.changes if c.action != "unchanged" or c.kept]
        unchanged = sum(1 for c in self.changes if c.action == "unchanged" and not c.kept)
        if unchanged:
            lines.append(f"unchanged {unchanged} tool{'s' if unchanged != 1 else ''}")
        for name in self.vanished:
            origin = self.registry.tools[name].origin
            upstream = origin.name if origin else name
            lines.append(f"vanished  {name}  ({self.server}: {upstream}) is no longer listed upstream; doc kept")
        if self.card is not None:
            lines.append(self.card.describe())
            lines += [f"note      {note}" for note in self.card.notes]
        lines += self.placement_report()
        lines += self.budget_report()
        drafted = [c.name for c in self.changes if self.registry.tools[c.name].brief_source == "drafted"]
        if drafted:
            lines.append(
                f"{len(drafted)} drafted brief(s) to review: prompt-composer --docs {self.out} audit. A brief is "
                "reviewed once you edit it or set `brief_source: human`; re-imports keep a reviewed brief"
            )
        lines += self.quarantine_report()
        if summary:
            lines.append(files_summary(self.files, self.out, dry_run=dry_run))
        return lines

    def modes_allowing(self, name: str) -> tuple[str, ...]:
        """The folder's modes that allow the tool ``name`` after the import."""
        return tuple(slug for slug, mode in self.registry.modes.items() if mode.allows(name))

    def placement_report(self) -> list[str]:
        """For each new or changed tool: its group, why it is there, and the modes that allow it."""
        moved = [c for c in self.changes if c.action != "unchanged" or "group" in c.kept]
        if not moved:
            return []
        lines = ["where the new and changed tools go (group, why, modes that allow them):"]
        for change in moved:
            quarantined = self.registry.tools[change.name].quarantined
            lines.append("  " + change.placed(self.modes_allowing(change.name), quarantined=quarantined))
        idle = sorted(
            {c.group for c in moved if not self.modes_allowing(c.name) and not self.registry.tools[c.name].quarantined}
        )
        if idle and self.registry.modes:
            lines.append(
                f"no mode allows group(s) {', '.join(idle)}: add a group to the `groups:` of the modes that may use "
                "its tools (writing tools belong only in modes that may change things, such as code)"
            )
        elif idle:
            lines.append(
                f"{self.out} has no mode, so no mode shows these tools (and `validate` fails): "
                f"prompt-composer init {self.out} --add-mode NAME writes one allowing group(s) {', '.join(idle)}"
            )
        if any(c.action == "add" for c in self.changes):
            lines.append(
                f"calls of these tools go to MCP server {self.server!r}: `serve` and `run` route them with "
                f"--servers FILE, whose mcpServers needs an entry named {self.server!r}"
            )
        return lines

    def budget_report(self) -> list[str]:
        """The modes that allow a new or changed tool and whose worst case is now over their token budget."""
        touched = {slug for c in self.changes if c.action != "unchanged" for slug in self.modes_allowing(c.name)}
        if not touched:
            return []
        from ..core.audit import run_audit
        from ..core.composer import Composer

        lines = []
        for audit in run_audit(Composer(self.registry)).over_budget:
            if audit.mode in touched:
                path = self.out / "modes" / f"{audit.mode}.yaml"
                path = path if path.is_file() or not path.with_suffix(".yml").is_file() else path.with_suffix(".yml")
                lines.append(
                    f"over budget: mode {audit.mode!r} worst case is now {audit.worst_tokens} tokens, over its "
                    f"budget_tokens {audit.budget_tokens} ({path}): raise budget_tokens, or drop groups or tools "
                    "from the mode (prompt-composer audit --check fails until then)"
                )
        return lines

    def quarantine_report(self, *, per_tool: int = 12) -> list[str]:
        """The quarantined tools with their findings (``path:line``), and how a person clears them."""
        lines: list[str] = []
        for name, findings in sorted(self.quarantined.items()):
            doc = self.registry.tools[name]
            upstream = escape_invisible(f"{self.server}: {doc.origin.name if doc.origin else name}")
            lines.append(f"quarantined {name}  ({upstream}): {', '.join(doc.quarantine)}")
            shown = sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.line or 0))  # the worst first
            lines += [f"  {finding}" for finding in shown[:per_tool]]
            if len(findings) > per_tool:
                lines.append(f"  … and {len(findings) - per_tool} more")
        if self.quarantined:
            lines.append(
                f"{len(self.quarantined)} tool(s) quarantined: no mode allows them until a person clears them. Review "
                f"each file, remove what gives the model orders, then delete its `quarantine:` key "
                f"(prompt-composer --docs {self.out} audit --security lists every finding)"
            )
        for name in self.cleared:
            lines.append(
                f"cleared     {name}: a person lifted its quarantine and the upstream text is unchanged, so it stays "
                f"allowed (the lint still flags it: prompt-composer --docs {self.out} audit --security)"
            )
        return lines


def plan_import(
    out: str | Path,
    docs: Sequence[ToolDoc],
    *,
    server: str,
    placements: Mapping[str, Placement] | None = None,
    deadline: Deadline = NO_DEADLINE,
    card: ServerCard | None = None,
    card_notes: Sequence[str] = (),
    base: ImportPlan | None = None,
) -> ImportPlan:
    """Merge freshly drafted ``docs`` of ``server`` into the folder ``out``, in memory only.

    Rules, per doc: a new name is added; for an existing doc of the same origin, the brief and the full text
    are each regenerated if the doc still holds what the importer wrote last time, and kept if a person edited
    them (or there is no record). A kept brief is a reviewed one: an edit sets ``brief_source: human``, and a
    brief marked ``human`` by hand is kept too. The input schema always follows upstream; the group follows
    ``placements`` (see :func:`draft_docs`) while the doc holds the group the importer gave it, and is the
    person's once changed by hand; queries and hint are the person's. A name already used by a doc from
    elsewhere is an error. Docs of ``server`` whose tool is no longer listed are reported as vanished and left
    in place. The resulting registry (with the folder's modes) must validate.

    Every doc of the import is then scanned (:func:`prompt_composer.safety.lint.scan`): one with a finding at
    ``QUARANTINE_SEVERITY`` or above is written with ``quarantine: [rule ids]`` (and a comment saying how to
    clear it), so no mode allows it. A person clears it by deleting the key after review; that stands until the
    upstream text changes, when the doc is scanned again (a "rug pull" is caught on the next import).

    ``card`` is the server's card as this import has it (see :mod:`.cards`): merged with the folder's, a card a
    person reviewed is kept. ``base``: the plan of an earlier server of the same import, whose folder (in memory)
    this one starts from (``import mcp --servers``: several servers, one write).

    ``deadline`` is checked between docs (see :mod:`.deadline`).
    """
    out = Path(out)
    if base is not None:
        existing: Registry | None = base.registry
        state: dict[str, Any] = dict(base.state)
    else:
        existing = load_output_folder(out)
        state = read_state(out) if existing is not None else empty_state()
    deadline.check(f"loading the docs already in {out}")
    records: dict[str, Any] = dict(state["tools"])
    current = dict(existing.tools) if existing is not None else {}
    merged: dict[str, ToolDoc] = dict(current)
    placements = dict(placements or {})
    import_groups = {p.group for p in placements.values()} or {doc.group for doc in docs}
    changes: list[DocChange] = []
    for doc in docs:
        assert doc.origin is not None
        label = escape_invisible(f"{server}: {doc.origin.name}")
        old = current.get(doc.name)
        if old is not None and old.origin != doc.origin:
            source = f"imported from {old.origin.server!r} as {old.origin.name!r}" if old.origin else "written by hand"
            raise ImporterError(
                f"tool {doc.origin.name!r} of {server!r} maps to {doc.name!r}, which already exists in {out} "
                f"({source}); import with --prefix to keep both"
            )
        record = records.get(doc.name) or {}
        placement = placements.get(doc.name)
        merged[doc.name], records[doc.name], change = _merge(doc, old, record, label, placement, server, import_groups)
        changes.append(change)
    # The security lint: quarantine what addresses the model (see _quarantine for a person's clearing).
    limit = full_size_limit(merged.values())
    cleared = _scan_all(changes, merged, current, docs, state["tools"], records, limit, deadline)
    cards = dict(existing.servers) if existing is not None else {}
    card_change = _card_change(card, card_notes, cards, state, out) if card is not None else None
    servers = dict(state.get("servers", {}))
    if card_change is not None:
        cards[server] = card_change.card
        servers[server] = dict(card_change.record)
    registry = _validated(merged.values(), existing, out, cards.values())
    files, texts = _doc_files(changes, registry, out, deadline)
    if card_change is not None and card_change.text is not None:
        files[card_change.path] = card_change.text
    quarantined = _findings(changes, registry, texts, limit, deadline)
    new_state = {
        "version": STATE_VERSION,
        "tools": dict(sorted(records.items())),
        "modes": state["modes"],
        **({"servers": dict(sorted(servers.items()))} if servers else {}),
    }
    if base is not None:
        files = {**base.files, **files}
    if files or new_state != state:
        files[STATE_FILE] = state_text(new_state)
    vanished = _vanished(current, docs, server)
    return ImportPlan(
        out, server, tuple(changes), vanished, files, new_state, registry, quarantined, tuple(cleared), card_change
    )


def _card_change(
    card: ServerCard, notes: Sequence[str], cards: Mapping[str, ServerCard], state: Mapping[str, Any], out: Path
) -> CardChange:
    """The import's card merged with the folder's (see :func:`~.cards.merge_card`); two servers whose cards would
    share a file are an error."""
    clash = next((n for n in cards if n != card.name and card_stem(n) == card_stem(card.name)), None)
    if clash is not None:
        raise ImporterError(
            f"the cards of servers {clash!r} and {card.name!r} would both be servers/{card_stem(card.name)}.yaml; "
            "import one of them with another --server name"
        )
    old = cards.get(card.name)
    old_text = read_text(card_path(out, card.name), what="server card") if old is not None else None
    return merge_card(card, old, state.get("servers", {}).get(card.name), old_text, notes=notes)


def _merge(
    doc: ToolDoc,
    old: ToolDoc | None,
    record: Mapping[str, Any],
    label: str,
    placement: Placement | None,
    server: str,
    import_groups: set[str],
) -> tuple[ToolDoc, dict[str, Any], DocChange]:
    """One doc after the import (``old`` is the folder's, ``record`` what the last import wrote of it), its new
    state record, and the change, labelled ``label``."""
    assert doc.origin is not None
    new_record: dict[str, Any] = {
        "server": server,
        "name": doc.origin.name,
        "brief": text_hash(doc.brief),
        "full": text_hash(doc.full),
        "group": doc.group,
    }
    if old is None:
        return doc, new_record, DocChange(doc.name, label, "add", placement=placement, group=doc.group)
    updates: dict[str, Any] = {"input_schema": doc.input_schema}
    updated, kept = _merge_texts(old, doc, record, updates, new_record)
    if "brief" in updated:
        updates["brief_source"] = "drafted"
    if old.input_schema != doc.input_schema:
        updated.append("input_schema")
    # The group is the importer's while it holds what the importer gave it (records from before groups were
    # recorded: one of this import's groups), so a re-import moves a writing tool out of a read-only group.
    written = record.get("group")
    ours = bool(record) and (old.group == written if written is not None else old.group in import_groups)
    if old.group != doc.group:
        if ours:
            updates["group"] = doc.group
            updated.append("group")
        else:
            kept.append("group")
    merged = old.model_copy(update=updates)
    action: Literal["update", "unchanged"] = "update" if updated or "brief_source" in updates else "unchanged"
    return merged, new_record, DocChange(doc.name, label, action, tuple(updated), tuple(kept), placement, merged.group)


def _merge_texts(
    old: ToolDoc, doc: ToolDoc, record: Mapping[str, Any], updates: dict[str, Any], new_record: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """The brief and the full text: regenerated while the doc holds what the importer wrote, else kept.

    Adds the regenerated texts to ``updates``; a kept edit stays recorded as an edit in ``new_record``. Returns
    the fields updated and what was kept.
    """
    updated: list[str] = []
    kept: list[str] = []
    for key in ("brief", "full"):
        mine, theirs = getattr(old, key), getattr(doc, key)
        edited = record.get(key) != text_hash(mine)  # by a person since the last import (or never ours)
        reviewed = key == "brief" and old.brief_source == "human"  # a person marked the draft as reviewed
        if edited or reviewed:
            if mine != theirs:
                new_record[key] = record.get(key)  # stays "edited" until the text matches again
                if key == "brief" and edited and record.get(key) is not None and not reviewed:
                    updates["brief_source"] = "human"  # an edited brief is a reviewed one
                    kept.append("edited brief (now brief_source: human)")
                else:
                    kept.append(f"{'edited' if edited else 'reviewed'} {key}")
        elif mine != theirs:
            updates[key] = theirs
            updated.append(key)
    return updated, kept


def _vanished(current: Mapping[str, ToolDoc], docs: Sequence[ToolDoc], server: str) -> tuple[str, ...]:
    """The docs of ``server`` in the folder whose tool the server no longer lists."""
    listed = {doc.origin.name for doc in docs if doc.origin is not None}
    return tuple(
        name
        for name, doc in sorted(current.items())
        if doc.origin is not None and doc.origin.server == server and doc.origin.name not in listed
    )


def _upstream_hash(doc: ToolDoc) -> str:
    """A hash of what upstream sent for a doc (as drafted), to tell whether it changed since the last import."""
    origin = doc.origin.name if doc.origin else ""
    payload = [origin, doc.brief, doc.full, doc.input_schema]
    return text_hash(json.dumps(payload, sort_keys=True, ensure_ascii=False))


def _quarantine(
    doc: ToolDoc, old: ToolDoc | None, upstream: str, record: Mapping[str, Any], rules: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """The doc's ``quarantine`` after this import, the rules to record, and whether a person's clearing stands.

    ``rules`` are what the lint flags now. A person clears a quarantine by deleting the key: that stands while
    upstream sends the same text (recorded as ``scan.upstream``); new upstream text is checked afresh. While the
    text is unchanged a quarantine is never lifted by the importer; rule ids a person added by hand are kept.
    """
    scan_record = record.get("scan") if isinstance(record.get("scan"), Mapping) else None
    written = tuple(scan_record.get("quarantine", ())) if scan_record is not None else ()
    same = scan_record is not None and scan_record.get("upstream") == upstream
    if old is not None and same and written and not old.quarantine:
        return (), written, True
    by_hand = set(old.quarantine) - set(written) if old is not None else set()
    unchanged = set(old.quarantine) if old is not None and same else set()
    quarantine = tuple(sorted(set(rules) | by_hand | unchanged))
    return quarantine, quarantine, False


class _Siblings:
    """What :func:`~prompt_composer.safety.lint.sibling_names` gives a doc (the names, ours and upstream's, of the
    other tools of its server), cut to those its texts can name (see :mod:`.siblings`): linear in the docs."""

    def __init__(self, docs: Iterable[ToolDoc]) -> None:
        by_server: dict[str, list[tuple[str, str]]] = {}
        for doc in docs:
            if doc.origin is not None:
                by_server.setdefault(doc.origin.server, []).extend([(doc.name, doc.name), (doc.name, doc.origin.name)])
        self._index = {server: SiblingIndex(entries) for server, entries in by_server.items()}

    def of(self, doc: ToolDoc) -> list[str]:
        if doc.origin is None:
            return []
        words = text_words(strings(doc.model_dump(mode="json")))
        return self._index[doc.origin.server].among(words, owner=doc.name)


def _scan_all(
    changes: list[DocChange],
    merged: dict[str, ToolDoc],
    current: Mapping[str, ToolDoc],
    docs: Sequence[ToolDoc],
    previous: Mapping[str, Any],
    records: dict[str, Any],
    limit: int,
    deadline: Deadline,
) -> list[str]:
    """Scan each doc of the import and set its ``quarantine`` (in ``merged``, ``changes`` and its ``records``
    entry); returns the docs whose clearing by a person stands though the lint still flags them."""
    incoming = {doc.name: doc for doc in docs}
    siblings = _Siblings(merged.values())
    cleared: list[str] = []
    for index, change in enumerate(changes):
        deadline.check(f"scanning the docs for poisoning ({index:,} of {len(changes):,} scanned)")
        doc, old = merged[change.name], current.get(change.name)
        upstream = _upstream_hash(incoming[change.name])
        rules = quarantine_rules(scan(doc, full_limit=limit, siblings=siblings.of(doc)))
        record = previous.get(change.name) if old is not None else None
        quarantine, recorded, stands = _quarantine(doc, old, upstream, record or {}, rules)
        records[change.name] = {**records[change.name], "scan": {"upstream": upstream, "quarantine": list(recorded)}}
        if stands and rules:
            cleared.append(change.name)
        if quarantine != doc.quarantine:
            merged[change.name] = doc.model_copy(update={"quarantine": quarantine})
            if change.action != "add":
                changes[index] = replace(change, action="update", updated=(*change.updated, "quarantine"))
    return cleared


def _validated(
    tools: Iterable[ToolDoc], existing: Registry | None, out: Path, cards: Iterable[ServerCard] = ()
) -> Registry:
    modes = [m.config for m in existing.modes.values()] if existing is not None else []
    groups = existing.groups.values() if existing is not None else ()  # so the plan's audit is the folder's
    try:
        return Registry.from_docs(tools, modes, root=out, groups=groups, servers=cards)
    except LoadError as exc:
        raise ImporterError(f"the imported docs do not validate: {exc.summary()}") from None


def _doc_files(
    changes: Sequence[DocChange], registry: Registry, out: Path, deadline: Deadline
) -> tuple[dict[str, str], dict[str, tuple[Path, str | None]]]:
    """The files of the docs that change (relative path → text), and each doc's path with its new text."""
    files: dict[str, str] = {}
    texts: dict[str, tuple[Path, str | None]] = {}
    for index, change in enumerate(changes):
        deadline.check(f"writing the docs as YAML ({index:,} of {len(changes):,} done)")
        # Rewrite a doc where it lives: a second file beside a hand-renamed `.yml` would be a duplicate.
        stem = f"{change.name}.yml" if (out / f"{change.name}.yml").is_file() else f"{change.name}.yaml"
        if change.action != "unchanged":
            files[stem] = doc_yaml(registry.tools[change.name])
        texts[change.name] = (out / stem, files.get(stem))
    return files, texts


def _findings(
    changes: Sequence[DocChange],
    registry: Registry,
    texts: Mapping[str, tuple[Path, str | None]],
    limit: int,
    deadline: Deadline,
) -> dict[str, tuple[Finding, ...]]:
    """The quarantined docs of the import with their findings, located at lines of the files as written."""
    quarantined: dict[str, tuple[Finding, ...]] = {}
    siblings = _Siblings(registry.tools.values())
    for change in changes:
        doc = registry.tools[change.name]
        if doc.quarantined:
            deadline.check("locating the findings of the quarantined docs")
            path, text = texts[change.name]
            found = scan(doc, path=path, source=text, full_limit=limit, siblings=siblings.of(doc))
            quarantined[change.name] = tuple(found)
    return quarantined


def apply_plan(plan: ImportPlan, *, deadline: Deadline = NO_DEADLINE) -> None:
    """Write the plan's files (all of them, or none if ``deadline`` passes before they are moved into place)."""
    write_files(plan.out, plan.files, check=deadline.check)


def plan_tools(
    tools: Sequence[UpstreamTool],
    out: str | Path,
    *,
    server: str,
    group: str,
    write_group: str | None,
    prefix: str,
    deadline: Deadline = NO_DEADLINE,
    card: ServerCard | None = None,
    card_notes: Sequence[str] = (),
    base: ImportPlan | None = None,
) -> ImportPlan:
    """Draft docs for ``tools`` (:func:`draft_docs`) and plan their import into ``out``, with the server's
    ``card`` (drafted from the tools when none is given, see :func:`~.cards.drafted_card`)."""
    drafted = draft_docs(tools, server=server, group=group, write_group=write_group, prefix=prefix, deadline=deadline)
    placements = {doc.name: placement for doc, placement in drafted}
    return plan_import(
        out,
        [doc for doc, _ in drafted],
        server=server,
        placements=placements,
        deadline=deadline,
        card=card if card is not None else drafted_card(server, tools),
        card_notes=card_notes,
        base=base,
    )
