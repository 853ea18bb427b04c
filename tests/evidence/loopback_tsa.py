"""A time-stamping authority on the loopback interface, for the RFC 3161 tests.

Keys and certificates are made here (a root CA, optionally an intermediate CA, and a TSA
certificate for time-stamping); each request is answered by ``openssl ts -reply``, behind a
small ``http.server`` handler, as a real TSA answers over HTTP (RFC 3161, section 3.4).
``certs=True`` sets the ``certs`` option of OpenSSL's TSA configuration, as production
TSAs do: the response then carries the certificate chain (intermediate and root) beside
the TSA's own certificate, in a CMS certificate SET that OpenSSL writes in BER order.
"""

from __future__ import annotations

import datetime
import http.server
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["LoopbackTSA", "loopback_tsa"]

_CONFIG = """
[ tsa ]
default_tsa = tsa_config1

[ tsa_config1 ]
dir = {dir}
serial = {dir}/serial
crypto_device = builtin
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


@dataclass
class LoopbackTSA:
    url: str
    root_pem: Path
    requests: list[bytes]
    tsa_pem: Path | None = None
    """The TSA's own certificate."""
    chain_pem: Path | None = None
    """The TSA's certificate, then the intermediate CA's (when there is one)."""
    intermediate_pem: Path | None = None


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(
    name: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(issuer_key, hashes.SHA256())
    )


def _certificates(folder: Path, *, intermediate: bool, certs: bool) -> None:
    now = datetime.datetime.now(datetime.UTC)
    ca_key, tsa_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca = root = _ca("trails test root", ca_key, _name("trails test root"), ca_key)
    pem = serialization.Encoding.PEM
    chain = b""
    if intermediate:
        mid_key = ec.generate_private_key(ec.SECP256R1())
        ca = _ca("trails test intermediate", mid_key, root.subject, ca_key)
        ca_key = mid_key
        chain = ca.public_bytes(pem)
        (folder / "intermediate.pem").write_bytes(chain)
    tsa = (
        x509.CertificateBuilder()
        .subject_name(_name("trails test tsa"))
        .issuer_name(ca.subject)
        .public_key(tsa_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    (folder / "root.pem").write_bytes(root.public_bytes(pem))
    (folder / "tsa.pem").write_bytes(tsa.public_bytes(pem))
    (folder / "chain.pem").write_bytes(tsa.public_bytes(pem) + chain)
    (folder / "included.pem").write_bytes(chain + root.public_bytes(pem))
    (folder / "tsa.key").write_bytes(
        tsa_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    (folder / "serial").write_text("01\n")
    config = _CONFIG.format(dir=folder)
    if certs:
        config += f"certs = {folder}/included.pem\n"
    (folder / "tsa.cnf").write_text(config)


@contextmanager
def loopback_tsa(*, intermediate: bool = False, certs: bool = False) -> Iterator[LoopbackTSA]:
    """A TSA at ``http://127.0.0.1:<port>/``, its root certificate, and the requests it got
    (``intermediate``: its certificate issued by an intermediate CA; ``certs``: the chain
    included in each response)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _certificates(folder, intermediate=intermediate, certs=certs)
        requests: list[bytes] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                requests.append(body)
                query = folder / f"q{len(requests)}.tsq"
                query.write_bytes(body)
                done = subprocess.run(
                    [
                        *("openssl", "ts", "-reply", "-config", str(folder / "tsa.cnf")),
                        *("-queryfile", str(query), "-inkey", str(folder / "tsa.key")),
                        *("-signer", str(folder / "tsa.pem"), "-out", "-"),
                    ],
                    capture_output=True,
                    check=True,
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/timestamp-reply")
                self.send_header("Content-Length", str(len(done.stdout)))
                self.end_headers()
                self.wfile.write(done.stdout)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield LoopbackTSA(
                f"http://127.0.0.1:{server.server_address[1]}/",
                folder / "root.pem",
                requests,
                tsa_pem=folder / "tsa.pem",
                chain_pem=folder / "chain.pem",
                intermediate_pem=folder / "intermediate.pem" if intermediate else None,
            )
        finally:
            server.shutdown()
            server.server_close()
