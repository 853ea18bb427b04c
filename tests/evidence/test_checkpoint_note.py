"""Tree heads as C2SP checkpoints in signed notes: the specs' own vectors, Go's sumdb/note
vector, and a verifier written from the spec texts (``tests.evidence.c2sp_reference``)
reading what ``trails head`` writes from a real store; ``trails verify --since-head`` and
``--expect-head`` reading it back.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from tests.evidence.c2sp_reference import Reject, open_note, parse_checkpoint_text, vkey_of
from tests.evidence.test_transparency import record_on_disk, trails

from trails.evidence.note import (
    Checkpoint,
    NoteError,
    SignedNote,
    key_id,
    parse_checkpoint,
    parse_note,
    parse_vkey,
    sign_line,
    signature_status,
    vkey,
)
from trails.store import open_store

# c2sp.org/signed-note, "Example"
SPEC_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
SPEC_NOTE = (
    "This is an example message.\n\n— example.com/foo "
    "Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
)
# golang.org/x/mod/sumdb/note: the package documentation's example
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
GO_NOTE = (
    GO_TEXT + "\n— PeterNeumann "
    "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)
# c2sp.org/tlog-checkpoint, the example's text
SPEC_CHECKPOINT = (
    "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
)


def _go_private() -> Ed25519PrivateKey:
    material = base64.b64decode(GO_SKEY.split("+")[4] + "+" + GO_SKEY.split("+")[5])
    assert material[0] == 0x01
    return Ed25519PrivateKey.from_private_bytes(material[1:])


def test_the_spec_and_go_vectors() -> None:
    name, kid, kind, public = parse_vkey(SPEC_VKEY)
    assert (name, kid.hex(), kind) == ("example.com/foo", "530d903a", 1)
    assert key_id(name, public) == kid and vkey(name, public) == SPEC_VKEY
    note = parse_note(SPEC_NOTE)
    assert note.text == "This is an example message.\n"
    assert signature_status(note, name, public) is True
    assert open_note(SPEC_NOTE.encode(), SPEC_VKEY) == note.text  # the reference agrees
    edited = parse_note(SPEC_NOTE.replace("example message", "example massage"))
    assert signature_status(edited, name, public) is False
    assert signature_status(note, "example.com/bar", public) is None  # unknown key: ignored

    # Go's signer and trails' give the same bytes (Ed25519 is deterministic)
    key = _go_private()
    raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    assert vkey("PeterNeumann", raw) == GO_VKEY
    signed = SignedNote(GO_TEXT, (sign_line(GO_TEXT, "PeterNeumann", key),))
    assert str(signed) == GO_NOTE
    assert open_note(GO_NOTE.encode(), GO_VKEY) == GO_TEXT

    checkpoint = parse_checkpoint(SPEC_CHECKPOINT)
    assert (checkpoint.origin, checkpoint.size) == ("example.com/behind-the-sofa", 20852163)
    assert checkpoint.text() == SPEC_CHECKPOINT
    assert parse_checkpoint_text(SPEC_CHECKPOINT)[2] == checkpoint.root
    extended = parse_checkpoint(SPEC_CHECKPOINT + "extension line\n")
    assert extended.extensions == ("extension line",) and extended.text().endswith("line\n")


@pytest.mark.parametrize(
    "bad",
    [
        "no blank line\n— a AAAAAAA=\n",
        "text\n\n",  # no signature
        "text\n\n— a AAAAAAA=",  # no final newline
        "text\n\n- a AAAAAAA=\n",  # not an em dash
        "text\n\n— a+b AAAAAAA=\n",  # '+' in a key name
        "text\n\n— a AAAA\n",  # shorter than a key ID and a signature
        "text\n\n— a !!!!\n",  # not base64
        "te\x01xt\n\n— a AAAAAAA=\n",  # a control character
    ],
)
def test_malformed_notes_are_refused(bad: str) -> None:
    with pytest.raises(NoteError):
        parse_note(bad)


@pytest.mark.parametrize(
    "bad",
    [
        "origin\n12\n",  # two lines
        "origin\n012\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",  # a leading zero
        "origin\n-1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        "origin\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I\n",  # unpadded
        "origin\n1\nAAAA\n",  # not 32 bytes
        "\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",  # no origin
        "origin\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\nx\n",  # an empty line
        "origin\n" + "9" * 30 + "\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
    ],
)
def test_malformed_checkpoints_are_refused(bad: str) -> None:
    with pytest.raises(NoteError):
        parse_checkpoint(bad)


def _keys(folder: Path, origin: str | None = None) -> tuple[Ed25519PrivateKey, bytes]:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    (folder / "signing.pem").write_bytes(pem)
    public = key.public_key()
    (folder / "public.pem").write_bytes(
        public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    extra = f'log_origin = "{origin}"\n' if origin else ""
    (folder / "trails.toml").write_text(f'[audit]\nsigning_key = "signing.pem"\n{extra}')
    return key, public.public_bytes(Encoding.Raw, PublicFormat.Raw)


@pytest.mark.usefixtures("store")
def test_trails_head_writes_a_checkpoint_the_reference_verifier_opens(tmp_path: Path) -> None:
    key, public = _keys(tmp_path, origin="example.org/trails/audit")
    record_on_disk(tmp_path, 3)
    assert trails(tmp_path, "verify").returncode == 0
    done = trails(tmp_path, "head", "--out", "head.checkpoint")
    assert done.returncode == 0, done.stderr
    reference_vkey = vkey_of("example.org/trails/audit", public)
    assert reference_vkey in done.stdout  # the verifier key to hand to witnesses
    data = (tmp_path / "head.checkpoint").read_bytes()
    origin, size, root, extensions = parse_checkpoint_text(open_note(data, reference_vkey))
    assert (origin, size, extensions) == ("example.org/trails/audit", 3, [])
    assert trails(tmp_path, "head", "--out", "head.json").returncode == 0
    kept = json.loads((tmp_path / "head.json").read_text())
    assert kept["root"] == root.hex() and kept["checkpoint"] == data.decode()
    with pytest.raises(Reject):  # another key's vkey under the same name
        other = Ed25519PrivateKey.generate().public_key()
        open_note(data, vkey_of(origin, other.public_bytes(Encoding.Raw, PublicFormat.Raw)))

    # the log grows; the kept checkpoint is still extended, and is no longer the newest
    record_on_disk(tmp_path, 2)
    assert trails(tmp_path, "verify").returncode == 0
    done = trails(tmp_path, "verify", "--since-head", "head.checkpoint", "--key", "public.pem")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "extends the head of 3 leaves" in done.stdout
    assert "signed by the trusted key" in done.stdout
    done = trails(tmp_path, "verify", "--since-head", "head.checkpoint")
    assert done.returncode == 0 and "pass the publisher's public key" in done.stdout
    assert trails(tmp_path, "verify", "--since-head", "head.json").returncode == 0  # JSON too
    done = trails(tmp_path, "verify", "--expect-head", "head.checkpoint")
    assert done.returncode == 1 and "not the 3 leaves" in done.stdout, done.stdout
    assert trails(tmp_path, "head", "--out", "now.checkpoint").returncode == 0
    done = trails(tmp_path, "verify", "--expect-head", "now.checkpoint", "--key", "public.pem")
    assert done.returncode == 0, done.stdout

    # a checkpoint of another root, signed by another key, or under another origin
    forger = Ed25519PrivateKey.generate()
    body = Checkpoint("example.org/trails/audit", 3, bytes(32)).text()
    forged = SignedNote(body, (sign_line(body, "example.org/trails/audit", forger),))
    (tmp_path / "forged.checkpoint").write_text(str(forged))
    done = trails(tmp_path, "verify", "--since-head", "forged.checkpoint", "--key", "public.pem")
    assert done.returncode == 1 and "SIGNATURE" in done.stdout, done.stdout
    done = trails(tmp_path, "verify", "--since-head", "forged.checkpoint")
    assert done.returncode == 1 and "does not extend" in done.stdout, done.stdout
    body = Checkpoint("example.org/other", 3, root).text()
    other_origin = SignedNote(body, (sign_line(body, "example.org/other", key),))
    (tmp_path / "other.checkpoint").write_text(str(other_origin))
    done = trails(tmp_path, "verify", "--since-head", "other.checkpoint")
    assert done.returncode == 1 and "not of example.org/trails/audit" in done.stdout

    # malformed: one line, exit 2
    (tmp_path / "bad.checkpoint").write_text("example.org/trails/audit\n3\nnot base64\n")
    done = trails(tmp_path, "verify", "--since-head", "bad.checkpoint")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "neither a C2SP checkpoint" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.usefixtures("store")
def test_an_unsigned_log_has_no_checkpoint_but_its_json_head(tmp_path: Path) -> None:
    record_on_disk(tmp_path, 1)
    assert trails(tmp_path, "verify").returncode == 0
    done = trails(tmp_path, "head", "--out", "head.checkpoint")
    assert done.returncode == 2 and "--format json" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert trails(tmp_path, "head", "--out", "head.txt", "--format", "json").returncode == 0


@pytest.mark.allow_nonconforming  # the stored checkpoint is edited on purpose
@pytest.mark.usefixtures("store")
def test_an_edited_stored_checkpoint_is_a_finding(tmp_path: Path) -> None:
    from trails.evidence.transparency import log_iri, read_head
    from trails.prov import Minter
    from trails.prov.vocab import T
    from trails.store import IRI, Literal, Quad

    _keys(tmp_path)
    record_on_disk(tmp_path, 2)
    assert trails(tmp_path, "verify").returncode == 0
    disk = open_store(tmp_path / "store")
    try:
        log = log_iri(Minter())
        head = read_head(disk, log)
        assert head is not None and head.note
        lines = head.note.split("\n")
        lines[1] = "1"  # the size, its signature left as it was
        disk.write(
            [Quad(IRI(head.iri), T.checkpointNote, Literal("\n".join(lines)), log)],
            remove=[Quad(IRI(head.iri), T.checkpointNote, Literal(head.note), log)],
        )
    finally:
        disk.close()
    done = trails(tmp_path, "verify", "--no-checkpoint")
    assert done.returncode == 1 and "its checkpoint" in done.stdout, done.stdout
