"""What several commands parse alike: a session named by its IRI or by its bare UUID.

``trails sessions`` prints ``urn:trails:session:<uuid>``; a user who copies only
the UUID means the same session, minted under the configured base IRI. And what
several commands print alike: where a store is (``store_place``), as a user names it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["session_arg", "store_place"]

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def session_arg(text: str) -> str:
    """A session argument as an IRI: a bare UUID becomes ``<base>session:<uuid>``.

    Args:
        text: what the user typed (an IRI, a persisted graph's IRI, or a UUID).

    Returns:
        The IRI text (anything but a bare UUID comes back unchanged).
    """
    value = text.strip()
    if not _UUID.fullmatch(value):
        return text
    from trails.config import load_settings
    from trails.prov.iri import Minter

    return str(Minter(load_settings().base_iri).session(value.lower()))


def store_place(store: Any) -> str:
    """Where a store is, as a user names it: its folder (absolute), its SPARQL server's URL
    (without a user:password) or ``memory:``; never the store object's repr."""
    path = getattr(store, "path", None)
    if path is not None:
        return str(path.resolve()) if hasattr(path, "resolve") else str(path)
    url = getattr(store, "query_url", None)
    if url is not None:
        parts = urlsplit(str(url))
        return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))
    return "memory:"
