"""What a reader meets first: every command's ``--help`` says what it does, the README
opens with its title and its two commands, and the shapes ship with the package.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trails.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
TRAILS = str(Path(sys.executable).with_name("trails"))


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser("*")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_a_description(name: str) -> None:
    description = _subcommands()[name].description
    assert description and len(description) > 20, (name, description)


@pytest.mark.parametrize("name", ["demo", "sessions", "report", "replay", "diff", "logs"])
def test_help_shows_the_description(name: str) -> None:
    done = subprocess.run(
        [TRAILS, name, "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    paragraphs = done.stdout.split("\n\n")
    assert len(paragraphs) > 2 and not paragraphs[1].lstrip().startswith(("positional", "options"))


def test_the_readme_opens_with_its_title_and_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    visible = [
        line
        for line in re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL).splitlines()
        if line.strip()
    ]
    assert visible[0] == "# trails"
    assert visible[1] == "```bash"
    assert visible[2].startswith("python3 -m venv .venv && .venv/bin/pip install")
    assert visible[3].startswith("python3 -m venv .venv && .venv/bin/pip install")
    assert visible[4] == "```"
    assert " -q " not in visible[2] + visible[3] or "minutes" in text.split("##")[0]


def test_shapes_path_is_the_shapes_that_ship(tmp_path: Path) -> None:
    done = subprocess.run(
        [TRAILS, "shapes", "--path"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip())
    assert path.name == "shapes.ttl" and path.is_file()
    assert path.read_bytes() == (ROOT / "ontologies" / "shapes.ttl").read_bytes()
    printed = subprocess.run(
        [TRAILS, "shapes"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert printed.returncode == 0 and printed.stdout == path.read_text(encoding="utf-8")


def test_the_wheel_carries_the_shapes() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"ontologies" = "trails/_data/ontologies"' in pyproject


def test_pyshacl_validates_a_session_outside_a_checkout(tmp_path: Path) -> None:
    from trails.agent import Session
    from trails.store import IRI, open_store

    store = open_store("memory:")
    session = Session(principal="did:example:alice", store=store)
    session.context.close()
    graph = IRI(str(session.context.session))
    (tmp_path / "session.nt").write_bytes(store.dump(format="ntriples", graph=graph))
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'{Path(sys.executable).parent}/pyshacl -s "$({TRAILS} shapes --path)" '
            "-i none session.nt",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Conforms: True" in done.stdout
