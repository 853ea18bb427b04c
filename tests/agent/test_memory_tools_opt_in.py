"""The memory's capabilities are offered to the model only once a program asks for memory.

Importing ``trails.memory`` registers ``memory.learn``, ``memory.recall`` ... and every
planner offers the registered capabilities (``tools=None``). ``trails.agent`` must not
import it on its own: a session without memory would otherwise send five tools it never
asked for in every prompt (longer prompts, dearer calls, other replays).
"""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json
import trails, trails.agent
from trails.agent.loop import tools as loop_tools
before = loop_tools._candidates(None)
from trails.agent.knowledge import KnowledgeMemory
KnowledgeMemory()
print(json.dumps([before, loop_tools._candidates(None)]))
"""


def test_memory_tools_are_offered_only_once_memory_is_asked_for() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert before == []  # importing trails and its agents registers no capability
    assert {"memory.learn", "memory.recall", "memory.list"} <= set(after)  # the user asked
