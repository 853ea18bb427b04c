"""Moved modules keep their old names for one release: the same objects, a DeprecationWarning.

``docs/moved.md`` is the table users read; ``trails._moved`` is the one the finder uses.
These tests hold them equal and import every old name the ways user code does.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trails._moved import MOVED, MOVED_NAMES
from trails.config import Settings

DOC = Path(__file__).resolve().parent.parent / "docs" / "moved.md"


def _doc_rows(heading: str) -> dict[str, str]:
    section = DOC.read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([\w.]+)` \| `([\w.]+)` \|$", section, flags=re.M))


def test_the_doc_lists_every_move() -> None:
    assert _doc_rows("Modules") == MOVED
    names = {f"{pkg}.{n}": f"{mod}.{n}" for pkg, d in MOVED_NAMES.items() for n, mod in d.items()}
    assert _doc_rows("Names") == names


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_name_is_the_new_module_with_a_warning(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(
        DeprecationWarning, match=rf"^{re.escape(old)} moved to {re.escape(MOVED[old])};"
    ):
        assert importlib.import_module(old) is new
    assert sys.modules[old] is new


def test_from_imports_and_attributes_of_old_names_resolve() -> None:
    from trails.evidence.seal import Sealer
    from trails.evidence.verify import verify

    sys.modules.pop("trails.audit.seal", None)
    with pytest.warns(DeprecationWarning, match="trails.audit.seal moved to trails.evidence.seal"):
        from trails.audit.seal import Sealer as old_sealer
    assert old_sealer is Sealer
    assert sys.modules["trails.audit.seal"].__spec__.name == "trails.evidence.seal"
    import trails.audit

    # a name the package exported (an import of the module ``trails.audit.verify`` earlier in
    # the process binds the module to that attribute instead, as any submodule import does)
    trails.audit.__dict__.pop("verify", None)
    with pytest.warns(
        DeprecationWarning, match="trails.audit.verify moved to trails.evidence.verify"
    ):
        assert trails.audit.verify is verify
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        trails.audit.nothing_here  # noqa: B018


def test_a_submodule_of_a_moved_package_is_not_loaded_twice() -> None:
    """``trails.audit.endpoint`` moved whole: its submodules are the server's, not copies."""
    import trails.server.auth

    for name in ("trails.audit.endpoint", "trails.audit.endpoint.auth"):
        sys.modules.pop(name, None)
    with pytest.warns(DeprecationWarning):
        old = importlib.import_module("trails.audit.endpoint.auth")
    assert old is trails.server.auth
    assert old.TokenTable is trails.server.auth.TokenTable


def test_a_plugin_path_of_the_old_name_still_loads() -> None:
    from trails.evidence.seal import install_sealer

    sys.modules.pop("trails.audit.seal", None)
    with pytest.warns(DeprecationWarning):
        assert Settings().plugin("trails.audit.seal:install_sealer") is install_sealer


def test_a_fresh_process_warns_at_the_importing_line(tmp_path: Path) -> None:
    """The warning points at the user's import, so ``-W error`` and filters by module work."""
    script = tmp_path / "user_code.py"
    script.write_text("import trails.audit.holds\n")
    done = subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", str(script)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (
        f"{script}:1: DeprecationWarning: trails.audit.holds moved to trails.compliance.holds"
        in (done.stderr)
    )


def test_nothing_in_trails_uses_an_old_name() -> None:
    """The package, its tests, benchmarks and docs import only the new names."""
    root = DOC.parent.parent
    old_names = re.compile(
        r"\b(" + "|".join(re.escape(o) for o in sorted(MOVED, key=len, reverse=True)) + r")\b"
    )
    allowed = {DOC, root / "src" / "trails" / "_moved.py", Path(__file__).resolve()}
    users = []
    for folder in ("src", "tests", "benchmarks", "docs", "examples", "notebooks"):
        for path in (root / folder).rglob("*"):
            if path.suffix not in {".py", ".md", ".ipynb", ".toml"} or path in allowed:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if old_names.search(line):
                    users.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    assert not users, "\n".join(users)
