"""Only recording (or ``trails init``) creates a store; every other command needs one.

Each command that does not record is run, as a real process, against a folder
that does not exist, a folder of someone's files and an empty folder: one
``trails: error:`` line naming the folder, exit 2, and not one byte written
anywhere (a listing of the whole test directory, with every file's digest, is
the same before and after). Creating, by ``trails init`` or by recording,
refuses a folder that holds other files. A store recorded by ``trails demo``
still works for every command, and so does a store written in the layout of
earlier versions (RocksDB's files directly in the folder).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from trails.cli import COMMANDS
from trails.errors import NotAStore
from trails.kernel import Context
from trails.store import open_store
from trails.store.location import check_creatable, is_store

TRAILS = str(Path(sys.executable).with_name("trails"))
NO_SESSION = "urn:trails:session:00000000-0000-0000-0000-000000000000"
OTHER_SESSION = "urn:trails:session:00000000-0000-0000-0000-000000000001"
NO_MEMORY = "urn:trails:entity:00000000-0000-0000-0000-000000000000"

# every command that does not record, with arguments it accepts (the store comes first)
READING: dict[str, list[str]] = {
    "sessions": ["sessions"],
    "query": ["query", "sessions"],
    "report": ["report", NO_SESSION, "--out", "report.html"],
    "logs": ["logs"],
    "prove": ["prove", NO_SESSION, "--out", "proof.json"],
    "head": ["head", "--out", "head.json"],
    "log-publish": ["log", "publish", "site"],
    "verify": ["verify"],
    "verify-session": ["verify", "--session", NO_SESSION],
    "export": ["export", "--all", "--out", "all.trig"],
    "export-bundle": ["export", "--all", "--bundle", "bundle.zip"],
    "replay": ["replay", NO_SESSION],
    "diff": ["diff", NO_SESSION, OTHER_SESSION],
    "serve": ["serve", "--tokens", "tokens.toml", "--port", "0"],
    "memory-recall": ["memory", "recall", "anything"],
    "memory-list": ["memory", "list"],
    "memory-history": ["memory", "history", NO_MEMORY],
    "memory-forget": ["memory", "forget", NO_MEMORY],
    "catalogue-rebuild": ["catalogue", "rebuild"],
    "catalogue-rollup": ["catalogue", "rollup"],
    "hold-list": ["hold", "list"],
    "hold-add": ["hold", "add", NO_SESSION, "--reason", "litigation"],
    "hold-remove": ["hold", "remove", NO_SESSION, "--reason", "settled"],
    "retention-plan": ["retention", "plan"],
    "retention-apply": ["retention", "apply"],
    "erase": ["erase", "--session", NO_SESSION, "--reason", "request"],
    "migrate": ["migrate"],
    "recover": ["recover"],
    "compact": ["compact"],
    "controls-check": ["controls", "check", "--no-record"],
}

# what each kind of folder that is not a store is called in the error
KINDS = {"missing": "it does not exist", "project": "holds other files", "empty": "is empty"}


def trails(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    environment.update(env or {})
    return subprocess.run(
        [TRAILS, *args], cwd=cwd, env=environment, capture_output=True, text=True, check=False
    )


def listing(root: Path) -> dict[str, str]:
    """Every path under ``root`` with its file's digest: any write shows up."""
    return {
        str(p.relative_to(root)): "dir"
        if p.is_dir()
        else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


def folder(tmp_path: Path, kind: str) -> Path:
    """A location that is not a store: missing, a project's folder, or an empty folder."""
    where = tmp_path / kind
    if kind == "project":
        (where / "src").mkdir(parents=True)
        (where / "src" / "main.py").write_text("print('hello')\n")
        (where / "README").write_text("my project\n")
    elif kind == "empty":
        where.mkdir()
    return where


@pytest.fixture
def work(tmp_path: Path, tokens: str) -> Path:
    """The working directory commands run in, with a tokens file for ``trails serve``."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "tokens.toml").write_text(tokens)
    return cwd


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tokens file's text, as ``trails serve --hash-token`` prints it (made once)."""
    made = trails(
        "serve",
        "--hash-token",
        "t0ken-for-tests",
        "--principal",
        "p",
        cwd=tmp_path_factory.mktemp("tokens"),
    )
    assert made.returncode == 0, made.stderr
    return made.stdout


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a refused command (exit 2, nothing on standard output)."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("trails: error: "), done.stderr
    return lines[0]


def test_every_command_is_listed_as_reading_or_as_creating() -> None:
    # memory: learn only; mcp: serve and proxy record the calls they carry
    creating = {"demo", "init", "import", "otlp", "memory", "mcp"}
    # capabilities prints what a program registers, shapes the installed shapes: no store
    # (controls list/explain read files, controls check is in READING); witness: keygen and
    # serve keep files of their own, submit asks the configured witnesses first
    storeless = {"capabilities", "shapes", "witness"}
    assert set(COMMANDS) == {argv[0] for argv in READING.values()} | creating | storeless


@pytest.mark.parametrize("command", sorted(READING))
def test_a_command_that_only_reads_refuses_a_folder_that_is_no_store(
    tmp_path: Path, work: Path, command: str
) -> None:
    for kind, why in KINDS.items():
        where = folder(tmp_path, kind)
        before = listing(tmp_path)
        line = refused(trails("--store", str(where), *READING[command], cwd=work))
        assert f"no trails store at {where}: " in line and why in line, line
        assert "--store PATH or TRAILS_STORE" in line
        assert (f"trails init --store {where}" in line) == (kind != "project"), line
        assert listing(tmp_path) == before, f"{command} wrote into or beside {kind}"
    assert not (tmp_path / "missing").exists()


def test_the_configured_store_is_refused_too_and_a_file_is_no_store(
    tmp_path: Path, work: Path
) -> None:
    before = listing(tmp_path)
    line = refused(trails("sessions", cwd=work))  # the default: ./.trails/store
    assert "no trails store at .trails/store: it does not exist" in line
    named = refused(trails("verify", cwd=work, env={"TRAILS_STORE": "tokens.toml"}))
    assert "no trails store at tokens.toml: it is a file" in named
    here = refused(trails("--store", ".", "verify", cwd=work))  # the folder one is in
    assert "no trails store at .: the folder holds other files (tokens.toml)" in here
    top = refused(trails("--store", "/", "sessions", cwd=work))
    assert "no trails store at /: the folder holds other files" in top
    assert listing(tmp_path) == before


def test_init_creates_an_empty_store_the_readers_then_open(tmp_path: Path, work: Path) -> None:
    where = folder(tmp_path, "empty")
    made = trails("init", "--store", str(where), cwd=work)
    assert made.returncode == 0 and made.stdout == f"created an empty trails store at {where}\n"
    assert is_store(where)
    listed = trails("--store", str(where), "sessions", cwd=work)
    assert listed.returncode == 0 and "(0 rows)" in listed.stdout, listed.stderr
    again = trails("init", "--store", str(where), cwd=work)
    assert again.returncode == 0 and "already exists: left as it was" in again.stdout
    fresh = trails("init", cwd=work)  # the configured store, its folders made on the way
    assert fresh.returncode == 0 and is_store(work / ".trails" / "store")
    assert trails("sessions", cwd=work).returncode == 0


def test_init_refuses_a_folder_of_other_files_a_file_and_memory(tmp_path: Path, work: Path) -> None:
    where = folder(tmp_path, "project")
    before = listing(tmp_path)
    line = refused(trails("init", "--store", str(where), cwd=work))
    assert f"will not create a trails store at {where}: the folder is not empty" in line
    assert "README, src" in line  # what is there, so the user sees the mistake
    file_line = refused(trails("init", "--store", str(where / "README"), cwd=work))
    assert "it is a file" in file_line
    assert "memory:" in refused(trails("init", "--store", "memory:", cwd=work))
    assert listing(tmp_path) == before


@pytest.mark.parametrize(
    "command",
    [
        ["demo"],
        ["memory", "learn", "the sky is blue"],
        ["import", "../data.trig"],
        ["otlp"],
    ],
    ids=["demo", "memory-learn", "import", "otlp"],
)
def test_recording_refuses_a_folder_of_other_files(
    tmp_path: Path, work: Path, command: list[str]
) -> None:
    (tmp_path / "data.trig").write_text("<urn:ex:s> <urn:ex:p> <urn:ex:o> .\n")
    where = folder(tmp_path, "project")
    before = listing(tmp_path)
    line = refused(trails("--store", str(where), *command, cwd=work))
    assert f"will not create a trails store at {where}: the folder is not empty" in line
    assert listing(tmp_path) == before


def test_a_library_session_refuses_a_folder_of_other_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = folder(tmp_path, "project")
    before = listing(tmp_path)
    monkeypatch.setenv("TRAILS_STORE", str(where))
    with pytest.raises(NotAStore, match="will not create a trails store"):
        Context.open("did:local:alice")
    with pytest.raises(NotAStore, match="no trails store at"):
        open_store(where, create=False)
    with pytest.raises(NotAStore, match="no trails store at"):
        open_store(tmp_path / "missing", create=False)
    assert listing(tmp_path) == before
    # creating by default, as recording code always has: a new folder, then an empty one
    open_store(tmp_path / "new" / "store").close()
    (tmp_path / "empty").mkdir()
    open_store(tmp_path / "empty").close()
    assert is_store(tmp_path / "new" / "store") and is_store(tmp_path / "empty")


def test_a_rocksdb_folder_is_a_store_only_when_oxigraph_wrote_it(tmp_path: Path) -> None:
    other = tmp_path / "other-rocksdb"  # another program's database: RocksDB's files alone
    other.mkdir()
    (other / "CURRENT").write_text("MANIFEST-000005\n")
    (other / "MANIFEST-000005").write_bytes(b"\x00")
    (other / "OPTIONS-000007").write_text('[CFOptions "default"]\n[CFOptions "users"]\n')
    assert not is_store(other)
    with pytest.raises(NotAStore):
        check_creatable(other)
    with pytest.raises(NotAStore):
        open_store(other, create=False)


def test_a_store_in_the_earlier_layout_is_still_a_store(tmp_path: Path, work: Path) -> None:
    import pyoxigraph as ox

    where = tmp_path / "old-store"
    where.mkdir()
    raw = ox.Store(str(where))  # RocksDB's files directly in the folder, no pointer
    raw.add(ox.Quad(ox.NamedNode("urn:ex:s"), ox.NamedNode("urn:ex:p"), ox.Literal("kept")))
    raw.flush()
    del raw
    assert is_store(where) and not check_creatable(where)
    done = trails(
        "--store", str(where), "query", "SELECT ?o WHERE { ?s ?p ?o }", "-f", "csv", cwd=work
    )
    assert done.returncode == 0 and "kept" in done.stdout, done.stderr


def _serve_until_listening(store: Path, cwd: Path) -> None:
    """``trails serve`` over ``store``: it starts (its banner), answers, then stops on Ctrl-C."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    proc = subprocess.Popen(
        [TRAILS, "--store", str(store), "serve", "--tokens", "tokens.toml", "--port", "0"],
        cwd=cwd,
        env=environment,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    try:
        banner = proc.stderr.readline()
        assert banner.startswith(f"trails serve: 1 token(s), store {store}"), banner
        url = re.search(r"(http://\S+/sparql)", banner)
        assert url is not None, banner
        with urllib.request.urlopen(url.group(1)) as answer:  # the service description
            assert answer.status == 200 and b"sparql" in answer.read().lower()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait()
        proc.stderr.close()
    assert proc.returncode == 0


def test_a_store_recorded_by_the_demo_still_works_for_every_command(
    tmp_path: Path, work: Path
) -> None:
    store = tmp_path / "store"
    for _ in range(2):
        assert trails("--store", str(store), "demo", cwd=work).returncode == 0
    rows = trails("--store", str(store), "sessions", "--format", "json", cwd=work)
    bindings = json.loads(rows.stdout)["results"]["bindings"]
    first, second = (row["session"]["value"] for row in bindings)
    learned = trails(
        "--store", str(store), "memory", "learn", "the sky is blue", "--json", cwd=work
    )
    (memory,) = json.loads(learned.stdout)
    bundle = str(work / "bundle.zip")
    commands = [
        ["query", "sessions"],
        ["report", first, "--out", "report.html"],
        ["verify"],
        ["verify", "--session", first],
        ["export", "--all", "--out", "all.trig"],
        ["export", "--all", "--bundle", bundle],
        ["replay", first],
        ["diff", first, second],
        ["memory", "recall", "sky"],
        ["memory", "list"],
        ["memory", "history", memory["id"]],
        ["catalogue", "rebuild"],
        ["catalogue", "rollup"],
        ["hold", "list"],
        ["hold", "add", first, "--reason", "litigation"],
        ["hold", "remove", first, "--reason", "settled"],
        ["retention", "plan"],
        ["retention", "apply"],
        ["recover"],
        ["migrate"],
        ["memory", "forget", memory["id"]],
        ["erase", "--session", second, "--reason", "request"],
        ["sessions"],
    ]
    for command in commands:
        done = trails("--store", str(store), *command, cwd=work)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        assert "trails: error" not in done.stderr
    assert trails("verify", "--bundle", bundle, cwd=work).returncode == 0
    _serve_until_listening(store, work)
    again = trails("init", "--store", str(store), cwd=work)
    assert again.returncode == 0 and "already exists" in again.stdout


def test_a_sparql_server_is_the_store_when_it_answers(oxigraph_server: str, work: Path) -> None:
    made = trails("init", "--store", oxigraph_server, cwd=work)
    assert made.returncode == 0 and "answers: a SPARQL server is its own store" in made.stdout
    listed = trails("--store", oxigraph_server, "query", "ASK { }", cwd=work)
    assert listed.returncode == 0, listed.stderr
    assert list(work.iterdir()) == [work / "tokens.toml"]  # nothing on disk here
    gone = trails("init", "--store", "http://127.0.0.1:1/", cwd=work)
    assert gone.returncode == 1 and "cannot reach http://127.0.0.1:1/" in gone.stderr


def test_the_current_folder_named_as_dot_records_and_reads(tmp_path: Path) -> None:
    """``--store .`` in an empty folder: the store is made there, and read back there."""
    where = folder(tmp_path, "empty")
    made = trails("--store", ".", "demo", cwd=where)
    assert made.returncode == 0, made.stderr
    assert is_store(where) and not any(p.name.startswith("empty.") for p in tmp_path.iterdir())
    listed = trails("--store", ".", "sessions", cwd=where)
    assert listed.returncode == 0 and "(0 rows)" not in listed.stdout, listed.stderr
