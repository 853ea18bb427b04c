"""Showing results to a person: an aligned table of SELECT / ASK results, a progress bar.

Machine formats (SPARQL JSON / XML / CSV / TSV, Turtle, TriG) come straight
from the store's serialisers; this module only draws the table a terminal
user reads, with IRIs shortened by the usual prefixes.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import TextIO

from trails.prov.vocab import NAMESPACES
from trails.store.base import QueryResult, Solutions
from trails.store.terms import Literal, Term

__all__ = ["ProgressBar", "cell", "table"]

_PREFIXES = sorted(NAMESPACES.items(), key=lambda kv: -len(kv[1]))


def cell(term: Term | None, *, width: int | None = 80) -> str:
    """One term as table text: literals by value, IRIs with known prefixes shortened.

    Args:
        term: the term, or None when unbound.
        width: cut longer text with an ellipsis (None keeps everything).

    Returns:
        The text.
    """
    if term is None:
        return ""
    if isinstance(term, Literal):
        text = term.value
    else:
        text = str(term)
        for prefix, ns in _PREFIXES:
            if text.startswith(ns):
                text = f"{prefix}:{text[len(ns) :]}"
                break
    text = text.replace("\n", " ")
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def table(result: QueryResult, *, width: int | None = 80, hide: Collection[str] = ()) -> str:
    """An aligned text table of a SELECT result (or ``true``/``false`` for ASK).

    Args:
        result: what ``Store.query`` returned for a SELECT or ASK.
        width: the widest a cell may be.
        hide: columns to leave out when no row has a value in them (the projected
            parameters a user did not give).

    Returns:
        The table, ending with a row count line.
    """
    if isinstance(result, bool):
        return "true" if result else "false"
    if not isinstance(result, Solutions):
        return f"{len(result)} triples"
    keep = [
        i
        for i, name in enumerate(result.variables)
        if name not in hide or any(row[i] is not None for row in result.rows)
    ]
    names = [result.variables[i] for i in keep]
    rows = [[cell(row[i], width=width) for i in keep] for row in result.rows]
    widths = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]
    lines = ["  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)


class ProgressBar:
    """A one-line progress bar on a terminal stream (stderr), redrawn at most ten times a second.

    Args:
        stream: where to draw (a text stream).
        label: what is counted (``graphs``).
    """

    def __init__(self, stream: TextIO, label: str = "graphs") -> None:
        self.stream = stream
        self.label = label
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int, quads: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = int(width * done / total) if total else width
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\r[{bar}] {done}/{total} {self.label}, {quads:,} quads")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the line the bar was drawn on."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
