"""Who may do what: the access a bearer token grants, shared by the HTTP API and the MCP server.

A token is scoped to memories (or to every memory, ``*``) and to reading or writing. Outside its
scope a memory does not exist for it: the same 404 and the same "existing memories" list as for
a name nobody uses, so a token never learns that another memory exists.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memory_pipeline.errors import InputError, unknown_memory_message
from memory_pipeline.memory import ALL_MEMORIES


class NotFound(InputError):
    """A memory or episode that does not exist for the caller (whether or not it exists at all)."""


class Forbidden(InputError):
    """The caller sees the memory but its token may only read it."""


@dataclass(frozen=True)
class Access:
    """What one caller may do. ``memories`` None: every memory."""

    name: str | None
    memories: frozenset[str] | None
    write: bool

    @classmethod
    def everything(cls) -> Access:
        """No tokens configured (loopback only), or a local stdio client: all memories, read and write."""
        return cls(None, None, True)

    @classmethod
    def of_token(cls, name: str, memories: Iterable[str], access: str) -> Access:
        names = frozenset(memories)
        return cls(name, None if ALL_MEMORIES in names else names, access == "write")

    @property
    def all_memories(self) -> bool:
        return self.memories is None

    def sees(self, memory: str) -> bool:
        return self.memories is None or memory in self.memories

    def visible(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if self.sees(n)]

    def unknown_memory(self, memory: str, existing: Iterable[str]) -> NotFound:
        return NotFound(unknown_memory_message(memory, self.visible(existing)))

    def require_write(self, memory: str | None = None) -> None:
        if not self.write:
            what = f"memory {memory!r}" if memory else "this service"
            raise Forbidden(
                f"this token may only read {what}; writing needs a token with write access"
            )


# Episode ids are PostgreSQL bigints; a larger number names no episode (and must not reach SQL).
MAX_EPISODE_ID = 2**63 - 1


def access_of_token(memory, token: str | None, *, loopback: bool) -> Access:
    """The access a presented bearer token (None: none presented) grants on ``memory``'s service.

    Decided per request: with no token in the database a server on ``loopback`` answers every
    caller as the local user, but one bound beyond loopback grants nothing without a valid
    token, so revoking the last token closes it instead of opening it (``guard`` refuses such
    requests first and logs it; this holds even without the guard)."""
    if loopback and not memory.tokens_configured():
        return Access.everything()
    if not token:
        raise Unauthorized("this server needs a token: Authorization: Bearer <token>")
    stored = memory.token_access(token)
    if stored is None:
        raise Unauthorized("unknown or revoked token")
    return Access.of_token(stored.name, stored.memories, stored.access)


def access_of_local_token(memory, token: str) -> Access:
    """The access of ``token`` as a local client presents it once (``mcp --token``), looked up
    again at every use: a token revoked while the client stays connected stops working at
    once, as it does over HTTP."""
    stored = memory.token_access(token)
    if stored is None:
        raise Unauthorized("--token: unknown or revoked token")
    return Access.of_token(stored.name, stored.memories, stored.access)


def bearer(header: str | None) -> str | None:
    scheme, _, token = (header or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class Unauthorized(InputError):
    pass


def visible_memory(memory, access: Access, name: object) -> str:
    """``name`` if valid, existing and visible to ``access``; else InputError / NotFound that
    names only the memories ``access`` sees."""
    name = _valid_name(name)
    if access.sees(name) and memory.has_memory(name):
        return name
    raise access.unknown_memory(name, memory.memory_names())


def visible_episode(memory, access: Access, episode_id: int) -> dict:
    """The episode document if it exists and ``access`` sees its memory; else NotFound (the same
    words either way)."""
    return _visible_document(memory.episode, access, episode_id)


def visible_episodes(
    memory, access: Access, name: object, *, limit: int = 50, before: int | None = None
) -> dict:
    """``Memory.episodes`` of a memory ``access`` sees, as ``{"memory", "episodes"}``."""
    name = visible_memory(memory, access, name)
    rows = memory.episodes(name, limit=limit, before=before)
    return {"memory": name, "episodes": [r.to_json() for r in rows]}


def visible_history(memory, access: Access, episode_id: int) -> dict:
    """``Memory.history`` if the episode exists and ``access`` sees its memory; else NotFound
    (the same words either way)."""
    return _visible_document(lambda i: memory.history(i).to_json(), access, episode_id)


def _visible_document(read, access: Access, episode_id: int) -> dict:
    """``read(episode_id)`` if the episode exists and ``access`` sees its memory, else NotFound."""
    from memory_pipeline.memory import UnknownEpisode

    _require_episode_id(episode_id)
    try:
        document = read(episode_id)
    except UnknownEpisode:
        raise NotFound(f"no episode {episode_id}") from None
    if not access.sees(document["memory"]):
        raise NotFound(f"no episode {episode_id}")
    return document


def visible_page(memory, access: Access, episode_id: int, page: int) -> dict:
    """``Memory.read``'s page if ``access`` sees the episode's memory; else NotFound, in the same
    words as for no episode (a page count is never told about an episode it must not see)."""
    from memory_pipeline.errors import UnknownPage
    from memory_pipeline.memory import UnknownEpisode

    _require_episode_id(episode_id)
    try:
        document = memory.read(episode_id, page=page).to_json()
    except UnknownEpisode:
        raise NotFound(f"no episode {episode_id}") from None
    except UnknownPage:
        visible_episode(memory, access, episode_id)  # NotFound unless its memory is seen
        raise
    if not access.sees(document["memory"]):
        raise NotFound(f"no episode {episode_id}")
    return document


def _require_episode_id(episode_id: object) -> None:
    if (
        isinstance(episode_id, bool)
        or not isinstance(episode_id, int)
        or not 1 <= episode_id <= MAX_EPISODE_ID
    ):
        raise NotFound(f"no episode {episode_id}")


def visible_status(memory, access: Access) -> dict:
    """``Memory.status`` for a caller of every memory; a scoped caller gets its own memories'
    counts only (global counts would reveal the size of memories it must not know of)."""
    if access.all_memories:
        return memory.status().to_json()
    document = memory.status().to_json()
    return {
        "version": document["version"],
        "memories": [m.to_json() for m in memory.memories() if access.sees(m.name)],
        "activeProfile": document["activeProfile"],
        "configuredProfile": document["configuredProfile"],
        "quality": [q for q in document["quality"] if access.sees(q["memory"])],
    }


def forget_visible(memory, access: Access, name: str | None, episode_id: int | None) -> dict:
    """Forget an episode (of memory ``name`` when given) or a whole memory, within ``access``."""
    from memory_pipeline.memory import UnknownEpisode, UnknownMemory

    if episode_id is not None:
        document = visible_episode(memory, access, episode_id)
        if name is not None and document["memory"] != name:
            raise NotFound(f"no episode {episode_id} in memory {name!r}")
        access.require_write(document["memory"])
        try:
            counts = memory.forget(document["memory"], episode_id=episode_id)
        except (UnknownEpisode, UnknownMemory):
            raise NotFound(f"no episode {episode_id}") from None
        return {"memory": document["memory"], "episodeId": episode_id, "deleted": counts.to_json()}
    name = visible_memory(memory, access, name)
    access.require_write(name)
    try:
        counts = memory.forget(name)
    except UnknownMemory as exc:
        raise access.unknown_memory(name, exc.known) from None
    return {"memory": name, "deleted": counts.to_json()}


def _valid_name(name: object) -> str:
    from memory_pipeline.domain.episodes import validate_memory_name

    try:
        return validate_memory_name(name)
    except ValueError as exc:
        raise InputError(f"memory: {exc}") from None


def writable_memory(access: Access, name: object) -> str:
    """``name`` if valid and inside the caller's write scope (it need not exist yet: a document
    or a statement may start a memory); else InputError, Forbidden (read-only) or NotFound."""
    name = _valid_name(name)
    access.require_write(name)
    if not access.sees(name):
        raise NotFound(f"this token cannot write to memory {name!r}")
    return name


def writable_items(
    access: Access, items: list, default_memory: str | None
) -> tuple[list[tuple[int, Any]], list[dict]]:
    """The scope decision for a batch of episodes: ``(kept, refused)``.

    Each item's memory is first made what it will be stored under (``domain.jsonl.given``: its
    own, or the default when it leaves it out or sends null) and written into the item, so the
    decision is made on the stored value and nothing fills it in afterwards. ``kept`` pairs each
    allowed item with its place in the request; ``refused`` locates the others, with the same
    words whether or not such a memory exists. A memory that is not text reaches no store: the
    episode rules reject it in place."""
    from memory_pipeline.domain.jsonl import given

    kept, refused = [], []
    for i, item in enumerate(items):
        target = given(item, "memory", default_memory) if isinstance(item, dict) else default_memory
        if isinstance(target, str) and not access.sees(target):
            refused.append(
                {
                    "location": f"episodes[{i}]",
                    "reason": f"this token cannot write to memory {target!r}",
                }
            )
            continue
        if isinstance(item, dict) and target is not None:
            item = {**item, "memory": target}
        kept.append((i, item))
    return kept, refused


def readable_memory(memory, access: Access, name: object) -> str:
    """``name`` if valid and inside the caller's scope, whether or not it has episodes yet (its
    statements may be all it has); else InputError / NotFound naming only visible memories."""
    name = _valid_name(name)
    if not access.sees(name):
        raise access.unknown_memory(name, memory.memory_names())
    return name


@dataclass(frozen=True)
class SearchOptions:
    """How a caller asks a search to run: ``Memory.search``'s options, ``channels`` as the
    comma-separated text a request carries."""

    policy: str | None = None
    limit: int | None = None
    channels: str | None = None
    contested: bool | None = None
    history: bool = False
    as_of: str | None = None
    passages: bool = False


def visible_search(
    memory, access: Access, name: object, query: str, options: SearchOptions = SearchOptions()
):
    """``Memory.search`` in a memory ``access`` sees, as ``options`` ask. An unknown memory
    names only the visible ones."""
    from memory_pipeline.domain.policies import PolicyError, parse_channels
    from memory_pipeline.errors import UnknownMemory

    name = visible_memory(memory, access, name)
    parsed = None
    if options.channels is not None:
        try:
            parsed = parse_channels(options.channels)
        except PolicyError as exc:
            raise InputError(f"channels {options.channels!r}: {exc}") from None
    try:
        return memory.search(
            name,
            query,
            policy=options.policy,
            limit=options.limit,
            channels=parsed,
            contested_beliefs=options.contested,
            history=options.history,
            as_of=options.as_of,
            passages=options.passages,
        )
    except UnknownMemory as exc:  # forgotten between the check and the search
        raise access.unknown_memory(name, exc.known) from None
