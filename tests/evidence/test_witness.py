"""trails as a client of witnesses: each checkpoint sent to a witness written from the C2SP
texts (``tests.evidence.witness_reference``, a real HTTP server on loopback), its
``cosignature/v1`` line kept with the head and checked by that reference; witnesses that
answer garbage, another key's line or nothing cost their cosignature, never the head, and
are never counted; ``trails verify --witness KEY --quorum N`` passes and fails.
"""

from __future__ import annotations

import base64
import re
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from tests.evidence.test_checkpoint_note import _keys
from tests.evidence.test_transparency import record_on_disk, trails
from tests.evidence.witness_reference import (
    ReferenceWitness,
    cosigner_vkey,
    post_add_checkpoint,
    running_witness,
    verify_cosignature,
)

from trails.evidence.cosign import (
    Cosigner,
    check_quorum,
    cosign,
    cosigned_message,
    parse_add_checkpoint,
    parse_cosigner,
)
from trails.evidence.note import NoteError, parse_note
from trails.evidence.tiles import publish
from trails.evidence.transparency import log_iri, read_head
from trails.evidence.witnessing import WitnessConfig, witness_newest
from trails.prov import Minter, Recorder
from trails.store import Store, open_store
from trails.testing import assert_conforms

ORIGIN = "example.org/dept-a"
DOC = (Path(__file__).parents[2] / "docs" / "evidence-format.md").read_text(encoding="utf-8")


def _raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def _doc(label: str) -> str:
    match = re.search(rf"^{re.escape(label)}: (.+)$", DOC, re.MULTILINE)
    assert match, label
    return match.group(1).strip()


def test_cosignatures_are_the_references_bytes_and_the_documents_vector() -> None:
    secret = bytes.fromhex(_doc("witness secret key"))
    key = Ed25519PrivateKey.from_private_bytes(secret)
    name, stamp = _doc("witness name"), int(_doc("cosignature time"))
    text = "example.org/trails/audit\n5\nk3+mn9/vPwqWRKcI/OD9Q0oe27dHpfLLoDpsp6cQnqs=\n"
    line = cosign(text, name, key, stamp).line()
    assert line == _doc("cosignature line") + "\n"
    assert Cosigner(name, _raw(key)).vkey() == _doc("witness verifier key")
    assert cosigner_vkey(name, _raw(key)) == _doc("witness verifier key")  # the reference agrees
    block = re.search(r"```text\n(cosignature/v1\n.*?)```", DOC, re.DOTALL)
    assert block and cosigned_message(text, stamp) == block.group(1).encode()
    note = f"{text}\n{line}"
    assert verify_cosignature(note, name, _raw(key)) == stamp  # the reference verifies it
    assert verify_cosignature(note.replace("\n5\n", "\n6\n"), name, _raw(key)) is None

    witness = parse_cosigner(cosigner_vkey(name, _raw(key)))
    other = Cosigner("witness.example/other", _raw(Ed25519PrivateKey.generate()))
    parsed = parse_note(note)
    report = check_quorum(parsed, [witness, other], 1)
    assert report.ok and report.missing == [f"{other.name}+{other.key_id.hex()}"]
    assert not check_quorum(parsed, [witness, other], 2).ok
    flipped = parse_note(note[:-10] + ("A" if note[-10] != "A" else "B") + note[-9:])
    bad = check_quorum(flipped, [witness], 1)
    assert not bad.ok and bad.invalid and "an invalid one from" in bad.problem()
    future = parse_note(f"{text}\n{cosign(text, name, key, int(time.time()) + 3600).line()}")
    assert not check_quorum(future, [witness], 1).ok  # dated an hour ahead: not counted
    with pytest.raises(NoteError):  # a log key (0x01) is not a cosigner key
        parse_cosigner(_doc("verifier key"))
    with pytest.raises(NoteError):
        parse_add_checkpoint(b"old 01\n\n" + note.encode())
    with pytest.raises(NoteError):
        parse_add_checkpoint(b"old 1\nnot-base64\n\n" + note.encode())


def _config(folder: Path, witnesses: list[tuple[str, str]], timeout: float = 1.0) -> None:
    text = (folder / "trails.toml").read_text()
    text = text.replace("[audit]\n", f"[audit]\nwitness_timeout = {timeout}\n", 1)
    for url, vkey in witnesses:
        text += f'\n[[audit.witnesses]]\nurl = "{url}"\nkey = "{vkey}"\n'
    (folder / "trails.toml").write_text(text)


def _new(name: str, log_key: Ed25519PrivateKey, behaviour: str = "honest") -> ReferenceWitness:
    return ReferenceWitness(name, Ed25519PrivateKey.generate(), {ORIGIN: _raw(log_key)}, behaviour)


@pytest.mark.usefixtures("store")
def test_each_checkpoint_is_cosigned_by_the_reference_witness_and_only_valid_lines_count(
    tmp_path: Path,
) -> None:
    log_key, _ = _keys(tmp_path, origin=ORIGIN)
    honest = _new("witness.example/honest", log_key)
    garbage = _new("witness.example/garbage", log_key, "garbage")
    forger = _new("witness.example/forger", log_key, "other-key")
    slow = _new("witness.example/slow", log_key, "slow")
    with (
        running_witness(honest) as h_url,
        running_witness(garbage) as g_url,
        running_witness(forger) as f_url,
        running_witness(slow) as s_url,
    ):
        _config(
            tmp_path,
            [(h_url, honest.vkey), (g_url, garbage.vkey), (f_url, forger.vkey), (s_url, slow.vkey)],
        )
        record_on_disk(tmp_path, 2)
        started = time.monotonic()
        done = trails(tmp_path, "verify")
        assert done.returncode == 0, done.stdout + done.stderr  # the head is made regardless
        assert time.monotonic() - started < 30  # the slow witness did not hold it up
        out = done.stdout
        assert "witness.example/honest" in out and "cosigned the checkpoint of 2 leaves" in out
        assert re.search(r"garbage .*answered 200 with '<html>", out), out
        assert re.search(r"forger .*without a line that verifies by its configured key", out)
        assert re.search(r"slow .*no cosignature: unreachable, too slow", out), out
        assert honest.requests[0].startswith(b"old 0\n\n" + ORIGIN.encode())

        # the kept checkpoint carries the honest witness's line alone, valid for the reference
        assert trails(tmp_path, "head", "--out", "two.checkpoint").returncode == 0
        kept = (tmp_path / "two.checkpoint").read_text()
        assert kept.count("\u2014 ") == 2 and "witness.example/honest" in kept
        public = _raw(honest.key)
        assert verify_cosignature(kept, honest.name, public) is not None

        # the log grows: the witness gets the consistency proof from the size it cosigned
        sessions = record_on_disk(tmp_path, 2)
        done = trails(tmp_path, "verify")
        assert "cosigned the checkpoint of 4 leaves" in done.stdout, done.stdout
        assert honest.requests[-1].startswith(b"old 2\n")
        assert honest.state[ORIGIN][0] == 4

        # a witness that holds a size trails does not know: 409 with it, and one retry
        late = _new("witness.example/late", log_key)
        with running_witness(late) as l_url:
            status, _, _ = post_add_checkpoint(l_url, 0, [], kept[: kept.index("\u2014 witness")])
            assert status == 200 and late.state[ORIGIN][0] == 2
            disk = open_store(tmp_path / "store")
            try:
                outcomes = witness_newest(
                    Recorder(disk), [WitnessConfig(l_url, parse_cosigner(late.vkey))], timeout=5
                )
                head = read_head(disk, log_iri(Minter()))
                publish(disk, Minter(), tmp_path / "tiles")  # the tiled log's checkpoint too
                assert_conforms(disk, log_iri(Minter()))  # the kept lines fit the shapes
            finally:
                disk.close()
        assert outcomes[0].line is not None, outcomes[0].message
        assert [r.split(b"\n")[0] for r in late.requests[1:]] == [b"old 0", b"old 2"]
        assert head is not None and len(head.cosignatures) == 2  # honest and late, no other
        published = (tmp_path / "tiles" / "checkpoint").read_text()
        assert verify_cosignature(published, late.name, _raw(late.key)) is not None

        # asked again for the newest checkpoint: exit 2 while a witness answers garbage
        done = trails(tmp_path, "witness", "submit")
        assert done.returncode == 2 and "honest" in done.stdout, done.stdout + done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert "1 of 4 witness(es) cosigned" in done.stderr

        # the quorum: met by the honest witness, not by the ones that never cosigned
        done = trails(tmp_path, "verify", "--no-checkpoint", "--witness", honest.vkey)
        assert done.returncode == 0 and "WITNESSED checkpoint of 4 leaves" in done.stdout
        done = trails(
            tmp_path, "verify", "--no-checkpoint", "--witness", honest.vkey, garbage.vkey,
            forger.vkey, "--quorum", "2",
        )  # fmt: skip
        assert done.returncode == 1, done.stdout
        assert "1 valid cosignature(s) of the 2 required" in done.stdout
        assert "none from witness.example/garbage+" in done.stdout
        assert "witness.example/forger+" in done.stdout and "FAILED" in done.stdout

        # a proof file carries the cosigned checkpoint: checked offline, with no store
        prove = trails(tmp_path, "prove", str(sessions[0]), "--out", "proof.json")
        assert prove.returncode == 0, prove.stderr
        done = trails(tmp_path, "verify", "--proof", "proof.json", "--witness", honest.vkey)
        assert done.returncode == 0 and "cosigned by witness.example/honest+" in done.stdout
        done = trails(tmp_path, "verify", "--proof", "proof.json", "--witness", garbage.vkey)
        assert done.returncode == 1 and "none from witness.example/garbage+" in done.stdout

        # a kept checkpoint whose cosignature was edited: invalid, named as such
        line = next(x for x in kept.splitlines() if "honest" in x)
        blob = bytearray(base64.b64decode(line.split(" ")[-1]))
        blob[-1] ^= 1
        edited = kept.replace(line.split(" ")[-1], base64.b64encode(bytes(blob)).decode())
        (tmp_path / "edited.checkpoint").write_text(edited)
        done = trails(
            tmp_path, "verify", "--no-checkpoint", "--since-head", "edited.checkpoint",
            "--witness", honest.vkey,
        )  # fmt: skip
        assert done.returncode == 1 and "an invalid one from witness.example/honest" in done.stdout
        done = trails(tmp_path, "verify", "--no-checkpoint", "--strict")  # every configured one
        assert done.returncode == 1 and "1 valid cosignature(s) of the 4 required" in done.stdout
        done = trails(tmp_path, "verify", "--no-checkpoint", "--witness", "not-a-key")
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
        assert "Traceback" not in done.stderr


def test_an_unsigned_head_is_sent_to_no_witness_and_says_so(store: Store) -> None:
    from tests.evidence.test_transparency import checkpoint, record, sealed

    from trails.cli.witness import ask_configured

    recorder = sealed(store)
    record(recorder, 1)
    checkpoint(recorder)  # no signing key: a head, no checkpoint note
    witness = WitnessConfig("http://127.0.0.1:9", Cosigner("w", _raw(Ed25519PrivateKey.generate())))
    lines = ask_configured(recorder, [witness], 1.0)
    assert len(lines) == 1 and "nothing sent to the witnesses" in lines[0]
    head = read_head(store, log_iri(Minter()))
    assert head is not None and not head.cosignatures


def test_a_witness_that_does_not_speak_http_is_one_line(tmp_path: Path) -> None:
    import socket
    import threading

    from trails.evidence.witnessing import ask_witness

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def answer_junk() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"\x00\x01 not http at all\r\n\r\n")

    threading.Thread(target=answer_junk, daemon=True).start()
    key = Ed25519PrivateKey.generate()
    text = "example.org/x\n1\n" + base64.b64encode(bytes(32)).decode() + "\n"
    note = f"{text}\n{cosign(text, 'example.org/x', key, 1).line()}"  # any signature line
    witness = WitnessConfig(
        f"http://127.0.0.1:{listener.getsockname()[1]}", Cosigner("w", _raw(key))
    )
    try:
        outcome = ask_witness(witness, note, 0, lambda old: [], timeout=2)
    finally:
        listener.close()
    assert outcome.line is None and "not HTTP" in outcome.message
    assert "\n" not in str(outcome)


def test_a_witness_holding_another_root_of_that_size_refuses_a_fork() -> None:
    from tests.evidence.witness_reference import sign_checkpoint

    from trails.evidence.witnessing import ask_witness

    log_key = Ed25519PrivateKey.generate()
    held = _new("witness.example/held", log_key)
    held.state[ORIGIN] = (1, bytes(32))  # it cosigned another tree of one leaf
    note = sign_checkpoint(ORIGIN, 1, b"\x01" * 32, log_key)
    with running_witness(held) as url:
        config = WitnessConfig(url, parse_cosigner(held.vkey))
        outcome = ask_witness(config, note, 1, lambda old: [], timeout=5)
    assert outcome.line is None and outcome.refused and "a fork" in outcome.message


@pytest.mark.parametrize(
    ("audit", "says"),
    [
        ({"witnesses": [{"key": "k"}]}, "needs url"),
        ({"witnesses": [{"url": "ftp://x", "key": "k"}]}, "needs url"),
        ({"witnesses": [{"url": "http://x"}]}, "needs key"),
        ({"witnesses": [{"url": "http://x", "key": "not+a+key"}]}, "verifier key"),
        ({"witnesses": "http://x"}, "must be a list"),
        ({"witness_timeout": 0}, "witness_timeout"),
        ({"witness_timeout": "5"}, "witness_timeout"),
    ],
)
def test_a_malformed_witness_configuration_is_refused(audit: dict[str, object], says: str) -> None:
    from trails.config import Settings
    from trails.errors import ConfigError
    from trails.evidence.witnessing import configured_witnesses

    with pytest.raises(ConfigError, match=says):
        configured_witnesses(Settings(toml={"audit": audit}))


def test_a_witness_named_apart_from_its_key_is_refused() -> None:
    from trails.config import Settings
    from trails.errors import ConfigError
    from trails.evidence.witnessing import configured_witnesses

    key = cosigner_vkey("witness.example/w", _raw(Ed25519PrivateKey.generate()))
    named = {"witnesses": [{"url": "http://x/", "key": key, "name": "witness.example/other"}]}
    with pytest.raises(ConfigError, match="is not its key's"):
        configured_witnesses(Settings(toml={"audit": named}))
    good = {"witnesses": [{"url": "http://x/", "key": key}], "witness_timeout": 2}
    witnesses, timeout = configured_witnesses(Settings(toml={"audit": good}))
    assert witnesses[0].url == "http://x" and timeout == 2.0


def test_trails_verify_refuses_a_malformed_witness_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text('[[audit.witnesses]]\nurl = "http://x"\nkey = "k"\n')
    done = trails(tmp_path, "verify")
    assert done.returncode == 2 and "the witness http://x" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "store").exists()


@pytest.mark.parametrize("body", [b"9" * 5000 + b"\n", b"abc\n", b"-1\n", b""])
def test_a_409_whose_size_is_garbage_is_garbage_not_a_fork(body: bytes) -> None:
    import socket
    import threading

    from trails.evidence.witnessing import ask_witness

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            head = b"HTTP/1.1 409 Conflict\r\nContent-Type: text/x.tlog.size\r\n"
            conn.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)

    threading.Thread(target=answer, daemon=True).start()
    key = Ed25519PrivateKey.generate()
    text = "example.org/x\n1\n" + base64.b64encode(bytes(32)).decode() + "\n"
    note = f"{text}\n{cosign(text, 'example.org/x', key, 1).line()}"
    witness = WitnessConfig(
        f"http://127.0.0.1:{listener.getsockname()[1]}", Cosigner("w", _raw(key))
    )
    try:
        outcome = ask_witness(witness, note, 0, lambda old: [], timeout=2)
    finally:
        listener.close()
    assert outcome.line is None and not outcome.refused
    assert "not a tree size" in outcome.message and "fork" not in outcome.message
    assert "\n" not in str(outcome)
