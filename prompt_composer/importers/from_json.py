"""Importing a JSON tool list file (Anthropic, OpenAI or MCP ``tools/list``) into a tool-doc folder."""

from __future__ import annotations

from pathlib import Path

from .folder import recover_output_folder
from .plan import ImportPlan, apply_plan, plan_tools
from .tool_list import read_tool_list


def import_json(
    path: str | Path,
    out: str | Path,
    *,
    server: str | None = None,
    group: str = "mcp",
    write_group: str | None = None,
    prefix: str = "",
    dry_run: bool = False,
) -> ImportPlan:
    """Import a JSON tool list file into the folder ``out`` (all or nothing; merges with earlier imports).

    Read-only tools go to ``group``, writing ones to ``write_group`` (default ``<group>-write``).
    """
    _, tools = read_tool_list(path)
    server = server or Path(path).stem
    if not dry_run:
        recover_output_folder(out)
    plan = plan_tools(tools, out, server=server, group=group, write_group=write_group, prefix=prefix)
    if not dry_run:
        apply_plan(plan)
    return plan
