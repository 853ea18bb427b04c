"""The strategy registry: planner name -> planner, looked up by name.

``Session`` (``trails.agent.context``) runs the planner its strategy names, and
the planners import ``trails.agent.context`` (for ``Session``). So that the
session needs no planner import, statically or not, the planners are found
here, by name: each planner module registers itself at its bottom
(``register_strategy(NAME, module)``), and ``STRATEGIES`` knows the built-in
names and the module that defines each (``BUILTIN_STRATEGIES``), importing that
module (which then registers itself) the first time its name is looked up. This
module imports nothing from the rest of ``trails.agent`` but ``trails.agent.result``.

``STRATEGIES`` is the registry: a mutable mapping whose keys are the built-in
names (in ``BUILTIN_STRATEGIES`` order) followed by any other registered name;
``trails.agent.planners.STRATEGIES`` is the same object.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from trails.errors import UserError

if TYPE_CHECKING:
    from trails.agent.result import PlanResult
    from trails.kernel.context import Context

__all__ = [
    "BUILTIN_STRATEGIES",
    "STRATEGIES",
    "Strategy",
    "StrategyTable",
    "register_strategy",
]

SessionT = TypeVar("SessionT", contravariant=True)

#: Built-in strategy name -> the module that defines (and registers) it, in listing order.
BUILTIN_STRATEGIES: dict[str, str] = {
    "react": "trails.agent.planners.react",
    "plan_and_execute": "trails.agent.planners.plan_and_execute",
    "reflexion": "trails.agent.planners.reflexion",
    "plan_execute_reflect": "trails.agent.planners.plan_execute_reflect",
    "behaviour_tree": "trails.agent.planners.behaviour_tree",
}


@runtime_checkable
class Strategy(Protocol[SessionT]):
    """What a registered planner satisfies: ``run`` and ``arun``, for a session of type ``SessionT``.

    Generic in the session so this module need not import ``Session``;
    ``trails.agent.planners.base.PlanningStrategy`` is this protocol for a ``Session``.
    """

    def run(
        self,
        goal: str,
        *,
        llm: Any,
        session: SessionT,
        ctx: Context | None = None,
        max_steps: int = 10,
        tools: Any = None,
        tool_filter: Any = None,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        max_wall_time_s: float | None = None,
    ) -> PlanResult: ...

    async def arun(
        self,
        goal: str,
        *,
        llm: Any,
        session: SessionT,
        ctx: Context | None = None,
        max_steps: int = 10,
        tools: Any = None,
        tool_filter: Any = None,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        max_wall_time_s: float | None = None,
    ) -> PlanResult: ...


class StrategyTable(MutableMapping[str, Strategy[Any]]):
    """Strategy name -> planner; a built-in planner not imported yet is imported on lookup.

    Membership and iteration do not import anything: the built-in names are
    known before their modules are loaded.

    Args:
        builtin: built-in name -> the module that registers it, in listing order.
    """

    def __init__(self, builtin: Mapping[str, str]) -> None:
        self._modules = dict(builtin)
        self._planners: dict[str, Strategy[Any]] = {}

    def __getitem__(self, name: str) -> Strategy[Any]:
        planner = self._planners.get(name)
        if planner is None and name in self._modules:
            importlib.import_module(self._modules[name])  # it registers itself
            planner = self._planners.get(name)
        if planner is None:
            raise KeyError(name)
        return planner

    def __setitem__(self, name: str, planner: Strategy[Any]) -> None:
        self._planners[name] = planner

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._modules.pop(name, None)
        self._planners.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._planners or name in self._modules

    def _names(self) -> list[str]:
        return [*self._modules, *(n for n in self._planners if n not in self._modules)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return f"StrategyTable({', '.join(self._names())})"


#: The registry: strategy name -> planner module (``Session(strategy=...)``, ``[agent] strategy``).
STRATEGIES = StrategyTable(BUILTIN_STRATEGIES)


def register_strategy(name: str, strategy: object) -> None:
    """Register a planner under ``name`` (a planner module calls it at its bottom).

    Args:
        name: the strategy name, as ``Session(strategy=...)`` gives it after
            normalising (lower case, ``_`` for ``-``).
        strategy: the planner: a module (or any object) with ``run`` and ``arun``.

    Raises:
        UserError: a name that is not normalised, or a planner without ``run``/``arun``.
    """
    if not isinstance(name, str) or not name or name != name.strip().lower().replace("-", "_"):
        raise UserError(f"a strategy name must be lower case with '_' for '-', not {name!r}")
    if not isinstance(strategy, Strategy):
        raise UserError(f"strategy {name!r} must have run() and arun(), not {strategy!r}")
    STRATEGIES[name] = strategy
