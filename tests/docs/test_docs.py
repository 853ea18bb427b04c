"""Docs are tests: every Python and shell example in README.md and docs/*.md runs as written.

Each document runs in a fresh process in an empty directory (``doc_runner.py``
says how: blocks in order, one namespace, shell commands against the store the
Python blocks left, placeholders and long-running servers handled as a reader
would). Where a doc names a real model, the scripted model server answers in the
provider's wire format (``scripted_models.py``); nothing else can be reached
(``TRAILS_FORBID_REAL_MODELS=1``). A failure names the document and line.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from doc_runner import DocFailure, blocks, commands
from scripted_models import ScriptedModels

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).resolve().parent / "doc_runner.py"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def run_doc(path: Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    label = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    return subprocess.run(
        [sys.executable, str(RUNNER), str(path), label],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_examples_run(
    path: Path, tmp_path: Path, fresh_env: dict[str, str], models: ScriptedModels
) -> None:
    done = run_doc(path, tmp_path, fresh_env)
    assert done.returncode == 0, f"{done.stderr}\n--- output:\n{done.stdout[-4000:]}"
    assert "blocks ran" in done.stdout


def test_every_doc_with_code_has_runnable_blocks() -> None:
    """Not-run markers stay rare: each one is visible, has a reason, and most blocks run."""
    total = skipped = 0
    for path in DOCS:
        for block in blocks(path.read_text(encoding="utf-8"), path.name):
            if block.lang in ("python", "bash", "sh", "shell", "console"):
                total += 1
                skipped += block.skip is not None
    assert total > 20 and skipped * 5 < total, (skipped, total)


# -- the collector itself ---------------------------------------------------------------


def test_a_failing_python_block_names_the_document_and_line(
    tmp_path: Path, fresh_env: dict[str, str]
) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text(
        "# Guide\n\n```python\nx = 1\n```\n\ntext\n\n```python\ny = x + 1\nraise ValueError('boom')\n```\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    done = run_doc(doc, work, fresh_env)
    assert done.returncode == 1
    assert "guide.md:10: the python block failed" in done.stderr
    assert 'File "guide.md", line 11' in done.stderr and "ValueError: boom" in done.stderr


def test_shell_blocks_see_the_store_python_blocks_left_and_placeholders_are_filled(
    tmp_path: Path, fresh_env: dict[str, str]
) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text(
        "```python\nimport trails\nfrom trails.agent import Session\n"
        "s = Session(principal='did:local:a')\ns.context\ns.persist()\n```\n\n"
        "```bash\n.venv/bin/trails sessions\n"
        "trails query session-timeline \\\n  --param session=urn:trails:session:...\n```\n"
        "```console\n$ trails report SESSION --out r.html\nsome output\n```\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    done = run_doc(doc, work, fresh_env)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "=== guide.md: 3 blocks ran" in done.stdout
    assert (work / "r.html").is_file()
    assert re.search(
        r"\$ trails query session-timeline .*session=urn:trails:session:[0-9a-f-]{36}", done.stdout
    )


def test_a_failing_command_names_its_line(tmp_path: Path, fresh_env: dict[str, str]) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text("text\n\n```bash\ntrue\n# a comment\ntrails no-such-command\n```\n")
    work = tmp_path / "work"
    work.mkdir()
    done = run_doc(doc, work, fresh_env)
    assert done.returncode == 1
    assert "guide.md:6: `trails no-such-command` exited with 2" in done.stderr


def test_not_run_markers_need_a_reason_and_are_reported(
    tmp_path: Path, fresh_env: dict[str, str]
) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text(
        "*Not run by the docs tests: needs a GPU.*\n```python\nraise SystemExit(3)\n```\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    done = run_doc(doc, work, fresh_env)
    assert done.returncode == 0 and "guide.md:3 not run: needs a GPU" in done.stdout
    with pytest.raises(DocFailure, match="must read"):
        blocks("*not run by the docs tests*\n```python\npass\n```\n", "g.md")


def test_a_hidden_not_run_marker_is_understood(tmp_path: Path, fresh_env: dict[str, str]) -> None:
    doc = tmp_path / "README.md"
    doc.write_text(
        "# Title\n\n<!-- Not run by the docs tests: builds a fresh environment. -->\n"
        "```bash\nexit 3\n```\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    done = run_doc(doc, work, fresh_env)
    assert done.returncode == 0, done.stderr
    assert "README.md:5 not run: builds a fresh environment" in done.stdout
    with pytest.raises(DocFailure, match="must read"):
        blocks("<!-- not run by the docs tests -->\n```python\npass\n```\n", "g.md")


def test_an_output_block_is_what_the_python_block_printed(
    tmp_path: Path, fresh_env: dict[str, str]
) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text(
        "```python\nprint('a', 1)\nprint('b')\n```\n\n```output\na 1\nb\n```\n\n"
        "```python\nprint('c')\n```\n\n```output\nd\n```\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    done = run_doc(doc, work, fresh_env)
    assert done.returncode == 1
    assert "guide.md:16: the python block above printed something else" in done.stderr
    assert "guide.md:7" not in done.stderr  # the first one matched


def test_commands_join_continuations_and_drop_prompts() -> None:
    assert commands("a \\\n  b\n# c\n\nd\n", "bash") == [(0, "a    b"), (4, "d")]
    assert commands("$ trails x\noutput\n$ trails y\n", "console") == [
        (0, "trails x"),
        (2, "trails y"),
    ]


def test_long_running_servers_start_answer_and_stop(
    tmp_path: Path, fresh_env: dict[str, str]
) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text(
        "```bash\noxigraph serve --location ./ox --bind 127.0.0.1:7878\n"
        "curl -sf http://127.0.0.1:7878/query --data-urlencode 'query=ASK {}'\n```\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    done = run_doc(doc, work, fresh_env)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "7878" not in done.stdout  # mapped to a free port
