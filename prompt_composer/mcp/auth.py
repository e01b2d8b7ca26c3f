"""Who may use the HTTP gateway: bearer tokens as the MCP authorization spec has them (an OAuth 2.1 resource
server), the ``Origin`` check, and the refusal to expose an unauthenticated gateway.

The SDK does the HTTP part (``streamable_http_app(auth=, token_verifier=, transport_security=)``): the protected
resource metadata at ``/.well-known/oauth-protected-resource/mcp`` (RFC 9728), ``401`` with
``WWW-Authenticate: Bearer ... resource_metadata="..."`` for a request without a valid token, ``403
insufficient_scope`` for a token without the required scope, and ``403`` for an ``Origin`` outside the allowed
list. This module supplies what it needs:

- Verifiers (the SDK's ``TokenVerifier`` protocol: ``async verify_token(token) -> AccessToken | None``):
  :class:`StaticTokens` (tokens read from environment variables) and :class:`JwtVerifier` (JWTs signed by an
  identity provider's keys, from a JWKS file, with ``iss``, ``aud`` and ``exp`` checked). Any object with that
  method works.
- Modes as scopes: a token may use mode ``code`` when its scopes hold ``mode:code`` (or ``mode:*``). A gateway
  serves one mode and requires its scope on every request, so a token for mode A gets ``403`` for the list and
  every call of a gateway serving mode B; nothing of B is listed, fetched or run.
- Principals: who a token stands for (:func:`principal_of`), which is whose tasks it may use (see
  :mod:`prompt_composer.mcp.tasks`): a static token by its variable's name, a JWT by its issuer and subject.
- :func:`check_exposure`: an address other than loopback without a verifier is refused unless the caller says
  ``allow_unauthenticated``; the gateway hands every upstream tool (and its credentials) to whoever reaches it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import quote, urlsplit

from ..core.bounds import json_depth
from ..errors import AuthConfigError, InputFileError
from ..shared.extras import needs_extra
from ..shared.files import read_text
from ..shared.net import netloc

MODE_SCOPE = "mode:"  # a token's scope ``mode:<slug>`` lets it use that mode; ``mode:*`` every mode
ALL_MODES = "*"
LOOPBACK_NAMES = ("localhost",)
JWKS_LIMIT = 1_000_000  # bytes: a key set is a few KB; a larger file is not one
# A JWKS nests 4 levels ({"keys": [{"x5c": [...]}]}); anything far deeper is not one, and is refused before it
# is walked.
JWKS_DEPTH = 16
# The claim under which the verifiers of this module put a token's :class:`Principal` (an object no JSON claim can
# forge: a verifier that copies an identity provider's claims copies strings, numbers, lists and objects only).
PRINCIPAL_CLAIM = "prompt_composer.principal"
# A port in an Origin: ASCII digits only (str.isdigit() also takes "²" and other digits).
_PORT = re.compile(r"[0-9]{1,5}")


@dataclass(frozen=True)
class Principal:
    """Who a token stands for, as the gateway keys task state: ``kind`` ``"token"`` for a static token (``name``:
    the environment variable it was configured under) or ``"subject"`` for a user of an identity provider
    (``issuer``: its ``iss``; ``name``: its ``sub``). Two principals share state only when all three are equal."""

    kind: Literal["token", "subject"]
    name: str
    issuer: str = ""

    def key(self) -> str:
        """The principal as one string, different for any two principals: ``token/<name>`` (the variable's name,
        percent-encoded), or ``subject/<sha256>``, the hex SHA-256 of ``<issuer>/<subject>`` each part
        percent-encoded (``/`` and ``%`` included): no issuer or subject can spell another principal's key, the
        kinds cannot meet, and a store's keys do not show who its users are (a ``sub`` is often an e-mail address;
        an operator who knows both can compute the key)."""
        parts = [quote(p.encode("utf-8", "surrogatepass"), safe="") for p in (self.issuer, self.name)]
        if self.kind == "token":
            return f"token/{parts[1]}"
        return "subject/" + hashlib.sha256("/".join(parts).encode("ascii")).hexdigest()


def principal_of(access: Any) -> Principal | None:
    """The principal of a verified token (an ``AccessToken``): the one a verifier of this module attached, else for
    any other verifier's token its ``subject`` under the issuer of its ``claims`` (``iss``). ``None`` when the
    token names no user (a JWT without ``sub``): its requests cannot be told apart from another user's."""
    claims = getattr(access, "claims", None) or {}
    attached = claims.get(PRINCIPAL_CLAIM) if isinstance(claims, dict) else None
    if isinstance(attached, Principal):
        return attached
    subject = getattr(access, "subject", None)
    if not isinstance(subject, str) or not subject:
        return None
    issuer = claims.get("iss") if isinstance(claims, dict) else None
    return Principal("subject", subject, issuer=str(issuer) if issuer is not None else "")


class Verifier(Protocol):
    """The SDK's token-verifier protocol: an ``AccessToken`` (``mcp.server.auth.provider``) for a valid token,
    ``None`` otherwise. Scopes ``mode:<slug>`` say which modes the token may use."""

    async def verify_token(self, token: str) -> Any: ...


def mode_scopes(modes: Iterable[str]) -> list[str]:
    return [f"{MODE_SCOPE}{m}" for m in modes]


def _access_token(token: str, client_id: str, scopes: list[str], **extra: Any) -> Any:
    from mcp.server.auth.provider import AccessToken

    return AccessToken(token=token, client_id=client_id, scopes=scopes, **extra)


def parse_modes(text: str, where: str) -> frozenset[str]:
    """``code,ask`` or ``*`` as a set of mode slugs; an empty list is an error naming ``where``."""
    modes = frozenset(m.strip() for m in text.split(",") if m.strip())
    if not modes:
        raise AuthConfigError(f"{where}: no modes given (a comma-separated list of mode slugs, or *)")
    return modes


class StaticTokens:
    """Fixed tokens, each with the modes it may use. Compared in constant time; the client id reported for a
    token is the name it was configured under (an environment variable's name), never the token."""

    def __init__(self, tokens: Mapping[str, tuple[str, frozenset[str]]]) -> None:
        """``tokens``: token → (its name, the modes it may use)."""
        self._tokens = [(t.encode(), name, modes) for t, (name, modes) in tokens.items()]

    @classmethod
    def from_env(cls, specs: Iterable[str], environ: Mapping[str, str] | None = None) -> StaticTokens:
        """One token per spec ``VAR`` (every mode) or ``VAR=code,ask``: the token is the variable's value. An
        unset or empty variable, or a token shorter than 16 characters, is an error naming the variable."""
        env = os.environ if environ is None else environ
        tokens: dict[str, tuple[str, frozenset[str]]] = {}
        for spec in specs:
            name, given, modes_text = spec.partition("=")
            name = name.strip()
            modes = parse_modes(modes_text, f"--auth-token-env {spec}") if given else frozenset({ALL_MODES})
            value = env.get(name, "")
            if not value.strip():
                raise AuthConfigError(f"--auth-token-env {spec}: the environment variable {name} is unset or empty")
            if len(value.strip()) < 16:
                raise AuthConfigError(
                    f"--auth-token-env {spec}: the token in {name} is shorter than 16 characters; use a random one "
                    "(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
                )
            earlier = tokens.get(value.strip())
            if earlier is not None and earlier[0] != name:  # one token, two principals: whose tasks would it use?
                raise AuthConfigError(
                    f"--auth-token-env {spec}: {name} holds the same token as {earlier[0]}; give each client its own"
                )
            tokens[value.strip()] = (name, modes)
        return cls(tokens)

    async def verify_token(self, token: str) -> Any:
        given = token.encode()
        found = None
        for value, name, modes in self._tokens:  # every entry compared, so timing tells nothing of which matched
            if hmac.compare_digest(value, given):
                found = (name, modes)
        if found is None:
            return None
        principal = Principal("token", found[0])
        return _access_token(token, found[0], mode_scopes(sorted(found[1])), claims={PRINCIPAL_CLAIM: principal})


class JwtVerifier:
    """JWTs from an identity provider, verified against the public keys of a JWKS file (the provider's
    ``jwks_uri`` document, saved; re-read when the file changes, so a key rotation needs no restart).

    A token is accepted when its signature verifies with a key of the set (algorithms ``algorithms``), its
    ``iss`` is ``issuer``, its ``aud`` is or holds ``audience``, and its times hold with ``leeway`` seconds of
    clock skew either way: ``exp`` (required) not ``leeway`` seconds past, ``nbf`` and ``iat`` (when present) not
    more than ``leeway`` seconds ahead; each a finite number. The modes it may use are its ``mode:<slug>``
    scopes, read from ``scope`` and ``scp`` (each a space-separated string or a list of strings), or from the claim
    named ``modes_claim`` (a list or comma/space-separated string of slugs) when given. Its principal is its
    ``iss`` and ``sub``; a token without ``sub`` is valid but names no user, so it cannot name a task."""

    def __init__(
        self,
        jwks: str | Path,
        *,
        issuer: str,
        audience: str,
        algorithms: Iterable[str] = ("RS256", "ES256", "PS256", "EdDSA"),
        modes_claim: str | None = None,
        leeway: int = 30,
        clock: Callable[[], float] = time.time,
    ) -> None:
        try:
            import joserfc  # noqa: F401
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise AuthConfigError(needs_extra("JWT verification (--auth-jwks)", "auth")) from exc
        if not issuer or not audience:
            raise AuthConfigError("a JWKS verifier needs both an issuer (--auth-issuer) and an audience")
        if leeway < 0:
            raise AuthConfigError(f"a JWKS verifier's leeway is {leeway} seconds; it cannot be negative")
        self.path = Path(jwks)
        self.issuer = issuer
        self.audience = audience
        self.algorithms = list(algorithms)
        self.modes_claim = modes_claim
        self.leeway = leeway
        self.clock = clock
        self._stamp: tuple[int, int] | None = None
        self._keys: Any = None
        self._load()  # a bad file fails at start, not on the first request

    def _load(self) -> Any:
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        try:
            stat = self.path.stat()  # never blocks, whatever the path is; the read below refuses what is no file
            if (stat.st_mtime_ns, stat.st_size) == self._stamp:
                return self._keys
            # A regular file only (a FIFO would block, /dev/zero never end), at most JWKS_LIMIT bytes.
            text = read_text(self.path, what="JWKS file", max_bytes=JWKS_LIMIT)
            data = json.loads(text)
            if json_depth(data, JWKS_DEPTH) > JWKS_DEPTH:
                raise AuthConfigError(f"{self.path}: not a JWKS document: nested more than {JWKS_DEPTH} levels deep")
            listed = data.get("keys") if isinstance(data, dict) else None
            if not isinstance(listed, list) or not listed:
                raise AuthConfigError(f'{self.path}: the JWKS file holds no key ({{"keys": [...]}})')
            if any(isinstance(k, dict) and "d" in k for k in listed):
                raise AuthConfigError(f"{self.path}: the JWKS file holds a private key; give the public keys only")
            keys = KeySet.import_key_set({"keys": listed})
        except InputFileError as exc:
            raise AuthConfigError(str(exc)) from None
        except OSError as exc:
            raise AuthConfigError(f"{self.path}: cannot read the JWKS file: {exc.strerror or exc}") from None
        except RecursionError:  # the decoder recurses once a level: "[[[[…" thousands deep
            raise AuthConfigError(f"{self.path}: not a JWKS document: nested too deeply to read") from None
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise AuthConfigError(f'{self.path}: not a JWKS document ({{"keys": [...]}}): {reason}') from None
        self._stamp = (stat.st_mtime_ns, stat.st_size)
        self._keys = keys
        return keys

    def claims(self, token: str) -> dict[str, Any] | None:
        """The token's claims when it is valid for this gateway, else ``None``."""
        from joserfc import jwt
        from joserfc.errors import JoseError

        try:
            keys = self._load()
        except AuthConfigError:
            keys = self._keys  # a rotation caught mid-write: keep the last good set
        now = self.clock()
        try:
            decoded = jwt.decode(token, keys, algorithms=self.algorithms)
            claims = dict(decoded.claims)
            if not self.times_hold(claims, now):
                return None
            registry = jwt.JWTClaimsRegistry(
                now=int(now),
                leeway=self.leeway,
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": self.audience},
                exp={"essential": True},
            )
            registry.validate(claims)
        except (JoseError, ValueError, TypeError, KeyError, RecursionError):
            return None
        return claims

    def times_hold(self, claims: Mapping[str, Any], now: float) -> bool:
        """Whether ``exp`` (required), ``nbf`` and ``iat`` are finite numbers that hold at ``now``, give or take
        :attr:`leeway` seconds: the token expired less than ``leeway`` seconds ago at most, and starts (``nbf``)
        or was issued (``iat``) at most ``leeway`` seconds ahead of this clock."""
        times = {name: claims[name] for name in ("exp", "nbf", "iat") if name in claims}
        if "exp" not in times or not all(_numeric_date(v) for v in times.values()):
            return False
        if now >= times["exp"] + self.leeway:
            return False
        return all(times[name] <= now + self.leeway for name in ("nbf", "iat") if name in times)

    def modes(self, claims: Mapping[str, Any]) -> frozenset[str]:
        if self.modes_claim is not None:
            value = claims.get(self.modes_claim)
            return frozenset(_words(value.replace(",", " ") if isinstance(value, str) else value))
        # RFC 9068 and RFC 8693 say "scope", a space-separated string; Azure AD and Okta say "scp" (a string, or a
        # list): both are read, and together they are the token's scopes.
        scopes = [*_words(claims.get("scope")), *_words(claims.get("scp"))]
        return frozenset(s[len(MODE_SCOPE) :] for s in scopes if s.startswith(MODE_SCOPE))

    async def verify_token(self, token: str) -> Any:
        claims = self.claims(token)
        if claims is None:
            return None
        subject = claims.get("sub")
        subject = subject if isinstance(subject, str) and subject else None
        client = claims.get("client_id") or claims.get("azp") or subject or "jwt"
        attached: dict[str, Any] = {"iss": self.issuer}
        if subject is not None:
            attached[PRINCIPAL_CLAIM] = Principal("subject", subject, issuer=self.issuer)
        return _access_token(
            token,
            str(client),
            mode_scopes(sorted(self.modes(claims))),
            # the moment this gateway stops taking it: the SDK and _ServedMode compare expires_at without leeway
            expires_at=math.floor(claims["exp"]) + self.leeway,
            subject=subject,
            claims=attached,
        )


def _numeric_date(value: Any) -> bool:
    """A JWT time (RFC 7519's NumericDate): a number, not a boolean, finite (JSON's parser takes NaN and 1e400)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)


def _words(value: Any) -> list[str]:
    """A claim that is a space-separated string or a list of strings, as its words (anything else: none)."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


class AnyOf:
    """Static tokens and JWTs together: the first verifier that accepts the token."""

    def __init__(self, verifiers: list[Any]) -> None:
        self.verifiers = verifiers

    async def verify_token(self, token: str) -> Any:
        for verifier in self.verifiers:
            access = await verifier.verify_token(token)
            if access is not None:
                return access
        return None


@dataclass
class _ServedMode:
    """A verifier that also grants the served mode's scope to a token allowed every mode (``mode:*``), since
    the SDK compares required scopes literally."""

    inner: Verifier
    slug: str

    async def verify_token(self, token: str) -> Any:
        access = await self.inner.verify_token(token)
        if access is not None and f"{MODE_SCOPE}{ALL_MODES}" in access.scopes:
            access = access.model_copy(update={"scopes": [*access.scopes, f"{MODE_SCOPE}{self.slug}"]})
        if access is not None and access.expires_at is not None and access.expires_at <= int(time.time()):
            return None
        return access


@dataclass
class HttpSecurity:
    """How the HTTP gateway checks who calls it. ``verifier``: tokens (``None``: no authorization, loopback
    only unless allowed); ``resource_url``: the gateway's URL as clients reach it (through a load balancer, its
    address), the resource its metadata names; ``issuer``: the authorization server its metadata points clients
    to (default: the resource's origin, for static tokens handed out by hand); ``allowed_origins``: browser
    ``Origin`` values accepted besides loopback and the resource's own (a request without ``Origin`` is a
    non-browser client and passes)."""

    verifier: Verifier | None = None
    resource_url: str | None = None
    issuer: str | None = None
    allowed_origins: list[str] = field(default_factory=list)
    allow_unauthenticated: bool = False

    def resource(self, host: str, port: int) -> str:
        return self.resource_url or f"http://{netloc(host, port)}/mcp"

    def origins(self, host: str, port: int) -> list[str]:
        parts = urlsplit(self.resource(host, port))
        loopback = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        return [*loopback, f"{parts.scheme}://{parts.netloc}", *self.allowed_origins]

    def app_options(self, slug: str, host: str, port: int) -> dict[str, Any]:
        """The keyword arguments of the SDK's ``streamable_http_app`` for serving mode ``slug`` at host:port."""
        from mcp.server.auth.settings import AuthSettings
        from mcp.server.transport_security import TransportSecuritySettings

        resource = self.resource(host, port)
        parts = urlsplit(resource)
        options: dict[str, Any] = {}
        if _is_loopback(host):
            # The SDK's DNS-rebinding guard (Host and Origin), with this gateway's public name and origins added.
            hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", parts.netloc]
            options["transport_security"] = TransportSecuritySettings(
                enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=self.origins(host, port)
            )
        if self.verifier is not None:
            options["auth"] = AuthSettings(
                issuer_url=self.issuer or f"{parts.scheme}://{parts.netloc}",  # type: ignore[arg-type]
                resource_server_url=resource,  # type: ignore[arg-type]
                required_scopes=[f"{MODE_SCOPE}{slug}"],
                validate_token_resource=False,  # the verifiers check the audience themselves
            )
            options["token_verifier"] = _ServedMode(self.verifier, slug)
        return options

    def wrap(self, app: Any, host: str, port: int) -> Any:
        """``app`` behind the ``Origin`` check (on any address: a browser page must not drive the gateway)."""
        return OriginGuard(app, self.origins(host, port))


class OriginGuard:
    """ASGI middleware: a request with an ``Origin`` header that is not allowed gets ``403`` before it reaches the
    MCP endpoint (the Streamable HTTP rule against DNS rebinding and cross-site pages). Every ``Origin`` header of
    a request is checked (a browser sends one; a request with a second one that is not allowed is refused too).
    An entry is an exact origin, or ends in ``:*`` for any port: ASCII digits, at most 5. The protected-resource
    metadata stays readable from any origin."""

    def __init__(self, app: Any, allowed: Iterable[str]) -> None:
        self.app = app
        self.exact = {a for a in allowed if not a.endswith(":*")}
        self.prefixes = tuple(a[:-1] for a in allowed if a.endswith(":*"))

    def allows(self, origin: str) -> bool:
        if origin in self.exact:
            return True
        return any(origin.startswith(p) and _PORT.fullmatch(origin[len(p) :]) for p in self.prefixes)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not str(scope.get("path", "")).startswith("/.well-known/"):
            given = [v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == b"origin"]
            origin = next((o for o in given if not self.allows(o)), None)
            if origin is not None:
                body = json.dumps(
                    {"error": "forbidden_origin", "error_description": f"Origin {origin[:200]!r} is not allowed"}
                ).encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 403, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, security: HttpSecurity | None) -> None:
    """Refuse to serve a non-loopback address without a verifier, unless ``allow_unauthenticated`` says so."""
    if _is_loopback(host):
        return
    if security is not None and (security.verifier is not None or security.allow_unauthenticated):
        return
    raise AuthConfigError(
        f"refusing to serve {host} without authorization: anyone who reaches it could call every tool of the "
        "mode (and the upstream servers' credentials behind them). Give --auth-token-env or --auth-jwks, bind "
        "127.0.0.1, or pass --allow-unauthenticated if a proxy in front authenticates"
    )
