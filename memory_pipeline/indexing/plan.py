"""What an episode needs from the model: its chunks, and the inputs of each chunk without a vector."""

from __future__ import annotations

from memory_pipeline.domain.anchors import anchored, model_text
from memory_pipeline.domain.chunking import chunk_body
from memory_pipeline.domain.windows import paragraph_windows
from memory_pipeline.storage import index_store
from memory_pipeline.storage.index_store import EpisodeWork, PendingEpisode
from memory_pipeline.storage.profiles_store import StoredProfile


def plan(
    conn, profile: StoredProfile | None, pending: list[PendingEpisode], *, anchors: bool
) -> list[EpisodeWork]:
    """Chunk the episodes and find which of their chunk ids still need a vector. ``anchors``
    (MEMORY_PIPELINE_HEADING_ANCHORS) has no default: every path that writes chunks must say it."""
    chunked = index_store.episodes_with_chunks(conn, [p.id for p in pending])
    works = []
    for episode in pending:
        chunks = chunk_body(episode.body, episode.content_hash)
        if anchors:  # the headings above each chunk (domain.anchors); text and ids unchanged
            chunks = anchored(episode.body, chunks)
        works.append(EpisodeWork(episode, chunks, episode.id in chunked, missing=[], vectors={}))
    if profile is not None:
        keys = {(w.episode.memory, c.chunk_id) for w in works for c in w.chunks}
        present = index_store.existing_vectors(conn, profile, keys)
    else:
        present = set()
    for work in works:
        seen: set[str] = set()
        for c in work.chunks:
            # Identical texts inside one episode share an id: embed them once.
            if c.chunk_id not in seen and (work.episode.memory, c.chunk_id) not in present:
                work.missing.append(c.chunk_id)
            seen.add(c.chunk_id)
    return works


def chunk_views(text: str, *, windows: bool = True, anchor: str = "", title: str = "") -> list[str]:
    """The model inputs for one chunk: its text, then (unless switched off) its paragraph windows
    (``domain.windows``; ``title``, the episode's, marks a paragraph repeating it as a heading),
    each after the chunk's heading anchor (``domain.anchors.model_text``).
    Without windows the vector channel scores the chunk by its own vector. The windows carry the
    anchor too: the vector channel scores a chunk by its best window, so an anchor on the chunk
    vector alone would reach the HNSW scan but not the score."""
    views = [text, *paragraph_windows(text, title=title)] if windows else [text]
    return [model_text(anchor, view) for view in views]
