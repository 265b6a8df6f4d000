"""The MCP tools, each a function over the server's ``ToolContext`` (``mcp_context``) and the
caller's access; ``TOOLS`` lists them for ``mcp_server.build_mcp_server``. Their docstrings are
what an agent reads; their answers are the core results' own documents (``to_json``,
``brief_json``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from memory_pipeline.domain.policies import MAX_LIMIT
from memory_pipeline.errors import MemoryPipelineError
from memory_pipeline.server.access import (
    Access,
    SearchOptions,
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
from memory_pipeline.server.mcp_context import ToolContext, call


def search_memory(
    memory: str,
    query: str,
    ctx: Context,
    limit: int = 8,
    policy: str | None = None,
    channels: str | None = None,
    contested: bool | None = None,
    history: bool = False,
    as_of: str | None = None,
    passages: bool = False,
) -> dict:
    """Search one memory for what was written about `query` (in your own words); up to
    `limit` results (1-50), best first, each with episodeId, title, occurredAt, score, grade and
    snippet. `match` is the best result's grade against the embedding model's calibration:
    strong, weak, or none (then `note` says that nothing in the memory answers the question
    and the results are only the closest passages); null when ungraded.
    `channels` (comma-separated: vector, keyword, graph, date, observation, belief) narrows the
    search; observations and beliefs come back with kind, status and sources. `contested`
    true also returns beliefs marked contested (default: the policy's choice, usually not).
    `history` true also returns earlier revisions of edited notes holding the query's words,
    after the others, marked superseded (default: only what is current). `as_of` (a date
    YYYY-MM-DD or an ISO 8601 date-time) answers with what was in force then: notes written
    by then, the revisions current then, the statements valid then, the latest first.
    Each episode comes back once, by its best passage, unless `passages` is true."""

    def run(tools: ToolContext, access: Access) -> dict:
        if not 1 <= limit <= MAX_LIMIT:  # named as this tool names it, not as the CLI's flag
            raise ToolError(f"limit {limit}: must be between 1 and {MAX_LIMIT}")
        # The tool's own parameters, named and ordered as SearchOptions' fields.
        options = SearchOptions(policy, limit, channels, contested, history, as_of, passages)
        return visible_search(tools.memory, access, memory, query, options).brief_json()

    return call(ctx, run)


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

    def run(tools: ToolContext, access: Access) -> dict:
        writable(access, memory)
        item = {
            "memory": memory,
            "kind": kind,
            "title": title,
            "body": body,
            "occurred_at": occurred_at or dt.datetime.now(dt.UTC).isoformat(),
            "salience": salience,
        }
        return stored(tools, memory, tools.memory.add([item]).to_json(), index)

    return call(ctx, run)


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

    def run(tools: ToolContext, access: Access) -> dict:
        writable(access, memory)
        item: dict[str, Any] = {
            "memory": memory,
            "document": {"name": name, "content": content_base64},
        }
        if kind is not None:
            item["kind"] = kind
        for key, value in (("contentType", content_type), ("modifiedAt", modified_at)):
            if value is not None:
                item["document"][key] = value
        return stored(tools, memory, tools.memory.add([item]).to_json(), index)

    return call(ctx, run)


def writable(access: Access, memory: str) -> None:
    """An add tool's scope check: a memory the token does not see is named as not writable."""
    if not access.sees(memory):
        raise ToolError(f"this token cannot write to memory {memory!r}")
    access.require_write(memory)


def stored(tools: ToolContext, memory: str, report: dict, index: bool) -> dict:
    """The answer of an add tool, read from the add report's document (``AddReport.to_json``):
    the new episode's id, or the rejection as a tool error; with ``index`` the episode is made
    searchable at once."""
    if report["rejected"]:
        raise ToolError(f"not stored: {report['rejected'][0]['reason']}")
    document: dict[str, Any] = {
        "memory": memory,
        "episodeId": report["episodeIds"][0] if report["episodeIds"] else None,
        "duplicate": bool(report["duplicates"]),
    }
    if index and report["inserted"]:
        ticket = tools.index_queue.request()  # one pass at a time; none started per call
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
    valid_from: str | None = None,
    valid_until: str | None = None,
) -> dict:
    """Save a short statement about the person or the world: `kind` "observation" (seen in
    the sources, cite them in `episode_ids`/`passages`) or "belief" (a conclusion;
    `contested` marks it disputed). Close existing statements come back in `close`: with
    `decision` "ask" (default) nothing is saved while any is close (`action` "undecided",
    `saved` false, `message` says so);
    call again with "add" to save it anyway, or "revise" and `revise_id` to replace one (the
    old one is kept as history), or drop it. A near-exact duplicate is refused (`action`
    "refused", `duplicateOf`) unless `force`. `valid_from`/`valid_until` (ISO 8601 dates)
    say when it holds in the world (default: from when observed, until further notice)."""

    def run(tools: ToolContext, access: Access) -> dict:
        name = writable_memory(access, memory)
        return tools.memory.observe(
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
            valid_from=valid_from,
            valid_until=valid_until,
        ).to_json()

    return call(ctx, run)


def list_observations(
    memory: str,
    ctx: Context,
    kind: str | None = None,
    include_retired: bool = False,
    limit: int = 50,
) -> dict:
    """A memory's observations and beliefs, newest first (`kind` one of them; retired
    versions only with `include_retired`)."""

    def run(tools: ToolContext, access: Access) -> dict:
        name = readable_memory(tools.memory, access, memory)
        rows = tools.memory.observations(name, kind=kind, with_retired=include_retired, limit=limit)
        return {"memory": name, "observations": [o.to_json() for o in rows]}

    return call(ctx, run)


def set_observation_status(memory: str, observation_id: int, status: str, ctx: Context) -> dict:
    """Mark a statement "active", "contested" (disputed: left out of searches unless asked
    for) or "retired" (no longer true: never returned, kept as history)."""

    def run(tools: ToolContext, access: Access) -> dict:
        name = writable_memory(access, memory)
        tools.memory.set_observation_status(name, observation_id, status)
        return {"memory": name, "id": observation_id, "status": status}

    return call(ctx, run)


def list_memories(ctx: Context) -> dict:
    """The memories you can search, with their episode, chunk and statement counts."""
    return call(
        ctx,
        lambda tools, access: {
            "memories": [m.to_json() for m in tools.memory.memories() if access.sees(m.name)]
        },
    )


def get_episode(episode_id: int, ctx: Context) -> dict:
    """One stored episode in full (title, date, body, metadata) by its episodeId; a long one
    is better read with read_episode, page by page."""
    return call(ctx, lambda tools, access: visible_episode(tools.memory, access, episode_id))


def list_episodes(memory: str, ctx: Context, limit: int = 50, before: int | None = None) -> dict:
    """A memory's current episodes, newest first: id, title, kind, dates, source, sourceId
    and how many revisions its source has; `before` (an id) lists the ones after it."""
    return call(
        ctx,
        lambda tools, access: visible_episodes(
            tools.memory, access, memory, limit=limit, before=before
        ),
    )


def episode_history(episode_id: int, ctx: Context) -> dict:
    """Every revision of an episode's source (an edited note, a re-sent id), newest first:
    the current one and the superseded ones, with when each stopped being current."""
    return call(ctx, lambda tools, access: visible_history(tools.memory, access, episode_id))


def read_episode(episode_id: int, ctx: Context, page: int = 1) -> dict:
    """Page `page` (from 1) of an episode: `text`, `pages` (how many there are), the page's
    `start`/`end` character offsets in the body and its `chunkIds` (search results name the
    same chunks). Read pages 1 to `pages` to have read the whole episode."""
    return call(ctx, lambda tools, access: visible_page(tools.memory, access, episode_id, page))


def forget(
    memory: str, ctx: Context, episode_id: int | None = None, whole_memory: bool = False
) -> dict:
    """Delete an episode (`episode_id`) for good, with its chunks, vectors and telemetry; with
    `whole_memory` true and no episode_id, the whole mem. It is never found again."""

    def run(tools: ToolContext, access: Access) -> dict:
        if episode_id is None and not whole_memory:
            raise ToolError("give episode_id, or whole_memory=true to forget the whole memory")
        return forget_visible(tools.memory, access, memory, episode_id)

    return call(ctx, run)


def status(ctx: Context) -> dict:
    """Counts, pending work and the serving embedding profile."""
    return call(ctx, lambda tools, access: visible_status(tools.memory, access))


TOOLS = (
    search_memory,
    add_memory,
    add_document,
    save_observation,
    list_observations,
    set_observation_status,
    list_memories,
    get_episode,
    list_episodes,
    episode_history,
    read_episode,
    forget,
    status,
)
