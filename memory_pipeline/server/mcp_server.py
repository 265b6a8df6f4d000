"""The MCP server (``memory-pipeline mcp``): tools over one ``Memory``, on stdio or streamable HTTP.

Tools, named as the ecosystem's memory servers name them: ``search_memory``, ``add_memory``,
``add_document`` (HTML, PDF, DOCX in base64), ``save_observation``, ``list_observations``,
``set_observation_status``, ``list_memories``, ``get_episode``, ``read_episode`` (one page of
a long episode), ``forget``, ``status`` (the tools themselves live in ``mcp_tools``, over
``mcp_context``). Results carry ids, title, occurredAt, score and snippet. Over HTTP each
request's bearer token scopes the tools exactly as it scopes the HTTP API (``access``); on
stdio the client acts as the local user, or with ``--token``'s scope. An expected failure is a
tool error with its plain message; nothing else leaks a traceback.
"""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecuritySettings,
)

from memory_pipeline.memory import Memory
from memory_pipeline.server.access import Access
from memory_pipeline.server.guard import Exposure, RequestGuard
from memory_pipeline.server.mcp_context import MemoryServer, ToolContext
from memory_pipeline.server.mcp_quality_tools import QUALITY_TOOLS
from memory_pipeline.server.mcp_tools import TOOLS
from memory_pipeline.version import __version__

INSTRUCTIONS = (
    "Long-term memory. search_memory finds what was written, by meaning and by words, inside one "
    "memory (list_memories names them); add_memory stores a new episode (add_document a file); "
    "save_observation records a short statement about the person or the world, after showing the "
    "close ones already saved; forget deletes an episode for good."
)


def build_mcp_server(
    mem: Memory,
    stdio_access: Callable[[], Access] = Access.everything,
    exposure: Exposure | None = None,
) -> MCPServer:
    """The server with every tool of ``mcp_tools`` over one ``ToolContext``; ``stdio_access``
    is the access of a client without HTTP headers (stdio). With ``exposure`` (served over HTTP)
    every call's access comes from its own request's token as the HTTP API decides it."""
    server = MemoryServer(
        ToolContext(mem, stdio_access, exposure),
        name="memory_pipeline",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    for tool in (*TOOLS, *QUALITY_TOOLS):
        server.tool()(tool)
    return server


def streamable_http_app(memory: Memory, exposure: Exposure):
    """The MCP server as an ASGI app serving streamable HTTP at ``/mcp`` (stateless: each request
    stands alone, so every request's own token decides what it may do), behind the same guard
    as the HTTP API: Host and Origin, tokens beyond loopback, JSON bodies only. The SDK's own
    Host check is off: it knows only the loopback names, so it refused every request to a
    server bound beyond loopback, and knows no reverse proxy."""
    app = build_mcp_server(memory, exposure=exposure).streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return RequestGuard(
        app,
        exposure,
        memory.tokens_configured,
        json_posts=True,
        buffer_body=DEFAULT_MAX_REQUEST_BODY_SIZE,
    )
