"""The capability manifest: what this agent offers others, with cost, effects and conditions.

Another agent (or its planner) deciding whether to call a capability needs more
than a name: what it takes and returns (JSON schemas), what it is estimated to
cost, whether it changes the world, whether it ends a run, and what must hold
for a call. ``capability_manifest`` describes every registered capability so,
as JSON-LD whose context is the trails vocabulary: each capability is the same
IRI its recorded invocations name as their plan, so a manifest read beside the
evidence joins it. Each entry carries its MCP projection (the ``Tool`` object an
MCP client lists), and a tool mounted from an MCP server names that server.

``trails serve`` publishes it at ``/.well-known/capabilities``; ``trails
capabilities`` prints it (``--format jsonld``, ``json`` or ``mcp``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from trails.kernel.registry import CapabilitySpec, all_capabilities
from trails.mcp.events import server_iri
from trails.mcp.mounts import McpToolSpec, mounted
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDFS, TRAILS, XSD

__all__ = ["CONTEXT", "FORMATS", "Format", "capability_manifest", "manifest_as", "mcp_tool"]

Format = Literal["jsonld", "json", "mcp"]
FORMATS: tuple[Format, ...] = ("jsonld", "json", "mcp")


def _json(term: str) -> dict[str, str]:
    return {"@id": f"trails:{term}", "@type": "@json"}


CONTEXT: dict[str, Any] = {
    "trails": str(TRAILS),
    "prov": str(PROV),
    "rdfs": str(RDFS),
    "xsd": str(XSD),
    "capabilities": {"@id": "trails:offers", "@container": "@set"},
    "capabilityId": "trails:capabilityId",
    "description": "rdfs:comment",
    "inputSchema": _json("inputSchema"),
    "outputSchema": _json("outputSchema"),
    "costEstimate": _json("costEstimate"),
    "sideEffects": "trails:sideEffects",
    "terminal": "trails:terminal",
    "preconditions": {"@id": "trails:precondition", "@container": "@set"},
    "mcpProjection": _json("mcpProjection"),
    "mcpToolName": "trails:mcpToolName",
    "attributedTo": {"@id": "prov:wasAttributedTo", "@type": "@id"},
    "mcpServerName": "trails:mcpServerName",
    "mcpServerVersion": "trails:mcpServerVersion",
    "mcpTransport": "trails:mcpTransport",
}
"""The JSON-LD context: every term is declared in ``ontologies/trails.ttl`` (or RDFS, PROV)."""


def mcp_tool(spec: CapabilitySpec) -> dict[str, Any]:
    """The capability as an MCP ``Tool`` (``name`` is the capability id)."""
    manifest = spec.manifest()
    tool: dict[str, Any] = {"name": spec.id}
    if spec.description:
        tool["description"] = spec.description
    tool["inputSchema"] = manifest["input_schema"] or {"type": "object"}
    output = manifest["output_schema"]
    if isinstance(output, dict) and output.get("type") == "object":  # MCP asks an object
        tool["outputSchema"] = output
    tool["annotations"] = {
        "readOnlyHint": not spec.side_effects,
        "destructiveHint": spec.side_effects,
    }
    return tool


def _entry(spec: CapabilitySpec, minter: Minter) -> dict[str, Any]:
    manifest = spec.manifest()
    entry: dict[str, Any] = {
        "@id": str(minter.capability(spec.id)),
        "@type": ["trails:Capability"],
        "capabilityId": spec.id,
        "description": spec.description,
        "inputSchema": manifest["input_schema"],
        "outputSchema": manifest["output_schema"],
        "costEstimate": manifest["cost_estimate"],
        "sideEffects": spec.side_effects,
        "terminal": spec.terminal,
        "preconditions": manifest["preconditions"],
        "mcpProjection": mcp_tool(spec),
    }
    server = mounted().get(spec.server) if isinstance(spec, McpToolSpec) else None
    if isinstance(spec, McpToolSpec) and server is not None:
        entry["@type"].append("trails:McpTool")
        entry["mcpToolName"] = str(spec.tool.get("name", ""))
        entry["attributedTo"] = {
            "@id": str(server_iri(minter.base, server.name, server.version, server.transport)),
            "@type": ["trails:McpServer", "prov:SoftwareAgent"],
            "mcpServerName": server.name,
            "mcpServerVersion": server.version or "unknown",
            "mcpTransport": server.transport,
        }
    return entry


def capability_manifest(
    base_iri: str = "urn:trails:", specs: Sequence[CapabilitySpec] | None = None
) -> dict[str, Any]:
    """Every registered capability (or ``specs``) as a JSON-LD ``trails:CapabilityManifest``.

    Args:
        base_iri: the base the capability IRIs are minted under (as the recorder's).
        specs: the capabilities to describe (default: every registered one).
    """
    minter = Minter(base_iri)
    chosen = all_capabilities() if specs is None else list(specs)
    return {
        "@context": CONTEXT,
        "@id": f"{base_iri}capabilities",
        "@type": "trails:CapabilityManifest",
        "capabilities": [_entry(spec, minter) for spec in chosen],
    }


def manifest_as(fmt: Format, base_iri: str = "urn:trails:") -> dict[str, Any]:
    """The manifest in ``fmt``: ``jsonld`` (the document above), ``json`` (each capability's
    plain manifest with its MCP projection) or ``mcp`` (a ``tools/list`` result)."""
    specs = all_capabilities()
    if fmt == "jsonld":
        return capability_manifest(base_iri, specs)
    if fmt == "mcp":
        return {"tools": [mcp_tool(spec) for spec in specs]}
    return {"capabilities": [spec.manifest() | {"mcp": mcp_tool(spec)} for spec in specs]}
