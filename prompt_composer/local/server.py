"""Serving the local model: llama.cpp's server (``llama-server``, embedded in the ``xllamacpp`` wheel, the
``local`` extra) on loopback, with the packaged chat templates.

``serve()`` runs it in this process, speaking the Anthropic Messages API (``/v1/messages``) and the OpenAI one
(``/v1/chat/completions``); :class:`LocalModelServer` starts ``prompt-composer model serve`` as a child process
for tests and benchmarks.
"""

from __future__ import annotations

import ctypes
import logging
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ..errors import InputFileError, LocalModelError
from ..shared.extras import needs_extra
from ..shared.files import read_text
from ..shared.net import is_loopback, netloc
from .weights import DEFAULT_WEIGHTS, is_set_up, model_path

log = logging.getLogger(__name__)

# Packaged chat templates by name (files in prompt_composer/local/chat_templates/).
CHAT_TEMPLATES = ("qwen2.5-json-tools",)
MAX_TEMPLATE_BYTES = 1024 * 1024  # a chat template is a few kilobytes of Jinja


def chat_template(name: str) -> str:
    """The text of a packaged chat template."""
    if name not in CHAT_TEMPLATES:
        raise LocalModelError(f"no packaged chat template {name!r}; packaged: {', '.join(CHAT_TEMPLATES)}")
    return (
        resources.files("prompt_composer.local").joinpath("chat_templates", f"{name}.jinja").read_text(encoding="utf-8")
    )


def runtime() -> Any:
    """The llama.cpp runtime (``xllamacpp``), or :class:`LocalModelError` naming the ``local`` extra."""
    try:
        import xllamacpp
    except ImportError as exc:
        raise LocalModelError(needs_extra("the local model runtime (llama.cpp)", "local")) from exc
    return xllamacpp


def read_chat_template(path: str | Path) -> str:
    """The Jinja chat template in the file ``path``: a regular file of at most MAX_TEMPLATE_BYTES (a FIFO or a
    device is refused without blocking), else a LocalModelError naming it."""
    try:
        return read_text(path, what="chat template", max_bytes=MAX_TEMPLATE_BYTES)
    except InputFileError as exc:
        raise LocalModelError(str(exc)) from None


def serve(
    *,
    gguf: Path | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    ctx: int = 16384,
    template: str | None = None,
    threads: int | None = None,
    out: IO[str] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Run llama.cpp's server in this process until SIGINT/SIGTERM (or ``stop``), printing
    ``READY http://HOST:PORT`` on ``out`` (when given) once ``/health`` answers.

    ``template``: a packaged template name, a path to a Jinja file, or ``"gguf"`` for the file's own. Default:
    the packaged template of the default weights; the GGUF's own for a file given with ``gguf``."""
    path = gguf if gguf is not None else model_path()
    if gguf is None and not is_set_up():
        raise LocalModelError(f"no verified model at {path}: run `prompt-composer model setup` first")
    if not path.is_file():
        raise LocalModelError(f"no model file at {path}")
    if template is None:
        template = "gguf" if gguf is not None else DEFAULT_WEIGHTS.chat_template
    xllamacpp = runtime()
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = ctx
    params.n_parallel = 1  # one slot: its KV cache is the prompt cache, and requests queue
    params.use_jinja = True  # native tool calls need the Jinja chat templates
    params.cache_prompt = True
    params.hostnames = [host]
    params.port = port
    if threads is not None:
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
    if template in CHAT_TEMPLATES:
        params.chat_template = chat_template(template)
    elif template != "gguf":
        params.chat_template = read_chat_template(template)
    if not is_loopback(host):
        log.warning("serving on %s: anyone who reaches it can use the model (no API key)", host)
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as exc:  # llama.cpp has logged why (a bad GGUF, a port in use …) on stderr
        raise LocalModelError(f"llama.cpp could not start a server for {path} on {host}:{port} ({exc})") from exc
    url = listening_url(str(server.listening_address))
    _wait_healthy(url)
    if out is not None:
        out.write(f"READY {url}\n")
        out.flush()
    stop = stop or threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        del server  # stops the HTTP server and frees the model


def listening_url(address: str) -> str:
    """llama.cpp's listening address as a URL: it writes an IPv6 host bare (``http://::1:8080``), which httpx (and
    so the SDKs) rejects; the host goes in brackets (``http://[::1]:8080``)."""
    scheme, sep, rest = address.partition("://")
    host, colon, port = rest.rstrip("/").rpartition(":")
    if not (sep and colon and port.isascii() and port.isdigit()):
        return address
    return f"{scheme}://{netloc(host, int(port))}"


def _wait_healthy(url: str, timeout: float = 120.0) -> None:
    """Block until ``GET /health`` answers 200 (the model is loaded and a slot is ready)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise LocalModelError(f"the server at {url} did not answer /health within {timeout:.0f} s")
        time.sleep(0.1)


class LocalModelServer:
    """``prompt-composer model serve`` in a child process, for tests and benchmarks::

    with LocalModelServer() as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="local")
    """

    def __init__(
        self,
        *,
        gguf: Path | None = None,
        ctx: int = 16384,
        template: str | None = None,
        timeout: float = 120.0,
        threads: int | None = None,
    ) -> None:
        """``threads``: ``model serve --threads`` (default: llama.cpp's, every core)."""
        self.command = [sys.executable, "-m", "prompt_composer", "model", "serve", "--port", "0", "--ctx", str(ctx)]
        if gguf is not None:
            self.command += ["--gguf", str(gguf)]
        if threads is not None:
            self.command += ["--threads", str(threads)]
        if template is not None:
            self.command += ["--chat-template", template]
        self.timeout = timeout
        self.base_url = ""
        self._process: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None

    def start(self) -> str:
        self._log = errlog = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by stop())
        process = subprocess.Popen(
            self.command,
            stdout=subprocess.PIPE,
            stderr=errlog,
            text=True,
            start_new_session=True,  # a Ctrl-C in the terminal is the parent's to handle
            preexec_fn=_die_with_parent,  # a parent killed without cleanup must not leave 2 GB behind
        )
        self._process = process
        assert process.stdout is not None
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(process.stdout.readline() if process.stdout else ""))
        reader.start()
        reader.join(self.timeout)
        line = lines[0].strip() if lines else ""
        if not line.startswith("READY "):
            try:  # its stdout closed: it is exiting (give it a moment to say with what code)
                exited: int | None = process.wait(timeout=5) if lines else None
            except subprocess.TimeoutExpired:
                exited = None
            errlog.seek(0)
            lines = errlog.read().strip().splitlines()
            errors = [text for text in lines if " E " in text or "Error" in text] or lines[-3:]
            self.stop()
            why = f"exited with code {exited}" if exited is not None else f"did not start within {self.timeout:.0f} s"
            raise LocalModelError(f"the model server {why}: {' | '.join(errors[-3:]) or line}")
        self.base_url = line.removeprefix("READY ")
        return self.base_url

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 30 s) and release its pipes."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LocalModelServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to send SIGTERM when the parent dies (elsewhere: nothing)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
