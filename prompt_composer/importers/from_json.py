"""Importing a JSON tool list file (Anthropic, OpenAI or MCP ``tools/list``) into a tool-doc folder."""

from __future__ import annotations

from pathlib import Path

from ..core.cards import ServerCard
from .cards import check_server_name, given_card, registry_card
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
    server_description: str | None = None,
    server_title: str | None = None,
    server_card: str | Path | ServerCard | None = None,
) -> ImportPlan:
    """Import a JSON tool list file into the folder ``out`` (all or nothing; merges with earlier imports).

    Read-only tools go to ``group``, writing ones to ``write_group`` (default ``<group>-write``).

    The server's card (``servers/<server>.yaml``, what it is for): ``server_description`` (and ``server_title``),
    a person's words; else ``server_card``, an MCP registry ``server.json`` (a path) or a card; else one drafted
    from the tools' names (see :mod:`.cards`).
    """
    _, tools = read_tool_list(path)
    server = check_server_name(server or Path(path).stem)
    card: ServerCard | None = None
    if server_description is not None:
        card = given_card(server, server_description, title=server_title)
    elif isinstance(server_card, ServerCard):
        card = server_card.model_copy(update={"name": server})
    elif server_card is not None:
        card = registry_card(server_card, server)
    if not dry_run:
        recover_output_folder(out)
    plan = plan_tools(tools, out, server=server, group=group, write_group=write_group, prefix=prefix, card=card)
    if not dry_run:
        apply_plan(plan)
    return plan
