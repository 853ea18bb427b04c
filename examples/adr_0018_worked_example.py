"""ADR-0018's worked example, as written, adapting only the app's own knowledge-graph read.

``ctx.graph.get(doc_id)`` is the application's own graph; here it is a dict of
filings. Everything else is the ADR's: no ``llm=`` anywhere (the client comes
from ``TRAILS_LLM`` or ``[llm] model`` in trails.toml), ``ctx.llm`` inside the
summarize capability is the session's client, and the ``ModelSpec`` that
``select_model`` picks is served by its own provider, configured the same way
(``TRAILS_LLM_OLLAMA`` / ``[llm.providers] ollama``).
"""

# user code                              (U)
# library code                           (L)
from trails import capability, Session   # L
from trails.agent import planners        # L
from trails.llm import select_model      # L

FILINGS = {"SKU-7-10Q": "Q1 filing: SKU-7 recall notice, corrective action plan filed."}

@capability(id="evidence.fetch",         # U
            description="Fetch a document from the evidence graph",
            cost_estimate={"usd": 0.0, "tokens": 0})
def fetch(ctx, doc_id: str):             # U
    return FILINGS.get(doc_id)           # U (app-level KG read; the ADR's ctx.graph.get)

@capability(id="evidence.summarize",     # U
            cost_estimate={"usd": 0.02, "tokens": 1500})
def summarize(ctx, text: str):           # U
    return ctx.llm.complete(             # U -> L (auto cost + prov)
        f"Summarize:\n{text}",
        model=select_model("summarize", budget_hint="cheap"),
    ).text

session = Session.new(                   # L (ephemeral, not KG-backed)
    strategy="react",                    # U (picks ReAct planner)
    principal="did:key:zAlice",          # U
    budget={"usd": 0.50, "tokens": 50_000},  # U (ADR-0012)
)
result = session.run(                    # L drives ReAct loop:
    "Summarize every regulatory filing "
    "touching product SKU-7 this quarter"
)                                        # each invoke() -> PROV (ADR-0009)
                                         # each LLM call -> PROV + cost
print(result.answer)                     # U
session.persist(graph="audit:SKU-7-Q1")  # U (opt-in KG write)
