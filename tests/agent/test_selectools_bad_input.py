"""Bad input to the selectools ``AgentConfig`` gets one clear ``UserError`` when the config is
made, never a ``TypeError`` / ``ValueError`` from deep in a run."""

from __future__ import annotations

from typing import Any

import pytest

from trails import AgentConfig
from trails.errors import UserError


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("request_timeout", "x", "request_timeout= must be a number > 0 or None"),
        ("request_timeout", 0, "request_timeout= must be a number > 0 or None"),
        ("observers", None, "observers= must be a list of observers"),
        ("model", 5, "model= must be a non-empty str"),
        ("trace_metadata", [1], "trace_metadata= must be a dict"),
        ("session_id", 5, "session_id= must be a non-empty str or None"),
        ("parent_run_id", 3, "parent_run_id= must be a non-empty str or None"),
        ("summarize_model", 4, "summarize_model= must be a non-empty str or None"),
        ("confirm_action", "x", "confirm_action= must be a function"),
        ("routing_only", "yes", "routing_only= must be True or False"),
        ("temperature", "hot", "temperature= must be a number >= 0"),
        ("tool_timeout_seconds", "x", "tool_timeout_seconds= must be a number > 0 or None"),
        ("cost_warning_threshold", -1, "cost_warning_threshold= must be a number > 0 or None"),
    ],
)
def test_agent_config_refuses_wrong_types_with_one_clear_error(
    field: str, value: Any, message: str
) -> None:
    with pytest.raises(UserError, match=message):
        AgentConfig(**{field: value})


def test_agent_config_defaults_still_accepted() -> None:
    config = AgentConfig(request_timeout=None, trace_metadata={"user_id": "u1"}, observers=[])
    assert config.request_timeout is None and config.model == "gpt-5-mini"


@pytest.mark.parametrize("provider", ["openai", 5, {"model": "x"}])
def test_agent_refuses_a_provider_that_is_no_llm_client(provider: Any) -> None:
    from trails import Agent

    with pytest.raises(UserError, match="Agent provider= must be an LLMClient"):
        Agent(provider=provider)


def test_fallback_provider_refuses_members_that_are_no_llm_client() -> None:
    from trails.agent.selectools import FallbackProvider, LocalProvider

    with pytest.raises(UserError, match=r"FallbackProvider providers\[1\] must be an LLMClient"):
        FallbackProvider([LocalProvider(["a"]), "openai"])


@pytest.mark.parametrize("value", ["a", 0, True, 2.5])
def test_register_executor_agent_refuses_a_bad_max_iterations(value: Any) -> None:
    from trails.agent.planners.plan_execute_reflect import register_executor_agent
    from trails.llm import LLMClient

    with pytest.raises(UserError, match="max_iterations must be an int >= 1"):
        register_executor_agent("bad-iterations", llm=LLMClient.mock([]), max_iterations=value)


def test_agent_refuses_one_string_as_its_tool_list() -> None:
    from trails import Agent

    with pytest.raises(UserError, match="Agent tools= must be a list"):
        Agent(tools="notes.search")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("checkpoint_id", "principal", "message"),
    [
        (5, "did:local:alice", "tree_state checkpoint id must be a non-empty str, not 5"),
        ("", "did:local:alice", "tree_state checkpoint id must be a non-empty str"),
        ("cp", None, "tree_state principal= must be a non-empty str, not None"),
    ],
)
def test_tree_state_refuses_a_bad_id_or_principal(
    checkpoint_id: Any, principal: Any, message: str
) -> None:
    from trails.agent.planners.behaviour_tree import tree_state

    with pytest.raises(UserError, match=message):
        tree_state(checkpoint_id, principal=principal)


def test_the_selectools_guide_names_the_module_every_seed_import_comes_from() -> None:
    """The seed's ``from selectools import X`` names all import from ``trails.agent.selectools``,
    and the guide says so (``from trails import InMemoryCache`` is no trails name)."""
    from pathlib import Path

    import trails.agent.selectools as compat

    seed_names = [
        "Agent", "AgentConfig", "AgentObserver", "LoggingObserver", "AsyncAgentObserver",
        "EntityMemory", "KnowledgeGraphMemory", "KnowledgeMemory", "InMemoryCache",
        "ResponseFormat", "FallbackProvider", "OpenAIProvider", "AnthropicProvider",
        "ToolPolicy", "LocalProvider",
    ]  # fmt: skip
    assert [n for n in seed_names if not hasattr(compat, n)] == []
    guide = (Path(__file__).resolve().parents[2] / "docs" / "selectools.md").read_text()
    intro = guide.split("```", 1)[0]
    assert "trails.agent.selectools" in intro and "InMemoryCache" in intro


def test_a_checkpoint_is_not_resumed_for_another_goal(tmp_path: Any) -> None:
    from trails.agent import Session
    from trails.agent.planners import behaviour_tree
    from trails.agent.planners.behaviour_tree import Action, Checkpointer, Sequence
    from trails.demo import register_capabilities
    from trails.llm import LLMClient

    register_capabilities()
    alice = Session(principal="did:local:alice")
    tree = Sequence(Action("notes.search", {"tag": "a"}), Action("notes.search", {"tag": "b"}))
    behaviour_tree.run(
        "Search twice.", llm=LLMClient.mock([]), session=alice, max_steps=1, tree=tree,
        checkpointer=Checkpointer("goal-bound"),
    )  # fmt: skip
    with pytest.raises(UserError, match="checkpoint 'goal-bound' is of another goal"):
        behaviour_tree.run(
            "Delete everything.", llm=LLMClient.mock([]), session=alice,
            checkpointer=Checkpointer("goal-bound"),
        )  # fmt: skip
