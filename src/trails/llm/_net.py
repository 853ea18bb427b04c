"""Network guards shared by the HTTP adapters: the test-wide switch and "is this host local".

With ``TRAILS_FORBID_REAL_MODELS=1`` (the test suite sets it) an adapter
refuses, at call time, any URL whose host is not loopback, so a test can never
reach a real provider. ``is_local_url`` also accepts private networks: an
OpenAI-compatible server there (vLLM, llama.cpp, LM Studio) is a local model
and costs 0.
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

from trails.llm.errors import RealModelsForbidden

__all__ = [
    "FORBID_ENV",
    "check_host",
    "host_of",
    "is_local_url",
    "is_loopback_url",
    "real_models_forbidden",
]

FORBID_ENV = "TRAILS_FORBID_REAL_MODELS"


def real_models_forbidden() -> bool:
    """True when ``TRAILS_FORBID_REAL_MODELS`` is set to anything but ``""``, ``0``, ``false``, ``no``."""
    return os.environ.get(FORBID_ENV, "").strip().lower() not in ("", "0", "false", "no")


def host_of(url: str) -> str:
    """The host part of ``url`` (lower case, without brackets), or ``""``."""
    return (urlsplit(url).hostname or "").lower()


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def is_loopback_url(url: str) -> bool:
    """True when ``url`` points at this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    host = host_of(url)
    if host == "localhost" or host.endswith(".localhost"):
        return True
    ip = _ip(host)
    return ip is not None and ip.is_loopback


def is_local_url(url: str) -> bool:
    """True for loopback and private-network hosts (a model served on this machine or LAN)."""
    if is_loopback_url(url):
        return True
    ip = _ip(host_of(url))
    return ip is not None and (ip.is_private or ip.is_link_local)


def check_host(url: str, provider: str) -> None:
    """Refuse a non-loopback ``url`` while real model calls are forbidden.

    Args:
        url: the endpoint the adapter is about to call.
        provider: the adapter's provider name, for the message.

    Raises:
        RealModelsForbidden: the switch is on and the host is not loopback.
    """
    if real_models_forbidden() and not is_loopback_url(url):
        raise RealModelsForbidden(
            f"{provider}: refusing to call {host_of(url) or url!r}: {FORBID_ENV} is set, "
            "so only loopback hosts (127.0.0.1, ::1, localhost) may be reached; "
            "point the client at a local fake or unset the variable",
            provider=provider,
        )
