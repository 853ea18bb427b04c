"""Asking witnesses to cosign the log's newest checkpoint (client of c2sp.org/tlog-witness).

``[[audit.witnesses]]`` in trails.toml names each witness: ``url`` (its submission prefix)
and ``key`` (its verifier key, ``name+keyid+base64(0x04 || Ed25519 key)``; an optional
``name`` must be the key's). After each
verification checkpoint (``trails verify``) the newest signed checkpoint is sent to every
witness with the consistency proof from the last size that witness cosigned (read from the
cosignatures kept in the log); a witness that answers 409 with the size it holds is asked
once more, from that size. A witness that answers 200 with a line that verifies against
its configured key is kept: the line is written on the tree head (``trails:cosignature``),
in one write, and ``trails head --out`` writes it after the log's own signature.

Anything else costs that witness's cosignature, never the head: a refusal (with the
spec's meaning of each status), an answer that is not a valid cosignature by the
configured key, a witness that cannot be reached or does not answer within
``[audit] witness_timeout`` seconds (default 10; the whole exchange is bounded, not only
each read). Each outcome is one line; a head is never marked witnessed by a line that
was not checked. ``trails verify --witness KEY --quorum N`` then requires cosignatures.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trails._lazy import lazy_names
from trails.config import Settings, load_settings
from trails.errors import ConfigError
from trails.evidence.cosign import Cosigner, format_add_checkpoint, parse_cosigner
from trails.evidence.note import NoteError, parse_checkpoint, parse_note
from trails.evidence.transparency import NotInLog, consistency_from, log_iri, read_head
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal

if TYPE_CHECKING:
    from trails.evidence.events import HeadWitnessed

__all__ = [
    "HeadWitnessed",
    "Outcome",
    "WitnessConfig",
    "ask_witness",
    "configured_witnesses",
    "last_cosigned",
    "witness_newest",
]

DEFAULT_TIMEOUT_S = 10.0
MAX_ANSWER = 1 << 16

# the cosignatures' event is loaded when they are written (``trails.evidence.events``), so
# reading cosignatures does not build the event models; the old name resolves on first use
__getattr__, __dir__ = lazy_names(__name__, {"HeadWitnessed": "trails.evidence.events"})

Post = Callable[[str, bytes, float], tuple[int, str, bytes]]


@dataclass(frozen=True)
class WitnessConfig:
    """A witness: where to send checkpoints, and the key its cosignatures must verify by."""

    url: str
    cosigner: Cosigner

    @property
    def label(self) -> str:
        return f"{self.cosigner.name} ({self.url})"


@dataclass(frozen=True)
class Outcome:
    """What one witness did with the checkpoint: the kept line, or why there is none."""

    witness: WitnessConfig
    line: str | None
    message: str
    refused: bool = False
    """The witness refused the checkpoint (a 4xx of the protocol, or it holds a larger tree):
    a finding about the log or the setup, not a witness that could not be asked."""

    def __str__(self) -> str:
        return f"WITNESS   {self.witness.label}: {self.message}"


def configured_witnesses(settings: Settings | None = None) -> tuple[list[WitnessConfig], float]:
    """The witnesses of ``[[audit.witnesses]]`` and ``[audit] witness_timeout`` (seconds).

    Raises:
        ConfigError: a witness without an http(s) ``url`` or a valid ``key``, or a timeout
            that is not a positive number of at most 120 seconds.
    """
    audit = (settings or load_settings()).section("audit")
    listed = audit.get("witnesses") or []
    timeout = audit.get("witness_timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 120:
        raise ConfigError("[audit] witness_timeout must be a number of seconds, 0 < t <= 120")
    if not isinstance(listed, list):
        raise ConfigError("[[audit.witnesses]] must be a list of tables with url and key")
    out = []
    for entry in listed:
        url = entry.get("url") if isinstance(entry, dict) else None
        key = entry.get("key") if isinstance(entry, dict) else None
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError('each [[audit.witnesses]] needs url = "http(s)://..."')
        if not isinstance(key, str):
            raise ConfigError(f'the witness {url} needs key = "<its verifier key>"')
        try:
            cosigner = parse_cosigner(key)
        except NoteError as exc:
            raise ConfigError(f"the witness {url}: {exc}") from None
        name = entry.get("name", cosigner.name)
        if name != cosigner.name:
            raise ConfigError(
                f"the witness {url}: name {name!r} is not its key's {cosigner.name!r}"
            )
        out.append(WitnessConfig(url.rstrip("/"), cosigner))
    return out, float(timeout)


def http_post(url: str, body: bytes, timeout: float) -> tuple[int, str, bytes]:
    """POST ``body``; the status, content type and at most 64 KiB of the answer, all within
    about ``timeout`` seconds.

    Raises:
        OSError: the witness cannot be reached, or is too slow.
        ValueError: it answered more than 64 KiB.
    """
    import urllib.error  # the HTTP client loads with the first witness asked, not every command
    import urllib.request

    deadline = time.monotonic() + timeout
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "text/plain; charset=utf-8"}
    )
    try:
        answer = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:  # a 4xx or 5xx answer: still an answer
        answer = exc
    with answer:
        status, kind = answer.status or 0, answer.headers.get("Content-Type", "")
        data = b""
        while len(data) <= MAX_ANSWER:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no whole answer within {timeout:g} s")
            chunk = answer.read1(4096) if hasattr(answer, "read1") else answer.read(4096)
            if not chunk:
                break
            data += chunk
    if len(data) > MAX_ANSWER:
        raise ValueError(f"an answer of more than {MAX_ANSWER} bytes")
    return status, kind, data


_REFUSED = {
    400: "refused the request as malformed (400)",
    403: "does not trust the key that signed the checkpoint (403): configure the log's "
    "verifier key in the witness",
    404: "does not follow this log's origin (404): configure the log in the witness",
    409: "refused a checkpoint of its cosigned size with another root (409): a fork",
    422: "refused the consistency proof (422): this log does not extend the checkpoint it "
    "cosigned last",
}


def ask_witness(
    witness: WitnessConfig,
    note: str,
    old: int,
    proof_from: Callable[[int], list[bytes]],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    post: Post = http_post,
) -> Outcome:
    """Send ``note`` (a signed checkpoint) with the consistency proof from ``old`` leaves;
    on 409 with the size the witness holds, once more from that size."""
    import http.client

    size = parse_checkpoint(parse_note(note).text).size
    url = witness.url + "/add-checkpoint"
    for attempt in range(2):
        try:
            status, kind, data = post(
                url, format_add_checkpoint(old, proof_from(old), note), timeout
            )
        except NotInLog as exc:
            return Outcome(witness, None, f"no consistency proof from {old} leaves: {exc}")
        except (OSError, ValueError, http.client.HTTPException) as exc:
            return Outcome(
                witness, None, f"no cosignature: unreachable, too slow or not HTTP ({exc!r})"
            )
        if status == 200:
            return _cosigned(witness, note, data)
        held = None
        if status == 409 and kind.startswith("text/x.tlog.size"):
            held = _size(data)
            if held is None:
                return Outcome(
                    witness,
                    None,
                    f"no cosignature: it answered 409 with a body that is not a tree size: "
                    f"{_snippet(data)}",
                )
        if held is not None and held != old and attempt == 0:
            if held > size:
                return Outcome(
                    witness,
                    None,
                    f"no cosignature: the witness cosigned a tree of {held} leaves, larger than "
                    f"this log's {size} (the log was cut, or another log shares its origin)",
                    refused=True,
                )
            old = held
            continue
        reason = _REFUSED.get(status, f"answered {status}")
        return Outcome(
            witness,
            None,
            f"no cosignature: it {reason}: {_snippet(data)}",
            refused=status in _REFUSED,
        )
    return Outcome(witness, None, "no cosignature: it answered 409 twice", refused=True)


def _size(data: bytes) -> int | None:
    """The size a 409 names (``text/x.tlog.size``: decimal digits and a newline), or None;
    at most 20 digits, so a witness's garbage never becomes a huge number to convert."""
    match = re.fullmatch(rb"([0-9]{1,20})\n", data)
    return int(match.group(1)) if match else None


def _snippet(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip().splitlines()
    return repr(text[0][:120]) if text else "(no body)"


def _cosigned(witness: WitnessConfig, note: str, data: bytes) -> Outcome:
    """The witness's valid cosignature among the lines it answered, or why there is none."""
    size = parse_checkpoint(parse_note(note).text).size
    try:
        text = data.decode("utf-8")
        answered = parse_note(parse_note(note).text + "\n" + text)
        if not text.endswith("\n") or not text.startswith("\u2014 "):
            raise NoteError("not signature lines")
    except (UnicodeDecodeError, NoteError):
        return Outcome(witness, None, f"no cosignature: it answered 200 with {_snippet(data)}")
    now = time.time() + 300
    for sig in answered.signatures:
        stamp = witness.cosigner.signed(answered.text, sig)
        if stamp is not None and stamp <= now:
            return Outcome(witness, sig.line(), f"cosigned the checkpoint of {size} leaves")
    return Outcome(
        witness,
        None,
        "no cosignature: it answered 200 without a line that verifies by its configured key",
    )


_COSIGNED = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?size ?line $log WHERE { GRAPH $log { ?h trails:cosignature ?line ; trails:treeSize ?size } }
"""


def last_cosigned(store: Store, log: IRI) -> dict[tuple[str, bytes], int]:
    """Per witness (key name, key ID), the largest tree size it cosigned, from the kept lines.

    Raises:
        StoreError: the store could not be read.
    """
    result = store.query(_COSIGNED, {"log": log})
    assert isinstance(result, Solutions)
    sizes: dict[tuple[str, bytes], int] = {}
    for row in result:
        line, size = row["line"], row["size"]
        if not isinstance(line, Literal) or not isinstance(size, Literal):
            continue
        try:
            sig = parse_note("x\n\n" + line.value).signatures[0]
            n = int(size.value)
        except (NoteError, ValueError):
            continue
        sizes[(sig.name, sig.key_id)] = max(n, sizes.get((sig.name, sig.key_id), 0))
    return sizes


def witness_newest(
    recorder: Any,
    witnesses: list[WitnessConfig],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    post: Post = http_post,
) -> list[Outcome]:
    """Ask each witness to cosign the log's newest signed checkpoint; keep the valid lines
    on the head in one write. One outcome a witness (none without a signed checkpoint).

    Raises:
        StoreError: the store could not be read or written.
    """
    store, minter = recorder.store, recorder.minter
    log = log_iri(minter)
    head = read_head(store, log)
    if head is None or not head.note or not witnesses:
        return []
    known = last_cosigned(store, log)

    def proof_from(old: int) -> list[bytes]:
        newest, proof = consistency_from(store, minter, old)
        if newest.iri != head.iri:
            raise NotInLog("a newer head was recorded meanwhile")
        return proof

    outcomes = []
    for witness in witnesses:
        old = known.get((witness.cosigner.name, witness.cosigner.key_id), 0)
        old = old if old <= head.size else 0
        outcomes.append(
            ask_witness(witness, head.note, old, proof_from, timeout=timeout, post=post)
        )
    lines = tuple(
        o.line for o in outcomes if o.line is not None and o.line not in head.cosignatures
    )
    if lines:
        from trails.evidence.events import HeadWitnessed  # a writer's (trails.evidence.events)

        recorder.record(HeadWitnessed(session=log, head=head.iri, lines=lines))
    return outcomes
