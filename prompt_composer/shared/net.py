"""Whether a host or URL is this machine: a local model server needs no API key, and binds only to loopback."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str | None) -> bool:
    """Whether ``url`` points at this machine."""
    return is_loopback(urlsplit(url or "").hostname or "")
