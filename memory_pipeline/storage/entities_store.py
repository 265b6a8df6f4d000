"""Entities and their mentions: import, extraction bookkeeping, promotion of recurring names, links."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import orjson
import psycopg

from memory_pipeline.domain.entities import Entity, EntityMatcher, entity_matcher
from memory_pipeline.domain.proper_names import extract_proper_names
from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.paths import query
from memory_pipeline.storage.search_store import entities_version, memory_entities

# Episodes whose bodies are read at once: a few MB of text, and one write query per page.
PAGE_EPISODES = 1000


@dataclass
class EntityReport:
    imported: int = 0
    merged: int = 0
    extracted_episodes: int = 0
    promoted: int = 0
    mentions_added: int = 0
    memories: int = 0


def import_entities(
    conn: psycopg.Connection, pairs: Iterable[tuple[str, Entity]], report: EntityReport
) -> set[str]:
    """Upsert imported entities; an existing name gains the new aliases. Returns the memories touched."""
    touched: set[str] = set()
    with conn.transaction():
        for memory, entity in pairs:
            row = one_row(
                conn,
                query("entity_import_upsert"),
                {"memory": memory, "name": entity.name, "aliases": list(entity.aliases)},
            )
            if row[0]:
                report.imported += 1
            else:
                report.merged += 1
            touched.add(memory)
    return touched


def extract_episode_names(
    conn: psycopg.Connection, episode_ids: list[int], report: EntityReport
) -> None:
    """Store proper-name candidates for episodes that have none yet (bodies never change).

    A page of bodies at a time, so a memory of any size never sits in memory at once."""
    for page in _pages(episode_ids):
        rows = conn.execute(query("entity_episode_bodies"), {"episode_ids": page}).fetchall()
        with conn.transaction():
            _insert_names(
                conn, [(episode_id, memory, body) for episode_id, memory, body in rows], report
            )


def _insert_names(
    conn: psycopg.Connection, bodies: list[tuple[int, str, str]], report: EntityReport
) -> None:
    """Store the name candidates of these (episode id, memory, body) rows, in one query."""
    if bodies:
        conn.execute(
            query("episode_names_insert"),
            {
                "episode_ids": [episode_id for episode_id, _, _ in bodies],
                "memories": [memory for _, memory, _ in bodies],
                "names": [
                    orjson.dumps(sorted(extract_proper_names(body))).decode()
                    for _, _, body in bodies
                ],
            },
        )
    report.extracted_episodes += len(bodies)


def promote_recurring(
    conn: psycopg.Connection, memory: str, report: EntityReport, *, min_episodes: int = 2
) -> None:
    """Names found in at least ``min_episodes`` episodes become entities (unless already known).

    The counting is SQL (``recurring_names``' rule), so the memory's names are not loaded."""
    recurring = sorted(
        name
        for (name,) in conn.execute(
            query("entity_recurring_names"), {"memory": memory, "min_episodes": min_episodes}
        )
    )
    known = {
        n.lower()
        for name, aliases in conn.execute(
            "SELECT name, aliases FROM entities WHERE memory = %s", (memory,)
        )
        for n in (name, *aliases)
    }
    new = []
    for name in recurring:  # in name order, as before: of two spellings the first one wins
        if name.lower() not in known:
            new.append({"memory": memory, "name": name})
            known.add(name.lower())
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(query("entity_promote_insert"), new)
    report.promoted += len(new)


def link_mentions(conn: psycopg.Connection, memory: str, report: EntityReport, *, day=None) -> None:
    """Link every entity of ``memory`` to every episode of it (of ingest ``day`` only, if given)
    that names it (idempotent).

    Reads all of the memory's (or the day's) bodies, a page at a time, each page's links
    written in one query: linear in the memory's size. The names are matched by one
    trie-shaped pattern (``EntityMatcher``), so thousands of entities cost little more than a few.
    """
    matcher = _matcher(conn, memory)  # one compiled pattern for the whole memory
    if matcher is None:
        return
    episode_ids = [
        episode_id
        for (episode_id,) in conn.execute(
            query("entity_link_episode_ids"),
            (memory, day, day),
        )
    ]
    for page in _pages(episode_ids):
        entity_ids, linked = _found_links(
            matcher, conn.execute(query("entity_link_texts"), {"episode_ids": page})
        )
        if entity_ids:
            with conn.transaction():
                _insert_mentions(conn, memory, entity_ids, linked, report)


def _matcher(conn: psycopg.Connection, memory: str) -> EntityMatcher | None:
    """The memory's entities as one matcher (keys: entity ids); None when it has none."""
    entities = memory_entities(conn, memory)
    return entity_matcher(entities) if entities else None


def _found_links(
    matcher: EntityMatcher, texts: Iterable[tuple[int, str, str]]
) -> tuple[list[int], list[int]]:
    """(entity ids, episode ids), one pair per link: each entity ``matcher`` finds in an
    episode's title or body, for these (episode id, title, body) rows."""
    entity_ids, linked = [], []
    for episode_id, title, body in texts:
        for entity_id in matcher.find(title + "\n" + body):
            entity_ids.append(entity_id)
            linked.append(episode_id)
    return entity_ids, linked


def _insert_mentions(
    conn: psycopg.Connection,
    memory: str,
    entity_ids: list[int],
    episode_ids: list[int],
    report: EntityReport,
) -> None:
    cur = conn.execute(
        query("entity_mentions_insert"),
        {"memory": memory, "entity_ids": entity_ids, "episode_ids": episode_ids},
    )
    report.mentions_added += cur.rowcount


class Matchers:
    """Each memory's ``EntityMatcher``, rebuilt only when its entities change (``entity_versions``),
    for a caller that links page after page (``link_episodes``)."""

    def __init__(self) -> None:
        self._built: dict[str, tuple[int | None, EntityMatcher | None]] = {}

    def of(self, conn: psycopg.Connection, memory: str) -> EntityMatcher | None:
        version = entities_version(conn, memory)
        built = self._built.get(memory)
        if built is None or built[0] != version:
            built = self._built[memory] = (version, _matcher(conn, memory))
        return built[1]


def link_episodes(
    conn: psycopg.Connection, episode_ids: list[int], matchers: Matchers, report: EntityReport
) -> None:
    """What ``refresh_day`` does for its episodes, for these episodes only: extract the names of
    those that have none yet, link each to its memory's entities that it names. A page at a time,
    its names and links in one transaction, so an episode that has names is linked too (which
    ``unlinked_episodes`` relies on). Episodes deleted meanwhile are skipped."""
    for page in _pages(episode_ids):
        with conn.transaction():
            rows = conn.execute(query("entity_link_episodes"), {"episode_ids": page}).fetchall()
            _insert_names(
                conn, [(i, memory, body) for i, memory, _, body, named in rows if not named], report
            )
            for memory in sorted({row[1] for row in rows}):
                matcher = matchers.of(conn, memory)
                if matcher is None:
                    continue
                entity_ids, linked = _found_links(
                    matcher, [(i, title, body) for i, m, title, body, _ in rows if m == memory]
                )
                if entity_ids:
                    _insert_mentions(conn, memory, entity_ids, linked, report)


def compact_mention_counts(conn: psycopg.Connection) -> None:
    """Fold each entity's mention-count rows into one (``entity_mention_deltas_compact.sql``, safe
    beside writers). ``index`` runs it after linking, the Dagster ``entities`` asset after
    promoting: the table then holds about a row per entity plus the rows written since. Two
    compactions at once may deadlock on each other's rows; the one PostgreSQL stops folds nothing
    (its rows stay as they were, for the next one)."""
    try:
        with conn.transaction():
            conn.execute(query("entity_mention_deltas_compact"))
    except psycopg.errors.DeadlockDetected:
        pass


def unlinked_episodes(conn: psycopg.Connection) -> list[int]:
    """Episodes committed by an index run whose linking never happened (``entity_unlinked_episodes``)."""
    return [episode_id for (episode_id,) in conn.execute(query("entity_unlinked_episodes"))]


def _pages(ids: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), PAGE_EPISODES):
        yield ids[start : start + PAGE_EPISODES]


def refresh_day(conn: psycopg.Connection, day, report: EntityReport) -> list[str]:
    """The entity_mentions partition's work: extract the proper names of the day's episodes and
    link them to the entities their memories already have. Writes only rows of the day's
    episodes; promoting names that recur across a memory is ``promote_memories``' job (global).
    Returns the memories that received episodes that day."""
    rows = conn.execute(
        query("day_current_episodes"),
        (day,),
    ).fetchall()
    extract_episode_names(conn, [episode_id for episode_id, _ in rows], report)
    memories = sorted({memory for _, memory in rows})
    for memory in memories:
        link_mentions(conn, memory, report, day=day)
    report.memories += len(memories)
    return memories


def day_memories(conn: psycopg.Connection, day) -> list[str]:
    """The memories that received episodes on ``day``."""
    rows = conn.execute("SELECT DISTINCT memory FROM episodes WHERE ingest_day = %s", (day,))
    return sorted(memory for (memory,) in rows)


def promote_memories(conn: psycopg.Connection, report: EntityReport) -> list[str]:
    """The global part of entities: in every memory, names that recur across episodes become
    entities, and every entity new this way is linked to all the memory's episodes naming it."""
    memories = [m for (m,) in conn.execute("SELECT DISTINCT memory FROM episode_names ORDER BY 1")]
    for memory in memories:
        before = report.promoted
        promote_recurring(conn, memory, report)
        if report.promoted > before:
            link_mentions(conn, memory, report)
    return memories


def count_entities(conn: psycopg.Connection) -> int:
    return one_row(conn, "SELECT count(*) FROM entities")[0]


def top_entities(conn: psycopg.Connection, memories: list[str], limit: int = 10) -> list[dict]:
    rows = conn.execute(query("entity_top"), {"memories": memories, "limit": limit}).fetchall()
    return [
        {"memory": m, "entity": n, "source": s, "aliases": a, "episodes": c}
        for m, n, s, a, c in rows
    ]
