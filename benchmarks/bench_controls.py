"""What controls cost: at a session's end against recording it, and over many sessions
against running the same SPARQL directly on the store.

- **at session end**: a 10-step ReAct run (``bench_invoke.react_run``: a scripted model,
  nine capability calls, then ``finish``) recorded by the default recorder (sealed),
  against evaluating the session-scoped controls over that session's graphs and recording
  the evaluation as sealed evidence (what ``[controls] on_session_end = true`` adds to the
  end of every session). CPU seconds of the process (``time.process_time``: the worker
  thread a control runs on counts too), summed over the runs, the two measured one after
  the other for each run. Target: evaluation / recording <= 20 %.
- **``controls check`` over many sessions**: the engine's evaluation of the session
  controls of every session and the store controls once (``trails.cli.controls.check``,
  bound parameters, one dataset per session, one bounded worker per evaluation) against the
  same queries run directly on pyoxigraph (``?session`` pre-bound by ``substitutions``,
  the same default graphs), rounds alternating; and ``check`` with its evaluations
  recorded as evidence (one sealed findings graph per session).

The controls are the built-in set (``controls/``) when it has any, else the test suite's
example set; ``--dir`` names another. The store holds ``--sessions`` ReAct sessions
(default 100, recorded here); from 1,000 up it is the scale benchmark's cached store
(``_scale_store`` / ``_multiply_store``), opened as a read-only snapshot for the
evaluation-only rows.

Run: ``python benchmarks/bench_controls.py [--runs 20] [--sessions 100] [--dir DIR] [--no-doc]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyoxigraph as ox

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section
from bench_invoke import react_run

from trails.cli.controls import check
from trails.controls import (
    Control,
    builtin_controls,
    evaluate_session,
    load_controls,
    record_evaluation,
)
from trails.controls.evaluate import _unmatchable, session_graphs
from trails.prov.recorder import Recorder
from trails.store import open_store
from trails.store.oxigraph import OxigraphStore

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "controls" / "example"
TARGET = 0.20


def chosen_controls(directory: str | None) -> tuple[list[Control], str]:
    """The controls measured and how the section names them."""
    if directory:
        return load_controls(directory), f"the controls of `{directory}`"
    found = builtin_controls()
    if found:
        return found, f"the built-in set (`controls/`, {len(found)} controls)"
    return load_controls(EXAMPLE), f"the test suite's example set ({len(load_controls(EXAMPLE))})"


def _sessions(store: Any) -> list[str]:
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?g WHERE { GRAPH ?g { ?g a trails:Session } } ORDER BY ?g"
    )
    return [str(r["g"]) for r in rows]


def session_end(controls: list[Control], runs: int) -> dict[str, float]:
    """CPU seconds of recording a ReAct run and of evaluating and recording its controls."""
    store = open_store("memory:")
    recorder = Recorder.from_settings(store=store)
    session_controls = [c for c in controls if c.scope == "session"]
    react_run(recorder)  # warm: imports, caches, the probe store
    [warm] = _sessions(store)
    record_evaluation(
        recorder, evaluate_session(store, warm, session_controls), by="did:local:bench"
    )
    recording = evaluating = writing = floor_q = floor_w = every = 0.0
    quads = run_queries = 0
    per_run: list[float] = []
    per_run_every: list[float] = []
    for _ in range(runs):
        before = set(_sessions(store))
        start = time.process_time()
        react_run(recorder)
        mid = time.process_time()
        [session] = set(_sessions(store)) - before
        t1 = time.process_time()
        evaluation = evaluate_session(store, session, session_controls)
        queried = time.process_time()
        graph = record_evaluation(recorder, evaluation, by="did:local:bench")
        end = time.process_time()
        # before: the same session's queries all run (prefilter=False); second, so the
        # measured evaluation met the session's data first, as a session's end meets it
        t0 = time.process_time()
        evaluate_session(store, session, session_controls, prefilter=False)
        all_run = time.process_time() - t0
        every += all_run
        graphs = session_graphs(session)
        run_queries += _unmatchable(store, session_controls, graphs).count(False)
        recording += mid - start
        evaluating += end - t1
        writing += end - queried
        per_run.append((end - t1) / (mid - start))
        per_run_every.append((all_run + end - queried) / (mid - start))
        # the floor: the same queries and the same quads, pyoxigraph alone (after, so the
        # measured evaluation met the session's data as a session's end meets it)
        t0 = time.process_time()
        direct(store, session_controls, [session])
        floor_q += time.process_time() - t0
        written = list(store.raw.quads_for_pattern(None, None, None, ox.NamedNode(str(graph))))
        quads += len(written)
        scratch = ox.Store()
        t0 = time.process_time()
        scratch.extend(written)
        floor_w += time.process_time() - t0
    return {
        "every": every / runs,
        "every_ratio": (every + writing) / recording,
        "every_median": statistics.median(per_run_every),
        "run_queries": run_queries / runs,
        "floor_queries": floor_q / runs,
        "floor_write": floor_w / runs,
        "quads": quads / runs,
        "recording": recording / runs,
        "evaluating": evaluating / runs,
        "writing": writing / runs,
        "ratio": evaluating / recording,
        "median": statistics.median(per_run),
        "controls": float(len(session_controls)),
    }


def otlp_session_end(controls: list[Control], runs: int) -> dict[str, float]:
    """The same for sessions assembled from OTLP spans: one trace (an agent span, 9 chat
    spans each asking for a tool, the 9 tool spans) ingested, its root ending the session
    (sealed), against evaluating its controls and recording the evaluation; "before" runs
    every query of the same session."""
    sys.path.insert(0, str(ROOT))  # the test suite's OTLP trace maker
    from tests.otel.test_ingest_writes import spans

    from trails.otel.ingest import Ingestor

    store = open_store("memory:")
    recorder = Recorder.from_settings(store=store)
    ingestor = Ingestor(recorder)
    session_controls = [c for c in controls if c.scope == "session"]
    traces = [spans(trace, tools=9) for trace in range(1, runs + 2)]
    [warm] = ingestor.ingest(traces[0]).ended
    record_evaluation(
        recorder, evaluate_session(store, warm, session_controls), by="did:local:bench"
    )
    recording = evaluating = writing = every = 0.0
    for trace in traces[1:]:
        start = time.process_time()
        [session] = ingestor.ingest(trace).ended
        mid = time.process_time()
        evaluation = evaluate_session(store, session, session_controls)
        queried = time.process_time()
        record_evaluation(recorder, evaluation, by="did:local:bench")
        end = time.process_time()
        evaluate_session(store, session, session_controls, prefilter=False)
        every += time.process_time() - end
        recording += mid - start
        evaluating += end - mid
        writing += end - queried
    return {
        "recording": recording / runs,
        "evaluating": evaluating / runs,
        "ratio": evaluating / recording,
        "every_ratio": (every + writing) / recording,
    }


def _store_of(sessions: int, tmp: Path) -> tuple[OxigraphStore, str]:
    if sessions >= 1000:
        import _multiply_store
        import _scale_store

        if sessions == 1000:
            folder, _ = _scale_store.cached_store(1000, reuse_any_digest=True)
        else:
            folder, _ = _multiply_store.cached_multiplied(sessions)
        shutil.copytree(folder, tmp / "store")
        store = open_store(tmp / "store")
        assert isinstance(store, OxigraphStore)
        return store, "the scale benchmark's store"
    store = open_store(tmp / "store")
    assert isinstance(store, OxigraphStore)
    recorder = Recorder.from_settings(store=store)
    for _ in range(sessions):
        react_run(recorder)
    return store, "ReAct sessions recorded here"


def direct(store: OxigraphStore, controls: list[Control], sessions: list[str]) -> int:
    """The same queries straight on pyoxigraph; the rows they return."""
    raw = store.raw
    rows = 0
    for c in controls:
        if c.kind != "sparql":
            continue
        if c.scope == "store":
            subs = {ox.Variable(k): _ox(v) for k, v in c.bindings(None).items()}
            rows += len(
                list(raw.query(c.check, substitutions=subs, use_default_graph_as_union=True))
            )
            continue
        for s in sessions:
            graphs = [ox.NamedNode(str(g)) for g in session_graphs(s)]
            subs = {ox.Variable(k): _ox(v) for k, v in c.bindings(ox.NamedNode(s).value).items()}  # type: ignore[arg-type]
            rows += len(
                list(
                    raw.query(
                        c.check, substitutions=subs, default_graph=graphs, named_graphs=graphs
                    )
                )
            )
    return rows


def _ox(term: Any) -> Any:
    from trails.store.terms import Literal

    if isinstance(term, Literal):
        return ox.Literal(term.value, datatype=ox.NamedNode(term.datatype))
    return ox.NamedNode(str(term))


def many(controls: list[Control], sessions: int, rounds: int) -> dict[str, Any]:
    """``check`` over every session (evaluation only, and recorded) against direct SPARQL."""
    sparql = [c for c in controls if c.kind == "sparql"]  # SHACL has no direct equivalent
    with tempfile.TemporaryDirectory() as tmp:
        store, made = _store_of(sessions, Path(tmp))
        listed = _sessions(store)
        engine: list[float] = []
        raw: list[float] = []
        for i in range(rounds):
            for side in ("engine", "raw") if i % 2 == 0 else ("raw", "engine"):
                start = time.process_time()
                if side == "engine":
                    check(store, sparql)
                    engine.append(time.process_time() - start)
                else:
                    direct(store, sparql, listed)
                    raw.append(time.process_time() - start)
        recorder = Recorder.from_settings(store=store)
        start = time.process_time()
        for evaluation in check(store, sparql):
            record_evaluation(recorder, evaluation, by="did:local:bench")
        recorded = time.process_time() - start
        store.close()
    ratios = sorted(e / r for e, r in zip(engine, raw, strict=True))
    return {
        "sessions": len(listed),
        "made": made,
        "controls": len(sparql),
        "engine": statistics.median(engine),
        "raw": statistics.median(raw),
        "ratio": statistics.median(ratios),
        "spread": (ratios[0], ratios[-1]),
        "recorded": recorded,
    }


def render(
    named: str,
    end: dict[str, float],
    runs: int,
    fleet: dict[str, Any],
    argv: str,
    title: str,
    otlp: dict[str, float],
) -> str:
    otlp_verdict = "met" if otlp["ratio"] <= TARGET else "NOT met"
    verdict = "met" if end["ratio"] <= TARGET else "NOT met"
    floor = (end["floor_queries"] + end["floor_write"]) / end["recording"]
    low, high = fleet["spread"]
    ran, controls = end["run_queries"], int(end["controls"])
    return f"""{title}

`python benchmarks/bench_controls.py{argv}`: {named}. CPU seconds of the process
(`time.process_time`, the control's worker thread included).

**At session end** ({controls} session-scoped controls, {runs} runs): a 10-step
ReAct run recorded and sealed, then its controls evaluated over its graphs and the
evaluation recorded as a sealed findings graph (what `[controls] on_session_end = true`
adds to each session's end).

| per session | CPU ms |
|---|---:|
| recording the ReAct run (sealed) | {end["recording"] * 1e3:.2f} |
| evaluating its controls and recording the evaluation | {end["evaluating"] * 1e3:.2f} |
| of which: the look-ups and the {ran:.0f} queries of {controls} that can have a row | {(end["evaluating"] - end["writing"]) * 1e3:.2f} |
| of which: the sealed write of the evaluation | {end["writing"] * 1e3:.2f} |
| **evaluation / recording** | **{end["ratio"]:.1%}** (median run {end["median"]:.1%}; target <= {TARGET:.0%}: {verdict}) |
| before, same sessions: all {controls} queries run (`prefilter=False`) | {end["every"] * 1e3:.2f} |
| **before / recording** (the same write) | **{end["every_ratio"]:.1%}** (median run {end["every_median"]:.1%}) |
| floor: all {controls} queries straight on pyoxigraph | {end["floor_queries"] * 1e3:.2f} |
| floor: the findings graph's {end["quads"]:.0f} quads added by pyoxigraph alone | {end["floor_write"] * 1e3:.2f} |
| **floor / recording** | **{floor:.1%}** |
| **evaluation / floor** | **{end["evaluating"] / (end["floor_queries"] + end["floor_write"]):.2f}x** |

The same for a session assembled from OTLP spans (one trace: an agent span, 9 chat
spans each asking for a tool, the 9 tool spans; ingested in process, its root span ending
and sealing the session): assembling it {otlp["recording"] * 1e3:.2f} ms, evaluating its
controls and recording the evaluation {otlp["evaluating"] * 1e3:.2f} ms, **{otlp["ratio"]:.1%}**
(target <= {TARGET:.0%}: {otlp_verdict}; before, with every query run:
{otlp["every_ratio"]:.1%}).

The cost is per session (the queries read the session's graphs only, the write is one
graph), so it does not grow with the store. A control whose query needs a triple that
none of the session's graphs holds (its mandatory patterns, read once from the query:
`trails.controls.needs`) has no row, so it passed without its query being run: a look-up
in the store's indexes per pattern, microseconds, instead of a parse, a plan and a run.
Here the session has no side-effecting, high-risk, granted or screened capability and no
failure: {controls - ran:.0f} of the {controls} queries are spared. A session that has
them runs their queries (at worst the "before" row). The controls that run go one after
another on one worker thread (one hand-off for the batch; a control past its limit is
reported timed out and the rest run on a fresh worker). The write is one activity per
control that did not pass and one for those that passed, each naming the definitions it
used by IRI (each definition version is recorded once, in a sealed graph of its own, by
the first evaluation that uses it: the warm-up run here), sealed: the store's atomic
write of the findings graph with the ledger pointer moved, the same mechanism as a
session's end. The floor rows are what pyoxigraph alone spends on every query and on
adding the same quads (no binding, no seal, no transaction with the pointer).

**`controls check` over many sessions** ({fleet["sessions"]:,} sessions: {fleet["made"]};
{fleet["controls"]} SPARQL controls): the engine (`check`: bound parameters, one dataset
per session, one bounded worker per evaluation, a query no triple of the session can
match not run) against every query straight on pyoxigraph (`?session` pre-bound, the
same default graphs), rounds alternating.

| side | CPU s |
|---|---:|
| direct SPARQL on pyoxigraph | {fleet["raw"]:.3f} |
| `controls check` (evaluation only) | {fleet["engine"]:.3f} |
| **check / direct** | **{fleet["ratio"]:.2f}** (rounds {low:.2f}-{high:.2f}) |
| `controls check` with every evaluation recorded and sealed | {fleet["recorded"]:.3f} |

At 10,000 sessions (the scale benchmark's store):
`python benchmarks/bench_controls.py --sessions 10000` (builds the multiplied store on first use).
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="ReAct runs at session end")
    parser.add_argument("--sessions", type=int, default=100, help="sessions for check (10000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of check and direct")
    parser.add_argument("--dir", help="a directory of controls (default: the built-in set)")
    parser.add_argument("--no-doc", action="store_true", help="print, do not rewrite the doc")
    args = parser.parse_args()
    controls, named = chosen_controls(args.dir)
    end = session_end(controls, args.runs)
    otlp = otlp_session_end(controls, args.runs)
    fleet = many(controls, args.sessions, args.rounds)
    shown = "" if args.sessions == 100 else f" --sessions {args.sessions}"
    title = (
        "## Controls (`benchmarks/bench_controls.py`)"
        if args.sessions == 100
        else f"### Controls at {args.sessions:,} sessions"
    )
    md = render(named, end, args.runs, fleet, shown, title, otlp)
    if not args.no_doc:  # the default size and any other each keep a section of their own
        write_section("controls" if args.sessions == 100 else f"controls-{args.sessions}", md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
