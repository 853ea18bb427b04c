"""Which graphs a token reads, and the dataset a query is evaluated over.

A token's grant names graphs by pattern; the store names the graphs that
exist. ``GraphCache`` lists them at most once a second per evaluator (a worker
process, or the in-process evaluator) and resolves each grant against that
list once per listing, so a query pays neither a graph listing nor a pattern
match per graph. A grant on every graph needs no list at all: two lookups (is
the default graph empty, does the store hold the reserved graph), made again at
most once a second, decide whether it runs unrestricted, so its queries (the
console's own reads among them) cost the same whatever the number of graphs.

``dataset`` then picks how to evaluate:

- a grant that may read *every* graph (the ``*`` pattern), over a store whose
  default graph is empty and that holds no reserved graph, with a request that
  names no dataset of its own: no dataset restriction at all, and the default
  graph is the union of the graphs (``union_default_graph``). That is the
  endpoint's documented semantics (the default graph is the union of the
  readable graphs) at the store's own speed: a restricted dataset of thousands
  of graphs costs the store more than the query.
- anything else: the explicit list of allowed graphs as both the named graphs
  and the default graph, intersected with the request's own ``FROM`` /
  ``FROM NAMED`` or protocol graphs, which can only narrow it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trails.prov.content import content_graph
from trails.prov.iri import agent_iri
from trails.prov.vocab import PROV, T
from trails.server.auth import Grant
from trails.store import Solutions, Store
from trails.store.terms import IRI, Term

__all__ = ["GRAPH_LIST_TTL", "GraphCache", "Readable", "allowed_graphs", "dataset"]

GRAPH_LIST_TTL = 1.0

# Every IRI is bound as a parameter, none is written into the text.
_OWN_SESSIONS = (
    "SELECT DISTINCT ?g ?cls ?assoc ?agent WHERE { GRAPH ?g { ?g a ?cls ; ?assoc ?agent } }"
)
_DEFAULT_GRAPH_HOLDS_DATA = "ASK { ?s ?p ?o }"
_GRAPH_HOLDS_DATA = "ASK { GRAPH $g { ?s ?p ?o } }"


@dataclass(frozen=True)
class Readable:
    """What one grant may read in one listing of the store.

    ``graphs`` are the allowed named graphs, sorted. ``everything`` says that
    they are all the store's graphs and that nothing else is in it (no reserved
    graph, an empty default graph), so the query may run unrestricted.
    """

    graphs: tuple[IRI, ...]
    everything: bool = False
    listed: bool = True
    """Whether ``graphs`` is the list; False for ``everything`` found without listing."""


def allowed_graphs(
    store: Store,
    grant: Grant,
    reserved: IRI | None,
    base_iri: str,
    graphs: Sequence[IRI] | None = None,
) -> list[IRI]:
    """The named graphs ``grant`` may read in ``store``.

    Args:
        store: the store to look in.
        grant: the token's grant.
        reserved: a graph no grant reads in this store (the access log's IRI,
            should a store written by an earlier version still hold it), or None.
        base_iri: the base under which principals' IRIs are minted.
        graphs: the store's graphs when already listed (default: list them now).

    Returns:
        The sorted graph IRIs.
    """
    listed = store.graphs() if graphs is None else graphs
    allowed = {g for g in listed if g != reserved and grant.matches(g)}
    if grant.own_sessions:
        params: dict[str, Term] = {
            "cls": T.Session,
            "assoc": PROV.wasAssociatedWith,
            "agent": agent_iri(grant.principal, base_iri),
        }
        result = store.query(_OWN_SESSIONS, params)
        if isinstance(result, Solutions):
            allowed |= {IRI.trusted(g) for g in result.column("g") if isinstance(g, str)}
        allowed.discard(reserved)  # type: ignore[arg-type]
    # who may read a graph may read its content (kept in the graph's content graph)
    present = set(listed)
    allowed |= {c for g in list(allowed) if (c := content_graph(g)) in present}
    return sorted(allowed)


@dataclass
class _Listing:
    at: float
    graphs: tuple[IRI, ...]
    default_empty: bool
    grants: dict[tuple[Grant, IRI | None, str], Readable] = field(default_factory=dict)
    changes: int | None = None
    """The store's count of changes when it was listed (None: a store that keeps none)."""


class GraphCache:
    """The graphs of one store, listed at most once per ``ttl`` seconds, and only again
    when the store changed since (a store that counts its changes, as an embedded store
    does: only the process that opened it writes it, through that object).

    A listing of thousands of graphs and the match of a pattern grant against each
    cost tens of milliseconds; listed every second whatever happened, they were
    most of the CPU of a pattern token's query at a few queries a second.

    A listing up to ``ttl`` old is safe to use: it can only narrow what a
    token sees, never widen it. A graph created since is missing from a
    restricted dataset until the next listing; a graph dropped since is empty
    anyway. The unrestricted path is taken only for a grant that matches every
    IRI there is, so a graph the listing does not know yet is one that grant
    may read; the one graph no grant may read here (the reserved access-log
    IRI) is never written to the data store by the endpoint, and a store that
    already holds it (written by an earlier version) keeps every query on the
    restricted path.

    Args:
        store: the store to list.
        ttl: seconds a listing is used for (0: list for every query).
        clock: the monotonic clock (tests).
    """

    def __init__(
        self,
        store: Store,
        ttl: float = GRAPH_LIST_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._listing: _Listing | None = None
        self._probe: tuple[float, dict[IRI | None, bool]] | None = None
        self.listings = 0

    def _current(self) -> _Listing:
        with self._lock:
            now = self._clock()
            listing = self._listing
            changes = getattr(self.store, "changes", None)
            if not isinstance(changes, int):
                changes = None
            unchanged = listing is not None and changes is not None and changes == listing.changes
            if listing is not None and unchanged and now - listing.at >= self.ttl:
                listing.at = now  # the store has not changed since it was listed: still its list
            if listing is None or now - listing.at >= self.ttl:
                graphs = tuple(self.store.graphs())
                default_empty = self.store.query(_DEFAULT_GRAPH_HOLDS_DATA) is False
                listing = self._listing = _Listing(now, graphs, default_empty, changes=changes)
                self.listings += 1
            return listing

    def _everything(self, reserved: IRI | None) -> bool:
        """Whether a grant on every graph may run unrestricted (no listing: two lookups,
        made again at most once per ``ttl``)."""
        with self._lock:
            now = self._clock()
            if self._probe is None or now - self._probe[0] >= self.ttl:
                self._probe = (now, {})
            known = self._probe[1]
            found = known.get(reserved)
            if found is None:
                empty = self.store.query(_DEFAULT_GRAPH_HOLDS_DATA) is False
                held = reserved is not None and bool(
                    self.store.query(_GRAPH_HOLDS_DATA, {"g": reserved})
                )
                found = known[reserved] = empty and not held
            return found

    def readable(
        self, grant: Grant, reserved: IRI | None, base_iri: str, *, listed: bool = False
    ) -> Readable:
        """What ``grant`` may read now (from a listing at most ``ttl`` old).

        Args:
            grant: the token's grant.
            reserved: the graph no grant reads in this store, or None.
            base_iri: the base under which principals' IRIs are minted.
            listed: list the graphs even for a grant on every graph (a request that
                names its own dataset is intersected with the list).

        Returns:
            The allowed graphs, and whether they are everything in the store.
        """
        if grant.universal and not listed and self._everything(reserved):
            return Readable((), everything=True, listed=False)
        listing = self._current()
        key = (grant, reserved, base_iri)
        found = listing.grants.get(key)
        if found is None:
            allowed = allowed_graphs(self.store, grant, reserved, base_iri, listing.graphs)
            everything = (
                grant.universal
                and listing.default_empty
                and (reserved is None or reserved not in listing.graphs)
            )
            found = Readable(tuple(allowed), everything)
            with self._lock:
                listing.grants[key] = found
        return found


def dataset(
    readable: Readable,
    default_graphs: Sequence[IRI] | None,
    named_graphs: Sequence[IRI] | None,
) -> dict[str, Any]:
    """The dataset keywords of ``Store.query`` for one request.

    Args:
        readable: what the token may read.
        default_graphs: the request's own default graphs (``FROM`` or
            ``default-graph-uri``), or None.
        named_graphs: the request's own named graphs, or None.

    Returns:
        ``{"union_default_graph": True}`` when the query may run unrestricted,
        otherwise ``default_graph`` and ``named_graphs``, each within the grant.
    """
    if readable.everything and default_graphs is None and named_graphs is None:
        return {"union_default_graph": True}
    if not readable.listed:
        raise ValueError("a dataset of the request's own needs the graph list (listed=True)")
    allowed = list(readable.graphs)
    visible = set(allowed)
    default = allowed if default_graphs is None else [g for g in default_graphs if g in visible]
    named = allowed if named_graphs is None else [g for g in named_graphs if g in visible]
    return {"default_graph": default, "named_graphs": named}
