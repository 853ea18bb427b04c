"""``trails retention apply`` applies the plan ``trails retention plan`` showed.

Opening a store to change it recovers the sessions a stopped process left open: they
are ended as interrupted. Such a session was open when the plan was read, so the plan
did not list it; the run that ended it must not remove it either (nobody has seen yet
that it was interrupted: a payment whose outcome is unknown). It is kept, the command
says so, and the next plan lists it. Real processes: a writer killed with a session
open, then the ``trails`` command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from trails.kernel import Context
from trails.prov import Recorder
from trails.store import IRI, open_store

WRITER = """
import os, sys
from trails.kernel import Context
from trails.prov import Recorder
from trails.store import IRI, open_store

store = open_store(sys.argv[1])
ctx = Context.open("did:local:payer", recorder=Recorder.from_settings(store=store), label="pay")
print(ctx.session, flush=True)
os._exit(1)  # killed with its session open
"""


def _trails(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRAILS_STORE": "memory:"}
    return subprocess.run(
        [sys.executable, "-m", "trails.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
    )


def test_apply_never_removes_a_session_its_own_recovery_ended(tmp_path: Path) -> None:
    where = tmp_path / "store"
    (tmp_path / "trails.toml").write_text("[retention]\ncontent_days = 30\n")
    store = open_store(str(where))
    try:
        recorder = Recorder.from_settings(store=store)
        with Context.open("did:local:done", recorder=recorder, label="paid") as ctx:
            ended = str(ctx.session)
    finally:
        store.close()
    crashed = subprocess.run(
        [sys.executable, "-c", WRITER, str(where)], capture_output=True, text=True, cwd=tmp_path
    )
    assert crashed.returncode == 1, crashed.stderr
    left_open = crashed.stdout.strip()
    later = ["--store", str(where), "--now", "2099-01-01"]

    shown = _trails(tmp_path, "retention", "plan", *later)
    assert shown.returncode == 0, shown.stderr
    assert ended in shown.stdout and left_open not in shown.stdout

    applied = _trails(tmp_path, "retention", "apply", *later, "--reason", "r", "--by", "did:x:y")
    assert applied.returncode == 0, applied.stderr
    assert f"removed content of {ended}" in applied.stdout
    assert f"kept {left_open} (content): recovery ended it as interrupted" in applied.stdout
    assert f"removed content of {left_open}" not in applied.stdout

    store = open_store(str(where))
    try:  # ended as interrupted, and still whole
        assert store.query(
            "ASK { GRAPH $g { $g <https://w3id.org/trails/ns#status> 'interrupted' } }",
            {"g": IRI(left_open)},
        )
    finally:
        store.close()
    # the next plan lists it: someone can now see it before it goes
    again = _trails(tmp_path, "retention", "plan", *later)
    assert left_open in again.stdout and ended not in again.stdout
