"""Reflexion's worked example, as written: a ReAct pass judged by a critic."""

from trails.agent import Session
from trails.agent.planners import reflexion
from trails.llm import LLMClient, Message

inner = '```json\n{"thought":"done","action":"finish","action_input":{},"final_answer":"ok"}\n```'
critic = '```json\n{"verdict":"accept","critique":""}\n```'
def route(msgs: list[Message]) -> str:
    sys = next((m.content for m in msgs if m.role == "system"), "")
    return critic if "Reflexion critic" in sys else inner
client = LLMClient.mock(response=route)
result = reflexion.run("Answer the goal.", llm=client, session=Session(principal="did:local:alice"))

print(result.answer, result.stopped)
