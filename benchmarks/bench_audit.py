"""Audit surface: pack queries and export on a store of 10,000 sessions.

For every query of the regulator pack, the time of the trails path (load the
query from the pack, bind parameters as typed terms, evaluate and serialise as
SPARQL JSON: what ``trails query -f json`` does after start-up) against the same
query and serialisation run directly on pyoxigraph (target: ratio <= 1.1), and
against rdflib on a 100-session subset (context: how far a pure-Python engine
is). Then export throughput in quads/s: ``trails export --all -f nquads``
(graph by graph, with graph names) against pyoxigraph's own ``dump`` of the
dataset (target: >= 0.8 of it).

Run: ``python benchmarks/bench_audit.py [--sessions 10000]``.
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyoxigraph as ox
import rdflib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import interleaved, write_section

from trails.audit.export import export, select_graphs
from trails.audit.querypack import get_query, load_pack
from trails.prov import (
    CapabilityInvoked,
    LLMCompleted,
    PlanRunEnded,
    PlanRunStarted,
    PolicyDecided,
    Recorder,
    SessionEnded,
    SessionStarted,
    Terminated,
)
from trails.store import IRI, open_store
from trails.store.oxigraph import OxigraphStore, _to_ox

START = datetime(2025, 1, 1, tzinfo=UTC)


def generate(recorder: Recorder, sessions: int, seed: int = 7) -> tuple[list[IRI], dict[str, str]]:
    """Record ``sessions`` ReAct-like sessions; returns their IRIs and sample IRIs for parameters."""
    rng = random.Random(seed)
    batch: list = []
    iris: list[IRI] = []
    sample: dict[str, str] = {}
    m = recorder.minter
    for i in range(sessions):
        s = m.session(f"bench-{i:05d}")
        iris.append(s)
        principal = f"did:example:user{i % 50}"
        t = START + timedelta(minutes=7 * i)
        run = m.activity()
        events: list = [
            SessionStarted(session=s, principal=principal, started=t, label=f"bench {i}"),
            PlanRunStarted(
                session=s,
                activity=run,
                parent=s,
                principal=principal,
                strategy="react",
                goal=f"goal {i}",
                started=t,
            ),
        ]
        for step in range(3):
            c = m.activity()
            model = "claude-sonnet" if step < 2 else "claude-haiku"
            events.append(
                LLMCompleted(
                    session=s,
                    activity=c,
                    parent=run,
                    principal=principal,
                    provider="anthropic",
                    model=model,
                    started=t + timedelta(seconds=10 * step),
                    ended=t + timedelta(seconds=10 * step + 2),
                    messages=[{"role": "user", "content": f"step {step} of {i}"}],
                    request_hash=f"{i}-{step}",
                    text=f"answer {step}",
                    input_tokens=100 + step,
                    output_tokens=20,
                    usd=0.001 * (step + 1),
                    step=step,
                )
            )
            if step < 2:
                a = m.activity()
                failed = rng.random() < 0.1
                events.append(
                    CapabilityInvoked(
                        session=s,
                        activity=a,
                        parent=run,
                        principal=principal,
                        capability_id="send" if step else "search",
                        side_effects=bool(step),
                        started=t + timedelta(seconds=10 * step + 3),
                        ended=t + timedelta(seconds=10 * step + 4),
                        status="error" if failed else "ok",
                        inputs={"q": i},
                        output=None if failed else [i],
                        error="boom" if failed else None,
                        step=step,
                    )
                )
                sample.setdefault("invocation", a)
                sample.setdefault("entity", f"{a}:output")
        if rng.random() < 0.2:
            events.append(
                PolicyDecided(
                    session=s,
                    activity=m.activity(),
                    parent=run,
                    principal=principal,
                    policy="guard",
                    capability_id="pay",
                    decision="deny",
                    reason="no",
                    at=t + timedelta(seconds=25),
                )
            )
        if rng.random() < 0.1:
            events.append(
                Terminated(
                    session=s,
                    activity=run,
                    kind="step_limit",
                    reason="max_steps",
                    limit=3,
                    observed=3,
                    at=t + timedelta(seconds=30),
                )
            )
        events.append(
            PlanRunEnded(
                session=s,
                activity=run,
                ended=t + timedelta(seconds=31),
                stop_reason="goal_achieved",
                answer="done",
            )
        )
        events.append(SessionEnded(session=s, ended=t + timedelta(seconds=32)))
        for e in events:
            batch.extend(recorder.quads(e))
        if len(batch) > 50_000:
            recorder.store.write(batch)
            batch = []
    recorder.store.write(batch)
    sample["session"] = iris[len(iris) // 2]
    sample["principal"] = "did:example:user7"
    return iris, sample


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
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    number = max(1, min(200, int(budget / max(once, 1e-6))))
    return (5 if once > 0.5 else 7), number


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=10_000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    store = open_store(tmp / "store")
    assert isinstance(store, OxigraphStore)
    recorder = Recorder(store)
    t0 = time.perf_counter()
    iris, sample = generate(recorder, args.sessions)
    raw = store.raw
    quads = len(raw)
    print(
        f"generated {args.sessions} sessions, {quads} quads in {time.perf_counter() - t0:.1f}s",
        file=sys.stderr,
    )

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
        t_trails, t_raw = interleaved(trails_path, raw_path, rounds=r, number=n)

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
        rows.append((name, t_raw, t_trails, t_trails / t_raw, vs_rdflib))
        print(
            f"{name:28} raw {t_raw * 1e3:9.2f} ms  trails/raw {t_trails / t_raw:6.3f}  "
            f"trails/rdflib {vs_rdflib}",
            file=sys.stderr,
        )

    graphs = select_graphs(store, all_graphs=True)

    def trails_export() -> None:
        export(store, io.BytesIO(), graphs, format="nquads")

    def raw_dump() -> None:
        raw.dump(io.BytesIO(), format=ox.RdfFormat.N_QUADS)

    t_export, t_dump = interleaved(trails_export, raw_dump, rounds=5, number=1)
    store.close()

    worst = max(r[3] for r in rows)
    overhead = statistics.median((t - r) * 1e6 for _, r, t, _, _ in rows)
    big = [ratio for _, r, _, ratio, _ in rows if r >= 1e-3] or [0.0]
    small = [ratio for _, r, _, ratio, _ in rows if r < 1e-3] or [0.0]
    lines = [
        "## Audit: query pack and export",
        "",
        f"Store: {args.sessions:,} generated sessions, {quads:,} quads, on disk. Each pack query "
        "is timed through the trails path (pack lookup, typed binding, evaluation, SPARQL JSON or "
        "Turtle serialisation) and as the same query run directly on pyoxigraph, interleaved, "
        "medians. Target: trails / raw <= 1.1. The last column compares trails with rdflib on a "
        "100-session subset (lower is faster for trails).",
        "",
        "| query | raw pyoxigraph (ms) | trails / raw | trails / rdflib (100 sessions) |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {n} | {raw_t * 1e3:.2f} | {ratio:.3f} | {vr} |" for n, raw_t, _, ratio, vr in rows
    ]
    lines += [
        "",
        f"Worst trails / raw ratio: **{worst:.3f}** (target <= 1.1).",
        "",
        f"Queries that take 1 ms or more on pyoxigraph: worst ratio **{max(big):.3f}**. Below 1 ms "
        f"the ratio is dominated by a fixed cost of about {overhead:.0f} µs per query (median of "
        "trails minus raw over all queries: pack lookup, typed binding, term conversion), so "
        f"those per-session queries miss the 1.1 target (worst {max(small):.3f}).",
        "",
        "| export | quads/s | ratio |",
        "| --- | ---: | ---: |",
        f"| pyoxigraph `dump` (N-Quads, whole dataset) | {quads / t_dump:,.0f} | 1.000 |",
        f"| `trails export --all -f nquads` (graph by graph) | {quads / t_export:,.0f} | "
        f"{t_dump / t_export:.3f} |",
        "",
        f"Export throughput ratio: **{t_dump / t_export:.3f}** (target >= 0.8).",
    ]
    write_section("audit", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
