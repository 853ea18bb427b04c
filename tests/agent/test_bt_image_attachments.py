"""A behaviour-tree run's image attachments reach its agent nodes' model as images.

Each agent node's first user message carries the run's PNG/JPEG/GIF/WebP attachments as
``trails.llm.Image`` objects (the prompt still names them by name and digest), every
completion that sent them ``prov:used`` the run's ``trails:Attachment`` entities, and an
attachment no provider takes as an image (an SVG, or bytes that are not of their declared
type) is named in the prompt and never sent. The bytes are never recorded, and a session
holding attachments verifies clean.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from trails import capability
from trails.agent import Session
from trails.agent.planners import behaviour_tree
from trails.agent.planners.behaviour_tree import AgentNode, Attachment, Sequence
from trails.evidence.content import HASH_ONLY as CONTENT_HASH_ONLY
from trails.evidence.verify import verify
from trails.llm import Image, LLMClient, Message
from trails.llm.evidence import HASH_ONLY
from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, Store, open_store, set_default_store, to_python

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(16))
GIF = b"GIF89a" + bytes(10)

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

SENT = (
    PREFIXES
    + """
SELECT ?run ?c ?type WHERE { GRAPH ?g {
  ?c a trails:LLMCompletion ; prov:wasInformedBy+ ?run ; prov:used ?a .
  ?run prov:used ?a . ?a a trails:Attachment ; trails:mediaType ?type } } ORDER BY ?c ?type
"""
)


def turn(action: str, **extra: Any) -> str:
    return json.dumps({"thought": "t", "action": action, "action_input": {}} | extra)


def sent(store: Store, run: str) -> list[tuple[str, str]]:
    """(completion, media type) of each run attachment a completion of the run used."""
    result = store.query(SENT, {"run": IRI(run)})
    assert isinstance(result, Solutions)
    return [(str(r["c"]), str(to_python(r["type"]))) for r in result]


def test_every_turn_of_every_agent_node_sends_the_images(store: Store) -> None:
    @capability(id="diagram.count", description="Count the boxes.")
    def count() -> int:
        return 3

    client = LLMClient.mock([turn("diagram.count"), turn("finish", final_answer="3 boxes"),
                             turn("finish", final_answer="checked")])  # fmt: skip
    result = behaviour_tree.run(
        "Read the diagrams.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tree=Sequence(AgentNode("count the boxes"), AgentNode("check the count")),
        attachments=[Attachment("a.png", PNG, "image/png"), Attachment("b.gif", GIF, "image/gif"),
                     Attachment("notes.txt", b"boxes are blue", "text/plain")],
    )  # fmt: skip
    assert (result.stopped, result.answer) == ("goal_achieved", "checked")
    assert len(client.requests) == 3
    for request in client.requests:
        user = next(m for m in request.messages if m.role == "user")
        assert [(i.media_type, i.data) for i in user.images] == [
            ("image/png", PNG), ("image/gif", GIF),
        ]  # fmt: skip
        assert "a.png (image/png, 24 bytes, sha256 " in request.messages[0].content
        assert "attached as an image" in request.messages[0].content
    # each of the three completions used both image attachments of the run, not the text one
    used = sent(store, str(result.activity_iri))
    assert len({c for c, _ in used}) == 3
    assert sorted({t for _, t in used}) == ["image/gif", "image/png"] and len(used) == 6


def test_attachments_no_provider_takes_as_images_are_only_named(store: Store) -> None:
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"/>'
    client = LLMClient.mock([turn("finish", final_answer="seen")])
    result = behaviour_tree.run(
        "Look.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tree=AgentNode("look"),
        tools=[],
        attachments=[Attachment("logo.svg", svg, "image/svg+xml"),
                     Attachment("fake.png", b"not a png", "image/png")],
    )  # fmt: skip
    assert result.answer == "seen"
    [request] = client.requests
    assert all(not m.images for m in request.messages)
    assert request.messages[0].content.count("not shown (not text)") == 2
    assert sent(store, str(result.activity_iri)) == []


def test_arun_sends_the_images_too(store: Store) -> None:
    client = LLMClient.mock([turn("finish", final_answer="seen")])
    result = asyncio.run(
        behaviour_tree.arun(
            "Look.",
            llm=client,
            session=Session(principal="did:local:alice"),
            tree=AgentNode("look"),
            tools=[],
            attachments=[Attachment("a.png", PNG, "image/png")],
        )
    )
    assert result.answer == "seen"
    assert [i.data for i in client.requests[0].messages[1].images] == [PNG]
    assert [t for _, t in sent(store, str(result.activity_iri))] == ["image/png"]


def test_a_session_with_attachments_and_images_verifies_clean(tmp_path: Path) -> None:
    store = open_store(tmp_path / "store")
    set_default_store(store)
    try:
        session = Session(principal="did:local:alice")
        client = LLMClient.mock([turn("finish", final_answer="seen"), "a square"])
        behaviour_tree.run(
            "Look.",
            llm=client,
            session=session,
            tree=AgentNode("look"),
            tools=[],
            attachments=[Attachment("a.png", PNG, "image/png"),
                         Attachment("notes.txt", b"blue", "text/plain")],
        )  # fmt: skip
        # and a call given an image directly, which records its own attachment entity
        shown = [Message("user", "And this?", images=(Image("image/gif", GIF),))]
        client.complete(shown, ctx=session.context)
        session.persist()
        report = verify(store)
        # the bytes were never recorded: each attachment is a digest alone, as verify expects
        assert report.ok, report.findings
        assert report.content.hash_only == 3
        assert HASH_ONLY == CONTENT_HASH_ONLY
    finally:
        set_default_store(None)
        store.close()
