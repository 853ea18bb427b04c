"""The signed store the tampering table attacks, and the files kept apart from it.

``prepare(folder)`` records, with an Ed25519 signing key configured, the sessions the
table needs, verifies them with the real ``trails`` CLI (checkpoints and the transparency
log) and writes the files a publisher hands out:

- session A (alice) files an urgent ticket through ``invoke`` and learns two memories
  (one with a topic); a sample session holds every kind of event (goals, answers ...);
- session E files a ticket whose content is then erased (a sealed erasure receipt);
- ``trails verify`` records a checkpoint and the log's first tree head; the store as it is
  then is kept as ``before/`` (what a rollback to an old backup restores);
- session F is recorded, ``trails verify`` appends it to the log, and the publisher keeps
  the head (``kept-head.json``, the head hash for ``--expect-head``), a proof of A with its
  export (``proof.json``, ``session.trig``) and a bundle of A and the sample session
  (``bundle.zip``); the public key (``public.pem``) is the one a verifier trusts.

Each scenario of ``tests.evidence.tamper_table`` works on a file copy of that folder
(``copy_case``). The benchmark ``benchmarks/bench_tamper.py`` prepares it the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from trails.evidence.ledger import seals_of_graph
from trails.store import IRI, Literal, Quad, Solutions, Store, open_store

__all__ = [
    "LEDGER",
    "MODES",
    "Case",
    "Prepared",
    "copy_case",
    "drop",
    "move",
    "prepare",
    "quads_of",
    "seal_of",
    "swap",
    "text",
    "the",
    "trails_cli",
]

ALICE = "did:local:alice"
BOB = "did:local:bob"
LEDGER = "urn:trails:graph:ledger"
TOML = '[audit]\nsigning_key = "signing.pem"\n'


@dataclass(frozen=True)
class Prepared:
    """What the prepared folder holds: the IRIs the scenarios name."""

    folder: str
    session: str  # A
    input: str  # A's triage input entity
    memory: str
    memory_graph: str
    topic_memory: str
    topic_graph: str
    sample: str
    sample_run: str
    erased_session: str  # E
    erased_input: str
    receipt: str  # E's erasure receipt graph
    last_session: str  # F, recorded after the first tree head
    head: str  # the ledger's head after F (for --expect-head)


#: the arguments of ``trails verify`` in each mode (run in the case's folder)
MODES: dict[str, tuple[str, ...]] = {
    "plain": (),
    "--key": ("--key", "public.pem"),
    "--since-head": ("--since-head", "kept-head.json"),
    "--expect-head": (),  # the head hash is added from the prepared store
    "--bundle --key": ("--bundle", "bundle.zip", "--key", "public.pem"),
    "--proof --key": (
        "--proof",
        "proof.json",
        "--session-file",
        "session.trig",
        "--key",
        "public.pem",
    ),
}


@dataclass
class Case:
    """One scenario's own copy of the prepared folder."""

    p: Prepared
    dir: Path

    @contextmanager
    def store(self) -> Iterator[Store]:
        store = open_store(self.dir / "store")
        try:
            yield store
        finally:
            store.close()

    def args(self, mode: str) -> list[str]:
        if mode == "--expect-head":
            return ["--expect-head", self.p.head]
        return list(MODES[mode])


# -- reading and writing the store as an attacker ------------------------------------------


def quads_of(store: Store, graph: str) -> list[Quad]:
    rows = store.query("SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o } }", {"g": IRI(graph)})
    assert isinstance(rows, Solutions)
    return [Quad(r["s"], r["p"], r["o"], IRI(graph)) for r in rows]  # type: ignore[arg-type]


def the(store: Store, graph: str, s: str | None = None, p: str | None = None) -> Quad:
    """The one quad of ``graph`` with subject ``s`` and predicate ``p`` (the first when several)."""
    found = [
        q
        for q in quads_of(store, graph)
        if (s is None or q.subject == s) and (p is None or q.predicate == p)
    ]
    assert found, (graph, s, p)
    return sorted(found, key=str)[0]


def swap(store: Store, quad: Quad, value: IRI | Literal) -> None:
    store.write([Quad(quad.subject, quad.predicate, value, quad.graph)], remove=[quad])


def move(store: Store, graph: str, to: str) -> None:
    old = quads_of(store, graph)
    store.write([Quad(q.subject, q.predicate, q.object, IRI(to)) for q in old], remove=old)


def drop(store: Store, *graphs: str) -> None:
    store.write([], remove=[q for g in graphs for q in quads_of(store, g)])


def seal_of(store: Store, graph: str) -> IRI:
    (seal, *_) = sorted(seals_of_graph(store, IRI(LEDGER), IRI(graph)), key=lambda s: -s.sequence)
    return seal.iri


def text(quad: Quad) -> str:
    assert isinstance(quad.object, Literal)
    return quad.object.value


def trails_cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``trails`` command on ``folder/store``, run in ``folder`` (its trails.toml)."""
    exe = str(Path(sys.executable).with_name("trails"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    return subprocess.run(
        [exe, "--store", "store", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        check=False,
    )


def _keys(folder: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    for name in ("signing", "attacker"):
        key = Ed25519PrivateKey.generate()
        private = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        (folder / f"{name}.pem").write_bytes(private)
        if name == "signing":
            public = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
            (folder / "public.pem").write_bytes(public)


def _ran(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _record(folder: Path, phase: int) -> dict[str, str]:
    """Record phase 1 (A, the sample, E erased) or phase 2 (F) in-process, signed."""
    from tests.evidence.test_content import input_of, memory_graph_of, record

    import trails.memory as memory
    from trails.compliance.erasure import erase
    from trails.evidence.seal import install_sealer
    from trails.kernel import Context, invoke
    from trails.kernel import registry as _registry
    from trails.prov import Recorder
    from trails.store import IRI, open_store, set_default_store

    saved = dict(_registry._handlers)  # ``record`` registers ``triage``: not for the others
    store = open_store(folder / "store")
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("TRAILS_AUDIT_SIGNING_KEY", str(folder / "signing.pem"))
            if phase == 2:
                recorder = Recorder(store)
                install_sealer(recorder)
                with Context.open(BOB, recorder=recorder, label="last request") as ctx:
                    pass
                return {"last_session": str(ctx.session)}
            recorded = record(store)
            recorder = Recorder(store)
            install_sealer(recorder)
            with Context.open(ALICE, recorder=recorder) as ctx:
                learned = memory.learn(
                    "Jane Doe asked for a refund", topic="refunds", scope="shared", ctx=ctx
                )
            with Context.open(BOB, recorder=recorder, label="to erase") as ctx:
                invoke("triage", {"priority": "low"}, ctx=ctx)
            erased = IRI.trusted(str(ctx.session))
            receipt = erase(recorder, session=erased, reason="GDPR art. 17", by=ALICE)
            topic_memory = IRI.trusted(learned.id)
            return {
                "session": str(recorded.session),
                "input": str(recorded.input),
                "memory": str(recorded.memory),
                "memory_graph": str(recorded.memory_graph),
                "topic_memory": str(topic_memory),
                "topic_graph": str(memory_graph_of(store, topic_memory)),
                "sample": str(recorded.sample["session"]),
                "sample_run": str(recorded.sample["run"]),
                "erased_session": str(erased),
                "erased_input": str(input_of(store, erased)),
                "receipt": str(receipt.graph),
            }
    finally:
        set_default_store(None)
        store.close()
        _registry._handlers.clear()
        _registry._handlers.update(saved)


def prepare(folder: Path) -> Prepared:
    """Record and verify the signed store in ``folder`` and write what is kept apart."""
    folder.mkdir(parents=True, exist_ok=True)
    _keys(folder)
    (folder / "trails.toml").write_text(TOML)
    names = _record(folder, 1)
    _ran(trails_cli(folder, "verify"))  # a checkpoint and the log's first tree head
    shutil.copytree(folder / "store", folder / "before")
    names |= _record(folder, 2)
    report = json.loads(_ran(trails_cli(folder, "verify", "--json")))
    names["head"] = report["head"]
    _ran(trails_cli(folder, "head", "--out", "kept-head.json"))
    _ran(trails_cli(folder, "prove", names["session"], "--out", "proof.json"))
    _ran(trails_cli(folder, "export", "--session", names["session"], "--out", "session.trig"))
    _ran(
        trails_cli(
            folder,
            "export",
            "--session",
            names["session"],
            "--session",
            names["sample"],
            "--bundle",
            "bundle.zip",
        )
    )
    prepared = Prepared(folder=str(folder), **names)
    (folder / "prepared.json").write_text(json.dumps(asdict(prepared), indent=2))
    return prepared


def copy_case(prepared: Prepared, to: Path) -> Path:
    """A fresh copy of the prepared folder (files copied; the original is never written)."""
    shutil.copytree(prepared.folder, to)
    return to
