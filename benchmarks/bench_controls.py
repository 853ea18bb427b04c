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
from trails.controls.evaluate import session_graphs
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
    recording = evaluating = writing = floor_q = floor_w = 0.0
    quads = 0
    per_run: list[float] = []
    for _ in range(runs):
        before = set(_sessions(store))
        start = time.process_time()
        react_run(recorder)
        mid = time.process_time()
        [session] = set(_sessions(store)) - before
        evaluation = evaluate_session(store, session, session_controls)
        queried = time.process_time()
        graph = record_evaluation(recorder, evaluation, by="did:local:bench")
        end = time.process_time()
        recording += mid - start
        evaluating += end - mid
        writing += end - queried
        per_run.append((end - mid) / (mid - start))
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


def render(named: str, end: dict[str, float], runs: int, fleet: dict[str, Any], argv: str) -> str:
    verdict = "met" if end["ratio"] <= TARGET else "NOT met"
    floor = (end["floor_queries"] + end["floor_write"]) / end["recording"]
    low, high = fleet["spread"]
    return f"""## Controls (`benchmarks/bench_controls.py`)

`python benchmarks/bench_controls.py{argv}`: {named}. CPU seconds of the process
(`time.process_time`, the control's worker thread included).

**At session end** ({int(end["controls"])} session-scoped controls, {runs} runs): a 10-step
ReAct run recorded and sealed, then its controls evaluated over its graphs and the
evaluation recorded as a sealed findings graph (what `[controls] on_session_end = true`
adds to each session's end).

| per session | CPU ms |
|---|---:|
| recording the ReAct run (sealed) | {end["recording"] * 1e3:.2f} |
| evaluating its controls and recording the evaluation | {end["evaluating"] * 1e3:.2f} |
| of which: the controls' queries | {(end["evaluating"] - end["writing"]) * 1e3:.2f} |
| of which: the sealed write of the evaluation | {end["writing"] * 1e3:.2f} |
| **evaluation / recording** | **{end["ratio"]:.1%}** (median run {end["median"]:.1%}; target <= {TARGET:.0%}: {verdict}) |
| floor: the same queries straight on pyoxigraph | {end["floor_queries"] * 1e3:.2f} |
| floor: the findings graph's {end["quads"]:.0f} quads added by pyoxigraph alone | {end["floor_write"] * 1e3:.2f} |
| **floor / recording** | **{floor:.1%}** |
| **evaluation / floor** | **{end["evaluating"] / (end["floor_queries"] + end["floor_write"]):.2f}x** |

The cost is per session (the queries read the session's graphs only, the write is one
graph), so it does not grow with the store. The controls of one evaluation run one after
another on one worker thread (one hand-off for the batch; a control past its limit is
reported timed out and the rest run on a fresh worker). The write is one activity per
control that did not pass and one for those that passed, each naming the definitions it
used by IRI (each definition version is recorded once, in a sealed graph of its own, by
the first evaluation that uses it: the warm-up run here), sealed: the store's atomic
write of the findings graph with the ledger pointer moved, the same mechanism as a
session's end. The floor rows are what
pyoxigraph alone spends on the same queries and on adding the same quads (no binding, no
seal, no transaction with the pointer): what is left above them is trails' own work.

**`controls check` over many sessions** ({fleet["sessions"]:,} sessions: {fleet["made"]};
{fleet["controls"]} SPARQL controls): the engine (`check`: bound parameters, one dataset
per session, one bounded worker per evaluation) against the same queries straight on
pyoxigraph (`?session` pre-bound, the same default graphs), rounds alternating.

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
    fleet = many(controls, args.sessions, args.rounds)
    shown = "" if args.sessions == 100 else f" --sessions {args.sessions}"
    md = render(named, end, args.runs, fleet, shown)
    if not args.no_doc:  # the default size and any other each keep a section of their own
        write_section("controls" if args.sessions == 100 else f"controls-{args.sessions}", md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
