"""RFC 3161 time-stamps on tree heads: a third party's word on when the log held its leaves.

A tree head's time is the log's own statement. With ``[audit] timestamp_url`` set (one
URL, or a list tried in order until one grants the stamp), each head the transparency log
records is sent to that time-stamping authority (TSA): the request's message imprint is
the head's hash (SHA-256 of its fields), and the TSA's signed response is kept with the
head (``trails:timestampToken``, base64 DER). A TSA that cannot be reached costs the stamp,
never the head (a warning says so; ``trails verify --strict`` fails on such a head).

Checking a token needs no network: its imprint must be the head's hash and its status
granted; with the TSA's certificates (``[audit] timestamp_cert``, a PEM file, or
``--tsa-cert``: the root, or the TSA's certificate or chain with the root), the token's
signature and certificate chain are checked too (``rfc3161-client``). A file without the
self-signed root the chain ends at is told which root that is.

Any conforming TSA: a CMS SignedData whose certificate SET is in BER order (OpenSSL's
``ts`` server with ``certs`` configured writes them so) is put in DER order before it is
parsed (``der_ordered``): the order of that SET is outside what the TSA signs.
"""

from __future__ import annotations

import base64
import binascii
import logging
from pathlib import Path
from typing import Any

from trails.config import Settings, load_settings
from trails.errors import ConfigError
from trails.evidence.proofs import TimestampCheck, TreeHead

__all__ = [
    "configured_stamper",
    "configured_tsas",
    "der_ordered",
    "load_certificates",
    "request_stamp",
    "timestamp_checker",
]

log = logging.getLogger(__name__)

_TIMEOUT_S = 10.0


def request_stamp(url: str, message: bytes, *, timeout: float = _TIMEOUT_S) -> bytes:
    """Ask the TSA at ``url`` to stamp SHA-256 of ``message``; its response (DER).

    Raises:
        OSError: the TSA could not be reached or answered with an HTTP error.
        ValueError: the answer is not a granted time-stamp over ``message``.
    """
    import urllib.request  # loaded here: only a stamping process talks to a TSA

    from rfc3161_client import (
        HashAlgorithm,
        PKIStatus,
        TimestampRequestBuilder,
        decode_timestamp_response,
    )

    request = TimestampRequestBuilder().data(message).hash_algorithm(HashAlgorithm.SHA256).build()
    http = urllib.request.Request(
        url,
        data=request.as_bytes(),
        headers={"Content-Type": "application/timestamp-query"},
        method="POST",
    )
    with urllib.request.urlopen(http, timeout=timeout) as answer:
        data: bytes = answer.read(_MAX_RESPONSE + 1)
    if len(data) > _MAX_RESPONSE:
        raise ValueError(f"the TSA answered more than {_MAX_RESPONSE} bytes")
    response = decode_timestamp_response(der_ordered(data))
    if PKIStatus(response.status) != PKIStatus.GRANTED:
        raise ValueError(f"the TSA did not grant the time-stamp (status {response.status})")
    if response.tst_info.message_imprint.message != request.message_imprint.message:
        raise ValueError("the TSA stamped another message")
    return data


def configured_tsas(settings: Settings | None = None) -> list[str]:
    """The TSA URLs of ``[audit] timestamp_url`` (one URL or a list), in order.

    Raises:
        ConfigError: not an http:// or https:// URL (or a list of them).
    """
    settings = settings or load_settings()
    urls = settings.section("audit").get("timestamp_url")
    if not urls:
        return []
    listed = urls if isinstance(urls, list) else [urls]
    if not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in listed):
        raise ConfigError(
            "[audit] timestamp_url must be an http:// or https:// URL, or a list of them"
        )
    return [str(u) for u in listed]


def configured_stamper(settings: Settings | None = None) -> Any:
    """A function stamping a head message with the first of the TSAs ``[audit]
    timestamp_url`` names that grants it (base64 DER token, or None when every one fails),
    or None when none is configured."""
    urls = configured_tsas(settings)
    if not urls:
        return None

    def stamp(message: bytes) -> str | None:
        for url in urls:
            try:
                return base64.b64encode(request_stamp(url, message)).decode("ascii")
            except (OSError, ValueError) as exc:  # urllib's URLError is an OSError
                log.warning("the tree head was not time-stamped by %s: %s", url, exc)
        return None

    return stamp


_MAX_RESPONSE = 1 << 20


def _tlv(data: bytes | bytearray, at: int, end: int) -> tuple[int, int, int]:
    """``(tag, content start, content end)`` of the DER element at ``at``.

    Raises:
        ValueError: a multi-byte tag, an indefinite or overlong length, or past ``end``.
    """
    if at + 2 > end or data[at] & 0x1F == 0x1F:
        raise ValueError("not a DER element")
    tag, size, start = data[at], data[at + 1], at + 2
    if size & 0x80:
        count = size & 0x7F
        if count == 0 or count > 4 or start + count > end:
            raise ValueError("an indefinite or overlong length")
        size, start = int.from_bytes(data[start : start + count], "big"), start + count
    if start + size > end:
        raise ValueError("an element longer than what holds it")
    return tag, start, start + size


def _children(data: bytes | bytearray, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """``(offset, tag, content start, content end)`` of each element in ``data[start:end]``."""
    out, at = [], start
    while at < end:
        tag, s, e = _tlv(data, at, end)
        out.append((at, tag, s, e))
        at = e
    return out


def der_ordered(response: bytes) -> bytes:
    """A time-stamp response with its CMS SignedData certificate SET in DER order (its
    elements sorted by their encodings), the rest byte for byte. The SET is outside what
    the TSA signs, so its order changes no signature. A response without a token, or not
    of the expected shape, is returned as it is (the parser then says what is wrong)."""
    data = bytearray(response)
    try:
        _, s, e = _tlv(data, 0, len(data))  # TimeStampResp
        parts = _children(data, s, e)
        if len(parts) < 2:
            return response
        _, _, s, e = parts[1]  # the token: a ContentInfo
        _, _, s, e = _children(data, s, e)[1]  # [0] EXPLICIT content
        _, s, e = _tlv(data, s, e)  # SignedData
        for _, tag, cs, ce in _children(data, s, e):
            if tag == 0xA0:  # certificates [0] IMPLICIT SET OF
                items = sorted(bytes(data[a:z]) for a, _, _, z in _children(data, cs, ce))
                data[cs:ce] = b"".join(items)
    except (ValueError, IndexError):
        return response
    return bytes(data)


def load_certificates(path: str | Path) -> list[Any]:
    """The X.509 certificates of a PEM file.

    Raises:
        ConfigError: unreadable, or no certificate in it.
    """
    from cryptography import x509

    try:
        certs = x509.load_pem_x509_certificates(Path(path).read_bytes())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the TSA certificate {path}: {exc}") from None
    return list(certs)


def _self_signed(cert: Any) -> bool:
    return bool(cert.subject == cert.issuer)


def _anchor_needed(response: Any, given: list[Any]) -> str:
    """The name of the root the token's chain ends at, from its embedded certificates and
    those given: what ``--tsa-cert`` must hold."""
    from cryptography import x509

    certs = [x509.load_der_x509_certificate(c) for c in response.signed_data.certificates]
    by_subject = {c.subject: c for c in [*certs, *given]}
    signer = next(iter(response.signed_data.signer_infos), None)
    cert = next((c for c in [*certs, *given] if signer is not None
                 and c.issuer == signer.issuer and c.serial_number == signer.serial_number),
                None)  # fmt: skip
    name = signer.issuer if signer is not None else None
    for _ in range(16):  # up the chain by issuer names, as far as the certificates go
        if cert is None or _self_signed(cert):
            break
        name = cert.issuer
        cert = by_subject.get(cert.issuer)
    if cert is not None and _self_signed(cert):
        name = cert.subject
    return name.rfc4514_string() if name is not None else "an unknown issuer"


def timestamp_checker(certificates: list[Any] | None = None) -> TimestampCheck:
    """A check of a head's token: its imprint is the head's hash and it was granted; with
    ``certificates`` (the TSA's root, or its certificate or chain with the root: the
    self-signed ones are the trust anchors) its signature and chain verify too."""
    certificates = certificates or []
    roots = [c for c in certificates if _self_signed(c)]
    others = [c for c in certificates if not _self_signed(c)]

    def check(head: TreeHead) -> str | None:
        from rfc3161_client import (
            PKIStatus,
            VerificationError,
            VerifierBuilder,
            decode_timestamp_response,
        )

        try:
            raw = base64.b64decode(head.timestamp, validate=True)
            response = decode_timestamp_response(der_ordered(raw))
            imprint = response.tst_info.message_imprint.message
            granted = PKIStatus(response.status) == PKIStatus.GRANTED
        except (ValueError, binascii.Error) as exc:
            return f"its time-stamp token does not parse: {exc}"
        if not granted:
            return "its time-stamp token was not granted"
        if imprint != bytes.fromhex(head.hash):
            return "its time-stamp token stamps another hash than the head's"
        if not certificates:
            return None
        if not roots:
            return (
                "its time-stamp token cannot be checked: the TSA certificate file holds no "
                f"trust anchor (a self-signed root); the TSA's chain ends at "
                f"{_anchor_needed(response, others)}: add that root certificate"
            )
        builder = VerifierBuilder()
        for cert in roots:
            builder = builder.add_root_certificate(cert)
        for cert in others:
            builder = builder.add_intermediate_certificate(cert)
        try:
            builder.build().verify(response, imprint)
        except (VerificationError, ValueError) as exc:
            anchor = _anchor_needed(response, others)
            return (
                f"its time-stamp token does not verify against the TSA certificates given "
                f"(with them its chain reaches {anchor}): {exc}"
            )
        return None

    return check
