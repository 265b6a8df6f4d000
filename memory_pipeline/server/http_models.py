"""The HTTP API's request and response models: what the OpenAPI document says each route takes
and answers, so a client generator and Swagger's "Try it out" can use it.

The routes read their bodies themselves (``http_bodies``: bounded, JSON only as JSON) and judge
them by the rules every interface shares (``domain.episodes``, ``domain.observations``), which
reject an item in place rather than the whole request; the request models describe those rules
and are never the judge. The response models describe the documents of the results' own
``to_json``, which the routes return as they are; a test checks every route's answer against
its model (``test_openapi_document``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_pipeline.domain.episodes import KIND_RE, MEMORY_NAME_RE

# A memory name and an episode kind as the episode rules accept them.
MEMORY_PATTERN = MEMORY_NAME_RE.pattern
KIND_PATTERN = KIND_RE.pattern
StatusName = Literal["active", "contested", "retired"]  # domain.observations.STATUSES
MEMORY_FIELD = "The memory's name (1 to 128 letters, digits, '.', '_', '@' or '-')."


class ErrorBody(BaseModel):
    """Every error the API answers: one plain message, never a stack trace."""

    error: str = Field(description="What went wrong, in plain words", examples=["no episode 7"])


# -- requests --------------------------------------------------------------------------------
class RequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid")  # an unknown field is rejected, not stored


class EpisodeIn(RequestBody):
    """One episode, with the fields of a JSONL line (``docs/input-formats.md``)."""

    memory: str | None = Field(
        None, pattern=MEMORY_PATTERN, description=f"{MEMORY_FIELD} Default: ?memory=."
    )
    kind: str | None = Field(
        None,
        pattern=KIND_PATTERN,
        description="note, journal, chat, email, doc, ...; default: ?kind=.",
    )
    title: str = Field(max_length=500)
    occurred_at: str = Field(description="When it happened: an ISO 8601 date or date and time.")
    body: str = Field(min_length=1, max_length=2_000_000)
    salience: float = Field(0.5, ge=0, le=1)
    source: str | None = Field(None, max_length=8192, description="Where it came from.")
    metadata: dict[str, Any] | None = Field(None, description="Any JSON object, at most 64 KiB.")
    id: str | int | None = Field(
        None,
        description="The source's own id: the same id again with another body is a new "
        "revision of the episode.",
    )


class DocumentIn(RequestBody):
    name: str = Field(
        description="The file name; its suffix (.html, .pdf, .docx) names the format."
    )
    content: str = Field(
        json_schema_extra={"contentEncoding": "base64"}, description="The file's bytes, base64."
    )
    contentType: str | None = Field(
        None, description="The media type, when the name has no suffix (the two must agree)."
    )
    modifiedAt: str | None = Field(
        None, description="The date of last resort, when the document names none (ISO 8601)."
    )


class DocumentItem(RequestBody):
    """A document among episodes: it becomes one ``doc`` episode as ``ingest FILE`` makes it."""

    memory: str | None = Field(
        None, pattern=MEMORY_PATTERN, description=f"{MEMORY_FIELD} Default: ?memory=."
    )
    kind: str | None = Field(None, pattern=KIND_PATTERN)
    document: DocumentIn


class EpisodesIn(RequestBody):
    """Many episodes (and documents) in one request: at most 1,000, 8 MiB."""

    episodes: list[EpisodeIn | DocumentItem] = Field(max_length=1000)


class StatementIn(RequestBody):
    """An observation or a belief to save, and the decision about close existing ones."""

    memory: str | None = Field(
        None, pattern=MEMORY_PATTERN, description=f"{MEMORY_FIELD} Default: ?memory=."
    )
    text: str = Field(min_length=1)
    kind: Literal["observation", "belief"] = "observation"
    status: Literal["active", "contested"] = "active"
    confidence: float = Field(1.0, ge=0, le=1)
    episode_ids: list[int] = Field([], description="The episodes of its memory it came from.")
    passages: list[str] = Field([], description="The passages it came from (chunk ids).")
    author: str = Field("", max_length=200)
    observed_at: str | None = Field(None, description="When it was observed (ISO 8601).")
    valid_from: str | None = Field(
        None, description="When it began to hold in the world (ISO 8601; default: observed_at)."
    )
    valid_until: str | None = Field(
        None, description="When it stopped holding (ISO 8601; default: until further notice)."
    )
    decision: Literal["ask", "add", "revise"] = Field(
        "ask",
        description="ask: save only when nothing close exists; add: save anyway; revise: "
        "replace revise_id (kept as history).",
    )
    revise_id: int | None = Field(None, description="The statement that decision revise replaces.")
    force: bool = Field(False, description="Save a near-exact duplicate anyway.")


class StatusChange(RequestBody):
    status: StatusName
    memory: str | None = Field(
        None, pattern=MEMORY_PATTERN, description=f"{MEMORY_FIELD} Default: ?memory=."
    )


class QuestionIn(RequestBody):
    memory: str | None = Field(None, pattern=MEMORY_PATTERN, description="Default: ?memory=.")
    question: str = Field(description="The question, in the user's words.", max_length=2000)
    expect: int | str | None = Field(
        None,
        description="What answers it: an episode id, source:KEY, observation:ID or belief:ID.",
    )
    expect_title: str | None = Field(None, description="Or: the current episode of this title.")
    author: str = Field("", max_length=200)


REQUEST_MODELS = (EpisodeIn, DocumentItem, EpisodesIn, StatementIn, StatusChange, QuestionIn)


# -- responses -------------------------------------------------------------------------------
class Answer(BaseModel):
    """A response document; a later version may add fields."""


class MemoryCounts(Answer):
    name: str
    episodes: int
    chunks: int
    statements: int = Field(description="Its observations and beliefs that are not retired.")
    firstAt: str | None = Field(description="Its first episode's date (null: statements only).")
    lastAt: str | None


class MemoriesAnswer(Answer):
    memories: list[MemoryCounts]


class VectorChannel(Answer):
    status: str = Field(description="ok, off or unavailable")
    reason: str | None


class Pending(Answer):
    episodes: int = Field(description="The memory's newest episodes that are not indexed yet.")
    atLeast: bool = Field(description="All of those counted are pending: there may be more.")
    matches: list[dict[str, Any]] = Field(description="Those holding a word of the query.")


class SearchResult(Answer):
    episodeId: int | None
    chunkId: str
    chunkIds: list[str]
    anchor: str = Field(description="The headings above the passage ('Title > Section').")
    title: str
    kind: str = Field(description="chunk for a passage of an episode; observation or belief")
    occurredAt: str
    snippet: str
    start: int
    end: int
    text: str
    score: float
    ranks: dict[str, int | None] = Field(description="Its 1-based rank in each channel.")
    episodeKind: str | None = Field(None, description="A passage's episode's kind.")
    ord: int | None = Field(None, description="A passage's compatibility field: always 0.")
    status: str | None = Field(None, description="A statement's status.")
    sources: dict[str, Any] | None = Field(None, description="A statement's episodes, passages.")
    grade: Literal["strong", "weak", "none"] | None = Field(
        None, description="How well it answers, against the profile's calibration (null: ungraded)."
    )
    evidence: dict[str, Any] | None = Field(None, description="What the grade was read from.")
    superseded: bool | None = Field(None, description="A superseded revision (history only).")
    supersededAt: str | None = Field(None, description="When it stopped being current.")
    supersededBy: int | None = Field(None, description="The revision that took its place.")


class SearchAnswer(Answer):
    memory: str
    query: str
    policy: str
    limit: int
    channels: list[str]
    vector: VectorChannel
    keywordMethod: str | None
    entities: list[str]
    reranker: str
    scoreKind: Literal["fused", "reranker"]
    latencyMs: float
    results: list[SearchResult]
    pending: Pending
    asOf: str | None = Field(
        None, description="The date or date-time searched as of (as given); null: now."
    )
    match: dict[str, Any] | None = Field(
        None, description="The best result's grade and, when nothing matches, why in words."
    )


class EpisodeHead(Answer):
    """What a listing and a history say of each episode."""

    id: int
    title: str
    kind: str
    occurredAt: str
    ingestedAt: str
    source: str | None


class ListedEpisode(EpisodeHead):
    sourceId: str | None = Field(description="The source's identity: a JSONL id or a path.")
    revisions: int = Field(description="How many revisions its source has had.")


class EpisodeListing(Answer):
    memory: str
    episodes: list[ListedEpisode] = Field(description="Current episodes, newest first.")


class Revision(EpisodeHead):
    current: bool
    supersededAt: str | None
    supersededBy: int | None
    characters: int


class History(Answer):
    memory: str
    sourceId: str | None
    revisions: list[Revision] = Field(description="Every revision of the source, newest first.")


class Episode(Answer):
    id: int
    memory: str
    kind: str
    title: str
    occurredAt: str
    ingestedAt: str
    ingestDay: str
    salience: float
    source: str | None
    externalId: str | None
    metadata: dict[str, Any]
    chunks: int


class WholeEpisode(Episode):
    body: str


class EpisodePage(Episode):
    characters: int = Field(description="The length of the whole body.")
    page: int
    pages: int
    start: int = Field(description="Where the page starts in the body.")
    end: int
    chunkIds: list[str]
    text: str


class Rejection(Answer):
    location: str = Field(
        description="episodes[i], or the document's name", examples=["episodes[1]"]
    )
    reason: str


class AddAnswer(Answer):
    ingestDay: str
    inserted: int
    episodeIds: list[int]
    duplicates: int = Field(description="Bodies already stored in their memory.")
    rejected: list[Rejection]


class IndexAnswer(Answer):
    profile: str
    seconds: float
    episodes: int | None = Field(None, description="Only for a token of every memory.")
    chunks: int | None = None
    vectors: int | None = None
    windowVectors: int | None = None
    pendingEpisodes: int | None = None


class IndexQueued(Answer):
    status: Literal["queued"]
    runningSeconds: float = Field(description="How long the running pass has run.")
    message: str = Field(description="What happens to what this request asked for.")


class DeletedCounts(Answer):
    episodes: int
    chunks: int
    vectors: int
    mentions: int
    entities: int
    telemetry: int
    statements: int
    statementVectors: int
    statementsTrimmed: int
    tables: dict[str, int] = Field(description="Rows deleted per table.")
    ingestDays: list[str]


class Forgotten(Answer):
    memory: str
    episodeId: int | None = Field(None, description="When one episode was forgotten.")
    deleted: DeletedCounts


class FullStatus(Answer):
    """``status --json``: for a caller of every memory."""

    version: str
    dataFolder: str | None
    database: str = Field(description="The database's address, password masked.")
    sharedBuffers: dict[str, str | None] | None = Field(
        None,
        description="The server's shared_buffers now and (nextStart) what the embedded "
        "server's configuration gives it from its next start, when that differs.",
    )
    memories: int
    episodes: int
    chunks: int
    vectors: int
    pendingEpisodes: int
    activeProfile: dict[str, Any] | None
    configuredProfile: str | None
    pendingByDay: dict[str, int]
    embedding: dict[str, Any] | None
    index: dict[str, Any] | None
    calibration: dict[str, Any] | None


class ScopedStatus(Answer):
    """For a token of some memories: theirs only (global counts would tell others' sizes)."""

    version: str
    memories: list[MemoryCounts]
    activeProfile: dict[str, Any] | None
    configuredProfile: str | None


class Statement(Answer):
    id: int
    memory: str
    kind: Literal["observation", "belief"]
    status: StatusName
    text: str
    confidence: float
    episodeIds: list[int]
    passages: list[str]
    author: str
    revises: int | None = Field(description="The statement it replaced.")
    observedAt: str
    validFrom: str | None = Field(None, description="When it began to hold (null: observedAt).")
    validUntil: str | None = Field(None, description="When it stopped holding (null: still).")
    recordedAt: str | None = Field(None, description="When the memory recorded it.")
    supersededAt: str | None = Field(
        None, description="When a revision took its place (the memory's time); null: current."
    )


class CloseStatement(Statement):
    similarity: float | None
    foundBy: str = Field(description="vector, words or vector+words")


class SaveAnswer(Answer):
    action: Literal["added", "revised", "refused", "undecided"]
    saved: bool
    message: str
    id: int | None
    duplicateOf: int | None
    vector: str = Field(description="stored, pending (the index pass embeds it) or none")
    close: list[CloseStatement]


class NotSaved(SaveAnswer):
    """409: nothing was saved (close ones exist, or a near-exact duplicate), and why."""

    error: str


class Statements(Answer):
    memory: str
    observations: list[Statement]


class StatusChanged(Answer):
    memory: str
    id: int
    status: StatusName


# -- the document's pieces -------------------------------------------------------------------
# What each error status means, for every route that can answer it; the body is ``ErrorBody``.
ERROR_WORDS = {
    400: "The body cannot be read: malformed JSON, not UTF-8, or empty.",
    401: "No token, or an unknown or revoked one (and beyond loopback: no token exists yet).",
    403: "A read-only token writing, or a request from a web page of another origin.",
    404: "No such memory, episode or statement, or one outside the token's memories.",
    408: "The body paused for longer than the client timeout.",
    413: "The body or the batch is too large.",
    415: "A JSON body not sent as Content-Type: application/json.",
    421: "A Host header that names no loopback or allowed name, on a loopback server.",
    422: "Invalid input; the message names the parameter or field and why.",
    500: "An unexpected failure, logged by the server (never a stack trace).",
    502: "The embedding service is down or refused.",
    503: "The database is down.",
}
# What any route may answer, whatever it does: the guard's refusals and the outages.
COMMON_ERRORS = (401, 403, 421, 500, 503)


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for these error statuses, each documented as ``ErrorBody``."""
    return {s: {"model": ErrorBody, "description": ERROR_WORDS[s]} for s in statuses}


def answer(model: Any, description: str, status: int = 200) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": model, "description": description}}


def answering(model: Any, description: str, *statuses: int) -> dict[str, Any]:
    """A route's ``response_model`` and ``responses``: it answers the core's own document
    (``to_json``), which ``model`` only documents (FastAPI neither infers a model from the
    route nor filters the answer through one), or one of these error statuses."""
    return {
        "response_model": None,
        "responses": {**answer(model, description), **errors(*statuses)},
    }


def ref(model: type[BaseModel]) -> dict[str, str]:
    """A reference to ``model`` among the document's schemas (``api_docs`` adds the request
    models there; FastAPI adds those of the ``responses``)."""
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def json_body(schema: dict, example: Any, description: str, **other_types: dict) -> dict:
    """``openapi_extra`` declaring a route's JSON body (read by the route itself, so FastAPI
    does not know it): its schema, an example that works, and any other media types."""
    content = {"application/json": {"schema": schema, "example": example}, **other_types}
    return {"requestBody": {"required": True, "description": description, "content": content}}
