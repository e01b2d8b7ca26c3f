"""The HTTP gateway a team can share: bearer tokens (static ones from the environment, JWTs against a JWKS file),
a token's modes, the ``Origin`` check, and the refusal to expose an unauthenticated gateway.

Each test starts ``prompt-composer serve --transport http`` in a process of its own, on 127.0.0.1, and talks to
it with raw HTTP (to read statuses and headers) and with the official MCP client SDK."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.auth_support import (
    ASK_TOKEN,
    AUDIENCE,
    CODE_TOKEN,
    INITIALIZE,
    ISSUER,
    LIST,
    bearer,
    gateway,
    post,
    token,
    write_jwks,
)
from tests.mcp.support import LEGACY, MODERN, env, names, text

joserfc = pytest.importorskip("joserfc", reason="the JWT verifier needs joserfc (the auth extra)")
from joserfc.jwk import RSAKey  # noqa: E402

from prompt_composer.mcp.auth import JwtVerifier  # noqa: E402


async def session(url: str, token: str, era: str) -> tuple[list[str], str]:
    """With the SDK's client in ``era``: the listed names, and read_file's answer."""
    async with (
        httpx2.AsyncClient(headers=bearer(token), timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=era, cache=None) as client,
    ):
        listed = await names(client)
        result = await client.call_tool("read_file", {"path": "notes.txt"})
        return listed, text(result)


# ------------------------------------------------------------------------------------------ static tokens


def test_no_token_is_401_with_www_authenticate_and_the_metadata_names_the_resource(tmp_path: Path) -> None:
    with gateway(tmp_path, "--auth-token-env", "CODE=code") as url:
        status, headers, body = post(url, INITIALIZE)
        assert status == 401
        challenge = headers["www-authenticate"]
        origin = url.removesuffix("/mcp")
        metadata_url = f"{origin}/.well-known/oauth-protected-resource/mcp"
        assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
        assert json.loads(body)["error"] == "invalid_token"
        assert post(url, INITIALIZE, bearer("not-the-token-at-all-xxxxxxxx"))[0] == 401
        assert post(url, INITIALIZE, {"authorization": f"Basic {CODE_TOKEN}"})[0] == 401

        with urllib.request.urlopen(metadata_url, timeout=30) as response:
            metadata = json.loads(response.read())
        assert metadata["resource"] == url
        assert metadata["scopes_supported"] == ["mode:code"]
        assert metadata["bearer_methods_supported"] == ["header"]

        assert post(url, INITIALIZE, bearer(CODE_TOKEN))[0] == 200


def test_a_token_for_one_mode_cannot_list_or_call_another(tmp_path: Path) -> None:
    """The gateway serves ``code``; ASK is a token for ``ask`` only, CODE for ``code``."""
    with gateway(tmp_path, "--auth-token-env", "CODE=code", "--auth-token-env", "ASK=ask") as url:
        for body in (INITIALIZE, LIST, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}}):
            status, headers, answer = post(url, body, bearer(ASK_TOKEN))
            assert status == 403, body
            assert 'error="insufficient_scope"' in headers["www-authenticate"]
            assert b"read_file" not in answer

        async def scenario() -> None:
            with anyio.fail_after(120):
                for era in (LEGACY, MODERN):
                    listed, read = await session(url, CODE_TOKEN, era)
                    assert "read_file" in listed and "execute_command" in listed
                    assert read.startswith("hello") or "hello" in read
                    reached: list[str] = []
                    with pytest.raises(Exception):  # noqa: B017, PT011 - the SDK's error type varies by era
                        reached = (await session(url, ASK_TOKEN, era))[0]
                    assert reached == []  # nothing of mode code was listed for the ask token

        anyio.run(scenario)


def test_a_token_for_every_mode_and_the_other_gateway(tmp_path: Path) -> None:
    """A token given without modes may use any: ``ask`` served, the ASK token (all modes) lists and calls."""
    with gateway(tmp_path, "--auth-token-env", "ASK", mode="ask") as url:

        async def scenario() -> None:
            with anyio.fail_after(120):
                listed, read = await session(url, ASK_TOKEN, MODERN)
                assert "read_file" in listed and "execute_command" not in listed
                assert "hello" in read

        anyio.run(scenario)


# ------------------------------------------------------------------------------------------ Origin


def test_a_bad_origin_is_refused(tmp_path: Path) -> None:
    with gateway(tmp_path, "--auth-token-env", "CODE=code", "--allow-origin", "https://ide.example.test") as url:
        status, _, body = post(url, INITIALIZE, {**bearer(CODE_TOKEN), "origin": "https://evil.example.test"})
        assert status == 403 and b"forbidden_origin" in body
        # the check comes before the token: a bad Origin with no token is refused too, not challenged
        assert post(url, INITIALIZE, {"origin": "https://evil.example.test"})[0] == 403
        assert post(url, INITIALIZE, {**bearer(CODE_TOKEN), "origin": "https://ide.example.test"})[0] == 200
        assert post(url, INITIALIZE, {**bearer(CODE_TOKEN), "origin": "http://localhost:5173"})[0] == 200
        assert post(url, INITIALIZE, {**bearer(CODE_TOKEN), "origin": "http://localhost.evil.test:80"})[0] == 403


def test_a_bad_origin_is_refused_without_auth_too(tmp_path: Path) -> None:
    with gateway(tmp_path) as url:
        assert post(url, INITIALIZE, {"origin": "https://evil.example.test"})[0] == 403
        assert post(url, INITIALIZE)[0] == 200


# ------------------------------------------------------------------------------------------ refusing to start


def run_serve(*args: str, environ: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "prompt_composer", "serve", "--mode", "code", *args]
    return subprocess.run(command, capture_output=True, text=True, env=environ or env(), timeout=120)


def test_a_public_address_without_auth_refuses_to_start() -> None:
    done = run_serve("--transport", "http", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 2
    assert "refusing to serve 0.0.0.0 without authorization" in done.stderr
    assert "--allow-unauthenticated" in done.stderr
    assert "READY" not in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--auth-token-env", "UNSET_TOKEN_VAR"], "UNSET_TOKEN_VAR is unset or empty"),
        (["--auth-token-env", "SHORT"], "shorter than 16 characters"),
        (["--auth-token-env", "CODE="], "no modes given"),
        (["--auth-jwks", "missing.json", "--auth-issuer", ISSUER, "--auth-audience", AUDIENCE], "missing.json"),
        (["--auth-jwks", "k.json"], "needs --auth-issuer"),
        (["--auth-token-env", "CODE", "--allow-unauthenticated"], "choose one"),
    ],
)
def test_unusable_auth_settings_refuse_to_start(args: list[str], message: str) -> None:
    done = run_serve("--transport", "http", "--port", "0", *args, environ=env(SHORT="abc", CODE=CODE_TOKEN))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_auth_options_need_http() -> None:
    done = run_serve("--auth-token-env", "CODE", environ=env(CODE=CODE_TOKEN))
    assert done.returncode == 2 and "only with --transport http" in done.stderr


# ------------------------------------------------------------------------------------------ JWT


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[RSAKey, RSAKey, Path]:
    """The identity provider's key, a stranger's key, and the provider's public JWKS file."""
    key = RSAKey.generate_key(2048, parameters={"kid": "idp-1"})
    stranger = RSAKey.generate_key(2048, parameters={"kid": "idp-1"})
    return key, stranger, write_jwks(tmp_path_factory.mktemp("jwks") / "jwks.json", key)


def test_jwt_checks_signature_issuer_audience_and_expiry(keys: tuple[RSAKey, RSAKey, Path]) -> None:
    key, stranger, path = keys
    verifier = JwtVerifier(path, issuer=ISSUER, audience=AUDIENCE)

    async def verify(value: str) -> Any:
        return await verifier.verify_token(value)

    good = anyio.run(verify, token(key, scope="openid mode:code mode:ask"))
    assert good is not None and good.subject == "alice" and sorted(good.scopes) == ["mode:ask", "mode:code"]
    assert anyio.run(verify, token(key, aud=[AUDIENCE, "other"])) is not None
    for bad in (
        token(stranger),
        token(key, iss="https://other.example.test"),
        token(key, aud="https://other.example.test/mcp"),
        token(key, exp=int(time.time()) - 3600),
        token(key, nbf=int(time.time()) + 3600),
        token(key, exp=None),
        "not.a.jwt",
    ):
        assert anyio.run(verify, bad) is None

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims = {"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 60, "scope": "mode:code"}
    assert anyio.run(verify, f"{part({'alg': 'none'})}.{part(claims)}.") is None  # unsigned
    signed = token(key).split(".")
    assert anyio.run(verify, f"{signed[0]}.{part({**claims, 'scope': 'mode:*'})}.{signed[2]}") is None  # altered


def test_jwt_modes_from_a_claim(keys: tuple[RSAKey, RSAKey, Path]) -> None:
    key, _, path = keys
    verifier = JwtVerifier(path, issuer=ISSUER, audience=AUDIENCE, modes_claim="modes")

    async def scopes(value: str) -> list[str]:
        access = await verifier.verify_token(value)
        return sorted(access.scopes)

    assert anyio.run(scopes, token(key, modes=["ask", "debug"])) == ["mode:ask", "mode:debug"]
    assert anyio.run(scopes, token(key)) == []


def test_a_jwks_with_a_private_key_is_refused(tmp_path: Path, keys: tuple[RSAKey, RSAKey, Path]) -> None:
    from prompt_composer.errors import AuthConfigError

    path = tmp_path / "leaked.json"
    path.write_text(json.dumps({"keys": [keys[0].as_dict(private=True)]}))
    with pytest.raises(AuthConfigError, match="private key"):
        JwtVerifier(path, issuer=ISSUER, audience=AUDIENCE)
    (tmp_path / "empty.json").write_text('{"keys": []}')
    with pytest.raises(AuthConfigError, match="holds no key"):
        JwtVerifier(tmp_path / "empty.json", issuer=ISSUER, audience=AUDIENCE)


def test_jwt_through_the_gateway(tmp_path: Path, keys: tuple[RSAKey, RSAKey, Path]) -> None:
    key, stranger, path = keys
    jwks = ["--auth-jwks", str(path), "--auth-issuer", ISSUER, "--auth-audience", AUDIENCE]
    with gateway(tmp_path, *jwks) as url:
        assert post(url, INITIALIZE, bearer(token(key)))[0] == 200
        assert post(url, INITIALIZE, bearer(token(key, scope="mode:*")))[0] == 200
        assert post(url, INITIALIZE, bearer(token(stranger)))[0] == 401
        assert post(url, INITIALIZE, bearer(token(key, exp=int(time.time()) - 3600)))[0] == 401
        status, headers, _ = post(url, INITIALIZE, bearer(token(key, scope="mode:ask")))
        assert status == 403 and 'error="insufficient_scope"' in headers["www-authenticate"]

        origin = url.removesuffix("/mcp")
        with urllib.request.urlopen(f"{origin}/.well-known/oauth-protected-resource/mcp", timeout=30) as response:
            assert json.loads(response.read())["authorization_servers"] == [ISSUER]

        async def scenario() -> None:
            with anyio.fail_after(120):
                listed, read = await session(url, token(key), MODERN)
                assert "execute_command" in listed and "hello" in read

        anyio.run(scenario)


# ------------------------------------------------------------------------------------------ tasks named by a header


def test_a_task_header_ties_stateless_requests_to_one_task(tmp_path: Path) -> None:
    """2026-07-28 requests stand alone, unless they name a task: then the first use of a brief tool carries its
    full text once per task, and a malformed task id is an invalid-params answer, not a dropped request."""
    from benchmarks.replicas import call

    with gateway(tmp_path, "--auth-token-env", "CODE=code") as url:
        auth = bearer(CODE_TOKEN)
        shown = "Full documentation of `list_files`"
        first = call(url, "task-a", "list_files", {"path": "."}, auth)
        again = call(url, "task-a", "list_files", {"path": "."}, auth)
        other = call(url, "task-b", "list_files", {"path": "."}, auth)
        alone = call(url, None, "list_files", {"path": "."}, auth)
        assert first.ok and shown in first.text
        assert again.ok and shown not in again.text and "notes.txt" in again.text
        assert other.ok and shown in other.text
        assert alone.ok and shown not in alone.text  # a request alone gets no full text (nothing to remember it by)

        bad = call(url, "no spaces allowed", "list_files", {"path": "."}, auth)
        assert bad.body is not None and bad.body["error"]["code"] == -32602
        assert "prompt-composer-task" in bad.body["error"]["message"]
        assert call(url, "x" * 129, "list_files", {"path": "."}, auth).body["error"]["code"] == -32602  # type: ignore[index]


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"])
def test_loopback_addresses_need_no_auth(host: str) -> None:
    from prompt_composer.mcp.auth import check_exposure

    check_exposure(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "gateway.internal", "192.168.0.7"])
def test_other_addresses_need_auth_or_the_flag(host: str) -> None:
    from prompt_composer.errors import AuthConfigError
    from prompt_composer.mcp.auth import HttpSecurity, StaticTokens, check_exposure

    with pytest.raises(AuthConfigError, match=f"refusing to serve {host}"):
        check_exposure(host, None)
    with pytest.raises(AuthConfigError):
        check_exposure(host, HttpSecurity(allowed_origins=["https://ide.example.test"]))
    check_exposure(host, HttpSecurity(allow_unauthenticated=True))
    check_exposure(host, HttpSecurity(verifier=StaticTokens({CODE_TOKEN: ("CODE", frozenset({"code"}))})))


def test_origin_patterns_match_whole_ports_only() -> None:
    from prompt_composer.mcp.auth import OriginGuard

    guard = OriginGuard(None, ["http://localhost:*", "https://ide.example.test"])
    assert guard.allows("http://localhost:5173") and guard.allows("https://ide.example.test")
    for origin in (
        "http://localhost:80.evil.test",
        "http://localhost.evil.test",
        "https://ide.example.test.evil",
        "null",
        "http://localhost:",
        "https://ide.example.test:8443",
    ):
        assert not guard.allows(origin), origin
