"""The audit commands as a user runs them: the real ``trails`` command on a store it recorded.

Each test is a defect a user met and what the command does now: one query
semantics (the default graph is the union of the graphs, as at the endpoint),
``trails sessions`` fitted to the terminal, one-line errors instead of
tracebacks, session UUIDs accepted by ``hold`` and ``erase``, no receipt for an
erasure that matched nothing, the HTML report's outcome, and a quiet stop of
``trails serve`` by SIGTERM to its process group.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

TRAILS = str(Path(sys.executable).with_name("trails"))
SESSION = re.compile(r"urn:trails:session:[0-9a-f-]{36}")


def trails(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    environment.pop("COLUMNS", None)
    environment.update(env or {})
    return subprocess.run(
        [TRAILS, *args], cwd=cwd, env=environment, capture_output=True, text=True, check=False
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The error a failed command printed: one line starting ``trails: error:``, no traceback."""
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("trails: error: ")
    return lines[0]


def rows(done: subprocess.CompletedProcess[str]) -> list[dict[str, str]]:
    assert done.returncode == 0, done.stderr
    return list(csv.DictReader(io.StringIO(done.stdout)))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one demo session (ok, one call with side effects), and the session."""
    home = tmp_path_factory.mktemp("demo")
    done = trails("--store", "store", "demo", cwd=home)
    assert done.returncode == 0, done.stderr
    match = SESSION.search(done.stdout)
    assert match is not None
    return home, match.group(0)


def copy_of(demo: tuple[Path, str], tmp_path: Path) -> Path:
    shutil.copytree(demo[0] / "store", tmp_path / "store")
    return tmp_path


def test_a_plain_query_sees_the_union_of_the_graphs(demo: tuple[Path, str]) -> None:
    home, session = demo
    plain = rows(
        trails(
            "--store",
            "store",
            "query",
            "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
            "-f",
            "csv",
            cwd=home,
        )
    )
    named = rows(
        trails(
            "--store",
            "store",
            "query",
            "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }",
            "-f",
            "csv",
            cwd=home,
        )
    )
    assert int(plain[0]["n"]) == int(named[0]["n"]) > 100
    # FROM names the dataset: only that graph, or nothing for a graph the store lacks
    one = rows(
        trails(
            "--store",
            "store",
            "query",
            f"SELECT (COUNT(*) AS ?n) FROM <{session}> WHERE {{ ?s ?p ?o }}",
            "-f",
            "csv",
            cwd=home,
        )
    )
    only = rows(
        trails(
            "--store",
            "store",
            "query",
            f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{session}> {{ ?s ?p ?o }} }}",
            "-f",
            "csv",
            cwd=home,
        )
    )
    assert 0 < int(one[0]["n"]) == int(only[0]["n"]) < int(plain[0]["n"])
    none = rows(
        trails(
            "--store",
            "store",
            "query",
            "SELECT (COUNT(*) AS ?n) FROM <urn:example:nothing> WHERE { ?s ?p ?o }",
            "-f",
            "csv",
            cwd=home,
        )
    )
    assert none[0]["n"] == "0"


def test_sessions_fits_the_terminal_and_leaves_no_label_repeated(demo: tuple[Path, str]) -> None:
    home, session = demo
    narrow = trails("--store", "store", "sessions", cwd=home, env={"COLUMNS": "80"})
    assert narrow.returncode == 0, narrow.stderr
    lines = narrow.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines[:-1]), lines
    # the outcome beside the session, before everything else
    assert lines[0].split() == ["session", "outcome"]
    assert lines[2].split() == [session, "ok"]
    assert lines[-1] == "(1 row; 13 columns left out to fit: principal … sealed)"
    labels = trails("--store", "store", "sessions", cwd=home, env={"COLUMNS": "100"})
    assert labels.stdout.splitlines()[0].split() == ["session", "outcome", "principal", "label"]
    # the label is not the id again
    assert labels.stdout.splitlines()[2].split() == [session, "ok", "did:local:alice"]
    wide = trails("--store", "store", "sessions", cwd=home, env={"COLUMNS": "400"})
    header = wide.stdout.splitlines()[0].split()
    assert header[-1] == "sealed" and "activities" in header
    assert wide.stdout.splitlines()[-1] == "(1 row)"
    # a long cell is cut with an ellipsis, within the width
    medium = trails("--store", "store", "sessions", cwd=home, env={"COLUMNS": "120"})
    assert all(len(line) <= 120 for line in medium.stdout.splitlines()[:-1])
    assert session in medium.stdout


def test_sessions_refuses_an_unknown_status(demo: tuple[Path, str]) -> None:
    done = trails("--store", "store", "sessions", "--status", "bogus", cwd=demo[0])
    assert done.returncode == 2
    line = one_line_error(done)
    assert "bogus" in line and "ok, failed, stopped, interrupted, open, error" in line
    ok = rows(trails("--store", "store", "sessions", "--status", "ok", "-f", "csv", cwd=demo[0]))
    assert [r["session"] for r in ok] == [demo[1]]


def test_sessions_and_diff_count_the_same_activities(demo: tuple[Path, str]) -> None:
    home, session = demo
    [row] = rows(trails("--store", "store", "sessions", "-f", "csv", cwd=home))
    uuid = session.rsplit(":", 1)[1]
    done = trails("--store", "store", "diff", session, uuid, cwd=home)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first == (
        f"A {session}: {row['activities']} activities, 7 compared (completions and calls)"
    )
    # 4 completions, 3 calls, the ReAct run around them and the save that persisted it
    assert row["activities"] == "9"


def test_diff_of_names_that_are_no_sessions_is_one_line(demo: tuple[Path, str]) -> None:
    done = trails("--store", "store", "diff", "nosuch", "alsonot", cwd=demo[0])
    assert done.returncode == 2
    assert "'nosuch' is not a session" in one_line_error(done)
    unknown = trails("--store", "store", "diff", "urn:example:a", "urn:example:b", cwd=demo[0])
    assert unknown.returncode == 2
    assert "urn:example:a names no session" in one_line_error(unknown)


def test_a_tokens_file_that_is_not_utf8_is_one_line(demo: tuple[Path, str], tmp_path: Path) -> None:
    (tmp_path / "tokens.toml").write_bytes(b'[[token]]\nprincipal = "did:local:\xff\xfe"\n')
    done = trails(
        "--store",
        str(demo[0] / "store"),
        "serve",
        "--tokens",
        "tokens.toml",
        "--port",
        "0",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "tokens.toml is not UTF-8 text" in one_line_error(done)


def test_hold_and_erase_take_a_session_uuid(demo: tuple[Path, str], tmp_path: Path) -> None:
    home = copy_of(demo, tmp_path)
    session = demo[1]
    uuid = session.rsplit(":", 1)[1]
    held = trails("--store", "store", "hold", "add", uuid, "--reason", "litigation", cwd=home)
    assert held.returncode == 0, held.stderr
    assert f"placed on session {session}: litigation" in held.stdout
    listed = trails("--store", "store", "hold", "list", cwd=home)
    assert session in listed.stdout
    released = trails("--store", "store", "hold", "remove", uuid, "--reason", "settled", cwd=home)
    assert released.returncode == 0 and f"on session {session} released" in released.stdout
    erased = trails("--store", "store", "erase", "--session", uuid, "--reason", "request", cwd=home)
    assert erased.returncode == 0, erased.stderr
    assert "from 1 session(s)" in erased.stdout
    assert not erased.stdout.startswith("erased 0 ")


def test_erasing_a_principal_with_nothing_recorded_writes_no_receipt(
    demo: tuple[Path, str], tmp_path: Path
) -> None:
    home = copy_of(demo, tmp_path)
    done = trails(
        "--store", "store", "erase", "--principal", "did:example:typo", "--reason", "x", cwd=home
    )
    assert done.returncode == 2
    line = one_line_error(done)
    assert "did:example:typo has no session and no memory" in line and "no receipt" in line
    receipts = rows(
        trails(
            "--store",
            "store",
            "query",
            "PREFIX trails: <https://w3id.org/trails/ns#> "
            "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?e a trails:Erasure } }",
            "-f",
            "csv",
            cwd=home,
        )
    )
    assert receipts[0]["n"] == "0"
    # the real principal is erased, with its receipt
    real = trails(
        "--store", "store", "erase", "--principal", "did:local:alice", "--reason", "x", cwd=home
    )
    assert real.returncode == 0 and "receipt" in real.stdout


FAILED = """
import sys
from trails.agent import Session
from trails.agent.planners import react
from trails.llm import LLMClient
from trails.llm.errors import ModelConnectionError
from trails.store import set_default_store
from trails.store.oxigraph import OxigraphStore


def unreachable(messages):
    raise ModelConnectionError("cannot reach the model: connection refused")


set_default_store(OxigraphStore(sys.argv[1]))
llm = LLMClient.mock(response=unreachable)
with Session(principal="did:local:alice", llm=llm) as session:
    try:
        react.run("Pay the invoice.", llm=llm, session=session)
    except ModelConnectionError:
        pass
    session.persist()
"""


def test_rerun_of_a_failed_session_names_the_failure(tmp_path: Path) -> None:
    (tmp_path / "failed.py").write_text(FAILED)  # a run whose model was never reached
    recorded = subprocess.run(
        [sys.executable, "failed.py", "store"], cwd=tmp_path, capture_output=True, text=True
    )
    assert recorded.returncode == 0, recorded.stderr
    [row] = rows(trails("--store", "store", "sessions", "-f", "csv", cwd=tmp_path))
    assert (row["endStatus"], row["stopReason"]) == ("ok", "error")
    done = trails("--store", "store", "replay", row["session"], "--rerun", cwd=tmp_path)
    assert done.returncode == 2
    line = one_line_error(done)
    assert "record_content" not in line and "hashes only" not in line
    assert "every completion it recorded failed: ModelConnectionError: cannot reach" in line
    # and the report's top says the run failed, not "ok"
    report = trails("--store", "store", "report", row["session"], "--out", "r.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    top = (tmp_path / "r.html").read_text().split("<body>")[1].split("<h2>Summary</h2>")[0]
    assert '<span class="badge s-failed">failed</span>' in top
    assert "a run stopped: error" in top and 'class="badge s-ok"' not in top


def test_the_report_marks_calls_that_changed_the_world(
    demo: tuple[Path, str], tmp_path: Path
) -> None:
    home, session = demo
    done = trails(
        "--store", "store", "report", session, "--out", str(tmp_path / "r.html"), cwd=home
    )
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "r.html").read_text()
    top = html.split("<h2>Summary</h2>")[0]
    assert '<span class="badge s-ok">ok</span>' in top
    marked = re.findall(
        r'<span class="label">([^<]*)</span>\s*(?:<span class="badge s-\w+">\w+</span>\s*)?<span class="badge effect"',
        html,
    )
    assert marked == ["invoke notes.tag"]  # notes.search and notes.read change nothing
    assert "<dt>Calls that changed the world</dt><dd>1 (<code>notes.tag</code> ok)</dd>" in html


KILLED = """
import json, sys, time
from trails import capability
from trails.agent import Session
from trails.agent.planners import react
from trails.llm import LLMClient
from trails.store import set_default_store
from trails.store.oxigraph import OxigraphStore

PAY = "```json\\n" + json.dumps(
    {"thought": "pay", "action": "payments.send", "action_input": {"amount": 120}}
) + "\\n```"

@capability(id="payments.send", description="Send a payment.", side_effects=True)
def send(amount: int) -> dict:
    print("paying", flush=True)
    time.sleep(3600)
    return {"paid": amount}

set_default_store(OxigraphStore(sys.argv[1]))
with Session(principal="did:local:alice") as sess:
    react.run("Pay the invoice.", llm=LLMClient.mock(response=lambda m: PAY), session=sess)
"""


def test_a_killed_session_reads_once_and_without_none(tmp_path: Path) -> None:
    (tmp_path / "killed.py").write_text(KILLED)
    writer = subprocess.Popen(
        [sys.executable, "killed.py", "store"], cwd=tmp_path, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    assert writer.stdout.readline() == "paying\n"  # the call with side effects is under way
    writer.kill()
    writer.wait()
    writer.stdout.close()
    recovered = trails("--store", "store", "recover", cwd=tmp_path)
    assert recovered.returncode == 0, recovered.stderr
    [row] = rows(trails("--store", "store", "sessions", "-f", "csv", cwd=tmp_path))
    done = trails("--store", "store", "report", row["session"], "--out", "r.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "r.html").read_text()
    terminations = html.split("<h2>Terminations</h2>")[1].split("</table>")[0]
    assert terminations.count("Interruption") == 1  # one stop, though it ended three activities
    assert ">None<" not in html and "None</td>" not in html
    assert (
        '<span class="badge s-interrupted">interrupted</span>' in html.split("<h2>Summary</h2>")[0]
    )
    assert "<code>payments.send</code> interrupted" in html  # it may have changed the world


def test_serve_stops_quietly_on_sigterm_to_its_group(
    demo: tuple[Path, str], tmp_path: Path
) -> None:
    token = "s3cret-token"
    hashed = trails(
        "serve",
        "--hash-token",
        token,
        "--principal",
        "did:local:alice",
        "--graph",
        "*",
        cwd=tmp_path,
    )
    assert hashed.returncode == 0, hashed.stderr
    entry = hashed.stdout[hashed.stdout.index("[[token]]") :]
    (tmp_path / "tokens.toml").write_text(entry)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    server = subprocess.Popen(
        [
            TRAILS,
            "--store",
            str(demo[0] / "store"),
            "serve",
            "--tokens",
            "tokens.toml",
            "--port",
            "0",
        ],
        cwd=tmp_path,
        env=environment,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a service manager starts it
    )
    assert server.stderr is not None
    banner = server.stderr.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)/sparql", banner)
    assert match is not None, banner
    base = f"http://127.0.0.1:{match.group(1)}"
    try:
        # the pack's listing needs a token, like every route but the service description
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/queries")
        assert refused.value.code == 401
        request = urllib.request.Request(
            f"{base}/queries", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request) as answer:
            assert b'"sessions"' in answer.read()
        query = urllib.request.Request(
            f"{base}/sparql?query=SELECT%20(COUNT(*)%20AS%20%3Fn)%20WHERE%20%7B%3Fs%20%3Fp%20%3Fo%7D",
            headers={"Authorization": f"Bearer {token}", "Accept": "text/csv"},
        )
        with urllib.request.urlopen(query) as answer:
            served = answer.read().decode().splitlines()[1]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        rest = server.stderr.read()
        server.wait()
        server.stderr.close()
    assert server.returncode == 0
    assert "Traceback" not in rest and "BrokenPipeError" not in rest
    assert rest.strip().splitlines() == ["trails serve: stopped"]
    # the endpoint and the command line count the same quads
    counted = rows(
        trails(
            "--store",
            str(demo[0] / "store"),
            "query",
            "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
            "-f",
            "csv",
            cwd=tmp_path,
        )
    )
    assert counted[0]["n"] == served
