"""Where discovery keeps its files: the user cache folder (:func:`default_cache_dir`, from
:mod:`prompt_composer.shared.cache_dir`), which holds ``vectors/``, one vector file per embedding model
(:func:`vector_cache_path`), and ``models/``, the unpacked USE model (:mod:`.use_model`).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ..shared.cache_dir import default_cache_dir

__all__ = ["default_cache_dir", "vector_cache_path"]


def vector_cache_path(embedder_name: str, cache_dir: Path | None = None) -> Path:
    """The default vector file of a model: ``<cache>/vectors/<readable name>-<hash of the name>.npz``. One file
    per model, shared by every registry, so a doc embedded once is found again by any process."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", embedder_name).strip("-.")[:60] or "model"
    digest = hashlib.sha256(embedder_name.encode()).hexdigest()[:12]
    return (cache_dir or default_cache_dir()) / "vectors" / f"{slug}-{digest}.npz"
