"""The strategy registry: planners register by name, ``Session`` finds them by name.

``trails.agent.context`` imports no planner; ``Session.run`` looks its strategy
up in ``trails.agent.strategies.STRATEGIES``, which imports a built-in planner's
module the first time its name is asked for. The names moved out of
``context.py``, ``planners/base.py`` and ``persistence.py`` are the same objects
at their old import paths.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import trails.agent.context as context
import trails.agent.persistence as persistence
import trails.agent.planners as planners
import trails.agent.planners.base as base
from trails.agent import PlanningStrategy, PlanResult, Session, history, projection, result
from trails.agent.planners import (
    behaviour_tree,
    plan_and_execute,
    plan_execute_reflect,
    react,
    reflexion,
)
from trails.agent.strategies import BUILTIN_STRATEGIES, STRATEGIES, register_strategy
from trails.errors import UserError
from trails.llm import LLMClient

ROOT = Path(__file__).resolve().parents[2]

FINISH = (
    '```json\n{"thought": "done", "action": "finish", "action_input": {}, '
    '"final_answer": "42"}\n```'
)


def test_the_registry_lists_every_built_in_planner_in_order() -> None:
    assert planners.STRATEGIES is STRATEGIES
    assert (
        list(STRATEGIES)
        == list(BUILTIN_STRATEGIES)
        == [
            "react",
            "plan_and_execute",
            "reflexion",
            "plan_execute_reflect",
            "behaviour_tree",
        ]
    )
    modules = [react, plan_and_execute, reflexion, plan_execute_reflect, behaviour_tree]
    assert list(STRATEGIES.values()) == modules
    assert len(STRATEGIES) == 5 and "react" in STRATEGIES and "nope" not in STRATEGIES
    assert all(isinstance(m, PlanningStrategy) for m in STRATEGIES.values())
    assert all(BUILTIN_STRATEGIES[m.NAME] == m.__name__ for m in modules)


def test_an_unknown_name_is_a_key_error_of_the_registry() -> None:
    with pytest.raises(KeyError):
        STRATEGIES["chain_of_thought"]


def test_unknown_strategy_message_is_unchanged() -> None:
    with pytest.raises(UserError) as err:
        Session(principal="did:local:a", strategy="nope")
    assert str(err.value) == (
        "unknown strategy 'nope' (strategy=); choose one of react, plan_and_execute, "
        "reflexion, plan_execute_reflect, behaviour_tree"
    )


def test_moved_names_are_the_same_objects_at_their_old_paths() -> None:
    assert base.PlanResult is result.PlanResult is PlanResult
    assert base.PlanStep is result.PlanStep and base.StopReason is result.StopReason
    assert base.STOP_REASONS is result.STOP_REASONS
    assert base.BUDGET_STOPS is result.BUDGET_STOPS
    assert context.HistoryEntry is history.HistoryEntry
    assert context.TokenWindow is history.TokenWindow
    assert context.estimate_tokens is history.estimate_tokens
    assert persistence.ReplayOrigin is projection.ReplayOrigin
    assert persistence.is_sealed is projection.is_sealed
    assert persistence.persist is projection.persist
    assert persistence.project is projection.project


def _planner(calls: list[str]) -> Any:
    def run(goal: str, *, llm: Any, session: Session, **kwargs: Any) -> PlanResult:
        calls.append(goal)
        return PlanResult(answer="custom", steps=[], stopped="goal_achieved", strategy="custom")

    async def arun(goal: str, *, llm: Any, session: Session, **kwargs: Any) -> PlanResult:
        return run(goal, llm=llm, session=session, **kwargs)

    return SimpleNamespace(run=run, arun=arun)


def test_a_registered_planner_is_found_by_name() -> None:
    calls: list[str] = []
    register_strategy("custom", _planner(calls))
    try:
        assert list(STRATEGIES)[-1] == "custom"
        session = Session(principal="did:local:a", strategy="Custom", llm=LLMClient.mock())
        assert session.run("Go.").answer == "custom"
        assert calls == ["Go."]
    finally:
        del STRATEGIES["custom"]
    assert "custom" not in STRATEGIES and list(STRATEGIES) == list(BUILTIN_STRATEGIES)


@pytest.mark.parametrize(
    ("name", "planner", "problem"),
    [
        ("My-Planner", SimpleNamespace(run=print, arun=print), "lower case"),
        ("", SimpleNamespace(run=print, arun=print), "lower case"),
        ("mine", SimpleNamespace(run=print), "run() and arun()"),
    ],
)
def test_register_strategy_refuses_what_session_could_not_use(
    name: str, planner: Any, problem: str
) -> None:
    with pytest.raises(UserError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        register_strategy(name, planner)
    assert name not in STRATEGIES


# A fresh interpreter that imports trails.agent.context without the package's
# __init__ (which imports every planner): nothing imports a planner until a run
# asks the registry for one, which then imports the planner's module by name.
_FRESH = """
import sys, types
from pathlib import Path

import trails

package = types.ModuleType("trails.agent")
package.__path__ = [str(Path(trails.__file__).parent / "agent")]
sys.modules["trails.agent"] = package

from trails.agent.context import Session
from trails.llm import LLMClient
from trails.store import open_store

def planners_loaded():
    return sorted(m for m in sys.modules if m.startswith("trails.agent.planners"))

assert planners_loaded() == [], planners_loaded()
with Session(
    principal="did:local:a",
    strategy="react",
    llm=LLMClient.mock(response=FINISH),
    store=open_store("memory:"),
) as session:
    assert planners_loaded() == [], planners_loaded()
    result = session.run("What is six times seven?")
assert "trails.agent.planners.react" in planners_loaded()
print(result.strategy, result.stopped, result.answer)
"""


def test_session_runs_a_strategy_no_planner_was_imported_for(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "TRAILS_STORE": "memory:",
        "TRAILS_FORBID_REAL_MODELS": "1",
    }
    env.pop("TRAILS_CONFIG", None)
    code = f"FINISH = {FINISH!r}\n" + textwrap.dedent(_FRESH)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split() == ["react", "goal_achieved", "42"]
