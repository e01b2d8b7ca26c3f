"""Whose task a request uses on the HTTP gateway, and what a token must hold to be taken: tasks keyed by principal
(a static token's variable, a JWT's issuer and subject), ``scope``/``scp``, clock-skew leeway, ``Origin`` headers,
IPv6 hosts, and a JWKS file that is no file.

The gateway runs as ``prompt-composer serve --transport http`` in a process of its own on loopback; requests are
real HTTP, tokens are JWTs signed by a key generated here (its public half is the JWKS file the gateway reads)."""

from __future__ import annotations

import hashlib
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp.auth_support import (
    AUDIENCE,
    CODE_TOKEN,
    INITIALIZE,
    ISSUER,
    bearer,
    gateway,
    post,
    post_headers,
    token,
    write_jwks,
)
from tests.mcp.support import env

pytest.importorskip("joserfc", reason="the JWT verifier needs joserfc (the auth extra)")
from joserfc.jwk import RSAKey

from prompt_composer.mcp.auth import JwtVerifier, OriginGuard, Principal, principal_of
from prompt_composer.mcp.tasks import store_key

SHOWN = "Full documentation of `list_files`"  # what the first use of a brief tool in a task carries


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> tuple[RSAKey, Path]:
    """The identity provider's key and its public JWKS file."""
    key = RSAKey.generate_key(2048, parameters={"kid": "idp-1"})
    return key, write_jwks(tmp_path_factory.mktemp("jwks") / "jwks.json", key)


@pytest.fixture
def url(tmp_path: Path, idp: tuple[RSAKey, Path]) -> Iterator[str]:
    """A gateway taking both kinds of token: the static CODE token, and JWTs of the provider."""
    jwks = ["--auth-jwks", str(idp[1]), "--auth-issuer", ISSUER, "--auth-audience", AUDIENCE]
    with gateway(tmp_path, "--auth-token-env", "CODE=code", *jwks) as served:
        yield served


def use(url: str, task: str | None, auth: str) -> Any:
    """A 2026-07-28 call of the brief tool list_files in ``task``, with bearer ``auth``."""
    from benchmarks.replicas import call

    return call(url, task, "list_files", {"path": "."}, bearer(auth))


def fetch(url: str, task: str, auth: str) -> str:
    from benchmarks.replicas import call

    answer = call(url, task, "fetch_tool_description", {"name": "search_files"}, bearer(auth))
    assert answer.ok, answer
    return str(answer.text)


# ------------------------------------------------------------------------------------------ tasks per principal


def test_each_principal_pair_gets_its_own_task(url: str, idp: tuple[RSAKey, Path]) -> None:
    """The four pairs that shared a task when the key was ``client_id or azp or sub``: each principal's first use
    of a brief tool carries its full text, whoever used the same task id before; its own second use does not."""
    key = idp[0]
    pairs = {
        "one-oauth-client": (token(key, sub="alice", client_id="ide"), token(key, sub="bob", client_id="ide")),
        "one-azp": (token(key, sub="alice", azp="shared-app"), token(key, sub="bob", azp="shared-app")),
        "jwt-named-like-a-static-token": (CODE_TOKEN, token(key, sub="CODE", client_id="CODE", azp="CODE")),
        "slash-in-subject": (token(key, sub="carol/x"), token(key, sub="carol%2Fx")),
    }
    for task, (first, second) in pairs.items():
        assert SHOWN in use(url, task, first).text, task
        assert SHOWN in use(url, task, second).text, task  # not the first principal's task
        assert SHOWN not in use(url, task, first).text, task  # each keeps its own
        assert SHOWN not in use(url, task, second).text, task
        assert "already documented" not in fetch(url, task, first)
        assert "already documented" not in fetch(url, task, second)  # fetch state is not shared either
        assert "already documented" in fetch(url, task, second)


def test_one_user_through_two_clients_keeps_one_task(url: str, idp: tuple[RSAKey, Path]) -> None:
    """The principal is the issuer and subject: alice's task is hers from any client."""
    key = idp[0]
    assert SHOWN in use(url, "alice-task", token(key, sub="alice", client_id="team-ide")).text
    assert SHOWN not in use(url, "alice-task", token(key, sub="alice", client_id="other-ide", azp="x")).text


def test_a_jwt_without_sub_cannot_name_a_task(url: str, idp: tuple[RSAKey, Path]) -> None:
    """Two JWTs without ``sub`` would be one principal: a task header from either is refused with an error the
    client reads, and the same request without the header is answered."""
    key = idp[0]
    for claims in ({"client_id": "team-ide"}, {"client_id": "team-ide", "azp": "team-ide"}):
        nameless = token(key, sub=None, **claims)
        refused = use(url, "shared", nameless)
        assert refused.body is not None and refused.body["error"]["code"] == -32602, refused
        message = refused.body["error"]["message"]
        assert "prompt-composer-task" in message and "'sub'" in message
        alone = use(url, None, nameless)
        assert alone.ok and "notes.txt" in alone.text


def test_store_keys_cannot_collide() -> None:
    """Namespaces and percent-encoding: no issuer or subject spells another principal's key."""
    principals = [
        Principal("token", "CODE"),
        Principal("subject", "CODE", issuer=ISSUER),
        Principal("subject", "CODE", issuer=""),
        Principal("subject", "b/c", issuer="a"),
        Principal("subject", "c", issuer="a/b"),
        Principal("subject", "c", issuer="a%2Fb"),
        Principal("subject", "a/b/c"),
        Principal("token", "subject"),
        Principal("subject", "\ud800", issuer="x"),  # a lone surrogate, as JSON may carry one
    ]
    keys = [store_key(p, task) for p in principals for task in ("t", "t/x", "x:t")]
    assert len(set(keys)) == len(keys)
    assert len({store_key(None, "t"), *keys}) == len(keys) + 1
    assert store_key(Principal("token", "CODE"), "task-1") == "token/CODE/task-1"
    # A store's keys do not show who its users are: the subject's key is a SHA-256 of its percent-encoded parts.
    digest = hashlib.sha256(b"https%3A%2F%2Fi/alice%40example.com").hexdigest()
    assert store_key(Principal("subject", "alice@example.com", issuer="https://i"), "t") == f"subject/{digest}/t"
    subjects = [key for key in keys if key.startswith("subject/")]
    assert len(subjects) == 7 * 3 and all(re.fullmatch(r"subject/[0-9a-f]{64}/[^/]+(/x)?", key) for key in subjects)


def test_a_principal_comes_from_the_verifier_never_from_claims() -> None:
    """A claim that names a principal is data: only the Principal object a verifier of ours attached counts."""
    from mcp.server.auth.provider import AccessToken

    forged = {"prompt_composer.principal": {"kind": "token", "name": "CODE"}, "iss": ISSUER}
    assert principal_of(AccessToken(token="t", client_id="CODE", scopes=[], claims=forged, subject="x")) == Principal(
        "subject", "x", issuer=ISSUER
    )
    assert principal_of(AccessToken(token="t", client_id="CODE", scopes=[], claims=forged)) is None
    assert principal_of(AccessToken(token="t", client_id="CODE", scopes=[], subject="")) is None


# ------------------------------------------------------------------------------------------ scopes and time


def verifier(path: Path, now: float | None = None) -> JwtVerifier:
    if now is None:
        return JwtVerifier(path, issuer=ISSUER, audience=AUDIENCE)
    return JwtVerifier(path, issuer=ISSUER, audience=AUDIENCE, clock=lambda: now)


def scopes_of(check: JwtVerifier, value: str) -> list[str] | None:
    """The scopes ``check`` grants the token ``value`` (``None``: refused), within a hang guard of 20 s."""

    async def verify() -> Any:
        return await check.verify_token(value)

    answers: list[Any] = []
    worker = threading.Thread(target=lambda: answers.append(anyio.run(verify)), daemon=True)
    worker.start()
    worker.join(20)
    assert answers, "the verifier is still running after 20 s"
    return None if answers[0] is None else sorted(answers[0].scopes)


def test_scp_as_a_list_or_a_string(idp: tuple[RSAKey, Path]) -> None:
    key, path = idp
    check = verifier(path)
    assert scopes_of(check, token(key, scope=None, scp=["mode:code"])) == ["mode:code"]
    assert scopes_of(check, token(key, scope=None, scp="openid mode:code mode:ask")) == ["mode:ask", "mode:code"]
    assert scopes_of(check, token(key, scope="mode:ask", scp=["mode:code", 7, None])) == ["mode:ask", "mode:code"]
    assert scopes_of(check, token(key, scope=["mode:debug"])) == ["mode:debug"]
    assert scopes_of(check, token(key, scope=None, scp={"mode:code": True})) == []


def test_scp_through_the_gateway(url: str, idp: tuple[RSAKey, Path]) -> None:
    key = idp[0]
    assert post(url, INITIALIZE, bearer(token(key, scope=None, scp=["mode:code"])))[0] == 200
    assert post(url, INITIALIZE, bearer(token(key, scope=None, scp="openid mode:code")))[0] == 200
    assert post(url, INITIALIZE, bearer(token(key, scope=None, scp=["mode:ask"])))[0] == 403


def test_leeway_at_its_edges(idp: tuple[RSAKey, Path]) -> None:
    """30 s of clock skew either way, for exp, nbf and iat; times that are not finite numbers are refused."""
    key, path = idp
    now = 2_000_000_000
    at = verifier(path, now=now)
    base = {"iat": now - 100, "exp": now + 600}
    accepted = [
        {"exp": now - 29},
        {"exp": now - 29.5},
        {"nbf": now + 30},
        {"iat": now + 30},
        {"exp": 10**400},  # far in the future, as an integer JSON can hold
    ]
    refused = [
        {"exp": now - 30},
        {"exp": now - 31},
        {"nbf": now + 31},
        {"iat": now + 31},
        {"exp": math.nan},
        {"exp": math.inf},
        {"exp": True},
        {"exp": str(now + 600)},
        {"nbf": math.nan},
        {"iat": -math.inf},
    ]
    for claims in accepted:
        assert scopes_of(at, token(key, **{**base, **claims})) == ["mode:code"], claims
    for claims in refused:
        assert scopes_of(at, token(key, **{**base, **claims})) is None, claims


def test_leeway_through_the_gateway(url: str, idp: tuple[RSAKey, Path]) -> None:
    """A token 10 s past its expiry (or starting 10 s ahead of this clock) is taken; one 45 s past is not. The SDK
    compares ``expires_at`` without leeway, so the token's own is its expiry plus the leeway."""
    key = idp[0]
    now = int(time.time())
    assert post(url, INITIALIZE, bearer(token(key, exp=now - 10)))[0] == 200
    assert post(url, INITIALIZE, bearer(token(key, nbf=now + 10, iat=now + 10)))[0] == 200
    assert use(url, "late", token(key, exp=now - 10)).ok
    assert post(url, INITIALIZE, bearer(token(key, exp=now - 45)))[0] == 401
    assert post(url, INITIALIZE, bearer(token(key, nbf=now + 90)))[0] == 401


# ------------------------------------------------------------------------------------------ Origin


@pytest.mark.parametrize(
    "origin",
    [
        "http://localhost:80\u00b2",  # a superscript two: str.isdigit() says it is a digit
        "http://localhost:\u00b9",
        "http://localhost:\uff18\uff10",  # fullwidth digits
        "http://localhost:\u0668\u0660",  # Arabic-Indic digits
        "http://localhost:123456",
        "http://localhost:80\n",
    ],
)
def test_origin_ports_are_ascii_digits(origin: str) -> None:
    guard = OriginGuard(None, ["http://localhost:*"])
    assert guard.allows("http://localhost:5173")
    assert not guard.allows(origin)


def test_every_origin_header_is_checked(url: str) -> None:
    auth = ("authorization", f"Bearer {CODE_TOKEN}")
    good, bad = ("origin", "http://localhost:5173"), ("origin", "https://evil.example.test")
    assert post_headers(url, INITIALIZE, [auth, good])[0] == 200
    assert post_headers(url, INITIALIZE, [auth, good, good])[0] == 200
    for headers in ([auth, good, bad], [auth, bad, good]):
        status, body = post_headers(url, INITIALIZE, headers)
        assert status == 403 and b"forbidden_origin" in body and b"evil" in body
    # sent as the byte 0xB2 (latin-1, as HTTP carries it): the check it passed before
    assert post_headers(url, INITIALIZE, [auth, ("origin", "http://localhost:80\u00b2")])[0] == 403


# ------------------------------------------------------------------------------------------ IPv6


def ipv6_loopback() -> bool:
    try:
        with socket.create_server(("::1", 0), family=socket.AF_INET6):
            return True
    except OSError:
        return False


@pytest.mark.skipif(not ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_an_ipv6_host_is_bracketed_in_every_url(tmp_path: Path, host: str) -> None:
    with gateway(tmp_path, "--auth-token-env", "CODE=code", host=host, url_host="::1") as served:
        assert served.startswith("http://[::1]:") and served.endswith("/mcp")
        status, headers, _ = post(served, INITIALIZE)
        metadata = served.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp"
        assert status == 401 and f'resource_metadata="{metadata}"' in headers["www-authenticate"]
        assert post(served, INITIALIZE, bearer(CODE_TOKEN))[0] == 200
        assert post(served, INITIALIZE, {**bearer(CODE_TOKEN), "origin": served.removesuffix("/mcp")})[0] == 200


@pytest.mark.parametrize(
    ("given", "bare", "in_url"),
    [
        ("::1", "::1", "[::1]:8000"),
        ("[::1]", "::1", "[::1]:8000"),
        ("::", "::", "[::]:8000"),
        ("fe80::1%lo", "fe80::1%lo", "[fe80::1%25lo]:8000"),
        ("[fe80::1%25lo]", "fe80::1%lo", "[fe80::1%25lo]:8000"),  # as a READY line prints it
        ("127.0.0.1", "127.0.0.1", "127.0.0.1:8000"),
        ("localhost", "localhost", "localhost:8000"),
        ("gateway.internal", "gateway.internal", "gateway.internal:8000"),
    ],
)
def test_hosts_as_sockets_and_urls_take_them(given: str, bare: str, in_url: str) -> None:
    from prompt_composer.shared.net import bare_host, netloc

    assert bare_host(given) == bare
    assert netloc(bare, 8000) == in_url == netloc(given, 8000)


def run_serve(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "prompt_composer", "serve", "--mode", "code", "--transport", "http"]
    return subprocess.run([*command, "--port", "0", *args], capture_output=True, text=True, env=env(), timeout=timeout)


@pytest.mark.parametrize("host", ["[::1", "::1]", "[127.0.0.1]", "[localhost]", "", "a b", "host/path"])
def test_a_host_that_is_no_host_exits_2(host: str) -> None:
    done = run_serve("--host", host)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: --host ")
    assert "READY" not in done.stdout and "Traceback" not in done.stderr


# ------------------------------------------------------------------------------------------ a JWKS that is no file


def jwks_inputs(folder: Path) -> dict[str, tuple[str, str]]:
    """Each hostile --auth-jwks, and what its one-line error says."""
    fifo = folder / "jwks.fifo"
    os.mkfifo(fifo)
    deep = folder / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    nested = folder / "nested.json"
    nested.write_text('{"keys": [' + "[" * 40 + "]" * 40 + "]}")
    big = folder / "big.json"
    big.write_text('{"keys": [], "pad": "' + "x" * 2_000_000 + '"}')
    return {
        "fifo": (str(fifo), "it is a FIFO, not a regular file"),
        "/dev/zero": ("/dev/zero", "it is a device, not a regular file"),
        "100k-deep": (str(deep), "nested too deeply"),
        "40-deep": (str(nested), "nested more than 16 levels deep"),
        "2 MB": (str(big), "over the limit"),
        "a folder": (str(folder), "it is a directory"),
    }


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.slow  # starts `serve` once for each kind of non-file
def test_a_jwks_that_is_no_file_exits_2_in_one_line(tmp_path: Path) -> None:
    """Each returns well within the hang guard (a FIFO used to block forever, /dev/zero to read until
    MemoryError), exits 2, and says in one line which file and what is wrong."""
    for what, (path, reason) in jwks_inputs(tmp_path).items():
        try:
            done = run_serve("--auth-jwks", path, "--auth-issuer", ISSUER, "--auth-audience", AUDIENCE, timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail(f"--auth-jwks {what}: still running after 20 s")
        assert done.returncode == 2, (what, done.stderr)
        assert done.stderr.count("\n") == 1, (what, done.stderr)
        assert done.stderr.startswith(f"error: {path}: ") and reason in done.stderr, (what, done.stderr)
        assert "READY" not in done.stdout and "Traceback" not in done.stderr


def test_a_jwks_swapped_for_a_fifo_keeps_the_last_good_keys(tmp_path: Path, idp: tuple[RSAKey, Path]) -> None:
    """Re-read on change: a rotation that leaves a FIFO behind does not block a request, and the keys stay."""
    key, good = idp
    path = tmp_path / "jwks.json"
    path.write_text(good.read_text())
    check = verifier(path)
    path.unlink()
    os.mkfifo(path)
    assert scopes_of(check, token(key)) == ["mode:code"]  # the FIFO was refused unread; the key set kept
