"""Bearer tokens for the SPARQL endpoint: who is asking, and which graphs they may read.

Tokens live in a TOML file that holds only their SHA-256 digests, so a leaked
file does not leak a usable token (tokens are 256 random bits, so a plain
digest is enough; no salt or slow hash is needed against guessing)::

    [[token]]
    principal = "did:example:alice"
    sha256 = "9f86d081884c7d65..."
    graphs = ["own-sessions", "urn:trails:graph:memory"]

    [[token]]
    principal = "did:example:auditor"
    sha256 = "..."
    graphs = ["*"]
    audit = true          # may also read the endpoint's access log

A graph pattern is an IRI in which ``*`` matches any run of characters
(``urn:trails:session:*``, or ``*`` for everything), or the word
``own-sessions``: every session graph whose session is associated with the
token's principal. The endpoint's access log is a store of its own that no
pattern reaches: only a token with ``audit = true`` reads it, at
``/access-log/sparql``. ``trails serve --hash-token`` makes new entries.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trails.errors import ConfigError

__all__ = [
    "OWN_SESSIONS",
    "Grant",
    "TokenTable",
    "hash_token",
    "load_tokens",
    "new_token",
    "token_entry",
]

OWN_SESSIONS = "own-sessions"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def hash_token(token: str) -> str:
    """The hex SHA-256 digest under which ``token`` is stored.

    Args:
        token: the bearer token as clients send it.

    Returns:
        64 lower-case hex characters.
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh random bearer token (256 bits, URL-safe text)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Grant:
    """What one token may do: its principal and the graphs it may read.

    Args:
        principal: who the token speaks for (a DID or a name).
        patterns: graph patterns (see the module docstring).
        audit: may read the access log (``/access-log/sparql``).
    """

    principal: str
    patterns: tuple[str, ...]
    audit: bool = False

    @property
    def own_sessions(self) -> bool:
        """Whether the grant includes the principal's own session graphs."""
        return OWN_SESSIONS in self.patterns

    @property
    def universal(self) -> bool:
        """Whether a pattern of the grant matches every IRI (``*``)."""
        return any(p != OWN_SESSIONS and set(p) == {"*"} for p in self.patterns)

    def matches(self, graph: str) -> bool:
        """Whether ``graph`` matches one of the IRI patterns (``own-sessions`` aside)."""
        return any(
            _compile(p).fullmatch(graph) is not None for p in self.patterns if p != OWN_SESSIONS
        )


_compiled: dict[str, re.Pattern[str]] = {}


def _compile(pattern: str) -> re.Pattern[str]:
    found = _compiled.get(pattern)
    if found is None:
        found = re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)
        _compiled[pattern] = found
    return found


class TokenTable:
    """Digest -> grant. ``authenticate`` turns an ``Authorization`` header into a grant.

    Args:
        grants: grants by the hex SHA-256 digest of their token.
    """

    def __init__(self, grants: Mapping[str, Grant]) -> None:
        self._grants = dict(grants)

    def __len__(self) -> int:
        return len(self._grants)

    def authenticate(self, authorization: str | None) -> Grant | None:
        """The grant of a ``Bearer`` header, or None when it is missing or unknown.

        Args:
            authorization: the raw ``Authorization`` header value.

        Returns:
            The matching grant, or None.
        """
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        # One dict lookup, whatever the number of tokens: the key compared is the
        # digest, which a client cannot steer without a SHA-256 preimage, so its
        # timing tells nothing about a stored digest.
        return self._grants.get(hash_token(token))


def _grant(entry: Any, where: str) -> tuple[str, Grant]:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table")
    principal = entry.get("principal")
    digest = str(entry.get("sha256", "")).lower()
    graphs = entry.get("graphs", [])
    audit = entry.get("audit", False)
    if not isinstance(principal, str) or not principal:
        raise ConfigError(f"{where} needs a principal")
    if not _HEX64.match(digest):
        raise ConfigError(
            f"{where} ({principal}) needs sha256 = the 64 hex digits of the token's SHA-256 "
            f"(trails serve --hash-token makes one); plain tokens are never stored"
        )
    if not isinstance(graphs, list) or not all(isinstance(g, str) and g for g in graphs):
        raise ConfigError(f"{where} ({principal}): graphs must be a list of patterns")
    for pattern in graphs:
        if pattern not in (OWN_SESSIONS, "*") and ":" not in pattern:
            raise ConfigError(
                f"{where} ({principal}): graph pattern {pattern!r} is neither an IRI pattern, "
                f"'*' nor '{OWN_SESSIONS}'"
            )
    if not isinstance(audit, bool):
        raise ConfigError(f"{where} ({principal}): audit must be true or false")
    return digest, Grant(principal, tuple(graphs), audit)


def load_tokens(source: str | Path | Mapping[str, Any]) -> TokenTable:
    """Read the tokens file (or an already parsed TOML mapping).

    Args:
        source: the path of the TOML file, or its parsed content.

    Returns:
        The token table.

    Raises:
        ConfigError: the file is missing, not TOML, or an entry is malformed.
    """
    where = "tokens"
    if isinstance(source, Mapping):
        data: Mapping[str, Any] = source
    else:
        path = Path(source)
        where = str(path)
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
    entries = data.get("token", [])
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: write each token as a [[token]] table")
    grants: dict[str, Grant] = {}
    for number, entry in enumerate(entries, 1):
        digest, grant = _grant(entry, f"{where} [[token]] #{number}")
        if digest in grants:
            raise ConfigError(f"{where}: token #{number} has the same sha256 as another")
        grants[digest] = grant
    return TokenTable(grants)


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string: quotes, backslashes and every control character
    (a newline included) escaped, so no value can end its line and start an entry."""
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def token_entry(
    token: str, principal: str, graphs: Sequence[str] = (OWN_SESSIONS,), *, audit: bool = False
) -> str:
    """A ``[[token]]`` TOML entry for ``token`` (its digest, never the token itself).

    Args:
        token: the bearer token to register.
        principal: who it speaks for.
        graphs: the graph patterns it may read.
        audit: may read the access log.

    Returns:
        TOML text to append to the tokens file.
    """
    quoted = ", ".join(_toml_string(g) for g in graphs)
    name = _toml_string(principal)[1:-1]
    lines = [
        "[[token]]",
        f'principal = "{name}"',
        f'sha256 = "{hash_token(token)}"',
        f"graphs = [{quoted}]",
    ]
    if audit:
        lines.append("audit = true")
    return "\n".join(lines) + "\n"
