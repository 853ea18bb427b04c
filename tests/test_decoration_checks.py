"""What a session and a capability are declared with is checked where it is declared.

An empty principal is refused by ``Context.open`` (never recorded as the configured
default); a capability's ``cost_estimate`` is a mapping of numbers or one number of US
dollars, and anything else is refused by ``@capability`` with one line, so no later
command (``trails capabilities``, ``trails mcp serve``) meets it as a traceback.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trails import capability
from trails.errors import UserError
from trails.kernel import Context
from trails.kernel.registry import get_capability
from trails.store import Store

TRAILS = (sys.executable, "-m", "trails.cli")


@pytest.mark.parametrize("principal", ["", "   ", "\t\n"])
def test_an_empty_principal_is_refused(store: Store, principal: str) -> None:
    with pytest.raises(UserError, match="principal must be a non-empty"):
        Context.open(principal=principal)
    assert not list(store.graphs())  # no session recorded for anybody


def test_no_principal_is_still_the_configured_one(store: Store) -> None:
    ctx = Context.open()
    assert ctx.principal == "did:local:anonymous"
    ctx.close()


def test_a_float_cost_estimate_is_us_dollars() -> None:
    @capability(id="shop.price", cost_estimate=0.02)
    def price(item: str) -> float:
        """Price an item."""
        return 1.0

    @capability(id="shop.free", cost_estimate=0)
    def free(item: str) -> float:
        return 0.0

    assert dict(get_capability("shop.price").cost_estimate or {}) == {"usd": 0.02}
    assert get_capability("shop.price").manifest()["cost_estimate"] == {"usd": 0.02}
    assert get_capability("shop.free").manifest()["cost_estimate"] == {"usd": 0.0}


@pytest.mark.parametrize(
    ("estimate", "why"),
    [
        ("cheap", "a number of US dollars or a mapping"),
        (True, "a number of US dollars or a mapping"),
        ([0.02], "a number of US dollars or a mapping"),
        (-0.5, "a finite number at least 0"),
        (math.nan, "a finite number at least 0"),
        (math.inf, "a finite number at least 0"),
        ({"usd": "0.02"}, "'usd' must be a finite number at least 0"),
        ({"usd": -1}, "'usd' must be a finite number at least 0"),
        ({"usd": False}, "'usd' must be a finite number at least 0"),
        ({1: 0.02}, "names must be non-empty strings"),
        ({"": 0.02}, "names must be non-empty strings"),
    ],
)
def test_a_cost_estimate_that_is_not_one_is_refused_at_decoration(estimate: Any, why: str) -> None:
    with pytest.raises(UserError, match=f"capability 'shop.bad': cost_estimate.*{why}"):

        @capability(id="shop.bad", cost_estimate=estimate)
        def bad(item: str) -> float:
            return 1.0


def test_trails_capabilities_and_mcp_list_a_float_cost_estimate(tmp_path: Path) -> None:
    (tmp_path / "pricing.py").write_text(
        "from trails import capability\n\n\n"
        '@capability(id="shop.price", cost_estimate=0.02)\n'
        "def price(item: str) -> float:\n"
        '    """Price an item."""\n'
        "    return 1.0\n"
    )
    for fmt in ("json", "mcp", "jsonld"):
        done = subprocess.run(
            [*TRAILS, "capabilities", "--import", "pricing", "--format", fmt],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        listed = json.loads(done.stdout)
        assert "shop.price" in done.stdout
        assert fmt == "mcp" or "0.02" in done.stdout, listed  # MCP lists no cost


def test_a_bad_cost_estimate_module_fails_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "pricey.py").write_text(
        "from trails import capability\n\n\n"
        '@capability(id="shop.price", cost_estimate="cheap")\n'
        "def price(item: str) -> float:\n"
        "    return 1.0\n"
    )
    done = subprocess.run(
        [*TRAILS, "capabilities", "--import", "pricey"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cost_estimate" in done.stderr
