"""The capability manifest: valid JSON-LD in the trails vocabulary, on ``trails serve`` and
``trails capabilities``, each capability the same IRI its recorded calls name as their plan.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp.types
import pytest
import rdflib
from pyld import jsonld

from trails import capability, invoke
from trails.kernel import Context
from trails.mcp import MountedServer, mount, unmount
from trails.mcp.manifest import capability_manifest, manifest_as
from trails.server import EndpointConfig, create_app
from trails.server.auth import load_tokens, token_entry
from trails.store import IRI, Store

ROOT = Path(__file__).resolve().parents[2]
TOY = Path(__file__).with_name("toy_server.py")
TRAILS_NS = "https://w3id.org/trails/ns#"
OUTSIDE = {  # the terms the manifest takes from RDF, RDFS and PROV
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
    "http://www.w3.org/2000/01/rdf-schema#comment",
    "http://www.w3.org/ns/prov#wasAttributedTo",
    "http://www.w3.org/ns/prov#SoftwareAgent",
}
TRAILS = str(Path(sys.executable).with_name("trails"))


@pytest.fixture
def offered(tmp_path: Path) -> Iterator[MountedServer]:
    @capability(
        id="notes.add",
        description="Add a note.",
        side_effects=True,
        cost_estimate={"usd": 0.02, "tokens": 1500},
        preconditions=["the notebook is open"],
    )
    def add(text: str) -> dict[str, str]:
        return {"added": text}

    server = mount([sys.executable, str(TOY), "stdio"], env={"TOY_MARKER": str(tmp_path / "pid")})
    assert server is not None
    yield server
    unmount(server.prefix)


def _terms(node: Any) -> Iterator[str]:
    """Every property and class IRI of an expanded JSON-LD document (not inside @json)."""
    if isinstance(node, list):
        for item in node:
            yield from _terms(item)
    elif isinstance(node, dict):
        if node.get("@type") == "@json":
            return
        for key, value in node.items():
            if key == "@type":
                yield from value
            elif not key.startswith("@"):
                yield key
            if key != "@type":
                yield from _terms(value)


def test_the_manifest_is_json_ld_whose_every_term_is_in_the_vocabulary(
    offered: MountedServer,
) -> None:
    expanded = jsonld.expand(capability_manifest())
    vocabulary = rdflib.Graph().parse(ROOT / "ontologies" / "trails.ttl")
    declared = {str(s) for s in vocabulary.subjects(rdflib.RDF.type, None)}
    terms = set(_terms(expanded))
    assert f"{TRAILS_NS}offers" in terms and f"{TRAILS_NS}precondition" in terms
    assert f"{TRAILS_NS}mcpServerName" in terms  # the mounted server is described
    unknown = {t for t in terms if t.startswith(TRAILS_NS) and t not in declared}
    assert not unknown, f"terms missing from trails.ttl: {sorted(unknown)}"
    assert {t for t in terms if not t.startswith(TRAILS_NS)} <= OUTSIDE
    graph = rdflib.Graph().parse(data=json.dumps(capability_manifest()), format="json-ld")
    assert len(graph) > 20  # it reads as RDF too


def test_each_entry_says_cost_effects_conditions_and_its_mcp_projection(
    offered: MountedServer,
) -> None:
    entries = {e["capabilityId"]: e for e in capability_manifest()["capabilities"]}
    notes = entries["notes.add"]
    assert notes["@id"] == "urn:trails:capability:notes.add"
    assert notes["costEstimate"] == {"usd": 0.02, "tokens": 1500}
    assert notes["sideEffects"] is True and notes["terminal"] is False
    assert notes["preconditions"] == ["the notebook is open"]
    assert notes["inputSchema"]["required"] == ["text"]
    tool = mcp.types.Tool.model_validate(notes["mcpProjection"])  # the SDK reads it
    assert tool.name == "notes.add" and tool.annotations is not None
    assert tool.annotations.destructive_hint is True
    sleep = entries["toy.sleep_ms"]
    assert "trails:McpTool" in sleep["@type"] and sleep["mcpToolName"] == "sleep_ms"
    assert sleep["attributedTo"]["mcpServerName"] == "toy"
    assert sleep["attributedTo"]["mcpServerVersion"] == "1.2.3"
    assert sleep["inputSchema"] == offered_schema(offered)
    assert {t["name"] for t in manifest_as("mcp")["tools"]} >= {"notes.add", "toy.sleep_ms"}
    plain = {c["id"]: c for c in manifest_as("json")["capabilities"]}
    assert plain["notes.add"]["preconditions"] == ["the notebook is open"]


def offered_schema(server: MountedServer) -> dict[str, Any]:
    from trails.kernel.registry import get_capability

    return dict(get_capability("toy.sleep_ms").manifest()["input_schema"])


def test_a_capability_of_the_manifest_is_the_plan_its_recorded_calls_name(
    offered: MountedServer, ctx: Context, store: Store
) -> None:
    invoke("toy.sleep_ms", {"ms": 1}, ctx=ctx)
    entry = next(
        e for e in capability_manifest()["capabilities"] if e["capabilityId"] == "toy.sleep_ms"
    )
    rows = store.query(
        "PREFIX prov: <http://www.w3.org/ns/prov#> SELECT ?cap ?server WHERE { GRAPH ?g {"
        " ?call prov:qualifiedAssociation/prov:hadPlan ?cap ; prov:wasAssociatedWith ?server ."
        " ?cap prov:wasAttributedTo ?server } }",
        {"cap": IRI(entry["@id"]), "server": IRI(entry["attributedTo"]["@id"])},
    )
    assert len(rows) == 1


def test_trails_serve_publishes_the_manifest_openly(
    offered: MountedServer, store: Store, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry("a-token-0123456789abcdef", "did:example:a", ["*"]))
    endpoint = create_app(store, load_tokens(tokens), EndpointConfig())

    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=endpoint.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://trails.test") as c:
            return await c.get("/.well-known/capabilities")  # no token: it is open

    try:
        response = asyncio.run(fetch())
    finally:
        endpoint.close()
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/ld+json")
    document = response.json()
    assert document["@type"] == "trails:CapabilityManifest"
    assert {"notes.add", "toy.sleep_ms"} <= {c["capabilityId"] for c in document["capabilities"]}


def test_trails_capabilities_prints_each_format(tmp_path: Path) -> None:
    (tmp_path / "shop_caps.py").write_text(
        "from trails import capability\n\n"
        "@capability(id='shop.buy', description='Buy an item.', side_effects=True,\n"
        "            cost_estimate={'usd': 3.0}, preconditions=['the basket is not empty'])\n"
        "def buy(item: str) -> str:\n"
        "    return item\n",
        encoding="utf-8",
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [TRAILS, "capabilities", "--import", "shop_caps", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )

    document = json.loads(run().stdout)
    [buy] = [c for c in document["capabilities"] if c["capabilityId"] == "shop.buy"]
    assert buy["preconditions"] == ["the basket is not empty"]
    assert buy["costEstimate"] == {"usd": 3.0}
    tools = json.loads(run("--format", "mcp").stdout)["tools"]
    assert [t["name"] for t in tools if t["name"] == "shop.buy"] == ["shop.buy"]
    plain = json.loads(run("--format", "json").stdout)["capabilities"]
    assert [c["side_effects"] for c in plain if c["id"] == "shop.buy"] == [True]
    missing = run("--import", "no_such_module_here")
    assert missing.returncode == 2
    assert missing.stderr.strip() == (
        "trails: error: --import no_such_module_here: No module named 'no_such_module_here'"
    )
