"""The session that learns a memory seals the digest of the text it learned.

Memory graphs are not sealed, so the learning session's own (sealed) graph states, on the
memory, ``trails:learnedSha256``: the sha256 of the memory's text as learned (its topic and
tags have their own digests in the memory graph and are not part of it). Verification
compares the memory graph's digest with it (``tests/evidence/test_learned_memory.py``).
"""

from __future__ import annotations

import hashlib

import trails.memory as memory
from trails.evidence.ledger import ledger_iri, seals_of_graph
from trails.evidence.seal import install_sealer
from trails.evidence.verify import verify
from trails.kernel import Context
from trails.prov import Recorder, T
from trails.store import IRI, Literal, Solutions, Store

_LEARNED = "SELECT ?m ?d $g WHERE { GRAPH $g { ?m <https://w3id.org/trails/ns#learnedSha256> ?d } }"


def _learned(store: Store, session: IRI) -> dict[str, str]:
    result = store.query(_LEARNED, {"g": session})
    assert isinstance(result, Solutions)
    return {str(row["m"]): d.value for row in result if isinstance(d := row.get("d"), Literal)}


def test_the_learned_digest_is_in_the_sealed_session_graph(store: Store) -> None:
    recorder = Recorder(store)
    install_sealer(recorder)
    with Context.open("did:local:alice", recorder=recorder) as ctx:
        one = memory.learn("Deploys freeze on Fridays", topic="ops", tags=["a"], ctx=ctx)
        two = memory.learn("Deploys freeze on Fridays", topic="other", scope="shared", ctx=ctx)
        many = memory.learn_many(["the CFO prefers e-mail", "invoices go out monthly"], ctx=ctx)
        session = IRI.trusted(str(ctx.session))
    learned = _learned(store, session)
    text = hashlib.sha256(b"Deploys freeze on Fridays").hexdigest()
    # the text alone: the same text under another topic and tags has the same digest
    assert learned[one.id] == learned[two.id] == text
    for m, content in zip(many, ["the CFO prefers e-mail", "invoices go out monthly"], strict=True):
        assert learned[m.id] == hashlib.sha256(content.encode()).hexdigest()
    assert len(learned) == 4
    # the memory graph's own digest is the same, and the session graph holding it is sealed
    for m in (one, two, *many):
        result = store.query(
            "SELECT ?d $m WHERE { GRAPH ?g { $m a <https://w3id.org/trails/ns#Memory> ; "
            "<https://w3id.org/trails/ns#sha256> ?d } }",
            {"m": IRI.trusted(m.id)},
        )
        assert isinstance(result, Solutions)
        assert [row["d"] for row in result] == [Literal(learned[m.id])]
    assert seals_of_graph(store, ledger_iri(recorder.minter), session)
    assert verify(store, session=session).ok
    assert verify(store).ok
    assert T.learnedSha256.startswith("https://w3id.org/trails/ns#")
