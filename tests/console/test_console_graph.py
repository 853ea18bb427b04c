"""The provenance graph's data (``trails.server.console.graph.fold``): list members folded, path marked.

Plain triples in, the drawable nodes and edges out: an entity whose IRI ends in a
bare number is folded into the collection holding it, relations are named, the
goal-to-answer path is the chain of recorded relations between them, and the JSON
the page embeds cannot close its ``<script>`` element.
"""

from __future__ import annotations

import json

from trails.server.console.graph import fold, script_json

P = "http://www.w3.org/ns/prov#"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
S = "urn:trails:session:s1"
RUN, C1, C2 = "urn:trails:activity:r", "urn:trails:activity:c1", "urn:trails:activity:c2"


def triples() -> list[tuple[str, str, str]]:
    out = [
        (S, TYPE, P + "Activity"),
        (RUN, TYPE, P + "Activity"),
        (RUN, P + "wasInformedBy", S),
        (RUN, LABEL, "react run"),
        (S + ":projection", TYPE, P + "Entity"),
        (S + ":projection", P + "wasGeneratedBy", S),
        ("did:local:alice", TYPE, P + "Agent"),
        ("urn:trails:model:m", TYPE, P + "Agent"),
        ("urn:trails:model:m", P + "actedOnBehalfOf", "did:local:alice"),
    ]
    for i in range(5):
        member = f"{S}:projection:history:{i}"
        out += [(member, TYPE, P + "Entity"), (S + ":projection", P + "hadMember", member)]
    for n, (c, at) in enumerate(((C1, "2026-01-01T00:00:01Z"), (C2, "2026-01-01T00:00:02Z"))):
        out += [
            (c, TYPE, P + "Activity"),
            (c, P + "wasInformedBy", RUN),
            (c, P + "startedAtTime", at),
            (c, P + "used", c + ":prompt"),
            (c, P + "wasAssociatedWith", "urn:trails:model:m"),
            (c + ":completion", P + "wasGeneratedBy", c),
            (c + ":completion", P + "wasDerivedFrom", c + ":prompt"),
            (c, LABEL, f"completion {n}"),
        ]
    return out


def test_list_members_fold_into_their_collection_and_the_path_runs_goal_to_answer() -> None:
    runs = [{"run": RUN, "goal": "find <b>it</b>", "answer": "found"}]
    data = fold(triples(), runs)
    ids = {n["id"]: n for n in data["nodes"]}
    assert data["folded"] == 5 and not [i for i in ids if i.rsplit(":", 1)[-1].isdigit()]
    projection = ids[S + ":projection"]
    assert projection["members"] == 5 and projection["label"].endswith("(5)")
    assert "holds 5 × history" in projection["full"]
    assert ids["urn:trails:model:m"]["kind"] == "agent"
    relations = {e["relation"] for e in data["edges"]}
    assert {"wasInformedBy", "used", "wasGeneratedBy", "actedOnBehalfOf"} <= relations
    assert "hadMember" not in relations  # folded away
    # the goal is the run, the answer what the last completion generated, and the path
    # between them is the chain of relations: run <- c2 <- its completion
    assert ids[RUN]["end"] == "goal" and ids[RUN]["label"] == "goal: find <b>it</b>"
    assert ids[C2 + ":completion"]["end"] == "answer"
    on_path = {i for i, n in ids.items() if n["path"]}
    assert on_path == {RUN, C2, C2 + ":completion"}
    assert sum(e["path"] for e in data["edges"]) == 2
    # entities minted from an activity name it by its start order
    assert ids[C1 + ":prompt"]["label"] == "prompt of #0"


def test_activities_are_numbered_by_the_time_they_started_not_its_spelling() -> None:
    # as a store spells them, 00:00:01.12Z starts after 00:00:01.1Z but sorts before it
    moved = [
        (a, p, {"2026-01-01T00:00:01Z": "2026-01-01T00:00:01.12Z",
                "2026-01-01T00:00:02Z": "2026-01-01T00:00:01.1Z"}.get(o, o))
        for a, p, o in triples()
    ]  # fmt: skip
    ids = {n["id"]: n for n in fold(moved, [{"run": RUN}])["nodes"]}
    assert ids[C2 + ":prompt"]["label"] == "prompt of #0"
    assert ids[C1 + ":prompt"]["label"] == "prompt of #1"


def test_a_session_without_runs_has_no_path_and_labels_are_cut() -> None:
    long = "x" * 80
    data = fold([(S, TYPE, P + "Activity"), (S, LABEL, long)])
    assert not data["path"] and data["nodes"][0]["label"] == "x" * 27 + "…"
    assert long in data["nodes"][0]["full"]


def test_the_embedded_json_cannot_close_its_script_element() -> None:
    text = script_json({"label": "</script><script>alert(1)</script> & more"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["label"] == "</script><script>alert(1)</script> & more"


def test_a_large_graph_keeps_the_path_and_the_most_connected_nodes() -> None:
    runs = [{"run": RUN, "goal": "g", "answer": "a"}]
    extra = [(f"urn:trails:entity:e{i}", TYPE, P + "Entity") for i in range(50)]
    data = fold(triples() + extra, runs, max_nodes=8)
    ids = {n["id"] for n in data["nodes"]}
    assert len(ids) == 8 and data["left_out"] == len(fold(triples() + extra, runs)["nodes"]) - 8
    assert {RUN, C2, C2 + ":completion"} <= ids  # the path is always drawn
    assert all(e["source"] in ids and e["target"] in ids for e in data["edges"])
