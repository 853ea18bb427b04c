"""``trails memory ...`` against an on-disk store, one process per command like a shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trails.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_learn_recall_forget_list_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "store")
    base = ["--store", store, "memory"]
    code, out, _ = run(
        capsys, *base, "learn", "The SPARQL proxy rejects SERVICE queries", "--scope", "shared",
        "--topic", "security", "--tag", "proxy", "--confidence", "0.9", "--agent", "did:local:alice", "--json",
    )  # fmt: skip
    assert code == 0
    [first] = json.loads(out)
    assert first["content"] == "The SPARQL proxy rejects SERVICE queries" and first["tags"] == [
        "proxy"
    ]

    code, out, _ = run(
        capsys, *base, "learn", "The SPARQL proxy rejects SERVICE and LOAD", "--scope", "shared",
        "--supersedes", first["id"], "--agent", "did:local:alice", "--json",
    )  # fmt: skip
    [second] = json.loads(out)
    assert second["revision_of"] == first["id"]

    code, out, _ = run(capsys, *base, "recall", "sparql proxy", "--agent", "did:local:bob")
    assert code == 0 and second["id"] in out and first["id"] not in out
    assert "by did:local:alice" in out

    code, out, _ = run(capsys, *base, "history", first["id"], "--json")
    assert [v["id"] for v in json.loads(out)] == [first["id"], second["id"]]

    code, out, _ = run(capsys, *base, "forget", second["id"], "--reason", "outdated", "--json")
    assert json.loads(out)[0]["reason"] == "outdated"

    code, out, _ = run(capsys, *base, "list")
    assert out.strip() == "(no memories)"
    code, out, _ = run(capsys, *base, "list", "--all", "--json")
    assert {m["id"] for m in json.loads(out)} == {first["id"], second["id"]}


def test_cli_errors_are_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--store", str(tmp_path / "store"), "memory"]
    code, _, err = run(capsys, *base, "learn", "x", "--confidence", "2")
    assert code == 2 and "confidence must be between 0 and 1" in err
    code, _, err = run(capsys, *base, "forget", "urn:trails:entity:nope")
    assert code == 2 and "no memory with id urn:trails:entity:nope" in err
    code, _, err = run(capsys, *base, "recall", "x", "--scope", "cosmic")
    assert code == 2 and "unknown scope 'cosmic'" in err
