"""The public API is what ``__all__`` says, and changing it is a deliberate act."""

from __future__ import annotations

import importlib

import pytest

FROZEN = {
    "trails": [
        # selectools' names, lazily from trails.agent.selectools (``from trails import Agent``)
        "Agent",
        "AgentConfig",
        "AgentObserver",
        "AsyncAgentObserver",
        "ConversationMemory",
        "EntityMemory",
        "KnowledgeGraphMemory",
        "KnowledgeMemory",
        "LoggingObserver",
        "Message",
        "Role",
        "BudgetExceeded",
        "CapabilityError",
        "ConfigError",
        "Context",
        "PolicyDenied",
        "Session",
        "StoreError",
        "TrailsError",
        "UnknownCapability",
        "UserError",
        "ValidationError",
        "__version__",
        "ainvoke",
        "all_capabilities",
        "capability",
        "get_capability",
        "invoke",
    ],
    "trails.store": [
        "DATASET_FORMATS",
        "GRAPH_FORMATS",
        "IRI",
        "RESULT_FORMATS",
        "BNode",
        "Literal",
        "Quad",
        "QueryResult",
        "Solutions",
        "Store",
        "Term",
        "Triple",
        "ask",
        "construct",
        "default_store",
        "instant",
        "literal",
        "open_store",
        "reset_default_store",
        "select",
        "set_default_store",
        "to_python",
    ],
}


@pytest.mark.parametrize("module", sorted(FROZEN))
def test_all_is_frozen(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(FROZEN[module])
    for name in mod.__all__:
        assert hasattr(mod, name), name


@pytest.mark.parametrize(
    "module",
    [
        "trails.kernel",
        "trails.prov",
        "trails.store",
        "trails.audit",
        "trails.errors",
        "trails.config",
    ],
)
def test_every_exported_name_exists(module: str) -> None:
    mod = importlib.import_module(module)
    assert mod.__all__ and all(hasattr(mod, n) for n in mod.__all__)


def test_py_typed_ships() -> None:
    import trails

    assert (importlib.resources.files(trails) / "py.typed").is_file()  # type: ignore[attr-defined]
