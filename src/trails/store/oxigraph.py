"""The embedded store: pyoxigraph, on disk (RocksDB) or in memory.

This is the only module that imports pyoxigraph for storage. It converts
trails terms to pyoxigraph terms on the way in (caching the IRIs that repeat:
classes and predicates), back on the way out, and translates every pyoxigraph
exception into the trails error tree.

The on-disk store is single-writer per process: the store's directory is
locked from open to close (``trails.store._layout``: a lock file, and RocksDB's
own lock on the data directory inside). A second open of a locked directory
raises ``StoreLockedError`` explaining that processes share a store through a
SPARQL server, not a directory. Holding the lock, an on-disk store knows since
when it has the directory to itself (``exclusive_since``): any session still
open that started before then belongs to a process that is gone, which is what
recovery relies on. Opening also repairs what an interrupted compaction left
(``_layout.recover``), before RocksDB opens.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, TypeVar

import pyoxigraph as ox

from trails.errors import (
    ConfigError,
    QueryError,
    QueryParameterError,
    QuerySyntaxError,
    RDFSyntaxError,
    StoreError,
    StoreLockedError,
    StoreReadOnlyError,
)
from trails.store import _layout
from trails.store._sparql_bind import bind_params, prebinds
from trails.store.base import (
    DATASET_FORMATS,
    DEFAULT_BASE_IRI,
    RESULT_FORMATS,
    QueryResult,
    ResultBuffer,
    Solutions,
    Store,
)
from trails.store.location import check_creatable, check_existing
from trails.store.terms import IRI, BNode, Literal, Quad, Term, Triple, check_term
from trails.text import check_text

__all__ = ["OxigraphStore", "convert_rdf", "rdf_format", "resolve_iri", "results_format"]

_RDF_FORMATS = {
    "trig": ox.RdfFormat.TRIG,
    "nquads": ox.RdfFormat.N_QUADS,
    "turtle": ox.RdfFormat.TURTLE,
    "ntriples": ox.RdfFormat.N_TRIPLES,
    "rdfxml": ox.RdfFormat.RDF_XML,
    "jsonld": ox.RdfFormat.JSON_LD,
    "n3": ox.RdfFormat.N3,
}
_RESULT_FORMATS = {
    "json": ox.QueryResultsFormat.JSON,
    "xml": ox.QueryResultsFormat.XML,
    "csv": ox.QueryResultsFormat.CSV,
    "tsv": ox.QueryResultsFormat.TSV,
}
_UNION_ALONE = (
    "union_default_graph replaces the dataset: it cannot be combined with "
    "default_graph or named_graphs"
)
_POSITION = re.compile(r"(?:error at |line )(\d+)(?::| between columns )(\d+)")

T = TypeVar("T")


def rdf_format(name: str) -> ox.RdfFormat:
    """Map a trails format name to pyoxigraph's, with a clear error."""
    try:
        return _RDF_FORMATS[name]
    except KeyError:
        raise StoreError(
            f"unknown RDF format {name!r}; use one of {', '.join(sorted(_RDF_FORMATS))}"
        ) from None


def results_format(name: str) -> ox.QueryResultsFormat:
    try:
        return _RESULT_FORMATS[name]
    except KeyError:
        raise StoreError(
            f"unknown results format {name!r}; use one of {', '.join(sorted(RESULT_FORMATS))}"
        ) from None


def resolve_iri(reference: str, base: str) -> str:
    """``reference`` resolved against ``base`` (RFC 3986), exactly as the store's parser does.

    Args:
        reference: an IRI reference, relative or absolute.
        base: an absolute IRI.

    Returns:
        The absolute IRI.

    Raises:
        ValueError: ``reference`` or ``base`` is not a valid IRI.
    """
    if any(c in reference for c in '<>"{}|^`\\ \n\r\t'):
        raise ValueError(f"not an IRI reference: {reference!r}")
    try:
        parsed = ox.parse(f"<{reference}> a <urn:x> .", format=ox.RdfFormat.TURTLE, base_iri=base)
        return str(next(iter(parsed)).subject.value)
    except (SyntaxError, StopIteration) as exc:
        raise ValueError(f"cannot resolve {reference!r} against {base!r}: {exc}") from None


def convert_rdf(data: bytes, source: str, target: str, base_iri: str) -> bytes:
    """RDF ``data`` in format ``source`` rewritten as ``target`` (relative IRIs resolved).

    Args:
        data: the document.
        source: its trails format name (``turtle`` ...).
        target: the format wanted.
        base_iri: what relative IRIs in ``data`` resolve against.

    Returns:
        The serialised document.

    Raises:
        RDFSyntaxError: ``data`` does not parse.
        StoreError: an unknown format.
    """
    try:
        parsed = ox.parse(data, format=rdf_format(source), base_iri=base_iri)
        out = ox.serialize(parsed, format=rdf_format(target))
    except SyntaxError as exc:
        raise RDFSyntaxError(f"cannot parse {source}: {exc}") from exc
    return out if out is not None else b""


@lru_cache(maxsize=8192)
def _named(value: str) -> ox.NamedNode:
    return ox.NamedNode(value)


def _to_ox(term: Term) -> ox.NamedNode | ox.BlankNode | ox.Literal:
    if isinstance(term, Literal):
        if term.language:
            return ox.Literal(term.value, language=term.language)
        return ox.Literal(term.value, datatype=_named(term.datatype))
    if isinstance(term, BNode):
        return ox.BlankNode(str(term))
    return _named(term)


def _from_ox(term: Any) -> Term | None:
    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return IRI.trusted(term.value)
    if isinstance(term, ox.Literal):
        return Literal(term.value, term.datatype.value, term.language)
    if isinstance(term, ox.BlankNode):
        return BNode(term.value)
    raise StoreError(f"unsupported term in result: {term!r}")


def _prepared(sparql: str, params: Mapping[str, Term]) -> tuple[str, dict[Any, Any] | None]:
    """``(text, substitutions)`` to run ``sparql`` with ``params``: the text as given with
    pyoxigraph's own pre-binding where it means what the rewrite means (and for a blank
    node, which text cannot name), else the remote store's rewritten text
    (docs/remote-store.md) and None.

    Both depend on the text and the terms alone, so the answer, with the checks of
    both, is kept per text and terms (the 256 most recent): a query asked again with
    the same values (a pack query, a dashboard's refresh) runs without them.

    Raises:
        QueryError: the text is not valid Unicode.
        QueryParameterError: a term is not, or the rewrite refuses the parameters.
    """
    key = (sparql, *((name, type(term), term) for name, term in params.items()))
    found = _PREPARED.get(key)
    if found is not None:
        return found
    if sparql not in _ENCODABLE:  # a text asked with new values was checked before
        check_text(sparql, "the query text", QueryError)
        if len(_ENCODABLE) >= 256:
            _ENCODABLE.clear()
        _ENCODABLE.add(sparql)
    for name, term in params.items():
        check_term(term, f"query parameter {name!r}", QueryParameterError)
    if any(isinstance(v, BNode) for v in params.values()) or prebinds(sparql, params):
        found = sparql, {ox.Variable(k): _to_ox(v) for k, v in params.items()}
    else:  # each BIND placed where Oxigraph starts from the constant
        found = bind_params(sparql, params, close_groups=True), None
    if len(_PREPARED) >= 256:
        _PREPARED.clear()
    _PREPARED[key] = found
    return found


# (text, (name, type, term)...) -> what _prepared answers; the type keeps an IRI and
# a blank node of the same text apart
_PREPARED: dict[tuple[Any, ...], tuple[str, dict[Any, Any] | None]] = {}
_ENCODABLE: set[str] = set()  # query texts that passed check_text (the 256 most recent)


_NODES: dict[Any, Any] = {}  # IRI text -> NamedNode, Literal -> pyoxigraph Literal
_NODES_MAX = 1 << 16
_TEXTS: dict[Any, str] = {}  # IRI text or Literal -> its N-Triples text


def _convert_quads(quads: Iterable[Quad]) -> list[ox.Quad]:
    """Convert quads for ``extend``: the write path of every event, so it is one loop.

    Named nodes and short literals are kept in a process-wide table (classes,
    predicates, the session's graph, the principal, labels and statuses repeat in
    every event; cleared past ``_NODES_MAX`` entries; a term not in it is converted
    by ``_to_ox``), and a blank node never shares an entry with an IRI of the same
    text (nor a literal, whose key is a tuple).
    """
    nodes = _NODES
    if len(nodes) > _NODES_MAX:
        nodes.clear()
    named, quad = ox.NamedNode, ox.Quad
    out = []
    for s, p, o, g in quads:
        if type(s) is BNode:
            cs: Any = ox.BlankNode(s)
        else:
            cs = nodes.get(s)
            if cs is None:
                cs = nodes[s] = named(s)
        cp = nodes.get(p)
        if cp is None:
            cp = nodes[p] = named(p)
        if type(o) is BNode:
            co: Any = ox.BlankNode(o)
        else:
            co = nodes.get(o)
            if co is None:
                co = _to_ox(o)
                if not isinstance(o, Literal) or len(o.value) <= 64:
                    nodes[o] = co
        cg = nodes.get(g)
        if cg is None:
            cg = nodes[g] = named(g)
        out.append(quad(cs, cp, co, cg))
    return out


def _base(base_iri: str) -> str:
    """A validated base IRI (absolute, nothing a query's text could not hold)."""
    try:
        if resolve_iri(base_iri, "urn:x") == base_iri and ":" in base_iri:
            return base_iri
    except ValueError:
        pass
    raise ConfigError(f"base_iri must be an absolute IRI, not {base_iri!r}")


def _syntax_error(exc: SyntaxError, source: str) -> QuerySyntaxError:
    message = str(exc.args[0]) if exc.args else str(exc)
    match = _POSITION.search(message)
    line = int(match.group(1)) if match else exc.lineno
    column = int(match.group(2)) if match else exc.offset
    return QuerySyntaxError(message, source=source, line=line, column=column)


class OxigraphStore(Store):
    """A ``Store`` over pyoxigraph. ``path=None`` keeps everything in memory.

    Args:
        path: directory of the RocksDB store; created when missing or empty.
        base_iri: the base relative IRIs in queries resolve against.
        create: False for a reader: ``path`` must already be a store (nothing is
            written to a folder that is not one).
        read_only: open a snapshot of the store as it is now, without its lock, while
            another process writes it: nothing can be written through it, and it
            does not see what is written after it was opened (``snapshot_at``).

    Raises:
        NotAStore: ``path`` is not a store and ``create`` is False, or it is a file or a
            folder holding other files (never taken over to create a store).
        StoreLockedError: another process (or this one) holds the directory.
        StoreError: the directory cannot be opened for another reason.
        ConfigError: ``base_iri`` is not an absolute IRI.
    """

    #: Only this process can change the store while it is open (RocksDB locks an
    #: on-disk directory; an in-memory store lives in the process), so caches of
    #: it (the memory index) need no cross-process freshness check.
    exclusive = True

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        base_iri: str = DEFAULT_BASE_IRI,
        create: bool = True,
        read_only: bool = False,
    ) -> None:
        self.base_iri = _base(base_iri)
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            if create and not read_only:
                check_creatable(self.path)
            else:
                check_existing(self.path)
        #: when this process took the directory's lock (None in memory: nothing before us)
        self.exclusive_since: datetime | None = None
        #: a read-only snapshot: the moment it shows (None for a store this process writes)
        self.snapshot_at: datetime | None = None
        self._changes = 0
        self._changes_lock = threading.Lock()
        self._store: ox.Store | None = None
        self._lock: _layout.DirectoryLock | None = None
        #: where the data directory is (None in memory)
        self._disk: _layout.Layout | None = None
        if self.path is None:
            if read_only:
                raise StoreError("an in-memory store cannot be opened read-only")
            self._store = ox.Store()
            return
        if read_only:
            self._open_snapshot(self.path)
            return
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock = _layout.DirectoryLock(self.path)
        except BlockingIOError as exc:
            raise self._locked(exc) from exc
        except OSError as exc:
            raise StoreError(f"cannot open store at {self.path}: {exc}") from exc
        try:
            self._disk = _layout.recover(self.path)
            if self._disk.fresh:
                _layout.reached("creating")
            self._store = ox.Store(str(self._disk.data))
            if self._disk.fresh:
                _layout.reached("created")
                self._disk = _layout.commit(self._disk)
        except OSError as exc:
            if self._store is None and self._disk is not None and self._disk.fresh:
                with contextlib.suppress(OSError):  # what RocksDB began is no store
                    _layout.remove(self._disk.data)
            self.close()
            if "lock" in str(exc).lower():
                raise self._locked(exc) from exc
            raise StoreError(f"cannot open store at {self.path}: {exc}") from exc
        except BaseException:
            self.close()
            raise
        self.exclusive_since = datetime.now(UTC)

    def _open_snapshot(self, root: Path) -> None:
        """Open the data directory the pointer names read-only, without the lock.

        RocksDB's read-only mode sees the store as it is when opened, while the
        process that holds the lock goes on writing. A compaction there may switch
        data directories between reading the pointer and opening the one it named:
        the pointer is then read again, once.
        """
        for attempt in (1, 2):
            version = _layout.read_pointer(root)
            self._disk = _layout.Layout(root, version)
            self.snapshot_at = datetime.now(UTC)
            try:
                self._store = ox.Store.read_only(str(self._disk.data))
                return
            except OSError as exc:
                if attempt == 2 or _layout.read_pointer(root) == version:
                    raise StoreError(f"cannot open store at {root} read-only: {exc}") from exc

    @property
    def groups_subjects(self) -> bool:
        """Whether ``dump`` of one graph lists each subject's triples together: on disk it
        reads the graph-subject-predicate-object index in order; in memory it does not."""
        return self.path is not None

    @property
    def read_only(self) -> bool:
        """Whether this is a read-only snapshot (``snapshot_at`` says of when)."""
        return self.snapshot_at is not None

    def _writable(self, what: str) -> ox.Store:
        """The pyoxigraph store to change, or a refusal for a read-only snapshot."""
        if self.snapshot_at is not None:
            raise StoreReadOnlyError(
                f"{what} refused: the store at {self.path} is open read-only (a snapshot "
                f"as of {self.snapshot_at:%Y-%m-%d %H:%M:%S} UTC, while another process "
                f"writes it); nothing was written"
            )
        return self.raw

    def _locked(self, exc: OSError) -> StoreLockedError:
        held = _layout.holder(self.path) if self.path is not None else None
        if held == "this process":
            where = "already open earlier in this process"
        elif held is not None:
            where = f"already open in another process: {held} holds it"
        else:
            where = "already open in another process (or earlier in this one)"
        return StoreLockedError(
            f"the store at {self.path} is {where}. The embedded store is single-writer: "
            f"stop the other process, or share one store between processes through a "
            f"SPARQL server (TRAILS_STORE=http://...). Backend said: {exc}"
        )

    def __repr__(self) -> str:
        where = str(self.path) if self.path else "memory"
        return f"OxigraphStore({where})"

    @property
    def changes(self) -> int:
        """How many changes (writes, loads, clears) were made through this object.

        Only this process can change the store, and only through this object (the
        directory is locked while it is open), so what a reader cached from it is
        still current while this number is what it was when the reader read.
        """
        return self._changes

    def _changed(self) -> None:
        with self._changes_lock:
            self._changes += 1

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called (nothing can be read or written any more)."""
        return self._store is None

    @property
    def raw(self) -> ox.Store:
        """The pyoxigraph store, for benchmarks and backend-specific tools."""
        if self._store is None:
            raise StoreError(f"{self!r} is closed")
        return self._store

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except OSError as exc:
            raise StoreError(f"{what} failed on {self!r}: {exc}") from exc

    # -- writing ---------------------------------------------------------------

    def write(self, quads: Iterable[Quad], *, remove: Iterable[Quad] = ()) -> None:
        store = self._writable("write")
        remove = list(remove)
        try:
            if not remove:
                converted = _convert_quads(quads)
                self._call("write", lambda: store.extend(converted))
                self._changed()
                return
            # One SPARQL update is one transaction: removals and additions together.
            update = f"DELETE DATA {{ {_data(remove)} }} ;\nINSERT DATA {{ {_data(quads)} }}"
        except (ValueError, TypeError) as exc:
            raise StoreError(f"invalid quad, nothing written: {exc}") from exc
        self._call("write", lambda: store.update(update))
        self._changed()

    # -- reading ---------------------------------------------------------------

    def _run(
        self,
        sparql: str,
        params: Mapping[str, Term] | None,
        default_graph: Sequence[IRI] | None,
        named_graphs: Sequence[IRI] | None,
        union_default_graph: bool = False,
    ) -> Any:
        store = self.raw
        kw: dict[str, Any] = {"base_iri": self.base_iri}
        if union_default_graph:
            if default_graph is not None or named_graphs is not None:
                raise StoreError(_UNION_ALONE)
            kw["use_default_graph_as_union"] = True
        if default_graph is not None:
            kw["default_graph"] = [_named(g) for g in default_graph]
        if named_graphs is not None:
            kw["named_graphs"] = [_named(g) for g in named_graphs]
        try:
            if params:
                sparql, substitutions = _prepared(sparql, params)
                if substitutions is not None:
                    kw["substitutions"] = substitutions
            else:
                check_text(sparql, "the query text", QueryError)
            return store.query(sparql, **kw)
        except SyntaxError as exc:
            raise _syntax_error(exc, "query") from exc
        except (ValueError, TypeError, RuntimeError) as exc:
            # pyoxigraph refuses substitutions of variables a SELECT does not project
            raise QueryParameterError(f"query parameters rejected: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"query failed on {self!r}: {exc}") from exc

    def query(
        self,
        sparql: str,
        params: Mapping[str, Term] | None = None,
        *,
        default_graph: Sequence[IRI] | None = None,
        named_graphs: Sequence[IRI] | None = None,
        union_default_graph: bool = False,
    ) -> QueryResult:
        result = self._run(sparql, params, default_graph, named_graphs, union_default_graph)
        if isinstance(result, ox.QueryBoolean):
            return bool(result)
        if isinstance(result, ox.QuerySolutions):
            names = [v.value for v in result.variables]
            rows = [tuple(_from_ox(sol[i]) for i in range(len(names))) for sol in result]
            return Solutions(names, rows)
        return [
            Triple(_from_ox(t.subject), _from_ox(t.predicate), _from_ox(t.object))  # type: ignore[arg-type]
            for t in result
        ]

    def query_to(
        self,
        sparql: str,
        params: Mapping[str, Term] | None = None,
        *,
        format: str = "json",
        default_graph: Sequence[IRI] | None = None,
        named_graphs: Sequence[IRI] | None = None,
        union_default_graph: bool = False,
        max_bytes: int | None = None,
    ) -> bytes:
        result = self._run(sparql, params, default_graph, named_graphs, union_default_graph)
        if isinstance(result, ox.QueryTriples):
            fmt: Any = rdf_format(format if format not in RESULT_FORMATS else "turtle")
        else:
            fmt = results_format(format)
        if max_bytes is None:
            return self._call("serialise", lambda: result.serialize(format=fmt))  # type: ignore[no-any-return]
        # pyoxigraph serialises lazily, chunk by chunk, as evaluation yields results;
        # the buffer stops both at max_bytes
        buffer = ResultBuffer(max_bytes)
        self._call("serialise", lambda: result.serialize(output=buffer, format=fmt))
        return buffer.getvalue()

    def has_triple(self, predicate: IRI, obj: Term | None, graphs: Sequence[IRI]) -> bool:
        store = self.raw
        p, o = _named(predicate), (_to_ox(obj) if obj is not None else None)

        def look() -> bool:
            for graph in graphs:
                for _quad in store.quads_for_pattern(None, p, o, _named(graph)):
                    return True
            return False

        return self._call("look up", look)

    def graphs(self) -> list[IRI]:
        store = self.raw
        names = self._call("list graphs", lambda: list(store.named_graphs()))
        return sorted(IRI.trusted(g.value) for g in names if isinstance(g, ox.NamedNode))

    def clear(self, graph: IRI) -> None:
        store = self._writable("clear")
        self._call("clear", lambda: store.remove_graph(_named(graph)))
        self._changed()

    def dump(
        self,
        output: BinaryIO | Path | None = None,
        *,
        format: str = "trig",
        graph: IRI | None = None,
    ) -> bytes | None:
        store = self.raw
        fmt = rdf_format(format)
        if graph is None and format not in DATASET_FORMATS:
            raise StoreError(f"{format} holds one graph: name it, or dump as trig / nquads")
        target: Any = str(output) if isinstance(output, Path) else output
        kwargs: dict[str, Any] = {"format": fmt}
        if graph is not None:
            kwargs["from_graph"] = _named(graph)
        return self._call("dump", lambda: store.dump(target, **kwargs))

    def load(
        self, data: bytes | BinaryIO | Path, *, format: str = "trig", graph: IRI | None = None
    ) -> None:
        store = self._writable("load")
        fmt = rdf_format(format)
        if graph is None and format not in DATASET_FORMATS:
            raise StoreError(f"{format} holds triples: say which graph to load them into")
        kwargs: dict[str, Any] = {"format": fmt}
        if isinstance(data, Path):
            kwargs["path"] = str(data)
        else:
            kwargs["input"] = data
        if graph is not None:
            kwargs["to_graph"] = _named(graph)
        try:
            store.load(**kwargs)
        except SyntaxError as exc:
            raise RDFSyntaxError(f"cannot parse {format}, nothing loaded: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"load failed on {self!r}, nothing loaded: {exc}") from exc
        finally:
            self._changed()  # a failed load wrote nothing; counting it costs one re-read

    def compact(self) -> None:
        """Rewrite the store so that nothing removed from it survives in its files.

        Oxigraph keeps the text of a long literal in a table of strings that
        removing quads never prunes (and RocksDB keeps removed keys in older files
        until a compaction), so ``optimize`` alone leaves erased text on disk. This
        copies the quads the store holds now into a fresh data directory (a bulk
        load: no plain-text copy on the way), makes the store's pointer name it,
        and deletes the old one (``trails.store._layout``). The store is whole at
        every instant: a crash before the copy is complete leaves the store as it
        was, a crash after it finishes the compaction when the store is next
        opened, and that open deletes whatever copy is left. In memory, the same
        copy replaces the in-memory store. The store stays open (and locked against
        other processes throughout); it is unusable by other threads while this runs.

        Raises:
            StoreError: the copy or the swap failed (the store is left as it was); or
                the store was rewritten but the copy from before it, which still holds
                what was removed, could not be deleted (the message names it).
        """
        self._writable("compact")
        if self.path is None:
            fresh = ox.Store()
            self._call("compact", lambda: fresh.bulk_extend(self._all_quads()))
            self._store = fresh
            return
        old = self._disk
        assert old is not None
        try:
            _layout.drop_earlier_copies(old.root)
        except OSError as exc:
            raise StoreError(f"compact failed on {self!r}, nothing changed: {exc}") from exc
        copy, new = _layout.start_copy(old)

        def rewrite() -> None:
            fresh = ox.Store(str(copy))
            fresh.bulk_extend(self._all_quads())
            fresh.flush()
            fresh.optimize()
            _layout.reached("copying")
            del fresh  # closes it (RocksDB releases the directory)

        try:
            self._call("compact", rewrite)
            _layout.finish_copy(copy, new)  # durable, then complete: a crash now finishes
        except (StoreError, OSError) as exc:
            self._undo_copy(copy, new, exc)
        store, self._store = self._store, None
        with contextlib.suppress(OSError):
            store.flush()  # type: ignore[union-attr]
        del store
        _layout.reached("renamed")
        self._swap(old, new, copy)
        _layout.reached("switched")
        try:
            _layout.discard(old, new)
            self._disk = _layout.Layout(new.root, new.version)
        except OSError as exc:
            left = ", ".join(str(p) for p in _layout.leftovers(new)) or str(old.data)
            raise StoreError(
                f"compaction of {self!r} rewrote the store, but could not delete the copy "
                f"from before it ({left}), which still holds everything removed before the "
                f"compaction, erased text included: {exc}. The store no longer reads it: "
                f"delete it by hand (opening the store tries again)"
            ) from exc

    def _undo_copy(self, copy: Path, new: _layout.Layout, exc: Exception) -> NoReturn:
        """Delete a compaction's copy, finished or not, so no later open adopts it."""
        try:
            _layout.abandon(copy, new)
        except OSError as again:  # a later open would finish the compaction: stop writing here
            self.close()
            raise StoreError(
                f"compact failed on {self!r} ({exc}), and its copy {new.data} could not be "
                f"set aside ({again}): the store is closed; open it again, which completes "
                f"the compaction"
            ) from exc
        if isinstance(exc, StoreError):
            raise exc
        raise StoreError(f"compact failed on {self!r}, the store is as it was: {exc}") from exc

    def _swap(self, old: _layout.Layout, new: _layout.Layout, copy: Path) -> None:
        """Open the compacted copy and point the store at it; on failure, go back to
        ``old`` (the copy set aside first, so no later open finishes the compaction)."""
        assert new.version is not None
        opened: ox.Store | None = None
        try:
            opened = ox.Store(str(new.data))
            _layout.point(new.root, new.version, clearing=new.clearing)
        except OSError as exc:
            with contextlib.suppress(StoreError):
                if _layout.read_pointer(new.root) == new.version and opened is not None:
                    self._store, self._disk = opened, new  # only the last sync failed
                    return
            del opened
            try:
                _layout.abandon(copy, new)
                self._store = ox.Store(str(old.data))
            except OSError as again:
                self.close()
                raise StoreError(
                    f"compact failed on {self!r} ({exc}), and going back failed too "
                    f"({again}): the store is closed; open it again, which completes or "
                    f"undoes the compaction"
                ) from exc
            raise StoreError(f"compact failed on {self!r}, the store is as it was: {exc}") from exc
        self._store, self._disk = opened, new

    def _all_quads(self) -> Iterable[ox.Quad]:
        return self.raw.quads_for_pattern(None, None, None, None)

    def close(self) -> None:
        if self._store is not None:
            store, self._store = self._store, None
            if self.snapshot_at is None:  # a read-only snapshot has nothing to flush
                with contextlib.suppress(OSError):
                    store.flush()
            del store
        if self._lock is not None:  # after RocksDB let go of the data directory
            lock, self._lock = self._lock, None
            lock.release()


def _data(quads: Iterable[Quad]) -> str:
    """The body of a ``DELETE DATA`` / ``INSERT DATA`` block: one ``GRAPH`` group per
    graph, each term written as pyoxigraph writes it (its ``str`` is its N-Triples form).

    The write path of every sealed event (the ledger pointer moves in it), so the texts
    of the terms that repeat (classes, predicates, graphs, short literals) are kept in a
    process-wide table like ``_NODES``; a blank node is never looked up nor kept (no IRI
    has its text's meaning; a literal's key is a tuple). Predicates and graphs are IRIs.
    """
    texts = _TEXTS
    if len(texts) > _NODES_MAX:
        texts.clear()
    get = texts.get

    def text(t: Term) -> str:
        out = str(_to_ox(t))
        if type(t) is not BNode and (not isinstance(t, Literal) or len(t.value) <= 64):
            texts[t] = out
        return out

    groups: dict[str, list[str]] = {}
    for s, p, o, g in quads:
        ts = (None if type(s) is BNode else get(s)) or text(s)
        to = (None if type(o) is BNode else get(o)) or text(o)
        tg = get(g) or text(g)
        line = f"{ts} {get(p) or text(p)} {to} ."
        lines = groups.get(tg)
        if lines is None:
            groups[tg] = [line]
        else:
            lines.append(line)
    return " ".join(f"GRAPH {g} {{ {' '.join(lines)} }}" for g, lines in groups.items())
