"""What a call of a mounted MCP tool adds to its invocation: the server that ran it.

A capability mounted from an MCP server is invoked like any other, so its call
is a ``trails:CapabilityInvocation`` whose plan is the capability. This event
rides in the same write (``trails.kernel.riders``) and says which server
answered: the invocation is also ``prov:wasAssociatedWith`` a ``trails:McpServer``
(a ``prov:SoftwareAgent`` with its name, version and transport), and the
capability is a ``trails:McpTool`` with the tool's name on that server.
"""

from __future__ import annotations

from urllib.parse import quote

from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

__all__ = ["McpToolCalled", "server_iri"]


def server_iri(base: str, name: str, version: str, transport: str) -> IRI:
    """The IRI of an MCP server agent: one per name, version and transport."""
    parts = ":".join(quote(part, safe="-._~") for part in (name, version, transport))
    return IRI.trusted(f"{base}mcp-server:{parts}")


class McpToolCalled(Event):
    """The MCP server behind one invocation of a mounted tool."""

    activity: str
    capability_id: str
    tool: str
    server_name: str
    server_version: str
    transport: str

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        server = server_iri(b.minter.base, self.server_name, self.server_version, self.transport)
        b.types(server, T.McpServer, PROV.SoftwareAgent, PROV.Agent)
        b.label(server, f"MCP server {self.server_name} {self.server_version}")
        b.value(server, T.mcpServerName, self.server_name)
        b.value(server, T.mcpServerVersion, self.server_version)
        b.value(server, T.mcpTransport, self.transport)
        b.add(a, PROV.wasAssociatedWith, server)
        tool = b.minter.capability(self.capability_id)
        b.types(tool, T.McpTool)
        b.value(tool, T.mcpToolName, self.tool)
        b.add(tool, PROV.wasAttributedTo, server)
