"""How long each test module took in a whole run: the order the suite hands modules out.

The suite runs each module's tests on one worker (``--dist loadfile``); a worker that
takes a long module last keeps the others waiting. ``tests/conftest.py`` therefore puts
the modules that took longest first (the longest-first rule for spreading jobs over
workers), from ``tests/module_times.json``. A module the file does not name runs after
the named ones, in collection order; a stale file changes only the order, never what runs.

To refresh the file after a whole run with ``--junitxml=run.xml``::

    python tests/module_times.py run.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

__all__ = ["TIMES", "load", "times_from_junit"]

TIMES = Path(__file__).with_name("module_times.json")


def load(path: Path = TIMES) -> dict[str, float]:
    """Seconds per module path (``tests/...py``), or nothing when the file is missing."""
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def times_from_junit(report: Path) -> dict[str, float]:
    """Each module's seconds (setup, call and teardown of its tests) in a JUnit report."""
    seconds: Counter[str] = Counter()
    for case in ET.parse(report).iter("testcase"):
        parts = [p for p in case.get("classname", "").split(".") if not p[:1].isupper()]
        seconds["/".join(parts) + ".py"] += float(case.get("time", "0"))
    return {module: round(s, 1) for module, s in seconds.most_common()}


if __name__ == "__main__":
    TIMES.write_text(json.dumps(times_from_junit(Path(sys.argv[1])), indent=1) + "\n")
