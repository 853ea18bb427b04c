"""``Session`` reaches no planner: planners register themselves and ``Session`` looks them up.

``tests/test_house.py`` keeps the whole package free of circles; this test holds the agent
room to the layout that made its circle go: ``agent/context.py`` (``Session``) imports no
planner and not ``persistence.py`` (which builds on ``Session``), and the data modules it
builds on (history, projection, result, strategies) never lead back to it. The registry names
the built-in planner modules as strings and imports them on a lookup: a lookup, not an import.
"""

from __future__ import annotations

import pytest
from tests.test_house import Module, modules

AGENT = "trails.agent"


@pytest.fixture(scope="module")
def found() -> dict[str, Module]:
    """The package's modules and their imports, read once for the module's tests."""
    return modules()


def _reach(found: dict[str, Module], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in set(found[todo.pop()].imports) - seen:
            seen.add(w)
            todo.append(w)
    return seen


def test_context_leads_to_no_planner_and_persistence_to_nothing_that_imports_it(
    found: dict[str, Module],
) -> None:
    reached = _reach(found, f"{AGENT}.context")
    assert not {m for m in reached if m.startswith(f"{AGENT}.planners")}, reached
    assert f"{AGENT}.persistence" not in reached
    for data in ("history", "projection", "result", "strategies"):
        assert f"{AGENT}.context" not in _reach(found, f"{AGENT}.{data}"), data


def test_the_checker_sees_imports_in_functions_and_under_type_checking(
    found: dict[str, Module],
) -> None:
    drive = found[f"{AGENT}.loop.drive"].imports
    # drive imports parallel inside functions, and result.PlanResult under TYPE_CHECKING
    assert f"{AGENT}.loop.parallel" in drive
    assert f"{AGENT}.result" in drive


def test_the_loop_is_a_room_the_planners_stand_on(found: dict[str, Module]) -> None:
    """``agent/loop`` imports no planner; every planner reaches the loop through its package."""
    loop = {name for name in found if name.startswith(f"{AGENT}.loop")}
    assert len(loop) > 10, loop
    for name in loop:
        upward = {m for m in found[name].imports if m.startswith(f"{AGENT}.planners")}
        assert not upward, (name, upward)
    assert f"{AGENT}.loop" in found[f"{AGENT}.planners.react"].imports
    assert not {m for m in found if m.startswith(f"{AGENT}.planners._loop")}
