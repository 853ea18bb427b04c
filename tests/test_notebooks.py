"""Every notebook's code cells run, in order, in one namespace: the notebooks cannot rot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path) -> None:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    namespace: dict[str, object] = {"__name__": "__notebook__"}
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            code = compile("".join(cell["source"]), f"{path.name}[{index}]", "exec")
            exec(code, namespace)
