"""The command's settings, resolved in one place: a flag, else an environment variable, else the
``[tool.prompt-composer]`` table of the nearest ``pyproject.toml`` above the working directory, else the default.

Only the command reads settings: the library takes its folder, mode and overlay as arguments, so a program that
imports it never depends on the environment or on which folder it was started in.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import InputFileError, did_you_mean

TABLE = "tool.prompt-composer"
SettingName = Literal["docs", "mode", "overlay", "event_log", "registry_cache"]

# Per setting: its environment variable, its key in [tool.prompt-composer], its flag, and whether it is a path.
# Paths read from pyproject.toml are relative to that file's folder; from a flag or the environment, to the
# working directory, as any path typed in a shell is.
ENV: Mapping[SettingName, str] = {
    "docs": "PROMPT_COMPOSER_DOCS",
    "mode": "PROMPT_COMPOSER_MODE",
    "overlay": "PROMPT_COMPOSER_OVERLAY",
    "event_log": "PROMPT_COMPOSER_EVENT_LOG",
    "registry_cache": "PROMPT_COMPOSER_REGISTRY_CACHE",
}
KEYS: Mapping[SettingName, str] = {
    "docs": "docs",
    "mode": "default-mode",
    "overlay": "overlay",
    "event_log": "event-log",
    "registry_cache": "registry-cache",
}
FLAGS: Mapping[SettingName, str] = {
    "docs": "--docs",
    "mode": "--mode",
    "overlay": "--overlay",
    "event_log": "--log",
    "registry_cache": "--no-cache",
}
PATHS: frozenset[SettingName] = frozenset({"docs", "overlay", "event_log"})
DEFAULTS: Mapping[SettingName, str] = {
    "docs": "the shipped tool docs",
    "mode": "none: --mode is needed",
    "overlay": "none",
    "event_log": "none: nothing is logged",
    "registry_cache": "on: parsed docs are kept in the user cache",
}
SWITCHES: Mapping[str, bool] = {"on": True, "off": False}  # the values of registry-cache (TOML's true/false too)


@dataclass(frozen=True)
class Setting:
    """One effective setting: its value (``None``: the default applies) and where it came from."""

    name: SettingName
    value: str | None
    source: str  # "flag --docs", "env PROMPT_COMPOSER_DOCS", "/p/pyproject.toml [tool.prompt-composer] docs", "default"

    def as_dict(self) -> dict[str, str | None]:
        return {"value": self.value, "source": self.source}


@dataclass(frozen=True)
class Settings:
    docs: Setting
    mode: Setting
    overlay: Setting
    event_log: Setting
    registry_cache: Setting
    pyproject: Path | None  # the pyproject.toml whose table was read, if any

    def all(self) -> tuple[Setting, ...]:
        return (self.docs, self.mode, self.overlay, self.event_log, self.registry_cache)


def find_pyproject(start: Path) -> tuple[Path, dict[str, object]] | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has a ``[tool.prompt-composer]`` table, and that
    table; a ``pyproject.toml`` without one is passed over, as ruff and mypy pass over one without theirs."""
    for folder in (start, *start.parents):
        path = folder / "pyproject.toml"
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise InputFileError(f"{path}: cannot read: {exc}", path=path) from None
        except tomllib.TOMLDecodeError as exc:
            raise InputFileError(f"{path}: not valid TOML: {exc}", path=path) from None
        tool = data.get("tool")
        if not isinstance(tool, dict) or "prompt-composer" not in tool:
            continue
        table = tool["prompt-composer"]
        if not isinstance(table, dict):
            raise InputFileError(f"{path}: [{TABLE}] must be a table, not {type(table).__name__}", path=path)
        return path, table
    return None


def _from_table(path: Path, table: Mapping[str, object]) -> dict[SettingName, str]:
    names = {key: name for name, key in KEYS.items()}
    found: dict[SettingName, str] = {}
    for key, value in table.items():
        if key not in names:
            hint = did_you_mean(key, tuple(names))
            raise InputFileError(
                f"{path}: [{TABLE}] has an unknown key {key!r}; {hint + ' ' if hint else ''}"
                f"(known keys: {', '.join(names)})",
                path=path,
            )
        if key == KEYS["registry_cache"] and isinstance(value, bool):
            value = "on" if value else "off"
        if not isinstance(value, str) or not value.strip():
            raise InputFileError(f"{path}: [{TABLE}] {key} must be a non-empty string, not {value!r}", path=path)
        name = names[key]
        found[name] = str((path.parent / value).resolve()) if name in PATHS else value.strip()
    docs = found.get("docs")
    if docs is not None and not Path(docs).is_dir():
        raise InputFileError(f"{path}: [{TABLE}] docs: folder {docs} does not exist", path=path)
    return found


def resolve(
    flags: Mapping[SettingName, str | None],
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Every setting from ``flags`` (``None``: not given), then ``environ``, then the nearest pyproject.toml above
    ``cwd``. A bad pyproject.toml is an :class:`InputFileError` naming the file and the key, even when a flag
    would have won: a broken setting should not wait for the day the flag is left out."""
    environ = os.environ if environ is None else environ
    found = find_pyproject((cwd or Path.cwd()).resolve())
    table = _from_table(*found) if found else {}
    settings: dict[SettingName, Setting] = {}
    for name in ENV:
        flag = flags.get(name)
        env = environ.get(ENV[name], "")
        if flag:
            settings[name] = Setting(name, flag, f"flag {FLAGS[name]}")
        elif env:
            settings[name] = Setting(name, env, f"env {ENV[name]}")
        elif name in table and found:
            settings[name] = Setting(name, table[name], f"{found[0]} [{TABLE}] {KEYS[name]}")
        else:
            settings[name] = Setting(name, None, "default")
    return Settings(pyproject=found[0] if found else None, **settings)
