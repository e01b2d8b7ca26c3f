"""The user cache folder, in one place every layer may use: discovery keeps its vectors and model there, the local
model its weights, and the registry loader its parsed files (:mod:`.yamlcache`)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "PROMPT_COMPOSER_CACHE"


def default_cache_dir() -> Path:
    """``$PROMPT_COMPOSER_CACHE``, else ``$XDG_CACHE_HOME/prompt-composer``, else ``~/.cache/prompt-composer``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prompt-composer"
