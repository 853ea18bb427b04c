"""Package names that load their module on first lookup, so importing a package stays cheap.

Every ``trails`` command is a process of its own, and most read a little of the store:
``trails sessions`` needs the catalogue, not the SPARQL endpoint, the verifier or the
event models. A package that imported every module it exports made each command pay for
all of them (``trails sessions`` spent about two thirds of its CPU importing). A package
built with ``lazy_names`` keeps its public names (``from trails.evidence import verify``
works as before) but imports the module behind a name only when that name is first
looked up (PEP 562), and keeps it, so a lookup costs once. The names stay in the
package's ``__all__`` and, for type checkers, in an ``if TYPE_CHECKING:`` import.

One name needs care: a function named as its module (``trails.evidence.verify`` the
module, ``verify`` the function). When a package imported the module to re-export the
function, the function won; the import system sets the package's attribute to a
submodule when the submodule is first imported, which a lazy package would let stand.
Such a package's attribute is therefore set to the name the submodule defines, as before.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["lazy_names"]


class _LazyPackage(ModuleType):
    """A package whose re-exported names win over its submodules of the same name."""

    _lazy: Mapping[str, str] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        if (
            isinstance(value, ModuleType)
            and self._lazy.get(name) == value.__name__
            and hasattr(value, name)
        ):
            value = getattr(value, name)
        super().__setattr__(name, value)


def lazy_names(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` whose ``names`` map to their modules.

    ``names`` maps each exported name to the module that defines it. An unknown name raises
    ``AttributeError`` as a plain module would.
    """
    module = sys.modules[package]
    module.__class__ = _LazyPackage
    vars(module)["_lazy"] = dict(names)

    def __getattr__(name: str) -> Any:
        source = names.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        vars(module)[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted((set(vars(module)) - {"_lazy"}) | set(names))

    return __getattr__, __dir__
