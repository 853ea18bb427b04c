"""Plan-and-Execute's worked example, as written: one plan, executed by the kernel."""

import json
from trails import capability
from trails.agent import Session
from trails.agent.planners import plan_and_execute
from trails.llm import LLMClient

@capability(id="notes.search", description="Search notes by tag.")
def search(ctx, tag: str) -> dict:
    return {"hits": ["n1", "n2"]}

plan = {"plan": [
    {"action": "notes.search", "action_input": {"tag": "urgent"}, "rationale": "list"},
    {"action": "finish", "action_input": {}, "final_answer": "2 urgent notes."},
]}
fenced = "```json\n" + json.dumps(plan) + "\n```"
client = LLMClient.mock(response=lambda _m: fenced)
result = plan_and_execute.run("Find urgent notes.", llm=client, session=Session(principal="did:local:alice"))

print(result.answer, result.stopped, [step.action for step in result.steps])
