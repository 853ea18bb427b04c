"""Legal holds: placed and released through the CLI, recorded in PROV, sealed, and found by
what retention and erasure ask before removing anything."""

from __future__ import annotations

import json

import pytest
from tests.known_store import ALICE, BOB, Fixture

from trails.audit.querypack import get_query
from trails.cli import main
from trails.compliance.holds import active_holds_for, holds_graph, list_holds
from trails.evidence import verify
from trails.prov.iri import Minter
from trails.store import IRI, Quad


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_holds_are_placed_listed_released_and_sealed(
    fx: Fixture, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, c = (IRI(fx.sessions[k]) for k in "ABC")
    status, out, err = run(
        capsys, "hold", "add", fx.sessions["A"], "--reason", "case 2025-17", "--by", "did:local:dpo"
    )
    assert status == 0, err
    assert f"placed on session {fx.sessions['A']}: case 2025-17" in out
    status, out, err = run(capsys, "hold", "add", BOB, "--reason", "regulator letter 4")
    assert status == 0 and f"placed on principal {BOB}" in out

    holds = list_holds(fx.store, Minter())
    assert [(h.kind, h.target, h.reason) for h in holds] == [
        ("session", fx.sessions["A"], "case 2025-17"),
        ("principal", BOB, "regulator letter 4"),
    ]
    assert holds[0].placed_by == "did:local:dpo" and holds[1].placed_by == "did:local:anonymous"
    # what retention and erasure ask: A by its session hold, B through its principal, C free
    assert [h.reason for h in active_holds_for(fx.store, Minter(), a)] == ["case 2025-17"]
    assert [h.reason for h in active_holds_for(fx.store, Minter(), b)] == ["regulator letter 4"]
    assert active_holds_for(fx.store, Minter(), c) == []

    status, out, _ = run(capsys, "hold", "list")
    assert status == 0 and "(2 holds)" in out and "regulator letter 4" in out
    status, out, err = run(capsys, "hold", "remove", BOB, "--reason", "case closed")
    assert status == 0 and "released: case closed" in out, err
    assert active_holds_for(fx.store, Minter(), b) == []
    status, out, _ = run(capsys, "hold", "list", "--format", "json")
    assert [h["target"] for h in json.loads(out)] == [fx.sessions["A"]]
    status, out, _ = run(capsys, "hold", "list", "--all", "--format", "json")
    released = [h for h in json.loads(out) if h["released_at"]]
    assert [(h["target"], h["release_reason"], h["released_by"]) for h in released] == [
        (BOB, "case closed", "did:local:anonymous")
    ]

    # the pack query answers the same, from plain PROV
    rows = list(get_query("legal-holds").run(fx.store))
    assert sorted(
        (str(r.get("heldSession") or r["heldPrincipal"].value), "releasedAt" in r)
        for r in rows  # type: ignore[union-attr]
    ) == sorted([(fx.sessions["A"], False), (BOB, True)])

    # the holds graph is sealed, each change by a revision seal in its own write
    report = verify(fx.store)
    assert report.ok, report.findings
    graph = holds_graph(Minter())
    (quad,) = [
        q
        for q in fx.store.query(
            "SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s <https://w3id.org/trails/ns#holdReason> ?o ;"
            " ?p ?o } }",
            {"g": graph},
        ).rows  # type: ignore[union-attr]
        if q[2].value == "case 2025-17"  # type: ignore[union-attr]
    ]
    fx.store.write([], remove=[Quad(quad[0], quad[1], quad[2], graph)])  # type: ignore[arg-type]
    kinds = {(f.kind, f.subject) for f in verify(fx.store).findings}
    assert ("altered", graph) in kinds
    fx.store.write([Quad(quad[0], quad[1], quad[2], graph)])  # type: ignore[arg-type]


def test_a_principal_hold_covers_every_session_of_the_principal(fx: Fixture) -> None:
    from trails.compliance.holds import place_hold
    from trails.prov import Recorder

    place_hold(Recorder(fx.store), ALICE, reason="litigation", by="did:local:legal")
    for key, held in (("A", True), ("B", False), ("C", True)):
        covering = active_holds_for(fx.store, Minter(), IRI(fx.sessions[key]))
        assert bool(covering) is held, key


def test_hold_usage_errors(fx: Fixture, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "hold", "add", fx.sessions["A"], "--reason", "  ")
    assert status == 2 and "need a --reason" in err
    status, _, err = run(capsys, "hold", "add", "nonsense", "--reason", "x")
    assert status == 2 and "neither a session of this store nor a principal" in err
    status, _, err = run(capsys, "hold", "remove", fx.sessions["A"], "--reason", "x")
    assert status == 2 and "no active hold" in err
    with pytest.raises(SystemExit):
        main(["hold", "add", fx.sessions["A"]])  # --reason is required
    capsys.readouterr()


def test_the_holds_graphs_first_write_carries_its_seal(
    fx: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill between a first hold and its seal would leave an unsealed holds graph."""
    from trails.compliance.holds import place_hold

    writes: list[list[Quad]] = []
    write = fx.store.write

    def kept(quads: object, *args: object, **kwargs: object) -> object:
        quads = list(quads)  # type: ignore[call-overload]
        writes.append(quads)
        return write(quads, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fx.store, "write", kept)
    place_hold(fx.recorder, BOB, reason="case 9", by="did:local:dpo")
    graph = str(holds_graph(Minter()))
    [first] = [w for w in writes if any(str(q[3]) == graph for q in w)]
    assert [str(q[2]) for q in first if str(q[1]).endswith("#sealedGraph")] == [graph]
    monkeypatch.undo()
    assert verify(fx.store).ok
