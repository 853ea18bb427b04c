"""Packages load the module behind a name on first use; the names themselves are unchanged.

Each ``trails`` command is a process, so what ``import trails`` and a command's
package imports pull in is paid by every command a user (or a CI job) runs.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import trails.audit
import trails.compliance
import trails.controls
import trails.evidence
import trails.prov
import trails.server

PACKAGES = [
    trails.audit,
    trails.compliance,
    trails.controls,
    trails.evidence,
    trails.prov,
    trails.server,
]


def loaded_after(code: str, cwd: Path) -> list[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=True
    )
    return list(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_every_exported_name_resolves_to_what_its_module_defines(package: object) -> None:
    names = package.__all__  # type: ignore[attr-defined]
    for name in names:
        value = getattr(package, name)
        assert value is not None, name
        assert name in dir(package)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        package.nothing_here  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("trails.evidence.ledger", "Sealed", "trails.evidence.events"),
        ("trails.evidence.ledger", "KeyRotated", "trails.evidence.events"),
        ("trails.evidence.checkpoint", "VerificationCheckpointed", "trails.evidence.events"),
        ("trails.evidence.transparency", "LogExtended", "trails.evidence.events"),
        ("trails.evidence.witnessing", "HeadWitnessed", "trails.evidence.events"),
    ],
)
def test_an_event_moved_to_its_writer_keeps_its_old_name(old: str, name: str, new: str) -> None:
    module = importlib.import_module(old)
    assert name in module.__all__ and name in dir(module)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_a_function_named_as_its_module_wins_whichever_is_imported_first(tmp_path: Path) -> None:
    code = (
        "import trails.evidence.verify, trails.audit.export\n"
        "from trails.evidence import verify\n"
        "from trails.audit import export\n"
        "import trails.evidence, trails.audit\n"
        "assert callable(verify) and verify.__name__ == 'verify', verify\n"
        "assert callable(export) and export.__name__ == 'export', export\n"
        "assert trails.evidence.verify is verify and trails.audit.export is export\n"
    )
    loaded_after(code, tmp_path)  # check=True: an assertion that fails fails the run


def test_import_trails_loads_no_kernel_and_a_capability_still_imports(tmp_path: Path) -> None:
    assert "trails.kernel" not in loaded_after("import trails", tmp_path)
    loaded = loaded_after("from trails import capability, invoke, Context", tmp_path)
    assert "trails.kernel" in loaded


def test_listing_sessions_loads_neither_the_event_models_nor_the_web_stack(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from trails.cli import main\n"
        "try:\n"
        "    main(['sessions', '--store', 'memory:'])\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    loaded = loaded_after(code, tmp_path)
    assert "trails.cli.sessions" in loaded  # the command ran
    for heavy in ("pydantic", "trails.prov.events", "starlette", "trails.evidence.verify"):
        assert heavy not in loaded, heavy


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store on disk holding one sealed session (the sample session of every event kind)."""
    from trails.evidence.seal import install_sealer
    from trails.prov import Recorder
    from trails.store import open_store
    from trails.testing.conformance import record_sample_session

    where = tmp_path_factory.mktemp("recorded") / "store"
    with open_store(where) as store:
        recorder = Recorder(store)
        install_sealer(recorder)
        record_sample_session(recorder)
    return where


def command_loads(argv: list[str], cwd: Path) -> tuple[int, str, list[str]]:
    """A ``trails`` command run in a fresh interpreter: its exit status, what it printed
    and the modules it loaded."""
    code = (
        "import contextlib, io\n"
        "from trails.cli import main\n"
        "out = io.TextIOWrapper(io.BytesIO(), encoding='utf-8')\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    status = main({argv!r})\n"
        "out.flush()\n"
        "print(json.dumps([status, out.buffer.getvalue().decode()]))\n"
    )
    probe = f"import json, sys\n{code}print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    status, printed = json.loads(lines[-2])
    return int(status), str(printed), list(json.loads(lines[-1]))


@pytest.mark.parametrize(
    ("argv", "shows"),
    [
        (["verify", "--no-checkpoint"], "OK. 1 sealed graph(s) recomputed"),
        (["export", "--all", "--format", "nquads"], "<https://w3id.org/trails/ns#Seal>"),
        (["controls", "list"], "session"),
    ],
    ids=["verify", "export", "controls-list"],
)
def test_a_command_that_reads_the_store_never_builds_the_event_models(
    recorded: Path, tmp_path: Path, argv: list[str], shows: str
) -> None:
    status, printed, loaded = command_loads([*argv, "--store", str(recorded)], tmp_path)
    assert status == 0 and shows in printed, printed  # the command ran, and read the store
    for heavy in ("pydantic", "trails.prov.events", "trails.evidence.events"):
        assert heavy not in loaded, heavy


def test_a_verification_that_records_its_checkpoint_loads_the_models_then(
    recorded: Path, tmp_path: Path
) -> None:
    status, printed, loaded = command_loads(["verify", "--store", str(recorded)], tmp_path)
    assert status == 0 and "checkpoint recorded: " in printed, printed
    assert {"trails.evidence.events", "trails.prov.events"} <= set(loaded)
    _, again, _ = command_loads(["verify", "--quick", "--store", str(recorded)], tmp_path)
    assert "(quick, since the checkpoint of " in again, again  # the checkpoint reads back
