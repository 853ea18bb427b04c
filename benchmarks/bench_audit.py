"""Audit surface: pack queries and export on a store of real, sealed sessions (10,000).

The store is the scale benchmark's (``_scale_store``: sessions recorded through
the recorder by the planner, each sealed, cached between runs), copied into a
temporary directory that is removed at the end. For every query of the
regulator pack, the time of the trails path (load the query from the pack,
bind parameters as typed terms, evaluate and serialise as SPARQL JSON: what ``trails query -f json`` does after start-up) against the same
query and serialisation run directly on pyoxigraph (target: ratio <= 1.1), and
against rdflib on a 100-session subset (context: how far a pure-Python engine
is). Then export throughput in quads/s, end to end as ``trails export --all
-f nquads`` does it after start-up (graph selection, the assurance-level
checks, then graph by graph with graph names, redaction rules applied) against
pyoxigraph's own ``dump`` of the dataset (target: >= 0.8 of it).

Run: ``python benchmarks/bench_audit.py [--sessions 10000] [--reuse-any-digest]``.
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyoxigraph as ox
import rdflib

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _scale_store
from _report import interleaved, paired, write_section

from trails.audit.export import Redaction, check_assurance, export, select_graphs
from trails.audit.querypack import get_query, load_pack
from trails.config import load_settings
from trails.prov.iri import Minter
from trails.store import IRI, open_store
from trails.store.oxigraph import OxigraphStore, _to_ox


def params_for(name: str, sample: dict[str, str]) -> dict[str, str]:
    q = get_query(name)
    values: dict[str, str] = {}
    for p in q.params.values():
        if not p.optional and p.name in sample:
            values[p.name] = sample[p.name]
    if name in (
        "session-timeline",
        "decision-evidence",
        "terminations",
        "llm-completions",
        "session-overview",
        "policy-decisions",
        "failed-invocations",
        "side-effects",
    ):
        values["session"] = sample["session"]
    if name == "seals":
        values["graph"] = sample["session"]
    return values


def rounds_for(fn, budget: float = 0.25) -> tuple[int, int]:
    """Rounds and calls per round for ``fn``, from its time once warm (a first call reads
    the store's blocks from disk: it would put most sub-millisecond queries over 1 ms)."""
    fn()
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    number = max(1, min(200, int(budget / max(once, 1e-6))))
    # a sub-millisecond query is where noise decides the ratio: more rounds
    return (3 if once > 2 else 5 if once > 0.5 else 7 if once > 1e-3 else 15), number


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument(
        "--reuse-any-digest",
        action="store_true",
        help="measure a cached store built by earlier sources when this one's is missing",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        run(args.sessions, Path(tmp), reuse_any_digest=args.reuse_any_digest)


def sample_of(store: OxigraphStore, session: str) -> dict[str, str]:
    """Parameter values for the pack: a session, one of its invocations and outputs."""
    found = store.query(
        "PREFIX prov: <http://www.w3.org/ns/prov#>\n"
        "PREFIX trails: <https://w3id.org/trails/ns#>\n"
        "SELECT ?a ?e $g WHERE { GRAPH $g { ?a a trails:CapabilityInvocation . "
        "?e prov:wasGeneratedBy ?a } } LIMIT 1",
        {"g": IRI(session)},
    )
    row = next(iter(found))  # type: ignore[arg-type]
    return {
        "session": session,
        "invocation": str(row["a"]),
        "entity": str(row["e"]),
        "principal": "did:example:user7",
    }


def run(sessions: int, tmp: Path, *, reuse_any_digest: bool = False) -> None:
    cached, manifest = _scale_store.cached_store(sessions, reuse_any_digest=reuse_any_digest)
    shutil.copytree(cached, tmp / "store")
    store = open_store(tmp / "store")
    assert isinstance(store, OxigraphStore)
    raw = store.raw
    quads = len(raw)
    iris = sorted(IRI(str(g)) for g in select_graphs(store, since="1970-01-01T00:00:00Z"))
    sample = sample_of(store, str(manifest["middle"]))
    print(f"store of {sessions} sessions, {quads} quads", file=sys.stderr)

    # the 100-session subset, for rdflib
    subset = open_store("memory:")
    for g in iris[:100]:
        data = store.dump(format="ntriples", graph=g) or b""
        subset.load(data, format="ntriples", graph=g)
    ds = rdflib.Dataset()
    ds.parse(data=subset.dump(format="nquads"), format="nquads")
    sub_sample = dict(sample, session=iris[50])

    rows = []
    for name, q in load_pack().items():
        values = params_for(name, sample)
        fmt = "turtle" if q.form == "CONSTRUCT" else "json"
        ox_fmt = ox.RdfFormat.TURTLE if q.form == "CONSTRUCT" else ox.QueryResultsFormat.JSON

        def trails_path(name=name, values=values, fmt=fmt, target=store) -> bytes:
            query = get_query(name)
            return target.query_to(query.text, query.bind(values), format=fmt)

        bound = q.bind(values)
        subs = {ox.Variable(k): _to_ox(v) for k, v in bound.items()}
        text = q.text

        def raw_path(subs=subs, text=text, ox_fmt=ox_fmt, target=raw) -> bytes:
            return target.query(text, substitutions=subs).serialize(format=ox_fmt)

        r, n = rounds_for(raw_path)
        t_trails, t_raw, ratio, ratios = paired(trails_path, raw_path, rounds=r, number=n)
        spread = ratios[0], ratios[-1]

        sub_values = params_for(name, sub_sample)
        sub_bound = q.bind(sub_values)
        init = {
            rdflib.Variable(k): (
                rdflib.URIRef(v)
                if isinstance(v, str) and not isinstance(v, tuple)
                else rdflib.Literal(v.value, datatype=v.datatype)
            )
            for k, v in sub_bound.items()
        }

        def rdflib_path(text=text, init=init, fmt=fmt) -> object:
            return ds.query(text, initBindings=init).serialize(
                format="json" if fmt == "json" else "turtle"
            )

        def trails_sub(name=name, values=sub_values, fmt=fmt) -> bytes:
            return trails_path(name, values, fmt, subset)

        try:
            r2, n2 = rounds_for(rdflib_path, budget=0.5)
            t_sub, t_rdflib = interleaved(trails_sub, rdflib_path, rounds=min(r2, 3), number=n2)
            vs_rdflib = f"{t_sub / t_rdflib:.3f}"
        except Exception as exc:  # rdflib cannot run some SPARQL 1.1 forms
            vs_rdflib = f"n/a ({type(exc).__name__})"
        rows.append((name, t_raw, t_trails, ratio, spread, vs_rdflib))
        print(
            f"{name:28} raw {t_raw * 1e3:9.2f} ms  trails/raw {ratio:6.3f} "
            f"({spread[0]:.3f}-{spread[1]:.3f}, {r} rounds)  trails/rdflib {vs_rdflib}",
            file=sys.stderr,
        )

    settings = load_settings()
    redaction = Redaction.from_settings(settings)
    minter = Minter(settings.base_iri)
    audit = settings.section("audit")
    domain = audit.get("domain")
    forbidden = audit.get("no_cross_domain", ["L1"])  # as `trails export` reads it

    def trails_export() -> None:  # what `trails export --all -f nquads` does after start-up
        graphs = select_graphs(store, all_graphs=True)
        check_assurance(store, graphs, domain=domain, forbidden=forbidden)
        export(store, io.BytesIO(), graphs, format="nquads", redaction=redaction, minter=minter)

    def raw_dump() -> None:
        raw.dump(io.BytesIO(), format=ox.RdfFormat.N_QUADS)

    t_export, t_dump = interleaved(trails_export, raw_dump, rounds=5, number=1)
    store.close()

    worst = max(r[3] for r in rows)
    overhead = statistics.median([(t - r) * 1e6 for _, r, t, *_ in rows if r < 1e-3] or [0.0])
    big = [ratio for _, r, _, ratio, *_ in rows if r >= 1e-3] or [0.0]
    small = [ratio for _, r, _, ratio, *_ in rows if r < 1e-3] or [0.0]
    lines = [
        "## Audit: query pack and export",
        "",
        f"Store: {sessions:,} sessions recorded through the recorder and sealed (the scale "
        f"benchmark's store), {quads:,} quads, on disk. Each pack query "
        "is timed through the trails path (pack lookup, typed binding, evaluation, SPARQL JSON or "
        "Turtle serialisation) and as the same query run directly on pyoxigraph, the two back "
        "to back in each round (which goes first alternates): the ratio is the median of the "
        "rounds' ratios, next to the lowest and highest round's; the time is the median of "
        "raw's rounds (15 rounds under 1 ms, 7 under 0.5 s, 5 under 2 s, 3 above). Parameters reach pyoxigraph as they do in a user's process: pre-bound "
        "(`substitutions`) where that means what the rewritten text means, which covers the "
        "per-session queries here, as rewritten text otherwise (docs/remote-store.md); the raw "
        "side always pre-binds. Target: trails / raw <= 1.1. The last column compares trails "
        "with rdflib on a 100-session subset (lower is faster for trails).",
        "",
        "| query | raw pyoxigraph (ms) | trails / raw | rounds' lowest-highest "
        "| trails / rdflib (100 sessions) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {n} | {raw_t * 1e3:.2f} | {ratio:.3f} | {low:.3f}-{high:.3f} | {vr} |"
        for n, raw_t, _, ratio, (low, high), vr in rows
    ]
    lines += [
        "",
        f"Worst trails / raw ratio: **{worst:.3f}** (target <= 1.1).",
        "",
        "A query without parameters runs the same text on both sides, so its ratio and its "
        "rounds' spread are the machine's noise at that query's length.",
        "",
        f"Queries that take 1 ms or more on pyoxigraph: worst ratio **{max(big):.3f}**. Below 1 ms "
        f"the ratio is dominated by a fixed cost of about {overhead:.0f} µs per query (median of "
        "trails minus raw over those queries: the pack lookup, typed binding, the call into "
        "the store and serialisation). The timed rounds repeat the same values, as a "
        "dashboard's refresh does: the shipped pack's file is checked for changes at most "
        "once a second (a `stat` between two queries cost about 10 µs here), and the binding "
        "and the checks of the text and terms are kept per query and values, so a query "
        "asked with new values pays them once (about 5 µs timed on their own; between "
        "queries that walk the store's caches the same Python runs several times slower). "
        "Worst "
        f"{max(small):.3f}: {'meets' if max(small) <= 1.1 else 'misses'} the 1.1 target.",
        "",
        "| export | quads/s | ratio |",
        "| --- | ---: | ---: |",
        f"| pyoxigraph `dump` (N-Quads, whole dataset) | {quads / t_dump:,.0f} | 1.000 |",
        "| `trails export --all -f nquads` (graph selection, assurance checks, graph by "
        f"graph) | {quads / t_export:,.0f} | "
        f"{t_dump / t_export:.3f} |",
        "",
        f"Export throughput ratio: **{t_dump / t_export:.3f}** (target >= 0.8).",
    ]
    write_section("audit", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
