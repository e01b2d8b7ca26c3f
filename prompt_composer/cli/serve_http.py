"""``serve --transport http``'s options for a gateway a team shares: bearer tokens, allowed origins, the public
URL behind a load balancer, and the shared task store (see :mod:`prompt_composer.mcp.auth` and docs/gateway.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import AuthConfigError


def add_http_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("HTTP gateway for a team (with --transport http; see docs/gateway.md)")
    g.add_argument(
        "--auth-token-env",
        action="append",
        default=[],
        metavar="VAR[=MODES]",
        help="accept the bearer token held in environment variable VAR, for the modes listed (comma-separated "
        "slugs; default: every mode); repeat for several tokens",
    )
    g.add_argument(
        "--auth-jwks",
        metavar="FILE",
        default=None,
        help="accept JWTs signed by a key of this JWKS file (your identity provider's public keys; re-read when "
        "it changes); needs --auth-issuer and --auth-audience. A token's modes are its mode:<slug> scopes",
    )
    g.add_argument(
        "--auth-issuer",
        metavar="URL",
        default=None,
        help="the JWTs' required iss; the authorization server the protected-resource metadata names",
    )
    g.add_argument(
        "--auth-audience", metavar="AUD", default=None, help="the JWTs' required aud (default: --public-url)"
    )
    g.add_argument(
        "--auth-modes-claim",
        metavar="CLAIM",
        default=None,
        help="read a JWT's modes from this claim (a list of mode slugs) instead of its mode:<slug> scopes",
    )
    g.add_argument(
        "--public-url",
        metavar="URL",
        default=None,
        help="the gateway's URL as clients reach it, e.g. behind a load balancer (default: http://HOST:PORT/mcp); "
        "the resource named in 401 answers and in /.well-known/oauth-protected-resource/mcp",
    )
    g.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also accept requests carrying this browser Origin (e.g. https://ide.example.com); others get 403. "
        "Loopback origins and the public URL's are always accepted; a request without Origin passes",
    )
    g.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="serve a non-loopback --host without tokens (only when a proxy in front authenticates every request)",
    )
    g.add_argument(
        "--session-store",
        metavar="URL",
        default=None,
        help="keep the tasks of clients that send a Prompt-Composer-Task header in Redis at URL "
        "(redis://host:6379/0), so several replicas share them (needs the redis extra)",
    )


def security_from(args: argparse.Namespace) -> Any:
    """The :class:`~prompt_composer.mcp.auth.HttpSecurity` the options describe. Raises
    :class:`~prompt_composer.errors.AuthConfigError` for options that do not fit together."""
    from ..mcp.auth import AnyOf, HttpSecurity, JwtVerifier, StaticTokens

    if args.transport != "http":
        used = [o for o in ("auth_token_env", "allow_origin") if getattr(args, o)]
        used += [o for o in ("auth_jwks", "public_url", "session_store") if getattr(args, o) is not None]
        if used or args.allow_unauthenticated:
            names = ", ".join("--" + o.replace("_", "-") for o in used) or "--allow-unauthenticated"
            raise AuthConfigError(f"{names}: only with --transport http (stdio has one client, its parent process)")
    verifiers: list[Any] = []
    if args.auth_token_env:
        verifiers.append(StaticTokens.from_env(args.auth_token_env))
    if args.auth_jwks is not None:
        audience = args.auth_audience or args.public_url
        if args.auth_issuer is None or audience is None:
            raise AuthConfigError("--auth-jwks needs --auth-issuer and --auth-audience (or --public-url)")
        verifiers.append(
            JwtVerifier(args.auth_jwks, issuer=args.auth_issuer, audience=audience, modes_claim=args.auth_modes_claim)
        )
    elif args.auth_issuer is not None and not args.auth_token_env:
        raise AuthConfigError("--auth-issuer without --auth-jwks or --auth-token-env: no token would be accepted")
    verifier = verifiers[0] if len(verifiers) == 1 else AnyOf(verifiers) if verifiers else None
    if verifier is not None and args.allow_unauthenticated:
        raise AuthConfigError("--allow-unauthenticated with tokens: choose one")
    return HttpSecurity(
        verifier=verifier,
        resource_url=args.public_url,
        issuer=args.auth_issuer,
        allowed_origins=list(args.allow_origin),
        allow_unauthenticated=args.allow_unauthenticated,
    )


def session_store(url: str | None) -> Any:
    """The Redis store ``--session-store`` names (``None`` without it; ``False``, said on stderr, when it cannot
    be used: no redis client, or a Redis that does not answer, so a replica never starts with tasks it would lose)."""
    if url is None:
        return None
    try:
        from ..core.redis_store import RedisSessionStore
    except ImportError as exc:
        print(f"error: --session-store: {exc}", file=sys.stderr)
        return False
    from ..errors import SessionStoreError

    store = RedisSessionStore(url)
    try:
        _ = "serve-probe" in store  # one EXISTS: a Redis that does not answer fails here, at start
    except SessionStoreError as exc:
        print(f"error: --session-store: {exc}", file=sys.stderr)
        return False
    return store
