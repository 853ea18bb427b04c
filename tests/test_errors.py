"""The error tree: drawn in errors.py's docstring, and every backend failure mapped into it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

import trails.errors as errors
from trails.store import IRI, Literal, Quad, open_store
from trails.store.oxigraph import OxigraphStore


def test_docstring_tree_matches_the_classes() -> None:
    doc = errors.__doc__ or ""
    stack: list[tuple[int, str]] = []
    seen = set()
    for line in doc.splitlines():
        match = re.match(r"^(\s*)(?:[│ ]*)(?:├── |└── )?(\w+)\s", line + " ")
        if not match or not line.strip() or not re.search(r"(├── |└── |^    TrailsError)", line):
            continue
        depth = len(line) - len(line.lstrip(" │├└─"))
        name = re.search(r"(\w+)", line.lstrip(" │├└─")).group(1)  # type: ignore[union-attr]
        while stack and stack[-1][0] >= depth:
            stack.pop()
        cls = getattr(errors, name)
        if stack:
            assert issubclass(cls, getattr(errors, stack[-1][1])), f"{name} under {stack[-1][1]}"
        stack.append((depth, name))
        seen.add(name)
    exported = {n for n in errors.__all__}
    assert exported <= seen | {"MemoryInputError"}, exported - seen


def _bad_operations(tmp: Path, held: OxigraphStore) -> list[Callable[[], object]]:
    s = open_store("memory:")
    closed = open_store("memory:")
    closed.close()
    return [
        lambda: s.query("SELECT WHERE {"),
        lambda: s.query("SELECT ?s WHERE { ?s ?p ?o }", {"o": Literal("x")}),
        lambda: s.write([Quad(IRI("urn:a"), IRI("urn:p"), Literal("x", "bad dt"), IRI("urn:g"))]),
        lambda: s.load(b"not rdf at all <", format="nquads"),
        lambda: s.load(b"{", format="jsonld"),
        lambda: s.dump(format="nope"),
        lambda: s.dump(format="turtle"),
        lambda: s.query_to("SELECT * WHERE { ?s ?p ?o }", format="yaml"),
        lambda: closed.query("ASK {}"),
        lambda: OxigraphStore(held.path),
    ]


def test_every_backend_failure_is_a_trails_error(tmp_path: Path) -> None:
    held = OxigraphStore(tmp_path / "held")
    for op in _bad_operations(tmp_path, held):
        with pytest.raises(errors.TrailsError):
            op()
    held.close()
