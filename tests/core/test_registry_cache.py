"""The parsed-registry cache (prompt_composer.shared.yamlcache): a warm load parses nothing and gives the same
registry; an edit of one file (even one that keeps its size and modification time) is seen, and that file alone is
parsed again; a truncated, corrupt, foreign or other-version cache is ignored with a log line and rebuilt; what
comes from the cache is validated, and problems are placed from a fresh parse."""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from prompt_composer.core import registry as registry_module
from prompt_composer.core.docs import ToolDoc
from prompt_composer.core.live import LiveRegistry
from prompt_composer.core.modes import ModeConfig
from prompt_composer.core.registry import Registry, load_registry
from prompt_composer.errors import LoadError
from prompt_composer.shared import yamlcache
from prompt_composer.shared.cache_dir import CACHE_ENV
from prompt_composer.shared.model_records import definition, rebuild
from prompt_composer.shared.version import VERSION
from prompt_composer.shared.yamlcache import RACY_NS, cache_file
from tests.helpers import DATA

BASE = DATA / "malformed" / "base"  # four tools, modes code and ask
FILES = 6
HOUR_NS = 3600 * 10**9


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    shutil.copytree(BASE, root)
    return root


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "user-cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files the cache parses (it parses through yamlcache.parse_yaml), in order."""
    names: list[str] = []
    real = yamlcache.parse_yaml

    def counting(text: str, path: Path) -> Any:
        names.append(path.name)
        return real(text, path)

    monkeypatch.setattr(yamlcache, "parse_yaml", counting)
    return names


def age(root: Path, seconds: int = 3600) -> None:
    """Set every file's times an hour back: as a folder is between two runs, long after its last edit (the
    change time moves to now, and the cache records its entries after that)."""
    past = time.time_ns() - seconds * 10**9
    for path in root.rglob("*.yaml"):
        os.utime(path, ns=(past, past))


def same(a: Registry, b: Registry) -> None:
    assert a.fingerprint == b.fingerprint
    assert dict(a.tools) == dict(b.tools) and dict(a.modes) == dict(b.modes) and dict(a.groups) == dict(b.groups)
    assert dict(a.servers) == dict(b.servers)


def document(root: Path) -> dict[str, Any]:
    return json.loads(cache_file(root).read_text())  # type: ignore[no-any-return]


def test_a_warm_load_parses_nothing_and_gives_the_same_registry(docs: Path, cache: Path, parsed: list[str]) -> None:
    fresh = load_registry(docs, cache=False)
    assert parsed == [] and not cache.exists()  # cache=False leaves the cache alone
    cold = load_registry(docs)
    assert len(parsed) == FILES
    warm = load_registry(docs)
    assert len(parsed) == FILES  # nothing more
    same(fresh, cold)
    same(fresh, warm)
    written = cache_file(docs)
    assert written.parent == cache / "registry"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert sorted(document(docs)["files"]) == [
        "execute_command.yaml", "list_files.yaml", "modes/ask.yaml", "modes/code.yaml", "read_file.yaml",
        "write_to_file.yaml",
    ]  # fmt: skip
    assert [p.name for p in written.parent.iterdir()] == [written.name]  # no temporary file left behind


def test_the_same_folder_by_another_path_shares_the_cache(
    docs: Path, cache: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    load_registry(docs)
    monkeypatch.chdir(docs.parent)
    load_registry("docs")
    (docs.parent / "link").symlink_to(docs)
    load_registry(docs.parent / "link")
    assert len(parsed) == FILES
    assert len(list((cache / "registry").iterdir())) == 1


@pytest.mark.parametrize("old", [True, False], ids=["edited-an-hour-after-caching", "edited-at-once"])
def test_an_edit_that_keeps_size_and_mtime_is_seen_and_only_that_file_is_parsed(
    docs: Path, cache: Path, parsed: list[str], old: bool
) -> None:
    """The first case is trusted by the file's identity (its change time moved); the second, an edit within the
    file system's time granularity of caching, by the file's hash."""
    if old:
        age(docs)
    load_registry(docs)
    target = docs / "read_file.yaml"
    text = target.read_text()
    before = target.stat()
    edited = text.replace("Read", "Rend", 1)
    assert len(edited.encode()) == len(text.encode()) and edited != text
    target.write_text(edited)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = target.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    parsed.clear()
    registry = load_registry(docs)
    assert parsed == ["read_file.yaml"]
    assert "Rend" in registry.tools["read_file"].brief + registry.tools["read_file"].full
    same(registry, load_registry(docs, cache=False))


def test_when_file_times_cannot_tell_an_edit_the_hash_does(docs: Path, cache: Path, parsed: list[str]) -> None:
    """A file system whose times are coarser than the edits (FAT keeps 2 s): the edited file has the very identity
    the cache recorded. An entry recorded within RACY_NS of the file's last change is checked by hash; one recorded
    long after it is trusted (the file's times moved with any later edit)."""
    assert RACY_NS >= 2 * 10**9  # FAT's 2 s
    load_registry(docs)
    target = docs / "list_files.yaml"
    target.write_text(target.read_text().replace("List", "Lost", 1))
    written = document(docs)
    entry = written["files"]["list_files.yaml"]
    info = target.stat()
    entry.update(size=info.st_size, mtime_ns=info.st_mtime_ns, ctime_ns=info.st_ctime_ns, ino=info.st_ino)
    entry["checked_ns"] = max(info.st_mtime_ns, info.st_ctime_ns) + 10**9  # cached a second after the edit
    cache_file(docs).write_text(json.dumps(written))
    parsed.clear()
    registry = load_registry(docs)
    assert parsed == ["list_files.yaml"] and "Lost" in registry.tools["list_files"].brief


def test_an_entry_checked_by_hash_is_trusted_once_its_file_is_old(docs: Path, cache: Path, parsed: list[str]) -> None:
    load_registry(docs)  # just written: every entry is within RACY_NS of its file's change, so hash-checked
    racy = {name: entry["checked_ns"] for name, entry in document(docs)["files"].items()}
    age(docs)  # moves mtime back; the change time is now, so the identity changes and each file is parsed again
    load_registry(docs)
    written = document(docs)["files"]
    assert all(entry["checked_ns"] >= racy[name] for name, entry in written.items())
    parsed.clear()
    load_registry(docs)
    assert parsed == []


@pytest.mark.parametrize(
    ("damage", "level", "why"),
    [
        (lambda text: text[: len(text) // 2], logging.WARNING, "not JSON"),
        (lambda text: "\x00\xff garbage", logging.WARNING, "not JSON"),
        (lambda text: "", logging.WARNING, "not JSON"),
        (lambda text: "[" * 100_000, logging.WARNING, "not JSON"),
        (lambda text: text.replace(f'"version":"{VERSION}"', '"version":"0.0.1"'), logging.INFO, "another version"),
        (lambda text: text.replace(f'"schema":{yamlcache.SCHEMA}', '"schema":99'), logging.INFO, "another version"),
        (lambda text: text.replace('"root":"', '"root":"/elsewhere'), logging.WARNING, "another folder"),
        (lambda text: text.replace('"format":"', '"format":"x'), logging.WARNING, "not a parsed-YAML cache"),
        (lambda text: text.replace('"sha256":"', '"sha256":"zz', 1), logging.WARNING, "a malformed entry"),
        (lambda text: text.replace('"ino":', '"ino":-', 1), logging.WARNING, "a malformed entry"),
        (lambda text: text.replace('"size":', '"size":true,"x":', 1), logging.WARNING, "a malformed entry"),
        (lambda text: '{"pickle": "cos\\nsystem\\n"}', logging.WARNING, "not a parsed-YAML cache"),
    ],
    ids=[
        "truncated", "garbage", "empty", "deep", "other-version", "other-schema", "other-root", "other-format",
        "bad-hash", "negative-inode", "extra-key", "foreign",
    ],
)  # fmt: skip
def test_a_damaged_or_foreign_cache_is_ignored_with_a_log_line_and_rebuilt(
    docs: Path,
    cache: Path,
    parsed: list[str],
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[str], str],
    level: int,
    why: str,
) -> None:
    fresh = load_registry(docs)
    path = cache_file(docs)
    path.write_text(damage(path.read_text()))
    parsed.clear()
    with caplog.at_level(logging.INFO, logger="prompt_composer"):
        same(load_registry(docs), fresh)
    assert len(parsed) == FILES
    [record] = [r for r in caplog.records if r.name == "prompt_composer.shared.yamlcache"]
    assert record.levelno == level
    assert record.getMessage().startswith(f"ignoring the parsed-YAML cache {path}: ")
    assert why in record.getMessage() and record.getMessage().endswith("; it will be rebuilt")
    parsed.clear()
    same(load_registry(docs), fresh)  # rebuilt
    assert parsed == []


def test_a_cache_path_that_is_no_file_is_ignored(
    docs: Path, cache: Path, caplog: pytest.LogCaptureFixture, parsed: list[str]
) -> None:
    path = cache_file(docs)
    path.mkdir(parents=True)  # a folder where the file goes: nothing can be read, and nothing can be written
    with caplog.at_level(logging.INFO, logger="prompt_composer"):
        same(load_registry(docs), load_registry(docs, cache=False))
    messages = [r.getMessage() for r in caplog.records if r.name == "prompt_composer.shared.yamlcache"]
    reason = f"{path}: cannot read the parsed-YAML cache: it is a directory"
    assert messages[0] == f"ignoring the parsed-YAML cache {path}: {reason}; it will be rebuilt"
    assert messages[1].startswith(f"cannot save the parsed-YAML cache {path}: ")


def test_cached_data_is_validated_and_problems_come_from_a_fresh_parse(
    docs: Path, cache: Path, parsed: list[str]
) -> None:
    """Data in the cache that fails validation (here planted in an entry that keeps data, not a model; a cache
    written under other rules could hold such) does not make a registry: the load parses every file again, and
    the file on disk decides."""
    fresh = load_registry(docs)
    written = document(docs)
    entry = written["files"]["read_file.yaml"]
    del entry["model"]
    entry["data"] = {**yaml.safe_load((docs / "read_file.yaml").read_text()), "brief": ""}  # no sentence: invalid
    cache_file(docs).write_text(json.dumps(written))
    parsed.clear()
    same(load_registry(docs), fresh)
    assert len(parsed) == FILES
    (docs / "list_files.yaml").write_text((docs / "list_files.yaml").read_text().replace("group:", "gruop:"))
    with pytest.raises(LoadError) as cached:
        load_registry(docs)
    with pytest.raises(LoadError) as uncached:
        load_registry(docs, cache=False)
    assert cached.value.problems == uncached.value.problems
    assert [p.line for p in cached.value.problems if p.path.name == "list_files.yaml"] == [1, 2]


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the models validated from a file (through yamlfile.load_model), in order."""
    names: list[str] = []
    for model in (ToolDoc, ModeConfig):
        real = model.model_validate

        def counting(data: Any, *, _real: Callable[..., Any] = real, _name: str = model.__name__) -> Any:
            names.append(_name)
            return _real(data)

        monkeypatch.setattr(model, "model_validate", counting)
    return names


def test_a_warm_load_validates_nothing_and_rebuilds_the_same_models(
    docs: Path, cache: Path, parsed: list[str], validations: list[str]
) -> None:
    """Each file keeps what validating it gave (a record, in place of its data); a later load of the same bytes
    rebuilds those models, equal field by field and type by type to a fresh validation's."""
    fresh = load_registry(docs, cache=False)
    validations.clear()
    load_registry(docs)
    assert len(validations) == FILES
    entries = document(docs)["files"]
    assert all("model" in entry and "data" not in entry for entry in entries.values())
    assert entries["read_file.yaml"]["model"]["class"] == "prompt_composer.core.docs.ToolDoc"
    validations.clear()
    parsed.clear()
    warm = load_registry(docs)
    assert validations == [] and parsed == []
    same(warm, fresh)
    for name, doc in fresh.tools.items():
        rebuilt = warm.tools[name]
        assert type(rebuilt) is ToolDoc and rebuilt.model_fields_set == doc.model_fields_set
        assert {k: type(v) for k, v in vars(rebuilt).items()} == {k: type(v) for k, v in vars(doc).items()}
    assert warm.modes["code"].config.permanent == ("read_file", "write_to_file")  # a tuple, as validated


def test_checks_across_files_run_on_every_load(docs: Path, cache: Path, validations: list[str]) -> None:
    """A mode naming a tool whose file is gone, and two files of one tool, are found though every file left comes
    from its record; the problems come from a fresh parse, at their lines."""
    age(docs)
    load_registry(docs)
    (docs / "write_to_file.yaml").unlink()
    with pytest.raises(LoadError) as gone:
        load_registry(docs)
    assert [(p.path.name, p.line) for p in gone.value.problems] == [("code.yaml", 9)]
    assert "unknown tool 'write_to_file'" in gone.value.problems[0].message
    with pytest.raises(LoadError) as uncached:
        load_registry(docs, cache=False)
    assert gone.value.problems == uncached.value.problems
    (docs / "write_to_file.yaml").write_text((BASE / "write_to_file.yaml").read_text())
    load_registry(docs)
    shutil.copy(docs / "list_files.yaml", docs / "list_files.yml")
    with pytest.raises(LoadError, match="duplicate tool name 'list_files'"):
        load_registry(docs)


@pytest.mark.parametrize(
    "damage",
    [
        lambda model: model.update(definition="0" * 64),
        lambda model: model.update({"class": "prompt_composer.core.modes.ModeConfig"}),
        lambda model: model["record"]["fields"].pop("brief"),
        lambda model: model["record"]["fields"].update(queries="open a file"),
        lambda model: model["record"].update(set=["nonsense"]),
    ],
    ids=["other-definition", "other-class", "missing-field", "wrong-type", "unknown-field-set"],
)
def test_a_record_of_another_definition_or_that_does_not_fit_is_not_used(
    docs: Path, cache: Path, parsed: list[str], validations: list[str], damage: Callable[[dict[str, Any]], None]
) -> None:
    """A record is bound to its model's class and definition (package, pydantic and model source), and must fit
    the model's fields: otherwise that file is read and validated again, and the others still come from theirs."""
    fresh = load_registry(docs)
    written = document(docs)
    damage(written["files"]["read_file.yaml"]["model"])
    cache_file(docs).write_text(json.dumps(written))
    parsed.clear()
    validations.clear()
    same(load_registry(docs), fresh)
    assert parsed == ["read_file.yaml"] and validations == ["ToolDoc"]
    kept = document(docs)["files"]["read_file.yaml"]["model"]  # recorded again, as validated now
    assert kept["definition"] == definition(ToolDoc)
    assert rebuild(kept["record"], ToolDoc) == fresh.tools["read_file"]


@pytest.mark.parametrize("where", ["folder", "file"])
def test_a_cache_others_could_have_written_is_ignored(
    docs: Path,
    cache: Path,
    parsed: list[str],
    caplog: pytest.LogCaptureFixture,
    where: str,
) -> None:
    """A cache file, or the folder holding it, that another user could write (group or world writable) is not
    read at all: every file is parsed and validated, with a warning saying why and what to do."""
    fresh = load_registry(docs)
    path = cache_file(docs)
    target = path.parent if where == "folder" else path
    target.chmod(0o770 if where == "folder" else 0o666)
    parsed.clear()
    with caplog.at_level(logging.INFO, logger="prompt_composer"):
        same(load_registry(docs), fresh)
    assert len(parsed) == FILES
    [record] = [r for r in caplog.records if r.name == "prompt_composer.shared.yamlcache"]
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(f"ignoring the parsed-YAML cache {path}: ")
    assert "writable by others" in record.getMessage() and "chmod go-w" in record.getMessage()


def test_a_cache_of_another_user_is_ignored(
    docs: Path, cache: Path, parsed: list[str], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = load_registry(docs)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(cache_file(docs)).st_uid + 1)
    parsed.clear()
    with caplog.at_level(logging.INFO, logger="prompt_composer"):
        same(load_registry(docs), fresh)
    assert len(parsed) == FILES
    assert any("owned by user" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_only_plain_data_is_cached(docs: Path, cache: Path, parsed: list[str]) -> None:
    """A value JSON cannot hold as it is (a YAML timestamp) leaves its file out of the cache: parsed each time."""
    target = docs / "read_file.yaml"
    target.write_text(target.read_text().replace("  type: object\n", "  type: object\n  x-since: 2024-01-02\n", 1))
    first = load_registry(docs)
    assert "read_file.yaml" not in document(docs)["files"]
    parsed.clear()
    same(load_registry(docs), first)
    assert parsed == ["read_file.yaml"]


def test_a_removed_file_leaves_the_cache(docs: Path, cache: Path) -> None:
    load_registry(docs)
    (docs / "modes" / "ask.yaml").unlink()
    load_registry(docs)
    assert "modes/ask.yaml" not in document(docs)["files"]


def test_the_cache_keeps_a_bounded_number_of_folders(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(yamlcache, "MAX_FOLDERS", 3)
    for n in range(5):
        shutil.copytree(BASE, tmp_path / f"d{n}")
        load_registry(tmp_path / f"d{n}")
    kept = sorted(p.name for p in (cache / "registry").iterdir())
    assert len(kept) == 3 and cache_file(tmp_path / "d4").name in kept


def test_a_live_registry_reloads_through_the_cache(docs: Path, cache: Path, parsed: list[str]) -> None:
    age(docs)
    live = LiveRegistry(docs)
    assert len(parsed) == FILES
    target = docs / "write_to_file.yaml"
    target.write_text(target.read_text().replace("Write", "Wrote", 1))
    parsed.clear()
    outcome = live.reload()
    assert outcome.swapped and parsed == ["write_to_file.yaml"]
    assert "Wrote" in live.current.tools["write_to_file"].brief + live.current.tools["write_to_file"].full


def test_without_a_user_cache_folder_the_folder_loads_without_the_cache(
    docs: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, parsed: list[str]
) -> None:
    """No $PROMPT_COMPOSER_CACHE, no $XDG_CACHE_HOME and no home folder to find (Path.home() raises)."""

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    with caplog.at_level(logging.INFO, logger="prompt_composer"):
        same(load_registry(docs), load_registry(docs, cache=False))
    assert parsed == []  # nothing went through the cache: every file was read by yamlfile alone
    assert f"loading {docs} without the parsed-file cache: Could not determine home directory." in caplog.text


@pytest.fixture
def fingerprinted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a registry's fingerprint is computed (registry.dumps writes what it hashes)."""
    calls: list[int] = []
    real = registry_module.dumps

    def counting(*args: Any, **kwargs: Any) -> str:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(registry_module, "dumps", counting)
    return calls


def test_the_fingerprint_is_kept_while_every_file_and_model_is_the_same(
    docs: Path, cache: Path, fingerprinted: list[int], tmp_path: Path
) -> None:
    """The fingerprint is a function of the models, so of the files' bytes and the models' definitions: a load of
    the very same files takes it from the cache; a changed, added or removed file, or an overlay, computes it."""
    age(docs)
    first = load_registry(docs)
    assert len(fingerprinted) == 1
    assert document(docs)["derived"]["registry fingerprint"]["value"] == first.fingerprint
    same(load_registry(docs), first)
    assert len(fingerprinted) == 1  # kept
    target = docs / "list_files.yaml"
    target.write_text(target.read_text().replace("List", "Lost", 1))
    edited = load_registry(docs)
    assert len(fingerprinted) == 2 and edited.fingerprint != first.fingerprint
    assert edited.fingerprint == load_registry(docs, cache=False).fingerprint
    fingerprinted.clear()
    (docs / "modes" / "ask.yaml").unlink()
    assert load_registry(docs).fingerprint == load_registry(docs, cache=False).fingerprint
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("code: {recent_size: 3}\n")
    fingerprinted.clear()
    load_registry(docs, overlay=overlay)
    load_registry(docs, overlay=overlay)
    assert len(fingerprinted) == 2  # the overlay's modes are not what the kept fingerprint was computed from


def test_a_fingerprint_kept_for_other_inputs_is_not_used(docs: Path, cache: Path, fingerprinted: list[int]) -> None:
    fresh = load_registry(docs)
    written = document(docs)
    written["derived"]["registry fingerprint"] = {"inputs": "0" * 64, "value": "not-a-fingerprint"}
    cache_file(docs).write_text(json.dumps(written))
    fingerprinted.clear()
    assert load_registry(docs).fingerprint == fresh.fingerprint and len(fingerprinted) == 1


def test_values_kept_by_a_cache_that_does_not_vouch_for_every_file_are_not_used(
    docs: Path, cache: Path, fingerprinted: list[int]
) -> None:
    """A kept value's inputs (names, bytes, versions) can be computed by anyone who has the checkout, so a cache
    planted in it could name them; the file identities it cannot. A load that parsed any file uses no kept value, and
    writes back only what it derived itself."""
    age(docs)
    fresh = load_registry(docs)
    planted = document(docs)
    planted["derived"]["registry fingerprint"]["value"] = "f" * 16
    planted["derived"]["registry cache token"]["value"] = "planted"
    for entry in planted["files"].values():
        entry["ino"] += 1  # entries no file here matches: each file is parsed again
    cache_file(docs).write_text(json.dumps(planted))
    fingerprinted.clear()
    loaded = load_registry(docs)
    assert loaded.fingerprint == fresh.fingerprint and len(fingerprinted) == 1
    assert loaded.cache_token not in (None, "planted")
    written = document(docs)["derived"]
    assert written["registry fingerprint"]["value"] == fresh.fingerprint
    assert written["registry cache token"]["value"] == loaded.cache_token
    again = load_registry(docs)  # vouched for now, by entries this load wrote
    assert again.cache_token == loaded.cache_token and len(fingerprinted) == 1


def test_an_entry_missing_a_key_is_a_damaged_cache(docs: Path, cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    fresh = load_registry(docs)
    damaged = document(docs)
    damaged["files"] = {name: {"data": 1} for name in damaged["files"]}
    cache_file(docs).write_text(json.dumps(damaged))
    with caplog.at_level(logging.INFO, logger="prompt_composer"):
        same(load_registry(docs), fresh)
    assert any("malformed entry" in r.getMessage() for r in caplog.records)


def test_a_load_that_changes_nothing_writes_nothing(docs: Path, cache: Path) -> None:
    """Not even when a file's data is one the cache cannot hold (it is parsed again each time, and left out)."""
    target = docs / "read_file.yaml"
    target.write_text(target.read_text().replace("  type: object\n", "  type: object\n  x-since: 2024-01-02\n", 1))
    age(docs)
    load_registry(docs)
    written = cache_file(docs).stat().st_mtime_ns
    os.utime(cache_file(docs), ns=(written - HOUR_NS, written - HOUR_NS))
    load_registry(docs)
    assert cache_file(docs).stat().st_mtime_ns == written - HOUR_NS


CARD = """\
name: memory
description: Persistent memory in a local knowledge graph. It remembers facts about the user across chats.
source: human
"""


def test_server_cards_load_through_the_cache_and_an_edit_of_one_is_seen(
    docs: Path, cache: Path, parsed: list[str]
) -> None:
    """A card (servers/<server>.yaml) is cached like a tool doc: a warm load parses nothing, an edit that keeps its
    size and modification time is seen (only that card parsed again), and a card broken after it was cached is
    refused at its own line, as a load without the cache refuses it."""
    card = docs / "servers" / "memory.yaml"
    card.parent.mkdir()
    card.write_text(CARD)
    age(docs)
    first = load_registry(docs)
    assert "servers/memory.yaml" in document(docs)["files"]
    assert first.servers["memory"].description.startswith("Persistent memory")
    parsed.clear()
    same(load_registry(docs), first)
    assert parsed == []
    before = card.stat()
    card.write_text(CARD.replace("Persistent", "Persisting", 1))  # same length
    os.utime(card, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (card.stat().st_size, card.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    edited = load_registry(docs)
    assert parsed == ["memory.yaml"]
    assert edited.servers["memory"].description.startswith("Persisting")
    assert edited.fingerprint != first.fingerprint
    same(edited, load_registry(docs, cache=False))
    card.write_text(CARD.replace("source: human", "source: guessed"))
    with pytest.raises(LoadError) as cached:
        load_registry(docs)
    with pytest.raises(LoadError) as uncached:
        load_registry(docs, cache=False)
    assert cached.value.problems == uncached.value.problems
    assert [(p.path.name, p.line) for p in cached.value.problems] == [("memory.yaml", 3)]
