"""Crash harness: writers killed with SIGKILL at random moments leave evidence that verifies.

A writer (``tests/crash_writer.py``) records planner sessions with a scripted model
and capabilities with and without side effects, and is killed with SIGKILL after a
random delay (once it has begun recording), 20 times. After each kill the store is opened the way the next program
would (a recorder configured over it recovers it) and must show:

- no torn activity: every finished invocation has its status, end and input, no
  invocation is left started, every completion, run and session is whole, and each
  session recovery ended conforms to the shapes;
- every side-effecting call whose effect happened is on record (started, at least);
- nothing left open, and ``trails verify`` exits 0.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from trails.cli import main
from trails.evidence.recovery import interrupted_sessions
from trails.evidence.verify import verify
from trails.prov import Recorder
from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, Store, to_python
from trails.store.oxigraph import OxigraphStore
from trails.testing import shacl_report

TRIALS = 20
WRITER = Path(__file__).with_name("crash_writer.py")
PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

TORN = (
    PREFIXES
    + """
SELECT ?a ?why WHERE {
  GRAPH ?g {
    {
      ?a a trails:CapabilityInvocation .
      FILTER NOT EXISTS { ?a prov:used ?input . ?input a trails:CapabilityInput }
      BIND("no input" AS ?why)
    } UNION {
      ?a a trails:CapabilityInvocation ; prov:endedAtTime ?end .
      FILTER NOT EXISTS { ?a trails:status ?status }
      BIND("ended without a status" AS ?why)
    } UNION {
      ?a a trails:CapabilityInvocation .
      FILTER NOT EXISTS { ?a trails:status ?s }
      BIND("still started after recovery" AS ?why)
    } UNION {
      ?a a trails:LLMCompletion .
      FILTER NOT EXISTS { ?a trails:status ?s ; prov:endedAtTime ?e ; prov:used ?p }
      BIND("completion without status, end or prompt" AS ?why)
    } UNION {
      ?a a trails:PlanRun .
      FILTER NOT EXISTS { ?a trails:stopReason ?r }
      BIND("run without a stop reason" AS ?why)
    } UNION {
      ?a a trails:Session .
      FILTER NOT EXISTS { ?a prov:endedAtTime ?e ; trails:status ?s }
      BIND("session not ended" AS ?why)
    }
  }
}
"""
)

CALL = (
    PREFIXES
    + """
SELECT ?status ?effects $call WHERE {
  GRAPH ?g {
    $call a trails:CapabilityInvocation ; trails:capability/trails:sideEffects ?effects .
    OPTIONAL { $call trails:status ?status }
  }
}
"""
)


class Zygote:
    """The writer process factory: forks a ready writer per trial."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "TRAILS_STORE": "memory:"},
        )

    def ask(self, line: str) -> int:
        stdin: IO[str] | None = self.proc.stdin
        stdout: IO[str] | None = self.proc.stdout
        assert stdin is not None and stdout is not None
        stdin.write(line + "\n")
        stdin.flush()
        return int(stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture
def zygote() -> Iterator[Zygote]:
    z = Zygote()
    yield z
    z.close()


def select(store: Store, sparql: str, **params: object) -> list[dict[str, object]]:
    result = store.query(sparql, params)  # type: ignore[arg-type]
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in r.items()} for r in result]


@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_verifiable_evidence(
    tmp_path: Path, zygote: Zygote
) -> None:
    rng = random.Random(int(os.environ.get("TRAILS_CRASH_SEED", "12")))
    totals = {"sessions": 0, "interrupted": 0, "effects": 0, "cut_calls": 0}
    for trial in range(TRIALS):
        store_dir, effects = tmp_path / f"store{trial}", tmp_path / f"effects{trial}"
        effects.touch()
        pid = zygote.ask(f"go {store_dir} {effects} {trial}")
        while not effects.stat().st_size:  # recording has begun: a first call paid
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.3))
        os.kill(pid, signal.SIGKILL)
        assert zygote.ask(f"wait {pid}") == -signal.SIGKILL

        store = OxigraphStore(store_dir)  # the next program to record here ...
        try:
            Recorder.from_settings(store=store)  # ... recovers the store first
            torn = select(store, TORN)
            assert torn == [], f"trial {trial}: torn activities {torn}"
            for graph in interrupted_sessions(store):  # what recovery wrote conforms
                conforms, text = shacl_report(store, graph)
                assert conforms, f"trial {trial}: {text}"
            done = [line for line in effects.read_text().split("\n")[:-1] if line]
            for call in done:
                [row] = select(store, CALL, call=IRI(call)) or [{}]
                assert row.get("effects") is True, f"trial {trial}: effect of {call} not on record"
                assert row.get("status") in ("ok", "interrupted"), (trial, call, row)
                totals["cut_calls"] += row.get("status") == "interrupted"
            report = verify(store)
            assert report.ok and report.open_sessions == [], (trial, report.findings)
            totals["sessions"] += report.graphs_checked
            totals["interrupted"] += len(interrupted_sessions(store))
            totals["effects"] += len(done)
        finally:
            store.close()
        assert main(["--store", str(store_dir), "verify"]) == 0, f"trial {trial}"
    print(totals)  # e.g. {"sessions": 244, "interrupted": 21, "effects": 275, "cut_calls": 4}
    # the kills landed while sessions were being recorded, and effects were happening
    assert totals["interrupted"] >= TRIALS // 2 and totals["effects"] > TRIALS
