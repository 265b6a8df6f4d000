"""The MCP server (``memory-pipeline mcp``): tools over one ``Memory``, on stdio or streamable HTTP.

Tools, named as the ecosystem's memory servers name them: ``search_memory``, ``add_memory``,
``add_document`` (HTML, PDF, DOCX in base64), ``save_observation``, ``list_observations``,
``set_observation_status``, ``list_memories``, ``get_episode``, ``read_episode`` (one page of
a long episode), ``forget``, ``status``. Results carry ids, title, date, score
and snippet. Over HTTP each request's bearer token scopes the tools exactly as it scopes the HTTP
API (``access``); on stdio the client acts as the local user, or with ``--token``'s scope.
An expected failure is a tool error with its plain message; nothing else leaks a traceback.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecuritySettings,
)

from memory_pipeline.domain.policies import MAX_LIMIT
from memory_pipeline.errors import MemoryPipelineError
from memory_pipeline.memory import Memory
from memory_pipeline.server.access import (
    Access,
    Unauthorized,
    access_of_token,
    bearer,
    forget_visible,
    readable_memory,
    visible_episode,
    visible_episodes,
    visible_history,
    visible_page,
    visible_search,
    visible_status,
    writable_memory,
)
from memory_pipeline.server.guard import Exposure, RequestGuard
from memory_pipeline.server.index_queue import index_queue
from memory_pipeline.server.mcp_quality_tools import register_quality_tools
from memory_pipeline.version import __version__

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Long-term memory. search_memory finds what was written, by meaning and by words, inside one "
    "memory (list_memories names them); add_memory stores a new episode (add_document a file); "
    "save_observation records a short statement about the person or the world, after showing the "
    "close ones already saved; forget deletes an episode for good."
)


def match_note(response) -> str | None:
    """What an agent must read before the results: none of them answers, or they are ungraded."""
    if response.nothing_matches:
        return (
            f"Nothing in memory {response.memory!r} matches this question well: do not treat "
            "these results as an answer"
            + (" (they are the closest passages)." if response.results else ".")
        )
    return response.match_reason if response.match is None else None


def _hit(result) -> dict:
    hit = {
        "episodeId": result.episode_id,
        "chunkId": result.chunk_id,
        "title": result.title,
        "date": result.occurred_at.isoformat(),
        "kind": result.kind,
        "score": round(result.score, 6),
        "grade": result.grade,
        "snippet": result.snippet,
    }
    if result.sources is not None:  # an observation or a belief: where it came from
        hit.update(status=result.status, sources=result.sources)
    if result.superseded_at is not None:  # an earlier revision (history=true)
        hit.update(superseded=True, supersededAt=result.superseded_at.isoformat())
    return hit


def build_mcp_server(
    mem: Memory,
    stdio_access: Callable[[], Access] = Access.everything,
    exposure: Exposure | None = None,
) -> MCPServer:
    """The server; ``stdio_access`` is the access of a client without HTTP headers (stdio).
    With ``exposure`` (served over HTTP) every call's access comes from its own request's token
    as the HTTP API decides it, and a call without request headers gets none."""
    server = MCPServer(
        "memory_pipeline", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    def access_of(ctx: Context) -> Access:
        headers = ctx.headers
        if exposure is None:
            return stdio_access()
        if headers is None:
            raise Unauthorized("this server needs a token: Authorization: Bearer <token>")
        return access_of_token(
            mem, bearer(headers.get("authorization")), loopback=exposure.loopback
        )

    def call(ctx: Context, action: Callable[[Access], Any]) -> Any:
        try:
            return action(access_of(ctx))
        except MemoryPipelineError as exc:
            raise ToolError(str(exc)) from None
        except ToolError:
            raise
        except Exception:  # noqa: BLE001 - logged here; the client gets no traceback
            log.exception("tool failed")
            raise ToolError("internal error") from None

    @server.tool()
    def search_memory(
        memory: str,
        query: str,
        ctx: Context,
        limit: int = 8,
        policy: str | None = None,
        channels: str | None = None,
        contested: bool | None = None,
        history: bool = False,
    ) -> dict:
        """Search one memory for what was written about `query` (in your own words); up to
        `limit` results (1-50), best first, each with episodeId, title, date, score, grade and
        snippet. `match` is the best result's grade against the embedding model's calibration:
        strong, weak, or none (then `note` says that nothing in the memory answers the question
        and the results are only the closest passages); null when ungraded.
        `channels` (comma-separated: vector, keyword, graph, date, observation, belief) narrows the
        search; observations and beliefs come back with kind, status and sources. `contested`
        true also returns beliefs marked contested (default: the policy's choice, usually not).
        `history` true also returns earlier revisions of edited notes holding the query's words,
        after the others, marked superseded (default: only what is current)."""

        def run(access: Access) -> dict:
            if not 1 <= limit <= MAX_LIMIT:  # named as this tool names it, not as the CLI's flag
                raise ToolError(f"limit {limit}: must be between 1 and {MAX_LIMIT}")
            response = visible_search(
                mem,
                access,
                memory,
                query,
                policy=policy,
                limit=limit,
                channels=channels,
                contested=contested,
                history=history,
            )
            note = match_note(response)
            return {
                # First, so an agent reads it before any result: no result here is an answer.
                **({"note": note} if note else {}),
                "match": response.match,
                "memory": response.memory,
                "query": query,
                "results": [_hit(r) for r in response.results],
            }

        return call(ctx, run)

    @server.tool()
    def add_memory(
        memory: str,
        title: str,
        body: str,
        ctx: Context,
        kind: str = "note",
        occurred_at: str | None = None,
        salience: float | None = None,
        index: bool = True,
    ) -> dict:
        """Store a new episode (a note, a journal entry, a chat) in a memory; `occurred_at` is an
        ISO 8601 date or date-time (default: now). With `index` (default) it is chunked and embedded
        at once, so search_memory finds it."""

        def run(access: Access) -> dict:
            if not access.sees(memory):
                raise ToolError(f"this token cannot write to memory {memory!r}")
            access.require_write(memory)
            item = {
                "memory": memory,
                "kind": kind,
                "title": title,
                "body": body,
                "occurred_at": occurred_at or dt.datetime.now(dt.UTC).isoformat(),
                "salience": salience,
            }
            return stored(memory, mem.add([item]), index)

        return call(ctx, run)

    @server.tool()
    def add_document(
        memory: str,
        name: str,
        content_base64: str,
        ctx: Context,
        kind: str | None = None,
        content_type: str | None = None,
        modified_at: str | None = None,
        index: bool = True,
    ) -> dict:
        """Store an HTML, PDF or DOCX document (its bytes in base64; `name` its file name, whose
        suffix or `content_type` gives the format) as one episode, exactly as `memory-pipeline
        ingest FILE` would: title and date from the document, headings kept. With `index`
        (default) it is chunked and embedded at once."""

        def run(access: Access) -> dict:
            if not access.sees(memory):
                raise ToolError(f"this token cannot write to memory {memory!r}")
            access.require_write(memory)
            item: dict[str, Any] = {
                "memory": memory,
                "document": {"name": name, "content": content_base64},
            }
            if kind is not None:
                item["kind"] = kind
            for key, value in (("contentType", content_type), ("modifiedAt", modified_at)):
                if value is not None:
                    item["document"][key] = value
            return stored(memory, mem.add([item]), index)

        return call(ctx, run)

    def stored(memory: str, report, index: bool) -> dict:
        """The answer of an add tool: the new episode's id, or the rejection as a tool error;
        with ``index`` the episode is made searchable at once."""
        if report.rejections:
            raise ToolError(f"not stored: {report.rejections[0].reason}")
        document: dict[str, Any] = {
            "memory": memory,
            "episodeId": report.inserted_ids[0] if report.inserted_ids else None,
            "duplicate": bool(report.duplicates),
        }
        if index and report.inserted:
            ticket = index_queue(mem).request()  # one pass at a time; none started per call
            if not ticket.started:
                document["indexed"] = False
                document["note"] = "stored; " + ticket.to_json()["message"]
                return document
            try:
                ticket.future.result()
                document["indexed"] = True
            except MemoryPipelineError as exc:  # stored all the same; the next pass indexes it
                document["indexed"] = False
                document["note"] = f"stored; not searchable yet: {exc}"
        return document

    @server.tool()
    def save_observation(
        memory: str,
        text: str,
        ctx: Context,
        kind: str = "observation",
        confidence: float = 1.0,
        episode_ids: list[int] | None = None,
        passages: list[str] | None = None,
        contested: bool = False,
        decision: str = "ask",
        revise_id: int | None = None,
        force: bool = False,
    ) -> dict:
        """Save a short statement about the person or the world: `kind` "observation" (seen in
        the sources, cite them in `episode_ids`/`passages`) or "belief" (a conclusion;
        `contested` marks it disputed). Close existing statements come back in `close`: with
        `decision` "ask" (default) nothing is saved while any is close (`action` "undecided",
        `saved` false, `message` says so);
        call again with "add" to save it anyway, or "revise" and `revise_id` to replace one (the
        old one is kept as history), or drop it. A near-exact duplicate is refused (`action`
        "refused", `duplicateOf`) unless `force`."""

        def run(access: Access) -> dict:
            name = writable_memory(access, memory)
            return mem.observe(
                name,
                text,
                kind=kind,
                status="contested" if contested else "active",
                confidence=confidence,
                episode_ids=episode_ids or (),
                passages=passages or (),
                author="mcp",
                decision=decision,
                revise_id=revise_id,
                force=force,
            ).to_json()

        return call(ctx, run)

    @server.tool()
    def list_observations(
        memory: str,
        ctx: Context,
        kind: str | None = None,
        include_retired: bool = False,
        limit: int = 50,
    ) -> dict:
        """A memory's observations and beliefs, newest first (`kind` one of them; retired
        versions only with `include_retired`)."""

        def run(access: Access) -> dict:
            name = readable_memory(mem, access, memory)
            rows = mem.observations(name, kind=kind, with_retired=include_retired, limit=limit)
            return {"memory": name, "observations": [o.to_json() for o in rows]}

        return call(ctx, run)

    @server.tool()
    def set_observation_status(memory: str, observation_id: int, status: str, ctx: Context) -> dict:
        """Mark a statement "active", "contested" (disputed: left out of searches unless asked
        for) or "retired" (no longer true: never returned, kept as history)."""

        def run(access: Access) -> dict:
            name = writable_memory(access, memory)
            mem.set_observation_status(name, observation_id, status)
            return {"memory": name, "id": observation_id, "status": status}

        return call(ctx, run)

    @server.tool()
    def list_memories(ctx: Context) -> dict:
        """The memories you can search, with their episode, chunk and statement counts."""
        return call(
            ctx,
            lambda access: {
                "memories": [m.to_json() for m in mem.memories() if access.sees(m.name)]
            },
        )

    @server.tool()
    def get_episode(episode_id: int, ctx: Context) -> dict:
        """One stored episode in full (title, date, body, metadata) by its episodeId; a long one
        is better read with read_episode, page by page."""
        return call(ctx, lambda access: visible_episode(mem, access, episode_id))

    @server.tool()
    def list_episodes(
        memory: str, ctx: Context, limit: int = 50, before: int | None = None
    ) -> dict:
        """A memory's current episodes, newest first: id, title, kind, dates, source, sourceId
        and how many revisions its source has; `before` (an id) lists the ones after it."""
        return call(
            ctx,
            lambda access: visible_episodes(mem, access, memory, limit=limit, before=before),
        )

    @server.tool()
    def episode_history(episode_id: int, ctx: Context) -> dict:
        """Every revision of an episode's source (an edited note, a re-sent id), newest first:
        the current one and the superseded ones, with when each stopped being current."""
        return call(ctx, lambda access: visible_history(mem, access, episode_id))

    @server.tool()
    def read_episode(episode_id: int, ctx: Context, page: int = 1) -> dict:
        """Page `page` (from 1) of an episode: `text`, `pages` (how many there are), the page's
        `start`/`end` character offsets in the body and its `chunkIds` (search results name the
        same chunks). Read pages 1 to `pages` to have read the whole episode."""
        return call(ctx, lambda access: visible_page(mem, access, episode_id, page))

    @server.tool()
    def forget(
        memory: str, ctx: Context, episode_id: int | None = None, whole_memory: bool = False
    ) -> dict:
        """Delete an episode (`episode_id`) for good, with its chunks, vectors and telemetry; with
        `whole_memory` true and no episode_id, the whole mem. It is never found again."""

        def run(access: Access) -> dict:
            if episode_id is None and not whole_memory:
                raise ToolError("give episode_id, or whole_memory=true to forget the whole memory")
            return forget_visible(mem, access, memory, episode_id)

        return call(ctx, run)

    @server.tool()
    def status(ctx: Context) -> dict:
        """Counts, pending work and the serving embedding profile."""
        return call(ctx, lambda access: visible_status(mem, access))

    register_quality_tools(server, mem, call)
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
