"""What every MCP tool works over: the ``Memory``, who is calling (``access``), the index queue;
and ``call``, which runs a tool's action inside the caller's access with the tools' error rule."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memory_pipeline.errors import MemoryPipelineError
from memory_pipeline.memory import Memory
from memory_pipeline.server.access import Access, Unauthorized, access_of_token, bearer
from memory_pipeline.server.guard import Exposure
from memory_pipeline.server.index_queue import IndexQueue, index_queue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolContext:
    """One server's tools' world. ``stdio_access`` is the access of a client without HTTP
    headers (stdio); with ``exposure`` (served over HTTP) every call's access comes from its own
    request's token as the HTTP API decides it, and a call without request headers gets none."""

    memory: Memory
    stdio_access: Callable[[], Access] = Access.everything
    exposure: Exposure | None = None

    def access(self, ctx: Context) -> Access:
        if self.exposure is None:
            return self.stdio_access()
        headers = ctx.headers
        if headers is None:
            raise Unauthorized("this server needs a token: Authorization: Bearer <token>")
        return access_of_token(
            self.memory, bearer(headers.get("authorization")), loopback=self.exposure.loopback
        )

    @property
    def index_queue(self) -> IndexQueue:
        """The memory's index passes, one at a time, shared with the HTTP API in this process."""
        return index_queue(self.memory)


class MemoryServer(MCPServer):
    """An MCP server whose tools find their ``ToolContext`` through the call's ``Context``."""

    def __init__(self, context: ToolContext, **settings: Any):
        super().__init__(**settings)
        self.context = context


def call(ctx: Context, action: Callable[[ToolContext, Access], Any]) -> Any:
    """``action`` over the server's context and the caller's access. An expected failure is a
    tool error with its plain message; anything else is logged and the client gets no traceback."""
    server = ctx.mcp_server
    assert isinstance(server, MemoryServer), server
    tools = server.context
    try:
        return action(tools, tools.access(ctx))
    except MemoryPipelineError as exc:
        raise ToolError(str(exc)) from None
    except ToolError:
        raise
    except Exception:  # noqa: BLE001 - logged here; the client gets no traceback
        log.exception("tool failed")
        raise ToolError("internal error") from None
