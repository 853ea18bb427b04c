"""PROV-N and PROV-JSON written straight from the quads equal what the ``prov`` package builds.

The reference is the ``prov`` package's own reading of the TriG export (each
content graph merged into its session's graph first, as PROV-N and PROV-JSON
carry a session's content in its bundle), for the four recorded sessions of the known
store, a store recorded by ``trails demo``, and the whole known store with its
ledger and memory graphs. Our PROV-JSON read back must equal it bundle by
bundle (``ProvBundle`` equality), our PROV-N read back by the ``prov``
package's PROV-N parser too, and our PROV-N must hold the lines of the
``prov`` package's PROV-N serialisation of the reference, once record order,
attribute order and prefix declarations are set aside.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from prov.model import ProvDocument
from tests.known_store import Fixture

from trails.audit.export import export, select_graphs
from trails.audit.provn import Unsupported, _provn_name, write_prov
from trails.prov.content import is_content_graph, structure_graph
from trails.store import IRI, Store, open_store

TRAILS = str(Path(sys.executable).with_name("trails"))


def _export(store: Store, graphs: list[IRI], fmt: str) -> str:
    out = io.BytesIO()
    export(store, out, graphs, format=fmt)
    return out.getvalue().decode("utf-8")


def _reference(store: Store, graphs: list[IRI]) -> ProvDocument:
    """The prov package's reading of the TriG export, content merged into its session."""
    merged = open_store("memory:")
    try:
        merged.load(_export(store, graphs, "nquads").encode(), format="nquads")
        for g in merged.graphs():
            if is_content_graph(g):
                data = merged.dump(format="ntriples", graph=g) or b""
                merged.load(data, format="ntriples", graph=structure_graph(g))
                merged.clear(g)
        trig = _export(merged, sorted(merged.graphs()), "trig")
    finally:
        merged.close()
    return ProvDocument.deserialize(content=trig, format="rdf", rdf_format="trig")


def _bundles(doc: ProvDocument) -> dict[str, object]:
    return {str(b.identifier.uri): b for b in doc.bundles if b.identifier is not None}


def _assert_same(ours: ProvDocument, reference: ProvDocument) -> None:
    assert set(ours.get_records()) == set(reference.get_records())
    mine, theirs = _bundles(ours), _bundles(reference)
    assert sorted(mine) == sorted(theirs)
    for name, bundle in theirs.items():
        assert mine[name] == bundle, name
    assert ours == reference


_PREFIX = re.compile(r"^prefix ([\w.-]+) <([^>]*)>$")
_STRING = re.compile(r'("(?:[^"\\]|\\.)*"(?:@[\w-]+)?)')
_QNAME = re.compile(r"(?<![\w.:<-])([A-Za-z_][\w.-]*):((?:[^\s,()\[\]=;'\"\\]|\\.)*)")
_LONG = re.compile(r'"""(.*?)"""', re.DOTALL)  # a string with line feeds, on one line
_ATTRS = re.compile(r"\[(.*)\]\)$")


def _normal_lines(text: str) -> list[str]:
    """PROV-N record lines with every qualified name written as its IRI, each attribute
    list sorted, sorted; prefix declarations and the document frame left out."""
    document = {"prov": "http://www.w3.org/ns/prov#", "xsd": "http://www.w3.org/2001/XMLSchema#"}
    scope = document
    lines = []

    def iri(m: re.Match[str]) -> str:
        if m.group(1) in scope:
            return "<" + scope[m.group(1)] + re.sub(r"\\(.)", r"\1", m.group(2)) + ">"
        return m.group(0)

    text = _LONG.sub(lambda m: '"' + m.group(1).replace("\n", "\\n") + '"', text)
    for raw in text.splitlines():
        line = raw.strip()
        if (m := _PREFIX.match(line)) is not None:
            scope[m.group(1)] = m.group(2)
            continue
        if line.startswith("bundle "):
            scope = dict(document)
        elif line == "endBundle":
            scope = document
        if not line or line in ("document", "endDocument", "endBundle"):
            continue
        pieces = _STRING.split(line)  # qualified names outside string literals only
        line = "".join(p if i % 2 else _QNAME.sub(iri, p) for i, p in enumerate(pieces))
        if (m := _ATTRS.search(line)) is not None:
            attrs = sorted(re.split(r", (?=<[^>]*>=)", m.group(1)))
            line = line[: m.start()] + "[" + ", ".join(attrs) + "])"
        lines.append(line)
    return sorted(lines)


def _check(store: Store, graphs: list[IRI]) -> None:
    # written directly: no graph of a recorded store needs the prov package's fallback
    nquads = _export(store, graphs, "nquads").encode()
    bundles = [str(g) for g in graphs if not is_content_graph(g)]
    write_prov(nquads, io.BytesIO(), format="provn", bundles=bundles, prefixes={})
    reference = _reference(store, graphs)
    provjson = _export(store, graphs, "provjson")
    _assert_same(ProvDocument.deserialize(content=provjson, format="json"), reference)
    provn = _export(store, graphs, "provn")
    _assert_same(ProvDocument.deserialize(content=provn, format="provn"), reference)
    theirs = reference.serialize(format="provn")
    assert isinstance(theirs, str)
    assert _normal_lines(provn) == _normal_lines(theirs)


def test_each_session_of_the_known_store_equals_the_prov_packages_reading(fx: Fixture) -> None:
    for session in sorted(fx.sessions.values()):
        _check(fx.store, [session])


def test_all_sessions_together_equal_the_prov_packages_reading(fx: Fixture) -> None:
    _check(fx.store, sorted(fx.sessions.values()))


def test_the_whole_store_with_ledger_and_memory_equals_the_prov_packages_reading(
    fx: Fixture,
) -> None:
    _check(fx.store, select_graphs(fx.store, all_graphs=True))


def test_a_store_recorded_by_trails_demo(tmp_path: Path) -> None:
    path = tmp_path / "demo-store"
    done = subprocess.run(
        [TRAILS, "demo", "--store", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    store = open_store(str(path))
    try:
        sessions = select_graphs(store, since="1970-01-01T00:00:00Z")
        assert sessions
        _check(store, sessions)
    finally:
        store.close()


def test_progress_counts_the_bundles_written(fx: Fixture) -> None:
    seen: list[tuple[int, int, int]] = []
    sessions = sorted(fx.sessions.values())
    out = io.BytesIO()
    stats = export(fx.store, out, sessions, format="provn", progress=lambda *a: seen.append(a))
    assert [s[:2] for s in seen] == [(i, len(sessions)) for i in range(1, len(sessions) + 1)]
    assert seen[-1][2] == stats.quads > 0


@pytest.mark.parametrize(
    "line",
    [
        "_:b1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
        "<http://www.w3.org/ns/prov#Entity> <urn:g> .",
        "<urn:x:m> <http://www.w3.org/ns/prov#mentionOf> <urn:x:e> <urn:g> .",
        '<urn:x:a> <http://www.w3.org/ns/prov#startedAtTime> "soon" <urn:g> .\n'
        "<urn:x:a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
        "<http://www.w3.org/ns/prov#Activity> <urn:g> .",
    ],
)
def test_what_the_writer_cannot_map_exactly_is_refused(line: str) -> None:
    with pytest.raises(Unsupported):
        write_prov(
            (line + "\n").encode(), io.BytesIO(), format="provjson", bundles=["urn:g"], prefixes={}
        )


def test_a_graph_the_writer_refuses_still_exports_through_the_prov_package() -> None:
    store = open_store("memory:")
    try:
        store.load(
            b"<urn:x:m> <http://www.w3.org/ns/prov#mentionOf> <urn:x:e> <urn:x:g> .\n"
            b"<urn:x:e> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
            b"<http://www.w3.org/ns/prov#Entity> <urn:x:g> .\n",
            format="nquads",
        )
        text = _export(store, [IRI("urn:x:g")], "provn")
    finally:
        store.close()
    doc = ProvDocument.deserialize(content=text, format="provn")
    (bundle,) = doc.bundles
    assert {r.get_type().localpart for r in bundle.get_records()} >= {"Entity", "Mention"}


@pytest.mark.parametrize(
    "local", ["abc", "a:b", "uuid-1:prompt", "memory.learn", "a:", "-a", "a.", "a::b", "é", "%20"]
)
def test_names_are_escaped_as_the_prov_package_escapes_them(local: str) -> None:
    from prov.identifier import Namespace, QualifiedName

    reference = QualifiedName(Namespace("p", "urn:x:"), local).provn_bare_representation()
    assert _provn_name("p", "urn:x:", local) == reference


def test_literals_with_escapes_languages_and_datatypes_read_back_the_same() -> None:
    store = open_store("memory:")
    try:
        store.load(
            "\n".join(
                [
                    "<urn:x:e> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
                    "<http://www.w3.org/ns/prov#Entity> <urn:x:g> .",
                    '<urn:x:e> <http://www.w3.org/ns/prov#value> "a \\"quoted\\" \\\\ back\\nline'
                    "\\ttab \\u00e9 \\U0001F600 it's\" <urn:x:g> .",
                    '<urn:x:e> <http://www.w3.org/2000/01/rdf-schema#label> "hallo"@de <urn:x:g> .',
                    '<urn:x:e> <urn:x:n> "0.10"^^<http://www.w3.org/2001/XMLSchema#double> <urn:x:g> .',
                    '<urn:x:e> <urn:x:d> "1.50"^^<http://www.w3.org/2001/XMLSchema#decimal> <urn:x:g> .',
                    '<urn:x:e> <urn:x:t> "2025-03-01T10:00:00Z"^^'
                    "<http://www.w3.org/2001/XMLSchema#dateTime> <urn:x:g> .",
                    "",
                ]
            ).encode(),
            format="nquads",
        )
        _check(store, [IRI("urn:x:g")])
    finally:
        store.close()
