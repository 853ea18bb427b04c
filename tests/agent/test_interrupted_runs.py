"""Interrupted is a state on every path: a program stopped inside a capability call.

Each test runs a real child program (``interrupted_child.py``) that records into an
embedded store and stops it with a real signal while a capability's handler runs:

- SIGINT (Ctrl-C): Python raises ``KeyboardInterrupt`` in the handler; the call ends
  ``interrupted`` naming it, the plan run and the session end ``interrupted``, the
  session is sealed, and the program still stops (killed by SIGINT, as without trails);
- SIGTERM with the program's own handler (``sys.exit``): the same, naming ``SystemExit``;
- SIGKILL, and SIGTERM left at its default action: the process dies at once; the next
  ``trails recover`` ends the session and the call as interrupted.

Then the user's commands, as subprocesses: the ``interrupted`` and ``side-effects``
pack queries list the call, ``trails verify`` finds nothing altered, ``trails verify
--strict`` fails naming the call, and the HTML report shows it.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, to_python
from trails.store.oxigraph import OxigraphStore
from trails.testing import shacl_report

CHILD = Path(__file__).with_name("interrupted_child.py")
TRAILS = shutil.which("trails") or str(Path(sys.executable).with_name("trails"))
PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

CALL = (
    PREFIXES
    + """
SELECT $call ?session ?sessionStatus ?status ?error ?ended ?terminatedBy ?runStop WHERE {
  GRAPH ?session {
    ?session a trails:Session ; trails:status ?sessionStatus .
    $call a trails:CapabilityInvocation ; trails:status ?status ;
          trails:wasTerminatedBy ?terminatedBy .
    ?terminatedBy a trails:Interruption .
    ?session trails:wasTerminatedBy ?terminatedBy .
    OPTIONAL { GRAPH ?errorMessageGraph1 { $call trails:errorMessage ?error } }
    OPTIONAL { $call prov:endedAtTime ?ended }
    OPTIONAL { ?run a trails:PlanRun ; trails:stopReason ?runStop }
  }
}
"""
)


@dataclass
class Stopped:
    """What a stopped child left: its store, the call it was in, how it exited."""

    store: Path
    call: str
    returncode: int


def stop_child(tmp_path: Path, capability: str, how: str, sig: signal.Signals) -> Stopped:
    """Run the child until its handler runs, send ``sig``, wait for it to end."""
    store = tmp_path / "store"
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(store), capability, how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.startswith("started "), (line, child.communicate())
    child.send_signal(sig)
    child.communicate()
    return Stopped(store, line.split()[1], child.returncode)


def trails(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``trails`` command, as the user runs it."""
    return subprocess.run(
        [TRAILS, "--store", str(store), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "TRAILS_STORE": str(store)},
    )


def pack(store: Path, name: str) -> list[dict[str, str]]:
    done = trails(store, "query", name, "--format", "csv")
    assert done.returncode == 0, done.stderr
    return list(csv.DictReader(io.StringIO(done.stdout)))


def recorded(stopped: Stopped) -> dict[str, object]:
    """How the call, its session and its run are on record (read in-process)."""
    store = OxigraphStore(stopped.store)
    try:
        result = store.query(CALL, {"call": IRI(stopped.call)})
        assert isinstance(result, Solutions)
        rows = [{k: to_python(v) for k, v in row.items()} for row in result]
        conforms, text = shacl_report(store)
        assert conforms, text
    finally:
        store.close()
    assert len(rows) == 1, rows
    return rows[0]


def assert_found_everywhere(stopped: Stopped, *, side_effects: bool) -> None:
    """The pack lists the call, verify --strict names it, the report shows it."""
    interrupted = pack(stopped.store, "interrupted")
    assert stopped.call in {row["activity"] for row in interrupted}, interrupted
    effects = {row["invocation"]: row["status"] for row in pack(stopped.store, "side-effects")}
    assert effects == ({stopped.call: "interrupted"} if side_effects else {})
    failed = {row["invocation"]: row["status"] for row in pack(stopped.store, "failed-invocations")}
    assert failed == {stopped.call: "interrupted"}

    plain = trails(stopped.store, "verify")
    assert plain.returncode == 0, plain.stdout + plain.stderr  # nothing altered: sealed whole
    assert "INTERRUPTED" in plain.stdout
    strict = trails(stopped.store, "verify", "--strict")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert f"INTERRUPTED-CALL {stopped.call}" in strict.stdout
    assert "FAILED (--strict)" in strict.stdout

    session = interrupted[0]["session"]
    report = trails(stopped.store, "report", session)
    assert report.returncode == 0, report.stderr
    assert "No invocation failed" not in report.stdout
    assert "Failed and interrupted invocations" in report.stdout
    assert 'class="badge s-interrupted">interrupted<' in report.stdout


@pytest.mark.slow
def test_ctrl_c_inside_a_side_effect_ends_call_run_and_session_interrupted(
    tmp_path: Path,
) -> None:
    stopped = stop_child(tmp_path, "payments.send", "react", signal.SIGINT)
    assert stopped.returncode == -signal.SIGINT  # the program still stops, as Ctrl-C wants
    row = recorded(stopped)
    assert row["status"] == "interrupted" and row["error"] == "KeyboardInterrupt (SIGINT)"
    assert row["sessionStatus"] == "interrupted" and row["runStop"] == "interrupted"
    assert "ended" in row  # it was running when the interruption reached it
    assert_found_everywhere(stopped, side_effects=True)


@pytest.mark.slow
def test_sigterm_through_the_programs_own_handler_is_recorded_as_systemexit(
    tmp_path: Path,
) -> None:
    stopped = stop_child(tmp_path, "payments.send", "sigterm", signal.SIGTERM)
    assert stopped.returncode == 128 + signal.SIGTERM
    row = recorded(stopped)
    assert row["status"] == "interrupted" and row["error"] == "SystemExit(143)"
    assert row["sessionStatus"] == "interrupted"
    assert_found_everywhere(stopped, side_effects=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "sig"), [("react", signal.SIGKILL), ("bare", signal.SIGTERM)], ids=["kill", "term"]
)
def test_a_killed_side_effect_is_interrupted_after_recover(
    tmp_path: Path, how: str, sig: signal.Signals
) -> None:
    """SIGKILL, or SIGTERM with no handler (Python's default: die at once)."""
    stopped = stop_child(tmp_path, "payments.send", how, sig)
    assert stopped.returncode == -sig
    before = pack(stopped.store, "side-effects")  # only its start is on record
    assert [(r["invocation"], r["status"]) for r in before] == [(stopped.call, "unfinished")]
    done = trails(stopped.store, "recover")
    assert done.returncode == 0, done.stderr
    row = recorded(stopped)
    assert row["status"] == "interrupted" and "error" not in row
    assert "ended" not in row  # when it ended is unknown
    assert row["sessionStatus"] == "interrupted"
    if how == "react":
        assert row["runStop"] == "interrupted"
    assert_found_everywhere(stopped, side_effects=True)


@pytest.mark.slow
def test_ctrl_c_inside_a_pure_capability_is_recorded(tmp_path: Path) -> None:
    stopped = stop_child(tmp_path, "notes.search", "bare", signal.SIGINT)
    assert stopped.returncode == -signal.SIGINT
    row = recorded(stopped)  # written once, when interrupted: it is not missing
    assert row["status"] == "interrupted" and row["error"] == "KeyboardInterrupt (SIGINT)"
    assert row["sessionStatus"] == "interrupted"  # the default session, ended at exit
    assert_found_everywhere(stopped, side_effects=False)
