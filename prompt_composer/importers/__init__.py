"""Importers: tool docs from JSON tool lists (Anthropic, OpenAI, MCP formats) and live MCP servers, and modes
from Roo Code's ``.roomodes``. Every import is planned, scanned for poisoning and validated before one file is
written.
"""

from typing import TYPE_CHECKING

from ..shared.lazy import attach

if TYPE_CHECKING:
    from .from_json import import_json
    from .from_mcp import import_mcp, list_mcp_tools
    from .plan import ImportPlan, plan_import
    from .roomodes import RooModesPlan, import_roomodes, plan_roomodes
    from .tool_list import read_tool_list

__all__ = [
    "ImportPlan",
    "RooModesPlan",
    "import_json",
    "import_mcp",
    "import_roomodes",
    "list_mcp_tools",
    "plan_import",
    "plan_roomodes",
    "read_tool_list",
]

__getattr__, __dir__ = attach(__name__, __file__)
