"""``import mcp --servers FILE``: every server of an MCP client's own config, in one import.

The file is what a user already has: Claude Code's ``.mcp.json``, Cursor's ``.cursor/mcp.json`` and Claude
Desktop's config (``{"mcpServers": {...}}``), or VS Code's ``.vscode/mcp.json`` (``{"servers": {...}}``), the format
``serve --servers`` reads (:func:`prompt_composer.mcp.upstreams.load_servers`). Each enabled server, stdio or
Streamable HTTP, is started (or reached), listed and stopped in turn; its tools and its card are planned on top of
the servers before it (:func:`~.plan.plan_import`'s ``base``), and everything is written at once at the end: one
server that fails to start, or two that clash, and nothing is written.

A server's key in the file is its name (``origin.server``), as ``serve --servers`` routes calls by it. The
placeholders the clients expand in a value are expanded the same way: ``${VAR}`` and ``${VAR:-default}`` (Claude
Code), ``${env:VAR}`` and ``${workspaceFolder}`` (VS Code; the folder above ``.vscode``). VS Code's
``${input:…}`` asks the user in the editor, which an import cannot: it is an error naming the server.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ImporterError, InputFileError
from ..mcp.client import ServerSpec
from ..mcp.upstreams import load_servers
from .deadline import Deadline
from .folder import files_summary, recover_output_folder
from .from_mcp import list_server, plan_listing
from .plan import ImportPlan, apply_plan

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
SERVER_PREFIX = "{server}"  # in --prefix, each server's own name


@dataclass(frozen=True)
class ServersPlan:
    """The plans of every server of a client's config, each on top of the one before; the last one's files are
    the whole import's (see :func:`~.plan.plan_import`'s ``base``)."""

    out: Path
    source: Path
    plans: tuple[tuple[str, ServerSpec, ImportPlan], ...]

    @property
    def files(self) -> Mapping[str, str]:
        return self.plans[-1][2].files if self.plans else {}

    def report(self, *, dry_run: bool = False) -> list[str]:
        lines: list[str] = []
        for name, spec, plan in self.plans:
            lines.append(f"== {name} ({spec.describe()})")
            lines += plan.report(dry_run=dry_run, summary=False)
        if self.plans:  # the file names every server under the name its tools' origin.server holds
            lines.append(f"`serve` and `run` route these tools' calls with --servers {self.source}")
        lines.append(files_summary(self.files, self.out, dry_run=dry_run))
        return lines


def _expand(value: str, server: str, workspace: Path) -> str:
    def one(match: re.Match[str]) -> str:
        inner = match.group(1)
        if inner == "workspaceFolder":
            return str(workspace)
        if inner.startswith("input:"):
            raise ImporterError(
                f"server {server!r}: {match.group(0)} asks the user in VS Code, which an import cannot; put the "
                "value in the file, or in an environment variable written as ${env:NAME}"
            )
        name, _, default = inner.removeprefix("env:").partition(":-")
        if name in os.environ:
            return os.environ[name]
        if ":-" in inner:
            return default
        raise ImporterError(f"server {server!r}: {match.group(0)}: the environment variable {name!r} is not set")

    return _PLACEHOLDER.sub(one, value)


def expanded(spec: ServerSpec, server: str, workspace: Path) -> ServerSpec:
    """``spec`` with the placeholders of its command, arguments, environment, folder, URL and headers expanded."""
    values: dict[str, Any] = {
        "command": _expand(spec.command, server, workspace) if spec.command else None,
        "args": tuple(_expand(a, server, workspace) for a in spec.args),
        "env": {k: _expand(v, server, workspace) for k, v in spec.env.items()},
        "cwd": _expand(spec.cwd, server, workspace) if spec.cwd else None,
        "url": _expand(spec.url, server, workspace) if spec.url else None,
        "headers": {k: _expand(v, server, workspace) for k, v in spec.headers.items()},
    }
    return spec.model_copy(update=values)


def client_servers(path: str | Path) -> dict[str, ServerSpec]:
    """The enabled servers of a client's config file, placeholders expanded (see the module docstring)."""
    source = Path(path)
    try:
        specs = load_servers(source)
    except InputFileError as exc:
        raise ImporterError(str(exc)) from None
    if not specs:
        raise ImporterError(f"{source}: no enabled server in it (mcpServers, or VS Code's servers)")
    folder = source.resolve().parent
    workspace = folder.parent if folder.name == ".vscode" else folder
    return {name: expanded(spec, name, workspace) for name, spec in specs.items()}


def import_mcp_servers(
    path: str | Path,
    out: str | Path,
    *,
    group: str = "mcp",
    write_group: str | None = None,
    prefix: str = "",
    timeout: float = 30.0,
    dry_run: bool = False,
) -> ServersPlan:
    """Import every enabled server of the client config ``path`` into ``out`` in one import (all or nothing).

    ``timeout`` bounds each server's start and listing, and the whole import ``timeout`` × the number of servers.
    ``prefix`` may hold ``{server}``, each server's name (``--prefix '{server}_'`` keeps namesakes apart)."""
    specs = client_servers(path)
    if not dry_run:  # a journal that cannot be recovered stops the import before a server is started
        recover_output_folder(out)
    deadline = Deadline(timeout * len(specs), what=f"the servers of {path}")
    plans: list[tuple[str, ServerSpec, ImportPlan]] = []
    base: ImportPlan | None = None
    for name, spec in specs.items():
        try:
            listing = list_server(spec, timeout=timeout)
            base = plan_listing(
                listing,
                out,
                server=name,
                group=group,
                write_group=write_group,
                prefix=prefix.replace(SERVER_PREFIX, re.sub(r"[^A-Za-z0-9_-]", "_", name)),
                deadline=deadline,
                shown=spec.describe(),
                base=base,
            )
        except ImporterError as exc:
            raise ImporterError(f"server {name!r}: {exc}") from None
        plans.append((name, spec, base))
    result = ServersPlan(Path(out), Path(path), tuple(plans))
    if not dry_run and base is not None:
        apply_plan(base, deadline=deadline)
    return result
