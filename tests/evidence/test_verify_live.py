"""Verification on a live store: writers sealing sessions while ``trails verify`` runs
never produce a finding.

Real writer processes record sessions for as long as the test runs (each through
``Recorder.from_settings``, sealed as in production), and the real ``trails verify`` runs
again and again meanwhile, on a SPARQL server (``oxigraph serve``) shared by six writer
processes. The embedded store belongs to one process: there, writer threads record while
the same process verifies in a loop. Every run must find nothing, and the runs must have
seen the ledger grow (so they did overlap the writing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from trails.evidence.verify import verify
from trails.kernel import Context, capability, invoke
from trails.prov import Recorder
from trails.store import open_store
from trails.store.sparql import SparqlStore

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from trails.kernel import Context, capability, invoke
    from trails.prov import Recorder
    from trails.store import open_store

    worker, stop, ready = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])

    @capability(id="live.echo")
    def echo(text: str) -> str:
        return text

    store = open_store()
    recorder = Recorder.from_settings(store=store)
    n = 0
    while not stop.exists() and n < 2000:  # until told to stop (bounded, in case it never is)
        with Context.open(f"did:local:writer-{worker}", recorder=recorder) as ctx:
            invoke("live.echo", {"text": f"{worker}-{n}"}, ctx=ctx)
            invoke("live.echo", {"text": f"{worker}-{n} again"}, ctx=ctx)
        n += 1
        if n == 2:
            ready.joinpath(worker).write_text("")
        time.sleep(1.0)
    store.close()
    print(n)
    """
)


def _trails(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("trails"))
    return subprocess.run(
        [exe, *args], capture_output=True, text=True, env=env, cwd=cwd, check=False, timeout=600
    )


def _verify_while_writing(env: dict[str, str], cwd: Path, writers: int, runs: int) -> list[int]:
    """Start the writers, wait until each has sealed sessions, verify ``runs`` times while
    they write, stop them; the seal counts each verification saw."""
    stop, ready = cwd / "stop", cwd / "ready"
    ready.mkdir()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(w), str(stop), str(ready)],
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    seen: list[int] = []
    try:
        while len(list(ready.iterdir())) < writers:
            for child in children:
                assert child.poll() is None, child.communicate()[1]
        for _ in range(runs):
            done = _trails(env, cwd, "verify", "--no-checkpoint", "--json")
            report = json.loads(done.stdout)
            assert done.returncode == 0, report["findings"]
            assert report["ok"] and report["findings"] == []
            seen.append(report["seals"])
        # every verification ran while all the writers were still writing
        assert all(child.poll() is None for child in children)
    finally:
        stop.write_text("")
        for child in children:
            _, err = child.communicate(timeout=300)
            assert child.returncode == 0, err
    return seen


def test_six_writers_on_a_server_never_make_verify_cry_wolf(
    remote_store: SparqlStore, oxigraph_server: str, tmp_path: Path
) -> None:
    env = {**os.environ, "TRAILS_STORE": oxigraph_server}
    seen = _verify_while_writing(env, tmp_path, writers=6, runs=4)
    assert seen == sorted(seen) and seen[-1] > seen[0]  # the ledger grew while verified
    final = _trails(env, tmp_path, "verify", "--no-checkpoint")
    assert final.returncode == 0, final.stdout


@pytest.mark.parametrize("jobs", [None, 2], ids=["default-jobs", "two-jobs"])
def test_writers_on_the_embedded_store_never_make_verify_cry_wolf(
    tmp_path: Path, jobs: int | None
) -> None:
    """The embedded store is one process's: its writers are threads of the process that
    verifies, each with its own recorder (its own seal chain), recording while the full
    pass reads the store again and again (by default, and with a pool of 2 workers)."""
    store = open_store(tmp_path / "store")
    stop = threading.Event()
    counts = [0, 0]
    errors: list[BaseException] = []

    @capability(id="live.embedded.echo")
    def echo(text: str) -> str:
        return text

    def write(worker: int) -> None:
        recorder = Recorder.from_settings(store=store)
        try:
            while not stop.is_set():
                with Context.open(f"did:local:thread-{worker}", recorder=recorder) as ctx:
                    invoke("live.embedded.echo", {"text": f"{worker}"}, ctx=ctx)
                    invoke("live.embedded.echo", {"text": f"{worker} again"}, ctx=ctx)
                counts[worker] += 1
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(2)]
    for thread in threads:
        thread.start()
    seen: list[int] = []
    try:
        while min(counts) < 2 and not errors:
            stop.wait(0.01)
        for _ in range(6):
            report = verify(store, jobs=jobs)
            assert report.ok, report.findings
            seen.append(report.seals)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not errors, errors
    assert seen == sorted(seen) and seen[-1] > seen[0]  # it verified while they wrote
    final = verify(store, jobs=jobs)
    assert final.ok and final.seals == sum(counts) and not final.open_sessions
    store.close()
