"""``trails replay`` / ``trails diff`` and the pytest plugin, over a real on-disk store."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from replay_support import Tools, plan_session, react_session

from trails.cli import main
from trails.store import open_store

SUPPORT = Path(__file__).resolve().parent

# the plugin is loaded by its pytest11 entry point once trails is installed; name it
# explicitly only when the installed metadata predates the entry point
_INSTALLED = any(
    ep.value == "trails.testing.pytest_plugin" for ep in entry_points(group="pytest11")
)
PLUGIN = [] if _INSTALLED else ["-p", "trails.testing.pytest_plugin"]


@pytest.fixture(autouse=True)
def _only_support_tools(tools: Tools) -> None:
    """Record and rerun with only the support tools registered, as the processes that rerun
    these sessions have (other test modules register capabilities of their own, which would
    otherwise be part of the recorded tool catalogue). The registry is restored after each test.
    """
    from trails.kernel import registry

    registry._handlers.clear()
    tools.register()


def _record(location: Path, tools: Tools) -> tuple[str, str, str]:
    """Two identical react sessions and a plan-and-execute one, persisted; the store closed."""
    store = open_store(location)
    try:
        a, b = react_session(store), react_session(store)
        c = plan_session(store)
        return a.persist(), b.persist(), c.persist()
    finally:
        store.close()


def test_replay_prints_the_session(
    tmp_path: Path, tools: Tools, capsys: pytest.CaptureFixture[str]
) -> None:
    location = tmp_path / "store"
    a, _, _ = _record(location, tools)
    assert main(["--store", str(location), "replay", a]) == 0
    out = capsys.readouterr().out
    assert f"session    {a}" in out
    assert "principal  did:example:ålice" in out
    assert "kb.fail [error]" in out and "LLM completions (3)" in out


def test_replay_rerun_exit_codes(
    tmp_path: Path, tools: Tools, capsys: pytest.CaptureFixture[str]
) -> None:
    location = tmp_path / "store"
    _, _, c = _record(location, tools)
    assert main(["--store", str(location), "replay", c, "--rerun"]) == 0
    assert "identical" in capsys.readouterr().out

    tools.weather = "🌧 9 °C"
    args = ["--store", str(location), "replay", c, "--rerun", "--capabilities", "live"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "DIVERGED" in out and "weather.now" in out and "🌧" in out


def test_replay_of_an_unknown_iri_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    location = tmp_path / "store"
    open_store(location).close()
    assert main(["--store", str(location), "replay", "urn:trails:session:nope"]) == 2
    assert "urn:trails:session:nope names no session" in capsys.readouterr().err


def test_diff(tmp_path: Path, tools: Tools, capsys: pytest.CaptureFixture[str]) -> None:
    location = tmp_path / "store"
    a, b, c = _record(location, tools)
    assert main(["--store", str(location), "diff", a, b]) == 0
    assert "identical" in capsys.readouterr().out
    assert main(["--store", str(location), "diff", a, c]) == 1
    out = capsys.readouterr().out
    assert "first divergence at activity #0 (inputs)" in out
    assert out.count("  A: ") == 1 and out.count("  B: ") == 1


PLUGIN_TEST = """
import pytest

from replay_support import Tools

STORE = {store!r}


@pytest.fixture(autouse=True)
def capabilities():
    tools = Tools()
    tools.weather = {weather!r}
    tools.register()


@pytest.mark.trails_replay({iri!r}, store=STORE, capabilities="live")
def test_marked():
    pass


def test_fixture(trails_replay):
    report = trails_replay({iri!r}, store=STORE)
    assert report.identical and report.results[0].stopped == "goal_achieved"
"""


@pytest.mark.parametrize("weather", ["☀ 23 °C", "🌧 9 °C"])
def test_the_pytest_plugin_turns_a_session_into_a_test(
    tmp_path: Path, tools: Tools, weather: str
) -> None:
    location = tmp_path / "store"
    _, _, c = _record(location, tools)
    (tmp_path / "t").mkdir()
    test_file = tmp_path / "t" / "test_recorded.py"
    test_file.write_text(PLUGIN_TEST.format(store=str(location), iri=str(c), weather=weather))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            *PLUGIN,
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path / "t"),
            str(test_file),
        ],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=tmp_path / "t",
        env={**_env(), "PYTHONPATH": str(SUPPORT)},
    )
    if weather.startswith("☀"):
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "2 passed" in proc.stdout
    else:
        # live capabilities see the change: the marked test fails; recorded ones do not
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "1 failed, 1 passed" in proc.stdout
        assert "DIVERGED" in proc.stdout and "weather.now" in proc.stdout


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    return env


def test_the_marker_needs_one_iri(tmp_path: Path) -> None:
    test_file = tmp_path / "test_bad.py"
    test_file.write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.trails_replay()
            def test_nothing():
                pass
            """
        )
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            *PLUGIN,
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(test_file),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(),
    )
    assert proc.returncode != 0
    assert "takes one session IRI" in proc.stdout + proc.stderr


def test_a_rerun_is_recorded_as_a_new_session_of_the_store_and_diffs_as_identical(
    tmp_path: Path, tools: Tools, capsys: pytest.CaptureFixture[str]
) -> None:
    from trails.kernel import registry
    from trails.prov.vocab import T
    from trails.testing.rerun import compare, trajectory

    location = tmp_path / "store"
    _, _, c = _record(location, tools)
    assert main(["--store", str(location), "replay", c, "--rerun"]) == 0
    out = capsys.readouterr().out
    new = out.split("recorded as ", 1)[1].split()[0]
    assert f"trails diff {c} {new} --html" in out
    store = open_store(location)
    try:  # marked as the rerun of the original, and the same trajectory
        assert store.query(
            "ASK { GRAPH $g { $g $rel $c } }", {"g": _iri(new), "rel": T.rerunOf, "c": _iri(c)}
        )
        assert compare(trajectory(store, c), trajectory(store, new)) is None
        before = len(store.graphs())
    finally:
        store.close()
    assert main(["--store", str(location), "diff", c, new, "--html", "http://h:1"]) == 0
    assert "console: http://h:1/console/diff?a=" in capsys.readouterr().out
    # a capability missing: refused before anything is recorded (no empty session left)
    registry._handlers.clear()
    assert main(["--store", str(location), "replay", c, "--rerun"]) == 2
    store = open_store(location)
    try:
        assert len(store.graphs()) == before
    finally:
        store.close()
    # --scratch: the rerun is not recorded
    tools.register()
    assert main(["--store", str(location), "replay", c, "--rerun", "--scratch"]) == 0
    assert "recorded as" not in capsys.readouterr().out


def _iri(text: str) -> object:
    from trails.store.terms import IRI

    return IRI(text)
