"""The tampering table's scenarios on the files a publisher hands out: the evidence bundle
(edited, then its answers, manifest and canonical archive recomputed with trails' own code,
as an attacker would) and the inclusion proof with the session's export (``trails verify
--proof``). Each takes a ``Case`` (a copy of the prepared folder) and returns what the
finding must name; ``tests.evidence.tamper_table`` lists them with the rest.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

from tests.evidence.tamper_store import ALICE, Case

from trails.prov.vocab import PROV, T
from trails.store import IRI

__all__ = [
    "bundle_answer_edited",
    "bundle_byte_flipped",
    "bundle_content_deleted",
    "bundle_content_edited",
    "bundle_graphs_swapped",
    "bundle_proof_edited",
    "bundle_seal_edited",
    "bundle_session_smuggled",
    "proof_session_file_edited",
    "proof_sibling_flipped",
    "proof_wrong_index",
    "proof_wrong_root",
    "proof_wrong_size",
]


# -- bundles: the regulator's copy, edited and recomputed ----------------------------------


def _entries(c: Case) -> dict[str, bytes]:
    with zipfile.ZipFile(c.dir / "bundle.zip") as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _rebundle(c: Case, entries: dict[str, bytes], *, answers: bool = True) -> None:
    """Answers, the manifest's file list and the canonical archive recomputed, as an attacker
    with trails' own code would."""
    from trails.audit import bundle

    manifest = json.loads(entries["manifest.json"])
    if answers:
        sessions = {Path(d["file"]).stem: IRI(d["graph"]) for d in manifest["sessions"]}
        documents = [(k, v) for k, v in entries.items() if k != "manifest.json"]
        with bundle._scratch(documents) as scratch:
            recomputed = bundle._answers(scratch, sessions)
        entries.update({k: v for k, v in recomputed.items() if k in entries})
    manifest["files"] = {
        name: {"sha256": bundle._sha(data), "bytes": len(data)}
        for name, data in sorted(entries.items())
        if name != "manifest.json"
    }
    entries["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    (c.dir / "bundle.zip").write_bytes(bundle._zip_bytes(entries))


def _session_file(entries: dict[str, bytes], graph: str) -> str:
    manifest = json.loads(entries["manifest.json"])
    (name,) = [d["file"] for d in manifest["sessions"] if d["graph"] == graph]
    return str(name)


def bundle_content_edited(c: Case) -> str:
    entries = _entries(c)
    name = _session_file(entries, c.p.session)
    entries[name] = entries[name].replace(b'\\"urgent\\"', b'\\"routine\\"', 1)
    _rebundle(c, entries)
    return c.p.input


def bundle_content_deleted(c: Case) -> str:
    entries = _entries(c)
    name = _session_file(entries, c.p.session)
    lines = entries[name].decode().splitlines(keepends=True)
    kept = [ln for ln in lines if not ln.startswith(f"<{c.p.input}> <{PROV.value}>")]
    assert len(kept) == len(lines) - 1
    entries[name] = "".join(kept).encode()
    _rebundle(c, entries)
    return c.p.input


def bundle_session_smuggled(c: Case) -> str:
    ghost = "urn:trails:session:smuggled"
    entries = _entries(c)
    name = _session_file(entries, c.p.session)
    entries[name] += (
        f"<{ghost}> {{\n<{ghost}> a <{T.Session}> ; <{PROV.wasAssociatedWith}> <{ALICE}> ;\n"
        f'  <{T.status}> "ok" ; <{PROV.endedAtTime}> "2026-01-01T00:00:00Z"^^'
        "<http://www.w3.org/2001/XMLSchema#dateTime> .\n}\n"
    ).encode()
    _rebundle(c, entries)
    return ghost


def bundle_graphs_swapped(c: Case) -> str:
    entries = _entries(c)
    one, two = _session_file(entries, c.p.session), _session_file(entries, c.p.sample)
    a, b = f"<{c.p.session}> {{".encode(), f"<{c.p.sample}> {{".encode()
    entries[one] = entries[one].replace(a, b)
    entries[two] = entries[two].replace(b, a)
    _rebundle(c, entries)
    return c.p.session


def bundle_proof_edited(c: Case) -> str:
    entries = _entries(c)
    proofs = json.loads(entries["log/proofs.json"])
    first = proofs["proofs"][0]
    first["path"][0] = first["path"][0][::-1]
    entries["log/proofs.json"] = (json.dumps(proofs, indent=2, sort_keys=True) + "\n").encode()
    _rebundle(c, entries, answers=False)
    return str(first["seal"])


def bundle_seal_edited(c: Case) -> str:
    entries = _entries(c)
    segment = entries["ledger/segment.nq"].decode()
    lines = segment.splitlines(keepends=True)
    (at,) = [i for i, ln in enumerate(lines) if f"<{T.quadCount}>" in ln][:1]
    subject = lines[at].split(" ", 1)[0][1:-1]
    lines[at] = lines[at].replace('"', '"9', 1)
    entries["ledger/segment.nq"] = "".join(lines).encode()
    _rebundle(c, entries, answers=False)
    return subject


def bundle_answer_edited(c: Case) -> str:
    entries = _entries(c)
    entries["answers/sessions.csv"] = entries["answers/sessions.csv"].replace(b"ok", b"error", 1)
    _rebundle(c, entries, answers=False)
    return "answers/sessions.csv"


def bundle_byte_flipped(c: Case) -> str:
    data = bytearray((c.dir / "bundle.zip").read_bytes())
    at = data.index(b'\\"urgent\\"') + 3
    data[at] ^= 0x20
    (c.dir / "bundle.zip").write_bytes(bytes(data))
    return "bundle.zip"


# -- inclusion proofs ----------------------------------------------------------------------


def _edit_proof(c: Case, edit: Callable[[dict[str, object]], None]) -> None:
    proof = json.loads((c.dir / "proof.json").read_text())
    edit(proof)
    (c.dir / "proof.json").write_text(json.dumps(proof, indent=2))


def proof_sibling_flipped(c: Case) -> str:
    def edit(proof: dict[str, object]) -> None:
        seal = proof["seals"][0]  # type: ignore[index]
        seal["path"][0] = seal["path"][0][::-1]

    _edit_proof(c, edit)
    return json.loads((c.dir / "proof.json").read_text())["seals"][0]["seal"]["seal"]  # type: ignore[no-any-return]


def proof_wrong_size(c: Case) -> str:
    _edit_proof(c, lambda proof: proof["head"].__setitem__("size", 7))  # type: ignore[attr-defined]
    return "tree head 7@"


def proof_wrong_root(c: Case) -> str:
    _edit_proof(c, lambda proof: proof["head"].__setitem__("root", "b" * 64))  # type: ignore[attr-defined]
    return "tree head 6@"


def proof_wrong_index(c: Case) -> str:
    _edit_proof(c, lambda proof: proof["seals"][0].__setitem__("index", 2))  # type: ignore[index]
    return json.loads((c.dir / "proof.json").read_text())["seals"][0]["seal"]["seal"]  # type: ignore[no-any-return]


def proof_session_file_edited(c: Case) -> str:
    path = c.dir / "session.trig"
    path.write_bytes(path.read_bytes().replace(b'\\"urgent\\"', b'\\"routine\\"', 1))
    return c.p.input
