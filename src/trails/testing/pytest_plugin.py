"""A pytest plugin that turns a persisted session into a regression test.

Installed with trails (entry point ``pytest11``), or enabled with
``-p trails.testing.pytest_plugin``. Two ways to use it::

    @pytest.mark.trails_replay("urn:trails:session:...", store="./.trails/store")
    def test_refund_flow_still_behaves():
        pass                    # the marker reruns the session after the body

    def test_refund_flow(trails_replay):
        report = trails_replay("urn:trails:session:...", capabilities="live")
        assert report.results[0].answer == "refunded"

Either way the test fails, with the first diverging activity and both
sides, when the re-execution differs from the recording. The marker takes
the keywords of ``rerun`` (``planner``, ``tools``, ``capabilities``) and
``store`` (a location for ``open_store``; default: the process default store).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from trails.store import Store, default_store, open_store
from trails.testing.rerun import RerunReport, rerun

__all__ = ["check_replay", "pytest_configure", "pytest_runtest_call", "trails_replay"]

_MARKER = "trails_replay"


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``trails_replay`` marker."""
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(iri, *, store=None, planner=None, tools=None, capabilities='recorded'): "
        "rerun a persisted trails session and fail on the first divergence",
    )


def check_replay(
    iri: str,
    *,
    store: Store | str | None = None,
    planner: Any = None,
    tools: Any = None,
    capabilities: str = "recorded",
) -> RerunReport:
    """Rerun ``iri`` and fail the current test when it diverges.

    Args:
        iri: the persisted session (its graph or its IRI).
        store: a store, a location for ``open_store``, or None (the default store).
        planner: see ``rerun``.
        tools: see ``rerun``.
        capabilities: ``"recorded"`` (default) or ``"live"``.

    Returns:
        The report of an identical rerun.
    """
    opened = open_store(store) if isinstance(store, str) else None
    try:
        source: Store
        if opened is not None:
            source = opened
        elif store is not None and not isinstance(store, str):
            source = store
        else:
            source = default_store()
        report = rerun(
            iri,
            store=source,
            planner=planner,
            tools=tools,
            capabilities=capabilities,  # type: ignore[arg-type]
        )
    finally:
        if opened is not None:
            opened.close()
    if not report.identical:
        pytest.fail(report.describe(), pytrace=False)
    return report


@pytest.fixture
def trails_replay() -> Callable[..., RerunReport]:
    """``trails_replay(iri, **options)``: rerun a persisted session; fail on divergence."""
    return check_replay


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After a test marked ``trails_replay`` passes, rerun its session."""
    result = yield
    marker = item.get_closest_marker(_MARKER)
    if marker is not None:
        if len(marker.args) != 1:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{_MARKER} takes one session IRI, "
                f"not {len(marker.args)} arguments"
            )
        check_replay(marker.args[0], **marker.kwargs)
    return result
