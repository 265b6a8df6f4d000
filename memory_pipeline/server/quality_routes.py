"""The HTTP routes for labelled questions and retrieval quality, over ``Memory``'s methods.

``POST /v1/questions`` saves a question with what answers it (an agent that found its answer
records "this result answered my question"); ``GET /v1/questions`` lists a memory's;
``DELETE /v1/questions/{id}`` removes one. ``GET /v1/quality`` answers each visible memory's
latest figures (first@1, recall@3/@8, MRR, fused and per channel), as the ``retrieval_quality``
asset and ``memory-pipeline quality`` last recorded them.
"""

from __future__ import annotations

from fastapi import Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from memory_pipeline.errors import InputError
from memory_pipeline.server.access import readable_memory, writable_memory
from memory_pipeline.server.http_bodies import read_json
from memory_pipeline.server.http_deps import Caller, MemoryDep, Writer, routes
from memory_pipeline.server.http_models import (
    QuestionIn,
    errors,
    json_body,
    ref,
)

router = routes("quality")


@router.post(
    "/v1/questions",
    summary="Save a labelled question and what answers it",
    status_code=201,
    response_model=None,
    responses=errors(400, 404, 408, 413, 415, 422),
    openapi_extra=json_body(
        ref(QuestionIn),
        {"memory": "me", "question": "how do I bake bread?", "expect_title": "Bread"},
        "The question and the episode, source or statement that answers it",
    ),
)
async def save_question(
    request: Request,
    memory: MemoryDep,
    access: Writer,
    memory_name: str | None = Query(
        None, alias="memory", description="The question's memory, when the body names none"
    ),
) -> JSONResponse:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise InputError("expected a question object")
    name = writable_memory(access, body.get("memory", memory_name))
    author = body.get("author", "")
    if not isinstance(author, str):
        raise InputError("author: expected a text")
    item = {k: v for k, v in body.items() if k != "author"} | {"memory": name}
    report = await run_in_threadpool(memory.add_questions, [("body", item)], author=author)
    if report.rejections:
        raise InputError(report.rejections[0].reason)
    return JSONResponse(report.to_json(), status_code=201)


@router.get(
    "/v1/questions",
    summary="A memory's labelled questions, oldest first",
    responses=errors(404, 422),
)
def list_questions(
    memory: MemoryDep,
    access: Caller,
    memory_name: str = Query(alias="memory", description="The memory", examples=["me"]),
) -> dict:
    name = readable_memory(memory, access, memory_name)
    return {"memory": name, "questions": [q.to_json() for q in memory.questions(name)]}


@router.delete(
    "/v1/questions/{question_id}",
    summary="Remove a labelled question (removed: false when it was already gone)",
    responses=errors(422),
)
def remove_question(
    memory: MemoryDep,
    access: Writer,
    question_id: int = Path(description="The question's id"),
    memory_name: str = Query(alias="memory", description="The question's memory", examples=["me"]),
) -> dict:
    name = writable_memory(access, memory_name)
    # Idempotent: a question already gone (removed, or forgotten with its episode) is no error.
    removed = memory.remove_questions(name, [question_id])
    return {"memory": name, "id": question_id, "removed": bool(removed)}


@router.get(
    "/v1/quality",
    summary="Each memory's latest retrieval-quality figures",
    responses=errors(404, 422),
)
def latest_quality(
    memory: MemoryDep,
    access: Caller,
    memory_name: str | None = Query(
        None, alias="memory", description="Only this memory", examples=["me"]
    ),
) -> dict:
    name = None if memory_name is None else readable_memory(memory, access, memory_name)
    rows = memory.quality(name)
    return {"quality": [r for r in rows if access.sees(r["memory"])]}
