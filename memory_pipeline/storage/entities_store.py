"""Entities and their mentions: import, extraction bookkeeping, promotion of recurring names, links."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import psycopg

from memory_pipeline.domain.entities import Entity, EntityMatcher, extract_proper_names, recurring_names


@dataclass
class EntityReport:
    imported: int = 0
    merged: int = 0
    extracted_episodes: int = 0
    promoted: int = 0
    mentions_added: int = 0
    memories: int = 0


def import_entities(conn: psycopg.Connection, pairs: Iterable[tuple[str, Entity]], report: EntityReport) -> set[str]:
    """Upsert imported entities; an existing name gains the new aliases. Returns the memories touched."""
    touched: set[str] = set()
    with conn.transaction():
        for memory, entity in pairs:
            row = conn.execute(
                """INSERT INTO entities (memory, name, aliases, source) VALUES (%s, %s, %s, 'import')
                   ON CONFLICT (memory, lower(name)) DO UPDATE
                   SET aliases = ARRAY(SELECT DISTINCT a FROM unnest(entities.aliases || EXCLUDED.aliases) a ORDER BY a),
                       source = 'import'
                   RETURNING (xmax = 0)""",
                (memory, entity.name, list(entity.aliases)),
            ).fetchone()
            if row[0]:
                report.imported += 1
            else:
                report.merged += 1
            touched.add(memory)
    return touched


def extract_episode_names(conn: psycopg.Connection, episode_ids: list[int], report: EntityReport) -> None:
    """Store proper-name candidates for episodes that have none yet (bodies never change)."""
    rows = conn.execute(
        """SELECT e.id, e.memory, e.body FROM episodes e
           WHERE e.id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM episode_names n WHERE n.episode_id = e.id)""",
        (episode_ids,),
    ).fetchall()
    with conn.transaction():
        for episode_id, memory, body in rows:
            conn.execute(
                "INSERT INTO episode_names (episode_id, memory, names) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (episode_id, memory, sorted(extract_proper_names(body))),
            )
    report.extracted_episodes += len(rows)


def promote_recurring(conn: psycopg.Connection, memory: str, report: EntityReport, *, min_episodes: int = 2) -> None:
    """Names found in at least ``min_episodes`` episodes become entities (unless already known)."""
    per_episode: dict[int, set[str]] = {
        episode_id: set(names)
        for episode_id, names in conn.execute("SELECT episode_id, names FROM episode_names WHERE memory = %s", (memory,))
    }
    known = {
        n.lower()
        for name, aliases in conn.execute("SELECT name, aliases FROM entities WHERE memory = %s", (memory,))
        for n in (name, *aliases)
    }
    with conn.transaction():
        for name in sorted(recurring_names(per_episode, min_episodes=min_episodes)):
            if name.lower() in known:
                continue
            conn.execute(
                """INSERT INTO entities (memory, name, source) VALUES (%s, %s, 'extracted')
                   ON CONFLICT (memory, lower(name)) DO NOTHING""",
                (memory, name),
            )
            known.add(name.lower())
            report.promoted += 1


def link_mentions(conn: psycopg.Connection, memory: str, report: EntityReport, *, day=None) -> None:
    """Link every entity of ``memory`` to every episode of it (of ingest ``day`` only, if given)
    that names it (idempotent).

    Reads all of the memory's bodies: simple and exact, linear in the memory's size. A memory
    with millions of episodes would want this restricted to new episodes and new entities.
    """
    entities = [
        (i, Entity(name, tuple(aliases)))
        for i, name, aliases in conn.execute("SELECT id, name, aliases FROM entities WHERE memory = %s", (memory,))
    ]
    if not entities:
        return
    matcher = EntityMatcher(entities)  # one compiled pattern for the whole memory
    links = []
    for episode_id, body, title in conn.execute(
        "SELECT id, body, title FROM episodes WHERE memory = %s AND (%s::date IS NULL OR ingest_day = %s::date)",
        (memory, day, day),
    ):
        for entity_id in matcher.find(title + "\n" + body):
            links.append((entity_id, episode_id, memory))
    with conn.transaction(), conn.cursor() as cur:
        before = conn.execute("SELECT count(*) FROM entity_mentions WHERE memory = %s", (memory,)).fetchone()[0]
        cur.executemany(
            "INSERT INTO entity_mentions (entity_id, episode_id, memory) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            links,
        )
        after = conn.execute("SELECT count(*) FROM entity_mentions WHERE memory = %s", (memory,)).fetchone()[0]
    report.mentions_added += after - before


def refresh_memories(conn: psycopg.Connection, memories: Iterable[str], report: EntityReport) -> None:
    """Extract, promote and link for whole memories (the entity_mentions stage's work)."""
    for memory in sorted(set(memories)):
        ids = [r[0] for r in conn.execute("SELECT id FROM episodes WHERE memory = %s", (memory,))]
        extract_episode_names(conn, ids, report)
        promote_recurring(conn, memory, report)
        link_mentions(conn, memory, report)
        report.memories += 1


def refresh_day(conn: psycopg.Connection, day, report: EntityReport) -> list[str]:
    """The entity_mentions partition's work: extract the proper names of the day's episodes and
    link them to the entities their memories already have. Writes only rows of the day's
    episodes; promoting names that recur across a memory is ``promote_memories``' job (global).
    Returns the memories that received episodes that day."""
    rows = conn.execute("SELECT id, memory FROM episodes WHERE ingest_day = %s ORDER BY id", (day,)).fetchall()
    extract_episode_names(conn, [episode_id for episode_id, _ in rows], report)
    memories = sorted({memory for _, memory in rows})
    for memory in memories:
        link_mentions(conn, memory, report, day=day)
    report.memories += len(memories)
    return memories


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
    return conn.execute("SELECT count(*) FROM entities").fetchone()[0]


def top_entities(conn: psycopg.Connection, memories: list[str], limit: int = 10) -> list[dict]:
    rows = conn.execute(
        """SELECT en.memory, en.name, en.source, array_to_string(en.aliases, ', '), count(m.episode_id) AS n
           FROM entities en LEFT JOIN entity_mentions m ON m.entity_id = en.id
           WHERE en.memory = ANY(%s) GROUP BY en.id ORDER BY n DESC, en.name LIMIT %s""",
        (memories, limit),
    ).fetchall()
    return [{"memory": m, "entity": n, "source": s, "aliases": a, "episodes": c} for m, n, s, a, c in rows]
