"""``trails controls list|check|explain``: the gate's exit codes, JUnit XML a CI system
reads, bad control files refused in one line before the store is opened, evaluations
recorded as evidence (and not with --no-record)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.controls.conftest import EXAMPLE, record_clean_session

from trails.cli import main
from trails.config import load_settings
from trails.controls import recorded_results
from trails.prov.recorder import Recorder
from trails.store import open_store
from trails.testing.conformance import record_sample_session

DIR = str(EXAMPLE)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """A directory store with a session that fails a call and a clean one."""
    root = tmp_path_factory.mktemp("controls-cli")
    path = root / "store"
    store = open_store(path)
    recorder = Recorder.from_settings(load_settings(environ={}, cwd=root), store=store)
    failing = str(record_sample_session(recorder)["session"])
    clean = record_clean_session(recorder)
    store.close()
    yield str(path), failing, clean


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_list_names_each_control(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "controls", "list", "--dir", DIR, "--no-builtin")
    assert status == 0 and "(3 controls)" in out and "failed-call" in out
    status, out, _ = run(capsys, "controls", "list", "--dir", DIR, "--no-builtin", "-f", "json")
    assert [c["id"] for c in json.loads(out)] == [
        "failed-call",
        "labelled-session",
        "unsealed-session",
    ]


def test_check_gates_on_severity(
    place: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, failing, _ = place
    argv = ["--store", store, "controls", "check", "--dir", DIR, "--no-builtin"]
    status, out, err = run(capsys, *argv)
    assert status == 1, err  # a medium violation, failing at the default level (any)
    assert f"VIOLATED   failed-call (medium) in {failing}" in out and "the call failed" in out
    status, out, _ = run(capsys, *argv, "--fail-on", "high")
    assert status == 0 and "2 violated" in out  # medium and low: below high


def test_junit_is_xml_a_ci_system_reads(
    place: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, failing, clean = place
    status, out, _ = run(
        capsys,
        *("--store", store, "controls", "check", "--dir", DIR, "--no-builtin"),
        *("--format", "junit", "--control", "failed-call"),
    )
    assert status == 1
    root = ET.fromstring(out.split("?>", 1)[1])
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    assert suite.get("name") == "failed-call" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {failing, clean}
    [failure] = cases[failing].findall("failure")
    assert failure.get("type") == "medium" and "the call failed" in (failure.text or "")
    assert cases[clean].findall("failure") == []


def test_check_records_its_evaluations_unless_told_not_to(
    place: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, failing, _ = place
    argv = ["--store", store, "controls", "check", "--dir", DIR, "--no-builtin"]
    with open_store(store) as opened:
        before = len(recorded_results(opened))
    status, out, _ = run(capsys, *argv, "--session", failing, "-f", "json", "--no-record")
    assert status == 1
    assert {o["control"]: o["status"] for o in json.loads(out)} == {
        "failed-call": "violated",
        "labelled-session": "passed",
    }
    with open_store(store) as opened:
        assert len(recorded_results(opened)) == before
    run(capsys, *argv, "--session", failing)
    with open_store(store) as opened:
        assert len(recorded_results(opened)) == before + 2
    status, out, _ = run(
        capsys, "--store", store, "controls", "explain", "failed-call", "--dir", DIR
    )
    assert status == 0
    assert "reference: ISO/IEC 42001 A.6.2.6" in out and "trails:CapabilityInvocation" in out
    assert f"violated  1 finding(s)  {failing}" in out


def test_since_picks_sessions_by_start(
    place: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _, clean = place
    status, out, _ = run(
        capsys,
        *("--store", store, "controls", "check", "--dir", DIR, "--no-builtin", "--no-record"),
        *("--since", "2026-01-02", "--control", "failed-call", "-f", "json"),
    )
    assert status == 0 and [o["session"] for o in json.loads(out)] == [clean]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--control", "nope"], "no control 'nope'"),
        (["--since", "yesterday"], "not an ISO date"),
        (["--session", "urn:trails:session:nobody"], "no session urn:trails:session:nobody"),
    ],
)
def test_bad_arguments_are_one_line_exit_2(
    place: tuple[str, str, str], capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    store, _, _ = place
    status, _, err = run(
        capsys, "--store", store, "controls", "check", "--dir", DIR, "--no-builtin", *argv
    )
    assert status == 2 and said in err and len(err.strip().splitlines()) == 1


def test_a_bad_control_file_stops_before_the_store_is_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.toml").write_text(
        'id = "x"\ntitle = "x"\nseverity = "low"\nscope = "store"\ncheck = "x.rq"\n'
    )
    (bad / "x.rq").write_text("PREFIX t: <urn:t#> INSERT DATA { t:a t:b t:c }")
    store = tmp_path / "never"
    status, _, err = run(capsys, "--store", str(store), "controls", "check", "--dir", str(bad))
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "x.rq: is an update or not a query" in err
    assert not store.exists()


def test_verify_names_a_control_edited_after_it_ran(
    place: tuple[str, str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store, _, _ = place
    run(capsys, "--store", store, "controls", "check", "--dir", DIR, "--no-builtin")
    status, out, err = run(capsys, "--store", store, "verify", "--controls", DIR)
    assert status == 0, out + err
    edited = tmp_path / "edited"
    edited.mkdir()
    for p in EXAMPLE.iterdir():
        (edited / p.name).write_bytes(p.read_bytes())
    (edited / "failed-call.toml").write_text(
        (EXAMPLE / "failed-call.toml").read_text().replace('"medium"', '"low"')
    )
    status, out, _ = run(capsys, "--store", store, "verify", "--controls", str(edited))
    assert status == 1
    assert "CONTROL   failed-call: the definition changed after it ran" in out


def test_recording_needs_the_writer(
    place: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _, _ = place
    argv = ["--store", store, "controls", "check", "--dir", DIR, "--no-builtin"]
    with open_store(store):  # another writer holds the store
        status, _, err = run(capsys, *argv)
        assert status == 1 and "add --no-record" in err
        status, out, _ = run(capsys, *argv, "--no-record", "--fail-on", "high")
        assert status == 0 and "violated" in out  # read as a snapshot, nothing recorded


def test_a_hostile_message_reaches_the_terminal_and_junit_escaped(
    place: tuple[str, str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a finding's message is data from the store (an error text, a tool's output): a NUL,
    # an escape sequence or a bell in it must neither drive the terminal nor break the XML
    (tmp_path / "hostile.toml").write_text(
        'id = "hostile"\ntitle = "hostile"\nseverity = "low"\nscope = "session"\n'
        'check = "hostile.rq"\n'
    )
    (tmp_path / "hostile.rq").write_text(
        "SELECT ?session ?subject ?message WHERE { BIND(?session AS ?subject)\n"
        '  BIND("a\\u0000b\\u001b[31mred\\u0007\\nVIOLATED fake <&>" AS ?message) }\n'
    )
    store, failing, _ = place
    argv = ["--store", store, "controls", "check", "--dir", str(tmp_path), "--no-builtin"]
    argv += ["--session", failing, "--no-record"]
    status, out, _ = run(capsys, *argv)
    assert status == 1
    assert not any(c in out for c in "\x00\x1b\x07")
    assert "a\\x00b\\x1b[31mred\\x07\\nVIOLATED fake <&>" in out
    status, out, _ = run(capsys, *argv, "--format", "junit")
    assert status == 1
    [failure] = ET.fromstring(out.split("?>", 1)[1]).iter("failure")
    assert (failure.text or "").endswith(": a\\x00b\\x1b[31mred\\x07\\nVIOLATED fake <&>")


def test_a_store_control_asked_of_one_session_is_refused_not_passed(
    place: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # --session runs no store-scoped control: naming one must not exit 0 having run nothing
    store, failing, _ = place
    status, out, err = run(
        capsys,
        *("--store", store, "controls", "check", "--dir", DIR, "--no-builtin", "--no-record"),
        *("--session", failing, "--control", "unsealed-session"),
    )
    assert status == 2 and out == ""
    assert "unsealed-session is store-scoped" in err and "\n" not in err.strip()
