"""Showing results to a person: an aligned table of SELECT / ASK results, a progress bar.

Machine formats (SPARQL JSON / XML / CSV / TSV, Turtle, TriG) come straight
from the store's serialisers; this module only draws the table a terminal
user reads, with IRIs shortened by the usual prefixes, and formats the
numbers an auditor reads: money in USD with fixed decimals (``usd``),
durations with their unit (``duration``), times to the millisecond
(``timestamp``), and no binary-float noise such as ``0.30000000000000004``.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, TextIO

from trails.prov.vocab import NAMESPACES
from trails.store.base import QueryResult, Solutions
from trails.store.terms import Literal, Term

__all__ = ["ProgressBar", "cell", "duration", "number", "table", "timestamp", "usd"]

_PREFIXES = sorted(NAMESPACES.items(), key=lambda kv: -len(kv[1]))
_XSD = NAMESPACES["xsd"]
_FLOATS = {_XSD + "double", _XSD + "float"}
_NUMBERS = _FLOATS | {_XSD + t for t in ("decimal", "integer", "long", "int", "nonNegativeInteger")}
USD_DECIMALS = 6  # a token costs micro-dollars: six decimals keep every priced completion visible


def usd(value: Any) -> str:
    """An amount of US dollars with fixed decimals (``0.000375 USD``); ``unknown`` for None.

    Args:
        value: a number, its text, or None / "" when not priced.

    Returns:
        The text.
    """
    if value is None or value == "":
        return "unknown"
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    return f"{amount:.{USD_DECIMALS}f} USD"


def duration(seconds: float | None) -> str:
    """A duration with its unit: ``0.4 ms``, ``850 ms``, ``1.250 s``, ``2 min 5.0 s``, ``1 h 2 min``.

    Args:
        seconds: the duration, or None when unknown.

    Returns:
        The text ("" for None).
    """
    if seconds is None:
        return ""
    if seconds < 0.01:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.3f} s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes:.0f} min {rest:.1f} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours:.0f} h {minutes:.0f} min"


def timestamp(value: datetime | str | None) -> str:
    """A time in UTC to the millisecond: ``2026-01-02T03:04:05.678Z``.

    Args:
        value: a datetime (naive means UTC), its ISO 8601 text, or None.

    Returns:
        The text ("" for None; text that is not a time comes back unchanged).
    """
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return str(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def number(value: Any) -> str:
    """A number as a person reads it: integers as they are, floats without binary noise.

    Args:
        value: an int, float, Decimal or numeric text.

    Returns:
        The text (``0.1 + 0.2`` reads ``0.3``).
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.12g}"
    if isinstance(value, int | Decimal):
        return str(value)
    try:
        return f"{float(value):.12g}"
    except (TypeError, ValueError):
        return str(value)


def _literal(term: Literal, column: str) -> str:
    if term.datatype == _XSD + "dateTime":
        return timestamp(term.value)
    if term.datatype in _NUMBERS:
        if "usd" in column.lower():
            return usd(term.value)
        if term.datatype in _FLOATS:
            return number(term.value)
    return term.value


def cell(term: Term | None, *, width: int | None = 80, column: str = "") -> str:
    """One term as table text: literals by value, IRIs with known prefixes shortened.

    Times read to the millisecond in UTC; a column whose name says USD reads as
    money with fixed decimals; floats read without binary noise.

    Args:
        term: the term, or None when unbound.
        width: cut longer text with an ellipsis (None keeps everything).
        column: the name of the column the term is in.

    Returns:
        The text.
    """
    if term is None:
        return ""
    if isinstance(term, Literal):
        text = _literal(term, column)
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


def table(
    result: QueryResult,
    *,
    width: int | None = 80,
    hide: Collection[str] = (),
    fit: int | None = None,
) -> str:
    """An aligned text table of a SELECT result (or ``true``/``false`` for ASK).

    Args:
        result: what ``Store.query`` returned for a SELECT or ASK.
        width: the widest a cell may be.
        hide: columns to leave out when no row has a value in them (the projected
            parameters a user did not give).
        fit: the widest a line may be (a terminal's width), or None for no limit:
            wide cells are cut with an ellipsis (never the first column's, which
            names the row), and when that is not enough the last columns are left
            out, the table's last line naming them.

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
    rows = [
        [cell(row[i], width=width, column=result.variables[i]) for i in keep] for row in result.rows
    ]
    widths = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]
    left_out: list[str] = []
    if fit is not None:
        widths, shown = _fitted(names, widths, fit)
        left_out = names[shown:]
        names = names[:shown]
        rows = [[_cut(c, w) for c, w in zip(r[:shown], widths, strict=True)] for r in rows]
    lines = ["  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    count = f"({len(rows)} row{'s' if len(rows) != 1 else ''}"
    if left_out:
        span = left_out[0] if len(left_out) == 1 else f"{left_out[0]} … {left_out[-1]}"
        count += (
            f"; {len(left_out)} column{'s' if len(left_out) != 1 else ''} left out to fit: {span}"
        )
    lines.append(count + ")")
    return "\n".join(lines)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _fitted(names: list[str], natural: list[int], fit: int) -> tuple[list[int], int]:
    """Column widths within ``fit`` characters a line, and how many columns are shown.

    The first column keeps its width (it names the row); each other one is cut to
    at most ``_CELL`` characters (or its header's width); columns are then left out
    from the right until the line fits.
    """
    widths = [natural[0]] + [
        min(w, max(_CELL, len(n))) for w, n in zip(natural[1:], names[1:], strict=True)
    ]
    shown = len(widths)
    while shown > 1 and sum(widths[:shown]) + 2 * (shown - 1) > fit:
        shown -= 1
    return widths[:shown], shown


_CELL = 24
"""The widest a cell other than the first is when a table is fitted to a width."""


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
