"""Hosts and URLs: whether one is this machine (a local model server needs no API key, and binds only to loopback),
a ``--host`` as users write it (``::1`` or ``[::1]``), and a host and port as a URL holds them (``[::1]:8000``)."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

# A host name as DNS has it (labels of letters, digits, hyphens and underscores, dot-separated): what a --host may
# be besides an IP address.
_HOST_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_][A-Za-z0-9_-]{0,62})*\.?")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str | None) -> bool:
    """Whether ``url`` points at this machine."""
    return is_loopback(urlsplit(url or "").hostname or "")


def _unbracketed(host: str) -> tuple[str, bool]:
    """``host`` out of the brackets a URL puts around an IPv6 address (its zone's ``%25`` back to ``%``), and
    whether it had them."""
    if host.startswith("[") and host.endswith("]"):
        return host[1:-1].replace("%25", "%"), True
    return host, False


def bare_host(text: str) -> str:
    """``text`` (a host name, an IPv4 address, or an IPv6 address with or without the brackets a URL puts around
    it) as a socket takes it: ``[::1]`` → ``::1``, ``[fe80::1%25eth0]`` → ``fe80::1%eth0`` (a URL writes a zone's
    ``%`` as ``%25``, RFC 6874). Anything else is a ``ValueError`` saying what a host is."""
    inner, bracketed = _unbracketed(text)
    try:
        address = ipaddress.ip_address(inner)
    except ValueError:
        address = None
    if address is not None:
        if bracketed and address.version != 6:
            raise ValueError(f"{text!r}: brackets hold an IPv6 address only")
        return inner
    if not bracketed and len(text) <= 253 and _HOST_NAME.fullmatch(text):
        return text
    raise ValueError(f"{text[:100]!r} is not a host name, an IPv4 address or an IPv6 address (e.g. ::1 or [::1])")


def netloc(host: str, port: int) -> str:
    """``host:port`` as a URL writes it: an IPv6 address in brackets (``[::1]:8000``), its zone's ``%`` as ``%25``
    (RFC 6874)."""
    bare, _ = _unbracketed(host)
    return f"[{bare.replace('%', '%25')}]:{port}" if ":" in bare else f"{bare}:{port}"
