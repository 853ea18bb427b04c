"""Persistent memory from an agent session, as the runtime guide writes it.

The two ``trails.invoke`` calls are the guide's, unchanged; the lines before them
make the ``session`` they use.
"""

import trails
from trails.agent import Session

session = Session(principal="did:local:alice")

# Agent persists a conclusion to shared memory
trails.invoke("memory.learn", {
    "content": "The SPARQL proxy rejects SERVICE queries",
    "confidence": 0.99,
    "topic": "security",
    "agent_did": session.auth.did,
    "scope": "shared",
})

# Another agent (or same agent, later session) recalls it
hits = trails.invoke("memory.recall", {
    "context": "SPARQL security",
    "scope": "shared",
})

for hit in hits:
    print(hit.content, "learned by", hit.memory.agent_did)
