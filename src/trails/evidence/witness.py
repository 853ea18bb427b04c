"""A witness for other parties' logs (c2sp.org/tlog-witness): cosign a checkpoint only when
it extends the last one cosigned, and keep every refusal.

Two departments, two companies or a company and its regulator witness each other's logs:
each runs a witness configured with the other's log (its origin and verifier key). A
checkpoint is cosigned when its note carries a valid signature by that log's key and a
consistency proof (RFC 9162) leads to it from the last checkpoint this witness cosigned
for that origin. A log that shows two histories (a fork: the same size with another
root, or a larger tree that does not extend the cosigned one) is refused at the second
branch, and the refusal is kept as evidence: both checkpoints, each signed by the log,
appended to ``refusals.jsonl`` in the state folder.

State is one JSON file per witness (``state.json``: per origin, the size, root and note
of the last cosigned checkpoint), replaced atomically and flushed to disk before the
cosignature is returned; the check of the old size and the update are one step under a
lock (the spec's race between two requests cannot roll the state back), and one witness
process at a time holds the folder (an exclusive ``flock`` on ``lock``). A state file that
cannot be read stops the witness: a witness that forgot its state could cosign a fork.

The answers (status code, content type, body) are the protocol's; the HTTP server that
carries them is ``trails.server.witness``.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trails.errors import ConfigError
from trails.evidence.cosign import cosign, parse_add_checkpoint
from trails.evidence.merkle import verify_consistency
from trails.evidence.note import NoteError, parse_checkpoint, signature_status

__all__ = ["Answer", "LogKey", "Witness"]

STATE_FORMAT = "trails-witness-state/1"
SIZE_TYPE = "text/x.tlog.size"


@dataclass(frozen=True)
class Answer:
    """What the witness answers one request: an HTTP status, a content type and a body."""

    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class LogKey:
    """A log this witness follows: its checkpoints' origin and one key it signs them with
    (the note key name and the 32-byte Ed25519 public key)."""

    origin: str
    name: str
    public: bytes


def _text(status: int, message: str) -> Answer:
    return Answer(status, (message + "\n").encode("utf-8"))


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _replace(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a new file beside it, flushed, renamed over it."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(path.parent)


class Witness:
    """One witness: its name and Ed25519 key, the logs it follows, its state folder."""

    def __init__(self, folder: str | Path, name: str, key: Any, logs: list[LogKey]) -> None:
        self.folder = Path(folder)
        self.name, self.key = name, key
        self.logs: dict[str, list[LogKey]] = {}
        for log in logs:
            self.logs.setdefault(log.origin, []).append(log)
        self.state_path = self.folder / "state.json"
        self.refusals_path = self.folder / "refusals.jsonl"
        self._lock = threading.Lock()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock_file = open(self.folder / "lock", "a")  # noqa: SIM115 (held while serving)
        except OSError as exc:
            raise ConfigError(f"cannot create the witness state folder {folder}: {exc}") from None
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_file.close()
            raise ConfigError(
                f"another witness holds the state folder {folder}: two witnesses on one state "
                "could each cosign a branch of a fork"
            ) from None
        try:
            self.state = self._load()
        except ConfigError:
            self._lock_file.close()
            raise

    def close(self) -> None:
        """Let go of the state folder (another witness may then serve it)."""
        self._lock_file.close()

    def _load(self) -> dict[str, dict[str, Any]]:
        """The last cosigned checkpoint of each origin.

        Raises:
            ConfigError: the state file is there and is not this witness's state.
        """
        try:
            data = json.loads(self.state_path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the witness state {self.state_path}: {exc}") from None
        logs = data.get("logs") if isinstance(data, dict) else None
        if not isinstance(logs, dict) or data.get("format") != STATE_FORMAT:
            raise ConfigError(f"{self.state_path} is not a witness state ({STATE_FORMAT})")
        for origin, held in logs.items():
            if not (
                isinstance(held, dict)
                and isinstance(held.get("size"), int)
                and isinstance(held.get("root"), str)
            ):
                raise ConfigError(f"{self.state_path}: the state of {origin!r} is malformed")
        return logs

    def held(self, origin: str) -> tuple[int, bytes] | None:
        """The size and root of the last checkpoint cosigned for ``origin``."""
        held = self.state.get(origin)
        return (held["size"], base64.b64decode(held["root"])) if held else None

    def add_checkpoint(self, body: bytes) -> Answer:
        """Answer one ``add-checkpoint`` request (c2sp.org/tlog-witness)."""
        try:
            request = parse_add_checkpoint(body)
            checkpoint = parse_checkpoint(request.note.text)
        except NoteError as exc:
            return _text(400, f"bad request: {exc}")
        keys = self.logs.get(checkpoint.origin)
        if not keys:
            return _text(404, f"unknown log origin {checkpoint.origin!r}")
        if not any(signature_status(request.note, k.name, k.public) for k in keys):
            return _text(403, "no signature by a key this witness trusts for that origin")
        if request.old > checkpoint.size:
            return _text(400, f"old size {request.old} is larger than the checkpoint's")
        with self._lock:  # the check of the old size and the update are one step
            held = self.held(checkpoint.origin)
            size = held[0] if held is not None else 0
            if request.old != size:
                return Answer(409, f"{size}\n".encode("ascii"), SIZE_TYPE)
            if held is None:
                if request.proof:
                    return _text(422, "a consistency proof from size 0 must be empty")
            elif checkpoint.size == held[0]:
                if request.proof or checkpoint.root != held[1]:
                    self._refuse(request, checkpoint, 409, "same size, another root")
                    return _text(409, "a checkpoint of the same size with another root hash")
            elif not verify_consistency(
                held[0], checkpoint.size, held[1], checkpoint.root, request.proof
            ):
                self._refuse(request, checkpoint, 422, "the consistency proof does not verify")
                return _text(422, f"the consistency proof from size {held[0]} does not verify")
            line = cosign(request.note.text, self.name, self.key).line()
            state = dict(self.state)
            state[checkpoint.origin] = {
                "size": checkpoint.size,
                "root": base64.b64encode(checkpoint.root).decode("ascii"),
                "checkpoint": str(request.note),
                "cosigned": int(time.time()),
            }
            try:  # on disk before the cosignature leaves; in memory only once on disk
                _replace(self.state_path, self._state_bytes(state))
            except OSError as exc:
                return _text(500, f"the witness could not keep its state: {exc.strerror or exc}")
            self.state = state
        return Answer(200, line.encode("utf-8"))

    def _state_bytes(self, state: dict[str, dict[str, Any]]) -> bytes:
        data = {"format": STATE_FORMAT, "witness": self.name, "logs": state}
        return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")

    def _refuse(self, request: Any, checkpoint: Any, status: int, reason: str) -> None:
        """Keep a refused checkpoint (signed by the log) beside the one cosigned before it:
        one JSON line appended and flushed to disk before the refusal is answered."""
        held = self.state.get(checkpoint.origin, {})
        record = {
            "time": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "origin": checkpoint.origin,
            "status": status,
            "reason": reason,
            "cosigned": held.get("checkpoint"),
            "submitted": str(request.note),
            "old": request.old,
            "proof": [base64.b64encode(h).decode("ascii") for h in request.proof],
        }
        line = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
        fd = os.open(self.refusals_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def refusals(self) -> list[dict[str, Any]]:
        """The refusals kept so far, oldest first."""
        try:
            text = self.refusals_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]
