"""The agent runtime's Quickstart, as written: a capability, a client, a ReAct run.

Run it with a local Ollama (``ollama serve``; ``OLLAMA_HOST`` points elsewhere),
or swap the client line for ``LLMClient.anthropic(...)`` or ``LLMClient.mock(...)``.
"""

from trails import capability
from trails.agent import Session
from trails.agent.planners import react
from trails.llm import LLMClient

@capability(id="notes.search", description="Search notes by tag.")
def search(ctx, tag: str) -> dict:
    return {"hits": ["n1", "n2"]}

# Pick any provider — same API:
client = LLMClient.ollama(model="qwen3:8b")          # local, free
# client = LLMClient.anthropic(model="claude-sonnet-4-5")  # cloud
# client = LLMClient.mock(response="finish")               # tests

sess = Session(principal="did:local:alice")
result = react.run("Find urgent notes.", llm=client, session=sess)
print(result.answer, "in", len(result.steps), "steps")
