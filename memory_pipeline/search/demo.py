"""The demo's searches: run each sample question and print its best chunks."""

from __future__ import annotations

from memory_pipeline import config
from memory_pipeline.embedders.factory import build_embedder
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import active_profile
from memory_pipeline.storage.vector_store import nearest_chunks


def print_demo_searches(db: Database, queries: list[dict], memory: str = "mara", top: int = 3) -> None:
    embedder = build_embedder(config.EmbedSettings.from_env())
    with db.connection() as conn:
        profile = active_profile(conn)
        for item in queries:
            print(f"\nsearch: {item['query']}")
            hits = nearest_chunks(conn, profile, memory, embedder.embed_query(item["query"]), limit=top)
            for rank, hit in enumerate(hits, 1):
                title, text = conn.execute(
                    """SELECT e.title, c.text FROM chunks c JOIN episodes e ON e.id = c.episode_id
                       WHERE c.memory = %s AND c.chunk_id = %s ORDER BY c.ordinal LIMIT 1""",
                    (hit.memory, hit.chunk_id),
                ).fetchone()
                snippet = " ".join(text.split())[:110]
                print(f"  {rank}. [{1 - hit.distance:.3f}] {title}: {snippet}...")
