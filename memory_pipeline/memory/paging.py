"""Reading stored episodes: a memory's listing page by page, an episode, its revisions, and an
episode's body page by page (``domain.pages``)."""

from __future__ import annotations

from dataclasses import dataclass

from memory_pipeline.domain.chunking import chunk_body
from memory_pipeline.domain.pages import NoSuchPage
from memory_pipeline.domain.pages import page as page_of
from memory_pipeline.errors import InputError, UnknownPage
from memory_pipeline.storage import episodes_store, revisions_store
from memory_pipeline.storage.database import Database

# At most this many episodes in one listing (``episodes``; page on with ``before``).
MAX_LIST = 1000


@dataclass(frozen=True)
class History:
    """Every revision of an episode's source, newest first (``Memory.history``)."""

    memory: str
    source_id: str | None  # the source's own id (its "id" field); None: no source identity
    revisions: list[revisions_store.Revision]

    def to_json(self) -> dict:
        return {
            "memory": self.memory,
            "sourceId": self.source_id,
            "revisions": [r.to_json() for r in self.revisions],
        }


@dataclass(frozen=True)
class Page:
    """One page of an episode's body (``Memory.read``): pages 1 to ``pages`` are the body."""

    episode: dict  # the episode's fields, without its body (``episodes_store.episode_header``)
    page: int
    pages: int
    start: int  # where the page lies in the body, in characters
    end: int
    chunk_ids: list[str]
    text: str

    @property
    def memory(self) -> str:
        return self.episode["memory"]

    def to_json(self) -> dict:
        return {
            **self.episode,
            "page": self.page,
            "pages": self.pages,
            "start": self.start,
            "end": self.end,
            "chunkIds": self.chunk_ids,
            "text": self.text,
        }


class UnknownEpisode(InputError):
    def __init__(self, episode_id: object):
        super().__init__(f"no episode {episode_id}")
        self.episode_id = episode_id


def listing(
    db: Database, memory: str, *, limit: int = 100, before: int | None = None
) -> list[revisions_store.ListedEpisode]:
    """A memory's current episodes, newest first, each with its source and how many revisions
    it has (``before``: the page after that id)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST:
        raise InputError(f"limit {limit!r}: expected 1 to {MAX_LIST}")
    with db.connection() as conn:
        return revisions_store.listing(conn, memory, limit=limit, before=before)


def history(db: Database, episode_id: int) -> History:
    """Every revision of ``episode_id``'s source (it may be any of them), newest first;
    UnknownEpisode if there is none."""
    if isinstance(episode_id, bool) or not isinstance(episode_id, int):
        raise UnknownEpisode(episode_id)
    with db.connection() as conn:
        rows = revisions_store.history(conn, episode_id) if 1 <= episode_id < 2**63 else []
    if not rows:
        raise UnknownEpisode(episode_id)
    return History(
        memory=rows[0].memory,
        source_id=rows[0].source_key.partition(":")[2] if rows[0].source_key else None,
        revisions=rows,
    )


def episode(db: Database, episode_id: int) -> dict:
    """One stored episode as a document (body, metadata, chunk count); UnknownEpisode if none."""
    with db.connection() as conn:
        document = episodes_store.get_episode(conn, episode_id)
    if document is None:
        raise UnknownEpisode(episode_id)
    return document


def read(db: Database, episode_id: int, *, page: int = 1) -> Page:
    """Page ``page`` (from 1) of an episode (``domain.pages``), cut at its chunks' bounds (the
    chunks the index pass will store, before it ran); reading pages 1 to ``pages`` reads the
    whole body. UnknownEpisode if there is
    no such episode, UnknownPage for a page it does not have."""
    if (
        isinstance(episode_id, bool)
        or not isinstance(episode_id, int)
        or not 1 <= episode_id <= 2**63 - 1  # a bigint: a larger number names no episode
    ):
        raise UnknownEpisode(episode_id)
    with db.connection() as conn:
        document = episodes_store.episode_header(conn, episode_id)
        if document is None:
            raise UnknownEpisode(episode_id)
        spans = episodes_store.chunk_spans(conn, episode_id)
        body = None
        if not spans:  # not indexed yet: the chunks the index pass will store
            body = episodes_store.body_text(conn, episode_id)
            if body is None:  # forgotten meanwhile
                raise UnknownEpisode(episode_id)
            spans = [
                (c.start, c.end, c.chunk_id) for c in chunk_body(body, document["contentHash"])
            ]
        try:
            chosen, pages = page_of([(start, end) for start, end, _ in spans], page)
        except NoSuchPage as exc:
            raise UnknownPage(episode_id, page, exc.pages) from None
        if body is None:
            text = episodes_store.body_text(conn, episode_id, chosen.start, chosen.end)
        else:
            text = body[chosen.start : chosen.end]
    if text is None:  # forgotten meanwhile
        raise UnknownEpisode(episode_id)
    del document["contentHash"]
    return Page(
        episode=document,
        page=chosen.number,
        pages=pages,
        start=chosen.start,
        end=chosen.end,
        chunk_ids=[chunk_id for _, _, chunk_id in spans[chosen.first : chosen.last + 1]],
        text=text,
    )
