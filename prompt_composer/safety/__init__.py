"""Safety: the tool-poisoning lint (rules over every text a model can see) and the bounded, read-only
workspace executors.

Built on :mod:`prompt_composer.core` only.
"""

from typing import TYPE_CHECKING

from ..shared.lazy import attach

if TYPE_CHECKING:
    from .executors import ToolExecutor, workspace_executors
    from .lint import Finding, SecurityReport, scan, scan_registry
    from .workspace import Limits, Workspace

__all__ = [
    "Finding",
    "Limits",
    "SecurityReport",
    "ToolExecutor",
    "Workspace",
    "scan",
    "scan_registry",
    "workspace_executors",
]

__getattr__, __dir__ = attach(__name__, __file__)
