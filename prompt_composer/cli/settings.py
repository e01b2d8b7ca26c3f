"""The command's settings, resolved in one place: a flag, else an environment variable, else the
``[tool.prompt-composer]`` table of the nearest ``pyproject.toml`` above the working directory, else the default.

Only the command reads settings: the library takes its folder, mode and overlay as arguments, so a program that
imports it never depends on the environment or on which folder it was started in.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import InputFileError, PromptComposerError, did_you_mean
from ..shared.files import read_text

TABLE = "tool.prompt-composer"
SettingName = Literal["docs", "mode", "overlay", "event_log", "registry_cache"]

# Per setting: its environment variable, its key in [tool.prompt-composer], its flag, and whether it is a path.
# Paths read from pyproject.toml are relative to that file's folder; from a flag or the environment, to the
# working directory, as any path typed in a shell is. A checkout is untrusted input (a CI job runs on a pull
# request's): a path from its pyproject.toml must stay inside the project root, one from the environment inside
# the project root or the user's own prompt-composer folders, and only a flag names any path.
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
MAX_PYPROJECT_BYTES = 1024 * 1024  # the largest real pyproject.toml is tens of kB
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux
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
    root: Path  # the project root: that pyproject's real folder, else project_root() of the working directory

    def all(self) -> tuple[Setting, ...]:
        return (self.docs, self.mode, self.overlay, self.event_log, self.registry_cache)


def read_pyproject(path: Path) -> dict[str, object]:
    """``path`` parsed: at most :data:`MAX_PYPROJECT_BYTES`, a regular file, TOML nested within reason; else an
    InputFileError naming the file and the problem, in one line."""
    import tomllib  # only where there is a pyproject.toml: not on every start

    text = read_text(path, what="pyproject.toml", max_bytes=MAX_PYPROJECT_BYTES)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError(f"{path}: not valid TOML: {exc}", path=path) from None
    except RecursionError:
        raise InputFileError(f"{path}: not valid TOML: arrays or tables nested too deeply", path=path) from None


def find_pyproject(start: Path) -> tuple[Path, dict[str, object]] | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has a ``[tool.prompt-composer]`` table, and that
    table; a ``pyproject.toml`` without one is passed over, as ruff and mypy pass over one without theirs. One that
    cannot be read (too large, not TOML, nested too deeply) is an error: it might have held the table."""
    for folder in (start, *start.parents):
        path = folder / "pyproject.toml"
        if not path.is_file():
            continue
        tool = read_pyproject(path).get("tool")
        if not isinstance(tool, dict) or "prompt-composer" not in tool:
            continue
        table = tool["prompt-composer"]
        if not isinstance(table, dict):
            raise InputFileError(f"{path}: [{TABLE}] must be a table, not {type(table).__name__}", path=path)
        return path, table
    return None


def project_root(here: Path) -> Path:
    """The project a command runs in when no pyproject.toml has the table: the nearest folder at or above
    ``here`` holding a ``pyproject.toml`` or ``.git``, else ``here`` itself."""
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() or os.path.lexists(folder / ".git"):
            return folder
    return here


def user_folders() -> tuple[Path, ...]:
    """Your own prompt-composer folders, where a path from the environment may point besides the project:
    ``$XDG_CONFIG_HOME/prompt-composer`` (``~/.config``) and ``$XDG_STATE_HOME/prompt-composer``
    (``~/.local/state``). Both end in ``prompt-composer``, whatever the variables say."""
    home = Path.home()
    config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    state = os.environ.get("XDG_STATE_HOME") or str(home / ".local" / "state")
    return tuple(Path(os.path.realpath(Path(base) / "prompt-composer")) for base in (config, state))


def _path_problem(value: str) -> str | None:
    """Why ``value`` cannot be a path at all (a NUL, too long), or ``None``."""
    if "\0" in value:
        return "holds a NUL character"
    if len(value) > MAX_PATH_CHARS:
        return f"is {len(value):,} characters long; a path here is at most {MAX_PATH_CHARS:,}"
    if any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in value.split("/")):
        return "has a name longer than 255 bytes"
    return None


class Outside(ValueError):
    """A path that resolves outside the folders it must stay in."""


def confined(value: str, base: Path, roots: tuple[Path, ...], *, folder: bool) -> str:
    """The real path of ``value`` (relative to ``base``), which must lie inside one of ``roots`` (real paths),
    symlinks resolved; a ``folder`` must exist and be a directory. A ``ValueError`` saying what is wrong
    (:class:`Outside` when it leaves them)."""
    problem = _path_problem(value)
    if problem:
        raise ValueError(problem)
    real = os.path.realpath(base / value)
    if not any(Path(real).is_relative_to(root) for root in roots):
        shown = " or ".join(str(root) for root in roots)
        raise Outside(f"{value!r} resolves to {real}, outside {shown}")
    try:
        info = os.stat(real)
    except FileNotFoundError:
        if folder:
            raise ValueError(f"folder {real} does not exist") from None
        return real
    except OSError as exc:  # a symlink loop, a name too long for the filesystem
        raise ValueError(f"{value!r}: {exc.strerror or exc}") from None
    if folder and not stat.S_ISDIR(info.st_mode):
        raise ValueError(f"{real} is not a folder")
    return real


def _from_table(path: Path, table: Mapping[str, object]) -> dict[SettingName, str]:
    """The settings of the table; a path must resolve inside the project root (the pyproject's real folder)."""
    names = {key: name for name, key in KEYS.items()}
    root = Path(os.path.realpath(path.parent))
    found: dict[SettingName, str] = {}
    for key, value in table.items():  # every key checked before any path is looked at
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
        found[names[key]] = value if names[key] in PATHS else value.strip()
    for name in PATHS & found.keys():
        try:
            found[name] = confined(found[name], root, (root,), folder=name == "docs")
        except ValueError as exc:
            inside = "a path in pyproject.toml must stay inside its folder, symlinks resolved"
            where = f"; {inside}, or be given with {FLAGS[name]}" if isinstance(exc, Outside) else ""
            raise InputFileError(f"{path}: [{TABLE}] {KEYS[name]}: {exc}{where}", path=path) from None
    return found


def _from_environment(name: SettingName, value: str, cwd: Path, project: Path) -> str:
    """A setting's value from the environment: a path must resolve inside the project root or your own
    prompt-composer folders (:func:`user_folders`): a checkout can set variables too (a ``.env`` file)."""
    if name not in PATHS:
        return value
    try:
        return confined(value, cwd, (project, *user_folders()), folder=False)
    except ValueError as exc:
        why = (
            "; a path from the environment must be inside the project or your own prompt-composer folders (a "
            f"checkout can set variables too); give it with {FLAGS[name]} instead"
            if isinstance(exc, Outside)
            else ""
        )
        raise PromptComposerError(f"env {ENV[name]}: {exc}{why}") from None


def resolve(
    flags: Mapping[SettingName, str | None],
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Every setting from ``flags`` (``None``: not given), then ``environ``, then the nearest pyproject.toml above
    ``cwd``. A bad pyproject.toml is an :class:`InputFileError` naming the file and the key, even when a flag
    would have won: a broken setting should not wait for the day the flag is left out.

    Paths from the pyproject must resolve inside its folder, and paths from the environment inside the project
    root (the pyproject's folder, else :func:`project_root`) or your own prompt-composer folders; a flag may
    name any path (docs/security.md, "Running on an untrusted checkout")."""
    environ = os.environ if environ is None else environ
    here = Path(os.path.realpath(cwd or Path.cwd()))
    found = find_pyproject(here)
    table = _from_table(*found) if found else {}
    project = Path(os.path.realpath(found[0].parent)) if found else project_root(here)
    settings: dict[SettingName, Setting] = {}
    for name in ENV:
        flag = flags.get(name)
        env = environ.get(ENV[name], "")
        if flag:
            settings[name] = Setting(name, flag, f"flag {FLAGS[name]}")
        elif env:
            settings[name] = Setting(name, _from_environment(name, env, here, project), f"env {ENV[name]}")
        elif name in table and found:
            settings[name] = Setting(name, table[name], f"{found[0]} [{TABLE}] {KEYS[name]}")
        else:
            settings[name] = Setting(name, None, "default")
    return Settings(pyproject=found[0] if found else None, root=project, **settings)
