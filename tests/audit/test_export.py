"""Exports: every format read back, lossless round trip, redaction, assurance rules, bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import rdflib
from prov.model import ProvDocument
from tests.known_store import Fixture

from trails.audit.export import (
    Redaction,
    RedactionRule,
    check_assurance,
    export,
    export_to_path,
    import_file,
    select_graphs,
)
from trails.config import load_settings
from trails.errors import ConfigError, ExportError, ExportRefused, RDFSyntaxError
from trails.evidence.verify import verify
from trails.prov import T
from trails.prov.content import content_graph, is_content_graph
from trails.store import IRI, Solutions, Store, open_store


def nquads_set(store: Store, graphs: list[IRI] | None = None) -> set[str]:
    out = io.BytesIO()
    export(store, out, graphs or select_graphs(store, all_graphs=True), format="nquads")
    return set(out.getvalue().decode().splitlines())


def test_selection_by_session_time_and_all(fx: Fixture) -> None:
    # a session's content graph goes with it
    a, b = fx.sessions["A"], fx.sessions["B"]
    assert select_graphs(fx.store, sessions=[a]) == [a, content_graph(a)]
    assert select_graphs(fx.store, since="2025-03-02T00:00:00Z", until="2025-03-03T00:00:00Z") == [
        b,
        content_graph(b),
    ]
    everything = select_graphs(fx.store, all_graphs=True)
    structure = [g for g in everything if not is_content_graph(g)]
    assert set(everything) == set(fx.store.graphs()) and len(structure) == 8  # + catalogue
    with pytest.raises(ExportError, match="no session graph urn:trails:session:nope"):
        select_graphs(fx.store, sessions=["urn:trails:session:nope"])
    with pytest.raises(ExportError, match="choose what to export"):
        select_graphs(fx.store)
    with pytest.raises(ExportError, match="selection is empty"):
        select_graphs(fx.store, since="2030-01-01T00:00:00Z")


def test_nquads_and_trig_read_back_by_rdflib_and_the_store(fx: Fixture) -> None:
    graphs = [fx.sessions["A"], fx.sessions["C"]]
    for fmt, rdflib_fmt in (("nquads", "nquads"), ("trig", "trig")):
        out = io.BytesIO()
        stats = export(fx.store, out, graphs, format=fmt)
        ds = rdflib.Dataset()
        ds.parse(data=out.getvalue(), format=rdflib_fmt)
        named = {str(c.identifier): len(c) for c in ds.graphs() if len(c)}
        with_content = set(graphs) | {content_graph(g) for g in graphs}  # content goes along
        assert set(named) == with_content and sum(named.values()) == stats.quads
        back = open_store("memory:")
        back.load(out.getvalue(), format=fmt)
        assert nquads_set(back) == nquads_set(fx.store, graphs)
        back.close()


def test_trig_reads_in_the_prov_package_with_one_bundle_per_session(fx: Fixture) -> None:
    out = io.BytesIO()
    export(fx.store, out, [fx.sessions["A"], fx.sessions["B"]], format="trig")
    doc = ProvDocument.deserialize(content=out.getvalue().decode(), format="rdf", rdf_format="trig")
    bundles = {str(b.identifier.uri) for b in doc.bundles}
    a, b = fx.sessions["A"], fx.sessions["B"]
    assert bundles == {a, b, content_graph(a), content_graph(b)}  # content graphs go along


def test_provn_and_provjson_through_the_prov_package(fx: Fixture) -> None:
    out = io.BytesIO()
    export(fx.store, out, [fx.sessions["B"]], format="provjson")
    doc = ProvDocument.deserialize(content=out.getvalue().decode(), format="json")
    (bundle,) = doc.bundles
    activities = [r for r in bundle.get_records() if r.get_type().localpart == "Activity"]
    agents = [r for r in bundle.get_records() if r.get_type().localpart == "Agent"]
    assert len(activities) == 5  # session, run, two completions, one invocation
    assert {str(a.identifier.uri) for a in agents} >= {"did:local:bob"}
    out = io.BytesIO()
    export(fx.store, out, [fx.sessions["B"]], format="provn")
    text = out.getvalue().decode()
    assert text.startswith("document") and "bundle session:session-B" in text
    assert "wasAssociatedWith(" in text and "actedOnBehalfOf(" in text
    assert text.count("activity(") == 5
    # only the prefixes the document uses are declared (rdflib binds dozens by default)
    assert "prefix brick" not in text and "prefix foaf" not in text
    assert "prefix trails <https://w3id.org/trails/ns#>" in text
    assert "brick" not in json.loads(_provjson(fx))["prefix"]


def _provjson(fx: Fixture) -> str:
    out = io.BytesIO()
    export(fx.store, out, [fx.sessions["B"]], format="provjson")
    return out.getvalue().decode()


def test_turtle_holds_one_graph_and_jsonld_the_dataset(fx: Fixture) -> None:
    out = io.BytesIO()
    stats = export(fx.store, out, [fx.sessions["C"]], format="turtle")
    g = rdflib.Graph().parse(data=out.getvalue(), format="turtle")
    assert len(g) == stats.quads
    with pytest.raises(ExportError, match="turtle holds one graph and 2 are selected"):
        export(fx.store, io.BytesIO(), [fx.sessions["A"], fx.sessions["C"]], format="turtle")
    out = io.BytesIO()
    export(fx.store, out, [fx.sessions["A"], fx.sessions["C"]], format="jsonld")
    ds = rdflib.Dataset().parse(data=out.getvalue(), format="json-ld")
    back = open_store("memory:")
    back.load(ds.serialize(format="nquads").encode(), format="nquads")
    assert nquads_set(back) == nquads_set(fx.store, [fx.sessions["A"], fx.sessions["C"]])


@pytest.mark.parametrize("fmt", ["trig", "nquads", "jsonld"])
def test_export_import_export_is_lossless_and_still_verifies(
    fx: Fixture, tmp_path: Path, fmt: str
) -> None:
    first = tmp_path / f"first.{ {'trig': 'trig', 'nquads': 'nq', 'jsonld': 'jsonld'}[fmt] }"
    graphs = select_graphs(fx.store, all_graphs=True)
    with first.open("wb") as fh:
        export(fx.store, fh, graphs, format=fmt)
    other = open_store("memory:")
    assert import_file(other, first)[0] == len(graphs)  # 7 graphs and their content graphs
    assert nquads_set(other) == nquads_set(fx.store)
    second = tmp_path / first.name.replace("first", "second")
    with second.open("wb") as fh:
        export(other, fh, select_graphs(other, all_graphs=True), format=fmt)
    third = open_store("memory:")
    import_file(third, second)
    assert nquads_set(third) == nquads_set(fx.store)
    if fmt == "nquads":  # the same lines (the order inside a graph is the store's)
        assert sorted(second.read_bytes().splitlines()) == sorted(first.read_bytes().splitlines())
    assert verify(other).ok  # the ledger came along and still matches


def test_redaction_drops_or_hashes_values(fx: Fixture) -> None:
    rules = Redaction(
        (
            RedactionRule("hash", types=(T.Prompt,)),
            RedactionRule("drop", capabilities=("send_email",)),
        )
    )
    out = io.BytesIO()
    stats = export(fx.store, out, [fx.sessions["A"]], format="nquads", redaction=rules)
    text = out.getvalue().decode()
    assert "cfo@example.com" not in text and "prompt for c0" not in text
    assert stats.redacted == 4 + 1 + 1 + 1  # 4 prompts; send_email input, output, policy input
    back = open_store("memory:")
    back.load(out.getvalue(), format="nquads")
    rows = back.query(
        "PREFIX t: <https://w3id.org/trails/ns#> PREFIX prov: <http://www.w3.org/ns/prov#> "
        "SELECT ?e ?how ?v WHERE { GRAPH ?g { ?e t:redaction ?how OPTIONAL { ?e prov:value ?v } } }"
    )
    assert isinstance(rows, Solutions)
    found = {str(r["e"]): (r["how"].value, r.get("v")) for r in rows}  # type: ignore[union-attr]
    prompt = fx.completions["c0"] + ":prompt"
    assert found[prompt][0] == "hash" and found[prompt][1].value.startswith("sha256:")  # type: ignore[union-attr]
    assert found[fx.invocations["send_email"] + ":input"] == ("drop", None)
    assert "the summary was sent" in text  # the rest stays


def test_redaction_rules_from_config(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text(
        '[[audit.redact]]\ntypes = ["trails:Prompt", "trails:Completion"]\naction = "hash"\n'
        '[[audit.redact]]\ncapabilities = ["pay"]\naction = "drop"\n'
    )
    rules = Redaction.from_settings(load_settings(environ={}, cwd=tmp_path)).rules
    assert rules[0].types == (T.Prompt, T.Completion) and rules[1].capabilities == ("pay",)
    (tmp_path / "trails.toml").write_text('[[audit.redact]]\ntypes = ["x"]\naction = "shred"\n')
    with pytest.raises(ConfigError, match="action must be 'drop' or 'hash'"):
        Redaction.from_settings(load_settings(environ={}, cwd=tmp_path))


def test_l1_sessions_do_not_leave_their_domain(fx: Fixture) -> None:
    b = fx.sessions["B"]  # L1, domain health
    with pytest.raises(ExportRefused, match=r"ADR-0013.*session-B.*assurance L1, domain health"):
        check_assurance(fx.store, [b], domain="finance", forbidden=["L1"])
    with pytest.raises(ExportRefused, match="no domain"):
        check_assurance(fx.store, fx.store.graphs(), domain=None, forbidden=["L1"])
    check_assurance(fx.store, [b], domain="health", forbidden=["L1"])
    check_assurance(fx.store, [fx.sessions["A"]], domain="finance", forbidden=["L1"])  # L2


def test_unwritable_path_leaves_nothing(fx: Fixture, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="cannot write the export to"):
        export_to_path(
            lambda fh: export(fx.store, fh, [fx.sessions["A"]]), tmp_path / "no" / "x.trig"
        )

    def boom(fh: object) -> object:
        raise RuntimeError("disk full")

    target = tmp_path / "half.trig"
    with pytest.raises(RuntimeError):
        export_to_path(boom, target)  # type: ignore[arg-type]
    assert not target.exists() and not list(tmp_path.glob("*.partial"))


def test_a_malformed_import_loads_nothing(fx: Fixture, tmp_path: Path) -> None:
    before = nquads_set(fx.store)
    good = io.BytesIO()
    export(fx.store, good, [fx.sessions["A"]], format="nquads")
    broken = tmp_path / "broken.nq"
    broken.write_bytes(
        good.getvalue().replace(b"urn:trails:session:session-A", b"urn:trails:session:new")
        + b'<urn:a> <urn:b> "unterminated .\n'
    )
    with pytest.raises(
        RDFSyntaxError, match=r"broken\.nq is not valid nquads, nothing was imported"
    ):
        import_file(fx.store, broken)
    assert nquads_set(fx.store) == before


def test_import_refuses_what_it_cannot_take(fx: Fixture, tmp_path: Path) -> None:
    for name, message in (
        ("x.provn", "cannot be imported losslessly"),
        ("x.txt", "cannot tell the format"),
        ("x.ttl", "say which graph"),
        ("missing.trig", "cannot read"),
    ):
        path = tmp_path / name
        if name != "missing.trig":
            path.write_text("")
        with pytest.raises(ExportError, match=message):
            import_file(fx.store, path)


def test_provjson_is_valid_json(fx: Fixture) -> None:
    out = io.BytesIO()
    export(fx.store, out, [fx.sessions["C"]], format="provjson")
    data = json.loads(out.getvalue())
    assert (
        "bundle" in data
        and fx.sessions["C"].replace("urn:trails:session:", "session:") in data["bundle"]
    )


def _through_rdflib(data: bytes, fmt: str, graph: IRI | None = None) -> set[str]:
    """What rdflib reads from an export, written back as N-Quads and loaded into a store,
    then exported again: term for term what rdflib understood."""
    ds = rdflib.Dataset()
    if graph is None:
        ds.parse(data=data, format=fmt)
    else:  # Turtle holds one graph: rdflib reads its triples into that graph
        ds.graph(rdflib.URIRef(str(graph))).parse(data=data, format=fmt)
    back = open_store("memory:")
    try:
        back.load(ds.serialize(format="nquads").encode(), format="nquads")
        return nquads_set(back)
    finally:
        back.close()


def test_trig_and_turtle_read_back_by_rdflib_term_for_term(fx: Fixture) -> None:
    graphs = [fx.sessions["A"], fx.sessions["C"]]
    out = io.BytesIO()
    export(fx.store, out, graphs, format="trig")
    assert _through_rdflib(out.getvalue(), "trig") == nquads_set(fx.store, graphs)
    one = fx.sessions["C"]
    out = io.BytesIO()
    export(fx.store, out, [one], format="turtle")
    # Turtle holds one graph: the session's content is merged into it
    merged = {q.rsplit(" ", 2)[0] + f" <{one}> ." for q in nquads_set(fx.store, [one])}
    assert _through_rdflib(out.getvalue(), "turtle", one) == merged
