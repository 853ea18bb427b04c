"""The audit commands, run in-process through ``trails.cli.main`` and once as a real subprocess."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import rdflib
from tests.known_store import ALICE, Fixture, build

from trails.cli import main
from trails.store import open_store, set_default_store


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_query_list_shows_the_pack(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "query", "--list")
    assert status == 0
    assert "cost-by-principal  (SELECT) Cost per principal" in out
    assert "--param principal=<iri>  optional" in out
    assert "session-prov  (CONSTRUCT)" in out


def test_query_table_json_csv_tsv(fx: Fixture, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "query", "cost-by-principal")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["principal", "completions", "inputTokens"]
    assert lines[2].startswith("did:local:bob") and lines[-1] == "(2 rows)"
    status, out, _ = run(
        capsys, "query", "cost-by-principal", "-p", f"principal={ALICE}", "-f", "json"
    )
    data = json.loads(out)
    (binding,) = data["results"]["bindings"]
    assert binding["principal"]["value"] == ALICE
    assert float(binding["costUSD"]["value"]) == pytest.approx(0.105)
    status, out, _ = run(capsys, "query", "failed-invocations", "--format", "csv")
    table = list(csv.DictReader(io.StringIO(out)))
    assert [r["capability"] for r in table] == ["flaky", "search"]
    status, out, _ = run(capsys, "query", "sessions", "--format", "tsv")
    assert out.splitlines()[0].startswith("?session\t?principal")
    assert len(out.splitlines()) == 5


def test_construct_as_turtle_and_trig(fx: Fixture, capsys: pytest.CaptureFixture[str]) -> None:
    for fmt in ("turtle", "trig"):
        status, out, _ = run(
            capsys, "query", "session-prov", "-p", f"session={fx.sessions['C']}", "-f", fmt
        )
        assert status == 0
        g = rdflib.Dataset().parse(data=out, format=fmt)
        assert len(g) > 20
    status, _, err = run(
        capsys, "query", "session-prov", "-p", f"session={fx.sessions['C']}", "-f", "csv"
    )
    assert status == 2 and "is a CONSTRUCT: use --format turtle" in err


def test_query_from_a_file_and_inline(
    fx: Fixture, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "count.rq"
    f.write_text(
        "# title: Count\n# param: kind iri\n"
        "SELECT $kind (COUNT(?a) AS ?n) WHERE { GRAPH ?g { ?a a $kind } } GROUP BY $kind\n"
    )
    status, out, _ = run(
        capsys, "query", str(f), "-p", "kind=http://www.w3.org/ns/prov#Activity", "-f", "csv"
    )
    expected = fx.store.query(
        "SELECT (COUNT(?a) AS ?n) WHERE { GRAPH ?g { ?a a <http://www.w3.org/ns/prov#Activity> } }"
    )
    assert status == 0 and out.splitlines()[1].endswith(f",{expected.rows[0][0].value}")  # type: ignore[union-attr,index]
    status, out, _ = run(
        capsys, "query", "ASK { GRAPH ?g { ?s a <https://w3id.org/trails/ns#Seal> } }"
    )
    assert (status, out.strip()) == (0, "true")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["query", "no-such-query"], "not a query in the pack"),
        (["query", "sessions", "-p", "since"], "--param expects NAME=VALUE, got 'since'"),
        (["query", "sessions", "-p", "since=last tuesday"], "parameter 'since' expects datetime"),
        (["query", "sessions", "-p", "colour=red"], "has no parameter colour"),
        (["query", "session-timeline"], "needs parameter 'session'"),
        (["query", "SELECT * WHERE { ?s ?p }"], "inline: SPARQL syntax error at line 1, column 18"),
        (["query"], "name a query"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(
    fx: Fixture, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.startswith("trails: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_store_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "--store", str(tmp_path / "nowhere"), "sessions")
    assert status == 2 and f"no trails store at {tmp_path / 'nowhere'}" in err
    assert not (tmp_path / "nowhere").exists()  # not created by looking


def test_sessions_command(fx: Fixture, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "sessions", "--principal", ALICE)
    assert status == 0 and out.count("did:local:alice") == 2 and "(2 rows)" in out
    status, out, _ = run(capsys, "sessions", "--status", "error", "--format", "csv")
    assert [r["session"] for r in csv.DictReader(io.StringIO(out))] == [fx.sessions["B"]]
    status, _, err = run(capsys, "sessions", "--since", "soon")
    assert status == 2 and "expects datetime" in err


def test_export_and_import_commands(
    fx: Fixture, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "a.trig"
    status, _, err = run(capsys, "export", "--session", fx.sessions["A"], "--out", str(out))
    assert status == 0 and "exported 2 graph(s)" in err and out.stat().st_size > 1000  # + content
    status, _, err = run(
        capsys, "export", "--all", "--format", "nquads", "--out", str(tmp_path / "b.nq")
    )
    assert status == 2 and "ADR-0013" in err and "session-B" in err
    assert not (tmp_path / "b.nq").exists()
    status, _, err = run(
        capsys,
        "export",
        "--all",
        "--domain",
        "health",
        "-f",
        "nquads",
        "-o",
        str(tmp_path / "b.nq"),
    )
    assert status == 0, err
    status, _, err = run(
        capsys, "export", "--session", fx.sessions["A"], "-o", str(tmp_path / "no" / "x.trig")
    )
    assert status == 2 and "cannot write the export to" in err
    status, out_text, err = run(
        capsys, "export", "--since", "2025-03-03T00:00:00Z", "-f", "provn", "--progress"
    )
    assert status == 0 and "bundle session:session-C" in out_text and "[####" in err

    target = tmp_path / "copy"
    status, _, err = run(capsys, "--store", str(target), "import", str(tmp_path / "b.nq"))
    assert (
        status == 0 and "in 13 graph(s)" in err
    )  # 8 graphs (with the catalogue), 5 content graphs
    copy = open_store(target)
    try:
        assert set(copy.graphs()) == set(fx.store.graphs())
    finally:
        copy.close()
    bad = tmp_path / "bad.trig"
    bad.write_text("<urn:g> { <urn:a> <urn:b> ")
    status, _, err = run(capsys, "import", str(bad))
    assert status == 2 and "not valid trig, nothing was imported" in err


def test_verify_command(fx: Fixture, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "verify")
    assert status == 0 and out.splitlines()[-1].startswith("OK. 3 sealed graph(s) recomputed")
    assert f"OPEN      {fx.sessions['D']}" in out
    fx.store.clear(fx.sessions["B"])
    status, out, _ = run(capsys, "verify", "--json")
    report = json.loads(out)
    assert status == 1 and not report["ok"]
    assert report["findings"] == [
        {"kind": "missing", "subject": fx.sessions["B"], "detail": report["findings"][0]["detail"]}
    ]
    status, out, _ = run(capsys, "verify", "--session", fx.sessions["A"])
    assert status == 0


def test_verify_without_ledger_lists_unsealed_sessions(
    store: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fx = build(store, monkeypatch, seal=False)  # type: ignore[arg-type]
    status, out, _ = run(capsys, "verify")
    assert status == 1 and f"UNSEALED  {fx.sessions['A']}" in out


def test_report_command(fx: Fixture, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.html"
    status, _, err = run(capsys, "report", fx.sessions["A"], "--out", str(out))
    assert status == 0 and str(out) in err
    assert "Audit report: alpha" in out.read_text()
    status, _, err = run(capsys, "report", "urn:trails:session:nope")
    assert status == 2 and "no session urn:trails:session:nope" in err


def test_the_console_script_in_a_subprocess(
    store: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    disk = open_store(tmp_path / "store")
    set_default_store(disk)
    fx = build(disk, monkeypatch)
    disk.close()
    set_default_store(None)
    exe = shutil.which("trails") or str(Path(sys.executable).with_name("trails"))
    env = {**os.environ, "TRAILS_STORE": str(tmp_path / "store")}
    done = subprocess.run(
        [exe, "query", "policy-denials", "--format", "csv"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (row,) = csv.DictReader(io.StringIO(done.stdout))
    assert (row["capability"], row["reason"]) == ("pay", "payments need a human")
    done = subprocess.run(
        [exe, "verify"], capture_output=True, text=True, env=env, cwd=tmp_path, check=False
    )
    assert done.returncode == 0 and "OK. 3 sealed graph(s)" in done.stdout
    assert fx.sessions["A"]
