"""RFC 3161 time-stamps on tree heads: a third party's word on when the log held its leaves.

A tree head's time is the log's own statement. With ``[audit] timestamp_url`` set, each
head the transparency log records is sent to that time-stamping authority (TSA): the
request's message imprint is the head's hash (SHA-256 of its fields), and the TSA's
signed response is kept with the head (``trails:timestampToken``, base64 DER). A TSA
that cannot be reached costs the stamp, never the head (a warning says so).

Checking a token needs no network: its imprint must be the head's hash and its status
granted; with the TSA's root certificate (``[audit] timestamp_cert``, a PEM file, or
``--tsa-cert``), the token's signature and certificate chain are checked too
(``rfc3161-client``).
"""

from __future__ import annotations

import base64
import binascii
import logging
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from trails.config import Settings, load_settings
from trails.errors import ConfigError
from trails.evidence.proofs import TimestampCheck, TreeHead

__all__ = ["configured_stamper", "load_certificates", "request_stamp", "timestamp_checker"]

log = logging.getLogger(__name__)

_TIMEOUT_S = 10.0


def request_stamp(url: str, message: bytes, *, timeout: float = _TIMEOUT_S) -> bytes:
    """Ask the TSA at ``url`` to stamp SHA-256 of ``message``; its response (DER).

    Raises:
        OSError: the TSA could not be reached or answered with an HTTP error.
        ValueError: the answer is not a granted time-stamp over ``message``.
    """
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
        data: bytes = answer.read()
    response = decode_timestamp_response(data)
    if PKIStatus(response.status) != PKIStatus.GRANTED:
        raise ValueError(f"the TSA did not grant the time-stamp (status {response.status})")
    if response.tst_info.message_imprint.message != request.message_imprint.message:
        raise ValueError("the TSA stamped another message")
    return data


def configured_stamper(settings: Settings | None = None) -> Any:
    """A function stamping a head message with the TSA ``[audit] timestamp_url`` names
    (base64 DER token, or None when the TSA fails), or None when none is configured."""
    settings = settings or load_settings()
    url = settings.section("audit").get("timestamp_url")
    if not url:
        return None
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError("[audit] timestamp_url must be an http:// or https:// URL")

    def stamp(message: bytes) -> str | None:
        try:
            return base64.b64encode(request_stamp(url, message)).decode("ascii")
        except (OSError, ValueError, urllib.error.URLError) as exc:
            log.warning("the tree head was not time-stamped by %s: %s", url, exc)
            return None

    return stamp


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


def timestamp_checker(roots: list[Any] | None = None) -> TimestampCheck:
    """A check of a head's token: its imprint is the head's hash and it was granted; with
    ``roots`` (the TSA's root certificates) its signature and chain verify too."""

    def check(head: TreeHead) -> str | None:
        from rfc3161_client import (
            PKIStatus,
            VerificationError,
            VerifierBuilder,
            decode_timestamp_response,
        )

        try:
            response = decode_timestamp_response(base64.b64decode(head.timestamp, validate=True))
            imprint = response.tst_info.message_imprint.message
            granted = PKIStatus(response.status) == PKIStatus.GRANTED
        except (ValueError, binascii.Error) as exc:
            return f"its time-stamp token does not parse: {exc}"
        if not granted:
            return "its time-stamp token was not granted"
        if imprint != bytes.fromhex(head.hash):
            return "its time-stamp token stamps another hash than the head's"
        if roots:
            builder = VerifierBuilder()
            for cert in roots:
                builder = builder.add_root_certificate(cert)
            try:
                builder.build().verify(response, imprint)
            except (VerificationError, ValueError) as exc:
                return f"its time-stamp token does not verify against the TSA certificate: {exc}"
        return None

    return check
