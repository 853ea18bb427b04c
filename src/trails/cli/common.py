"""What several commands parse alike: a session named by its IRI or by its bare UUID.

``trails sessions`` prints ``urn:trails:session:<uuid>``; a user who copies only
the UUID means the same session, minted under the configured base IRI.
"""

from __future__ import annotations

import re

__all__ = ["session_arg"]

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
