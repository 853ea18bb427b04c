"""The ``trails`` command as a new user meets it, run as a real process.

Exit codes, what goes to standard output and what to standard error, and that
nothing prints a traceback or creates a store by looking.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from trails.cli import COMMANDS, build_parser
from trails.store import open_store

TRAILS = str(Path(sys.executable).with_name("trails"))


def trails(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    environment.update(env or {})
    return subprocess.run(
        [TRAILS, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def clean(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr, done.stderr


def test_version(tmp_path: Path) -> None:
    done = trails("--version", cwd=tmp_path)
    assert done.returncode == 0
    assert re.fullmatch(r"trails \d+\.\d+\.\d+\S*\n", done.stdout)


def test_store_before_or_after_the_command(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    assert trails("--store", store, "demo", cwd=tmp_path).returncode == 0
    before = trails("--store", store, "sessions", "--format", "csv", cwd=tmp_path)
    after = trails("sessions", "--format", "csv", "--store", store, cwd=tmp_path)
    assert before.returncode == after.returncode == 0
    assert before.stdout == after.stdout and before.stdout.count("\n") == 2
    nested = trails("memory", "list", "--store", store, cwd=tmp_path)
    assert nested.returncode == 0 and "(no memories)" in nested.stdout


@pytest.mark.parametrize(
    "command",
    [
        ["sessions"],
        ["query", "sessions"],
        ["memory", "recall", "anything"],
        ["memory", "list"],
        ["memory", "history", "urn:trails:memory:x"],
        ["report", "urn:trails:session:00000000-0000-0000-0000-000000000000"],
        ["export"],
        ["verify"],
        ["replay", "urn:trails:session:00000000-0000-0000-0000-000000000000"],
    ],
)
def test_looking_never_creates_a_store(tmp_path: Path, command: list[str]) -> None:
    done = trails(*command, cwd=tmp_path)
    clean(done)
    assert done.returncode != 0
    assert "no trails store at" in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [
        ["demo"],
        ["sessions"],
        ["query", "sessions"],
        ["memory", "learn", "the sky is blue"],
        ["memory", "recall", "sky"],
        ["export"],
        ["verify"],
        ["report", "urn:trails:session:00000000-0000-0000-0000-000000000000"],
        ["replay", "urn:trails:session:00000000-0000-0000-0000-000000000000"],
    ],
)
def test_store_memory_is_honoured_by_every_command(tmp_path: Path, command: list[str]) -> None:
    done = trails(*command, "--store", "memory:", cwd=tmp_path)
    clean(done)
    assert "no trails store" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing on disk


def test_hash_token_prints_only_the_entry_on_stdout(tmp_path: Path) -> None:
    done = trails("serve", "--hash-token", "--principal", "did:example:bob", cwd=tmp_path)
    assert done.returncode == 0
    entry = tomllib.loads(done.stdout)["token"][0]
    assert entry["principal"] == "did:example:bob"
    (token,) = re.findall(r"it is not stored anywhere\): (\S+)", done.stderr)
    assert done.stderr.count(token) == 1 and token not in done.stdout
    assert entry["sha256"] == hashlib.sha256(token.encode()).hexdigest()
    given = trails("serve", "--hash-token", "s3cret", "--principal", "bob", cwd=tmp_path)
    assert "s3cret" not in given.stdout + given.stderr
    assert tomllib.loads(given.stdout)["token"][0]["sha256"] == (
        hashlib.sha256(b"s3cret").hexdigest()
    )


def _serve_fails(tmp_path: Path, *args: str) -> str:
    tokens = tmp_path / "tokens.toml"
    if not tokens.exists():
        made = trails("serve", "--hash-token", "t", "--principal", "p", cwd=tmp_path)
        tokens.write_text(made.stdout)
    done = trails("serve", "--tokens", str(tokens), *args, cwd=tmp_path, timeout=60)
    clean(done)
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("trails: error: "), done.stderr
    assert done.stdout == ""
    return lines[0]


def test_serve_start_up_failures_are_one_line_before_any_banner(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert trails("--store", str(store), "demo", cwd=tmp_path).returncode == 0
    assert "65535" in _serve_fails(tmp_path, "--store", str(store), "--port", "70000")
    assert "65535" in _serve_fails(tmp_path, "--store", str(store), "--port", "eighty")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        line = _serve_fails(tmp_path, "--store", str(store), "--port", port)
        assert f"127.0.0.1:{port}" in line and "in use" in line
    # a store another process holds is served as snapshots (tests/test_snapshot_readers.py)


def test_query_of_an_update_says_read_only(tmp_path: Path) -> None:
    done = trails(
        "--store", "memory:", "query", "PREFIX ex: <urn:ex:> INSERT DATA { ex:a ex:b ex:c }",
        cwd=tmp_path,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 2 and "read-only" in done.stderr


def test_csv_and_tsv_leave_out_parameters_not_given_and_turtle_declares_prefixes(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "store")
    assert trails("--store", store, "demo", cwd=tmp_path).returncode == 0
    for fmt, sep in (("csv", ","), ("tsv", "\t")):
        done = trails("--store", store, "query", "sessions", "-f", fmt, cwd=tmp_path)
        header = done.stdout.splitlines()[0].replace("?", "").split(sep)
        assert "session" in header and "principal" in header
        assert not {"since", "until", "status"} & set(header)
    asked = trails(
        "--store", store, "query", "sessions", "-f", "csv", "-p", "status=ok", cwd=tmp_path
    )
    assert "status" in asked.stdout.splitlines()[0].split(",")
    turtle = trails(
        "--store", store, "query",
        "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s a <http://www.w3.org/ns/prov#Activity> ;"
        " ?p ?o } }",
        cwd=tmp_path,
    )  # fmt: skip
    assert turtle.returncode == 0
    assert "@prefix prov: <http://www.w3.org/ns/prov#> ." in turtle.stdout
    assert "prov:Activity" in turtle.stdout


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += _parsers(child)
    return found


def test_every_option_and_command_has_help() -> None:
    parser = build_parser()
    missing = []
    for p in _parsers(parser):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    if not choice.help:
                        missing.append(f"{p.prog} {choice.dest}")
            elif not action.help:
                missing.append(f"{p.prog} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_the_help_table_matches_what_each_command_registers() -> None:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    registered = {c.dest: c.help for c in sub._choices_actions}
    assert registered == {name: help_text for name, (_, help_text) in COMMANDS.items()}


def test_help_imports_no_command_module(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from trails.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('trails.cli.')"
        " or m in ('uvicorn', 'starlette', 'trails.server', 'trails.agent'))\n"
        "print('LOADED', loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "LOADED []" in done.stdout
    assert "serve" in done.stdout and "replay" in done.stdout  # the help still lists them


def _demo_store(path: Path, sessions: int) -> None:
    from trails.demo import run_demo

    store = open_store(path)
    try:
        for _ in range(sessions):
            run_demo(store)
    finally:
        store.close()


def test_export_into_a_directory_or_a_clear_refusal(tmp_path: Path) -> None:
    store = tmp_path / "audit-store"
    _demo_store(store, 1)
    out = tmp_path / "exports"
    out.mkdir()
    done = trails("--store", str(store), "export", "--all", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in out.iterdir()] == ["audit-store.trig"]
    assert str(out / "audit-store.trig") in done.stderr
    trails("--store", str(store), "export", "--all", "-f", "nquads", "-o", str(out), cwd=tmp_path)
    assert (out / "audit-store.nq").stat().st_size > 0
    missing = trails(
        "--store", str(store), "export", "--all", "-o", str(tmp_path / "nope") + "/", cwd=tmp_path
    )
    clean(missing)
    assert missing.returncode == 2 and "no such directory" in missing.stderr
    assert not (tmp_path / "nope").exists()


# The real CLI in a child process, with the PROV writer's reading of the export held
# until the test's Ctrl-C arrives: the interrupt lands mid-export every time, not only
# when the machine is slow enough for a timed signal to beat the export.
_HELD_EXPORT = """
import sys, time
import trails.audit.provn

def held(*args, **kwargs):
    print("EXPORTING", file=sys.stderr, flush=True)
    time.sleep(120)  # Ctrl-C (SIGINT) lands here, inside the export
    raise AssertionError("the export was never interrupted")

trails.audit.provn._decode = held
from trails.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_during_an_export_writes_nothing(tmp_path: Path) -> None:
    import signal

    store = tmp_path / "store"
    _demo_store(store, 2)
    out = tmp_path / "out"
    out.mkdir()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    command = ["--store", str(store), "export", "--all", "-f", "provjson", "-o", str(out)]
    process = subprocess.Popen(
        [sys.executable, "-c", _HELD_EXPORT, *command],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    said = process.stderr.readline()
    assert said == "EXPORTING\n", said + process.stderr.read()
    assert process.poll() is None and list(out.iterdir()), "the export had begun its file"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    assert process.returncode == 130
    assert stderr.strip().splitlines()[-1] == "interrupted: nothing written"
    assert list(out.iterdir()) == []


def test_session_arguments_accept_a_bare_uuid(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    demo = trails("--store", store, "demo", cwd=tmp_path)
    iri = re.search(r"session\s+(urn:trails:session:(\S+))", demo.stdout)
    assert iri is not None
    uuid = iri.group(2)
    for command in (
        ["report", uuid, "-o", str(tmp_path / "r.html")],
        ["verify", "--session", uuid],
        ["replay", uuid],
        ["export", "--session", uuid, "-o", str(tmp_path / "one.trig")],
        ["query", "session-timeline", "-p", f"session={uuid}"],
        ["diff", uuid, iri.group(1)],
    ):
        done = trails("--store", store, *command, cwd=tmp_path)
        clean(done)
        assert done.returncode == 0, (command, done.stderr)
    assert iri.group(1) in (tmp_path / "r.html").read_text()
    assert iri.group(1) in (tmp_path / "one.trig").read_text()


def test_unknown_settings_are_a_warning_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text(
        '[store]\nlocaton = "./elsewhere"\n[agent]\nprincipal = "did:example:carol"\n'
        "[colour]\nsky = 1\n"
    )
    done = trails("--store", "memory:", "demo", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stderr.count("unknown setting [store] locaton") == 1
    assert done.stderr.count("unknown setting [colour]") == 1
    # the demo acts for the configured principal
    assert "on behalf of did:example:carol" in done.stdout
    assert "principal" not in done.stderr


def test_rejected_memory_commands_record_nothing(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    learned = trails("--store", store, "memory", "learn", "the sky is blue", "--json", cwd=tmp_path)
    assert learned.returncode == 0, learned.stderr
    memory_id = re.search(r'"id": "([^"]+)"', learned.stdout)
    assert memory_id is not None

    def sessions() -> str:
        return trails("--store", store, "sessions", "-f", "csv", cwd=tmp_path).stdout

    before = sessions()
    for command in (
        ["learn", "x", "--scope", "everywhere"],
        ["learn", "x", "--confidence", "7"],
        ["learn", "x", "--valid-from", "2026-01-02", "--valid-until", "2026-01-01"],
        ["learn", "x", "--supersedes", "urn:trails:entity:nope"],
        ["recall", "sky", "-k", "0"],
        ["recall", "sky", "--scope", "nowhere"],
        ["list", "--as-of", "yesterday"],
        ["forget", "urn:trails:entity:nope"],
        ["history", "urn:trails:entity:nope"],
    ):
        done = trails("--store", store, "memory", *command, cwd=tmp_path)
        clean(done)
        assert done.returncode == 2 and done.stderr.startswith("trails: error: "), command
    assert sessions() == before
    forgot = trails("--store", store, "memory", "forget", memory_id.group(1), cwd=tmp_path)
    assert forgot.returncode == 0
    again = trails("--store", store, "memory", "forget", memory_id.group(1), cwd=tmp_path)
    assert again.returncode == 2 and "already retired" in again.stderr
    assert sessions().count("\n") == before.count("\n") + 1  # only the forget that worked


def test_numbers_an_auditor_reads_are_formatted() -> None:
    from trails.audit.render import cell, duration, number, timestamp, usd
    from trails.store import Literal

    xsd = "http://www.w3.org/2001/XMLSchema#"
    assert usd(0.1 + 0.2) == "0.300000 USD" and usd(None) == "unknown"
    assert cell(Literal("0.30000000000000004", xsd + "double")) == "0.3"
    assert cell(Literal("0.0003", xsd + "decimal"), column="costUSD") == "0.000300 USD"
    assert number(0.1 + 0.2) == "0.3" and number(12) == "12"
    assert [duration(s) for s in (0.0004, 0.25, 1.5, 125, 3720)] == [
        "0.4 ms",
        "250 ms",
        "1.500 s",
        "2 min 5.0 s",
        "1 h 2 min",
    ]
    stamp = cell(Literal("2026-01-02T03:04:05.678901Z", xsd + "dateTime"))
    assert stamp == timestamp("2026-01-02T03:04:05.678901+00:00") == "2026-01-02T03:04:05.678Z"


TOOLS = """
from trails.kernel import capability

@capability(id="weather.get", description="Weather for a city.")
def weather(city: str) -> dict:
    return {"city": city, "sky": "SKY"}

@capability(id="weather.other", description="Registered, but never offered to the session.")
def other(x: str) -> str:
    return x
"""

APP = """
import json
import mytools
from trails.agent import Session
from trails.agent.planners import react
from trails.llm import LLMClient
from trails.store import open_store

script = [
    json.dumps({"thought": "t", "action": "weather.get", "action_input": {"city": "Oslo"}}),
    json.dumps({"thought": "t", "action": "finish", "action_input": {}, "final_answer": "ok"}),
]
store = open_store("store")
with Session(principal="did:local:me", store=store) as session:
    react.run("weather?", llm=LLMClient.mock(script, model="m"), session=session,
              tools=["weather.get"])
    session.persist()
    print(session.context.session)
store.close()
"""


def test_replay_reruns_a_users_own_session_with_modules_from_the_current_directory(
    tmp_path: Path,
) -> None:
    (tmp_path / "mytools.py").write_text(TOOLS.replace("SKY", "clear"))
    (tmp_path / "app.py").write_text(APP)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    made = subprocess.run(
        [sys.executable, "app.py"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    iri = made.stdout.strip()
    for mode in ("recorded", "live"):
        done = trails(
            "--store", "store", "replay", iri, "--rerun", "--import", "mytools",
            "--capabilities", mode, cwd=tmp_path,
        )  # fmt: skip
        clean(done)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "identical" in done.stdout
    # a change in the user's capability is a divergence, named
    (tmp_path / "mytools.py").write_text(TOOLS.replace("SKY", "cloudy"))
    changed = trails(
        "--store", "store", "replay", iri, "--rerun", "--import", "mytools",
        "--capabilities", "live", cwd=tmp_path,
    )  # fmt: skip
    assert changed.returncode == 1 and "DIVERGED" in changed.stdout
    assert "cloudy" in changed.stdout
