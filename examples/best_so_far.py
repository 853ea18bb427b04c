"""Extracting best-so-far, the guide's recipe as written, on a run that hits its budget.

The recipe uses ``goal``, ``c`` and ``s``; the lines before it make them: a
scripted model whose every turn costs $0.20 and searches again, so the run
stops on ``max_cost_usd=0.25`` after two turns with the last observation kept.
"""

import json

from trails import capability
from trails.agent import Session
from trails.llm import LLMClient, Response


@capability(id="notes.search", description="Search notes by tag.")
def search(ctx, tag: str) -> dict:
    return {"hits": ["n1", "n2"], "tag": tag}


turn = '```json\n{"thought": "look again", "action": "notes.search", "action_input": {"tag": "urgent"}}\n```'
goal = "Find urgent notes."
c = LLMClient.mock(response=lambda _m: Response(text=turn, model="mock", usd=0.20))
s = Session(principal="did:local:alice")

# -- the recipe ------------------------------------------------------------------
from trails.agent.planners import react

result = react.run(
    goal,
    llm=c,
    session=s,
    max_cost_usd=0.25,
    max_wall_time_s=30.0,
)

if result.stopped == "goal_achieved":
    final = result.answer                         # trusted final answer
elif result.stopped in {"max_cost", "max_tokens", "max_wall_time"}:
    # Best-so-far: walk the trajectory tail-first for the most recent
    # non-error, non-"finish" observation and parse it.
    best = None
    for step in reversed(result.steps):
        obs = step.observation
        if obs is None or (isinstance(obs, str) and obs.startswith("error:")):
            continue
        best = obs
        break
    # ``result.answer`` is the same observation stringified — cheapest
    # fallback when a dict isn't required.
    final = best if best is not None else result.answer
else:  # "error"
    raise RuntimeError(result.error)

print(result.stopped, json.dumps(final, sort_keys=True))
