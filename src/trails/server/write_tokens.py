"""Who may write spans: bearer tokens with a write scope, from ``trails serve``'s tokens file.

The tokens file is the endpoint's (``[[token]]`` entries holding SHA-256
digests, see ``trails.server.auth``); a token may send spans only when
its entry says ``write = true``. Reading grants (``graphs``) are not needed
for writing, and a write token reads nothing unless it also has graphs::

    [[token]]
    principal = "did:example:agent-platform"
    sha256 = "..."
    write = true
"""

from __future__ import annotations

import hmac
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trails.errors import ConfigError
from trails.server.auth import hash_token, load_tokens

__all__ = ["WriteGrant", "WriteTokens", "load_write_tokens"]


@dataclass(frozen=True)
class WriteGrant:
    """A token's principal, and whether it may write spans."""

    principal: str
    write: bool


class WriteTokens:
    """Digest -> grant; ``authenticate`` reads an ``Authorization: Bearer`` header."""

    def __init__(self, grants: Mapping[str, WriteGrant]) -> None:
        self._grants = dict(grants)

    def __len__(self) -> int:
        return len(self._grants)

    @property
    def any_write(self) -> bool:
        """Whether a token may write (none: an endpoint that only reads)."""
        return any(grant.write for grant in self._grants.values())

    def authenticate(self, authorization: str | None) -> WriteGrant | None:
        """The grant of a bearer header, or None when missing or unknown."""
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        digest = hash_token(token.strip())
        for known, grant in self._grants.items():
            if hmac.compare_digest(known, digest):
                return grant
        return None


def load_write_tokens(source: str | Path | Mapping[str, Any]) -> WriteTokens:
    """Read the tokens file (the endpoint's format) with each entry's write scope.

    Args:
        source: the TOML file's path, or its parsed content.

    Returns:
        The tokens.

    Raises:
        ConfigError: unreadable file, a malformed entry, or ``write`` not a boolean.
    """
    if isinstance(source, Mapping):
        data: Mapping[str, Any] = source
    else:
        path = Path(source)
        try:
            with path.open("rb") as fh:
                data = tomllib.load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read the tokens file {path}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"the tokens file {path} is not valid TOML: {exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"the tokens file {path} is not UTF-8 text (byte {exc.start}): TOML is UTF-8"
            ) from None
    load_tokens(data)  # the endpoint's own checks: principal, sha256, graphs
    grants: dict[str, WriteGrant] = {}
    for number, entry in enumerate(data.get("token", []), 1):
        write = entry.get("write", False)
        if not isinstance(write, bool):
            raise ConfigError(f"tokens [[token]] #{number}: write must be true or false")
        grants[str(entry["sha256"]).lower()] = WriteGrant(str(entry["principal"]), write)
    return WriteTokens(grants)
