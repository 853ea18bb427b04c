"""The diff page's rows (``trails.server.console.diff.steps``) agree with ``trails diff``.

Two trajectories are aligned by position; each row says which of action, inputs and
observation differ, and the row marked first is the divergence ``compare`` (what
``trails diff`` prints) finds, including a side that stops short or goes further.
"""

from __future__ import annotations

from trails.server.console.diff import steps
from trails.testing.rerun import Activity, compare


def act(index: int, action: str, inputs: str = "i", out: str = "o") -> Activity:
    return Activity(
        index=index,
        kind="invocation",
        activity=f"urn:trails:activity:{index}",
        step=index,
        action=action,
        status="ok",
        inputs=f'{{"x": "{inputs}"}}',
        inputs_sha256=inputs,
        observation=out,
        observation_sha256=out,
        error=None,
    )


def test_rows_align_and_the_first_divergence_is_compares() -> None:
    left = [act(0, "search"), act(1, "read"), act(2, "tag")]
    right = [act(0, "search"), act(1, "read", out="other"), act(2, "tag", inputs="j")]
    shown = steps(left, right)
    found = compare(left, right)
    assert found is not None and found.index == 1
    assert [r["differs"] for r in shown["rows"]] == [[], ["observation"], ["inputs"]]
    assert [r["first"] for r in shown["rows"]] == [False, True, False]
    assert shown["verdict"] == f"first divergence at activity #1 (observation): {found.detail}"
    # what changed, line by line: A's line taken out, B's put in
    assert shown["rows"][1]["changes"] == {"observation": "--- A\n+++ B\n@@ -1 +1 @@\n-o\n+other"}
    assert set(shown["rows"][2]["changes"]) == {"inputs"} and not shown["rows"][0]["changes"]


def test_a_side_that_stops_short_or_goes_further() -> None:
    left = [act(0, "search"), act(1, "read")]
    shown = steps(left, left[:1])
    assert shown["rows"][1]["b"] is None and shown["rows"][1]["differs"] == ["missing"]
    assert shown["divergence"] == {
        "index": 1,
        "field": "missing",
        "detail": "stopped after 1 of 2 activities",
    }
    shown = steps(left[:1], left)
    assert shown["rows"][1]["a"] is None and shown["rows"][1]["first"]
    same = steps(left, left)
    assert same["divergence"] is None and same["verdict"].startswith("identical")
