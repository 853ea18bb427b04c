"""A bundle's ledger segment, in canonical N-Quads sorted outside memory.

The segment (``ledger/segment.nq``) is the ledger's statements about the bundled seals
and key rotations, each line canonical, sorted, without duplicates. For a whole store
that is every seal: read, canonicalised and sorted in memory, it grew the export with the
store. ``segment_lines`` reads the ledger's N-Triples dump from a temporary file a part
at a time, and ``sorted_unique`` sorts the lines in runs of at most ``RUN`` lines written
to temporary files, then merges the runs: the same lines, in the same order, as sorting
them all at once.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from trails.evidence.canonical import canonical_lines
from trails.evidence.ledger import _ntriples_rows
from trails.store import Solutions, Store
from trails.store.terms import IRI

__all__ = ["RUN", "segment_bytes", "segment_lines", "sorted_unique"]

RUN = 50_000
"""Lines sorted in memory at a time (a seal is about a dozen)."""

# the parameter is projected: a store that binds parameters as a server does (the console's
# grant-checked view, a SPARQL server) binds only what the SELECT returns
_ROWS = "SELECT ?s ?p ?o $ledger WHERE { GRAPH $ledger { ?s ?p ?o } }"


def sorted_unique(lines: Iterable[str], *, run: int = RUN) -> Iterator[str]:
    """``sorted(set(lines))``, one line at a time, holding at most ``run`` lines in memory.

    Lines must end in a line feed and hold no other (canonical N-Quads lines do).
    """
    with contextlib.ExitStack() as stack:
        runs: list[IO[str]] = []
        source = iter(lines)
        while taken := list(itertools.islice(source, run)):
            ordered = sorted(set(taken))
            if not runs and len(taken) < run:  # all of them fit: no file
                yield from ordered
                return
            part = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n"))
            part.writelines(ordered)
            part.seek(0)
            runs.append(part)
        last = None
        for line in heapq.merge(*runs):
            if line != last:
                yield line
                last = line


def segment_lines(store: Store, ledger: IRI, keep: set[IRI]) -> Iterator[str]:
    """The canonical N-Quads lines, sorted, of the ``ledger`` statements whose subject is
    in ``keep`` (the bundled seals and the key rotations)."""
    return sorted_unique(_canonical(store, ledger, keep))


def segment_bytes(store: Store, ledger: IRI, keep: set[IRI]) -> Iterator[bytes]:
    """``segment_lines``, UTF-8 encoded, a few thousand lines at a time."""
    lines = segment_lines(store, ledger, keep)
    while part := list(itertools.islice(lines, 4096)):
        yield "".join(part).encode("utf-8")


def _canonical(store: Store, ledger: IRI, keep: set[IRI]) -> Iterator[str]:
    from trails.store.oxigraph import OxigraphStore  # loaded when such a store is open

    if not isinstance(store, OxigraphStore):  # a server's: its rows, as the query gives them
        result = store.query(_ROWS, {"ledger": ledger})
        assert isinstance(result, Solutions)
        yield from canonical_lines((r for r in result.rows if r[0] in keep), ledger)
        return
    # the embedded store writes canonical N-Triples, one statement a line: read in parts
    with tempfile.TemporaryDirectory(prefix="trails-segment-") as folder:
        dumped = Path(folder) / "ledger.nt"
        store.dump(dumped, format="ntriples", graph=ledger)
        with dumped.open("rb") as lines:
            while part := b"".join(itertools.islice(lines, RUN)):
                rows = [r for r in _ntriples_rows(part) if r[0] in keep]
                yield from canonical_lines(rows, ledger)
