"""Attachments of a behaviour-tree run: files given with the goal, recorded by digest.

reactree's ``TreeRequest.Attachments`` (and each ``AgentNodeConfig``'s) are the
files of the incoming message, handed to every agent node. In trails
``behaviour_tree.run(goal, attachments=[Attachment(...), ...])`` does the
same: each attachment is a ``trails:Attachment`` entity the run
``prov:used``, with its media type, size and the sha256 of its bytes, written
in one write when the walk starts (the bytes themselves are not recorded: the
digest proves which file it was). Agent nodes are shown the attachments in
their prompt: a text attachment (``text/*``, JSON, XML, YAML) by its text, any
other by name, media type, size and digest. An image the providers take (PNG,
JPEG, GIF, WebP: ``trails.llm.IMAGE_TYPES``) is also passed to the model as
multimodal content: an ``Image`` on the node's first user message
(``attachment_images``), naming the attachment's entity, so each completion
that sent it ``prov:used`` that ``trails:Attachment``.
"""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from trails.errors import UserError
from trails.llm.evidence import attachment
from trails.llm.types import IMAGE_TYPES, Image
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV
from trails.store.terms import IRI
from trails.text import check_text

__all__ = [
    "Attachment",
    "AttachmentsGiven",
    "attachment_images",
    "attachment_iri",
    "check_attachments",
    "render_attachments",
]

_TEXT_TYPES = ("application/json", "application/xml", "application/yaml", "application/x-yaml")


@dataclass(frozen=True)
class Attachment:
    """A file or blob given to a behaviour-tree run (reactree's ``messenger.Attachment``).

    Attributes:
        name: the file name.
        data: its bytes (a str is taken as UTF-8 text).
        media_type: its MIME type (default ``application/octet-stream``).
    """

    name: str
    data: bytes
    media_type: str = "application/octet-stream"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise UserError(f"Attachment name must be a non-empty str, not {self.name!r}")
        check_text(self.name, "Attachment name")
        if isinstance(self.data, str):
            object.__setattr__(self, "data", self.data.encode("utf-8"))
        if not isinstance(self.data, bytes | bytearray):
            raise UserError(f"Attachment data must be bytes, not {type(self.data).__name__}")
        if not isinstance(self.media_type, str) or "/" not in self.media_type:
            raise UserError(f"Attachment media_type must be a MIME type, not {self.media_type!r}")
        check_text(self.media_type, "Attachment media_type")

    @classmethod
    def from_path(cls, path: str | Path, media_type: str | None = None) -> Attachment:
        """An attachment read from a file; its media type guessed from its name unless given
        (an unknown name: ``text/plain`` when the bytes are UTF-8 text).

        Raises:
            UserError: the file cannot be read.
        """
        file = Path(path)
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise UserError(f"cannot read attachment {str(file)!r}: {exc.strerror}") from exc
        guessed = media_type or mimetypes.guess_type(file.name)[0] or _sniff(data)
        return cls(file.name, data, guessed)

    @cached_property
    def sha256(self) -> str:
        """The hex sha256 of the bytes (computed once: every agent node's prompt names it)."""
        return hashlib.sha256(self.data).hexdigest()

    @property
    def size(self) -> int:
        """How many bytes it holds."""
        return len(self.data)

    def text(self) -> str | None:
        """Its text, for a text attachment that is valid UTF-8; else None."""
        if not (self.media_type.startswith("text/") or self.media_type in _TEXT_TYPES):
            return None
        try:
            decoded = bytes(self.data).decode("utf-8")
        except UnicodeDecodeError:
            return None
        return decoded if "\x00" not in decoded else None

    def image(self, entity: str | None = None) -> Image | None:
        """The attachment as an ``Image`` the model is shown, or None when it is not one the
        providers take (another type, or bytes that are not of its declared type).

        Args:
            entity: the IRI of its recorded ``trails:Attachment`` (see ``attachment_iri``).
        """
        if self.media_type.lower() not in IMAGE_TYPES:
            return None
        try:
            return Image(self.media_type, bytes(self.data), entity)
        except UserError:
            return None


def attachment_iri(run: str, index: int) -> IRI:
    """The IRI of a run's ``index``-th attachment entity (counted from 0)."""
    return Minter.part(IRI.trusted(run), f"attachment{index + 1}")


def attachment_images(run: str, attachments: tuple[Attachment, ...]) -> tuple[Image, ...]:
    """The run's image attachments as ``Image`` objects, each naming its recorded entity."""
    images = (a.image(str(attachment_iri(run, i))) for i, a in enumerate(attachments))
    return tuple(image for image in images if image is not None)


def _sniff(data: bytes) -> str:
    """``text/plain`` for bytes that are UTF-8 text (a ``.tf``, a ``.log``), else a blob."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "application/octet-stream" if "\x00" in text else "text/plain"


def check_attachments(value: Any) -> tuple[Attachment, ...]:
    """``attachments=`` checked: a list of ``Attachment`` (None: none).

    Raises:
        UserError: not a list of attachments.
    """
    if value is None:
        return ()
    if isinstance(value, Attachment) or not isinstance(value, Iterable):
        raise UserError("attachments= must be a list of trails Attachment objects")
    items = tuple(value)
    for item in items:
        if not isinstance(item, Attachment):
            raise UserError(f"attachments= must hold Attachment objects, not {item!r}")
    return items


def render_attachments(attachments: tuple[Attachment, ...]) -> str:
    """The attachments as an agent node's prompt shows them ("" for none)."""
    if not attachments:
        return ""
    parts = []
    for a in attachments:
        head = f"- {a.name} ({a.media_type}, {a.size} bytes, sha256 {a.sha256})"
        text = a.text()
        if text is not None:
            parts.append(f"{head}:\n{text}")
        else:
            shown = "attached as an image" if a.image() is not None else "not shown (not text)"
            parts.append(f"{head}: {shown}")
    return "\n\nAttachments:\n" + "\n".join(parts)


class AttachmentsGiven(Event):
    """The attachments a run was given: each an entity the run used."""

    run: str
    attachments: tuple[tuple[str, int, str], ...]
    """(media type, size, sha256) of each attachment, in order."""

    def emit(self, b: QuadBuilder) -> None:
        run = IRI.trusted(self.run)
        for i, (media_type, size, digest) in enumerate(self.attachments):
            e = attachment_iri(self.run, i)
            label = f"attachment {i + 1} ({media_type})"
            attachment(b, e, label=label, media_type=media_type, size=size, digest=digest)
            b.add(run, PROV.used, e)
