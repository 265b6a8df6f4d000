"""The HTTP routes for observations and beliefs (``/v1/observations``), over ``Memory``'s methods.

``POST /v1/observations`` saves a statement as ``memory-pipeline observe`` does: the close
existing ones come back with the answer, and ``decision`` says what to do about them ("ask":
save only when none is close; "add": save anyway; "revise" with ``revise_id``: replace that one,
kept as history; dropping is not sending again). 201 saved; 409 not saved, with ``error`` saying
why: close ones exist (``action: "undecided"``) or a near-exact duplicate was refused
(``action: "refused"``, ``force`` saves it anyway).
``GET /v1/observations`` lists a memory's statements; ``PATCH /v1/observations/{id}`` marks one
active, contested or retired. Search them with ``GET /v1/search`` (channels ``observation`` and
``belief``; ``contested`` includes contested beliefs or not, whatever the policy says).
"""

from __future__ import annotations

from typing import Any

from fastapi import Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from memory_pipeline.domain.jsonl import LineRejected, given, json_type, reject_unknown_fields
from memory_pipeline.domain.observations import JSONL_FIELDS
from memory_pipeline.errors import InputError
from memory_pipeline.server.access import readable_memory, writable_memory
from memory_pipeline.server.api_docs import REQUIRED
from memory_pipeline.server.http_bodies import read_json
from memory_pipeline.server.http_deps import Caller, MemoryDep, Writer, routes
from memory_pipeline.server.http_models import (
    NotSaved,
    SaveAnswer,
    StatementIn,
    Statements,
    StatusChange,
    StatusChanged,
    answer,
    answering,
    errors,
    json_body,
    ref,
)

# The fields of a statement (those of the JSONL import) and of the decision about close ones.
SAVE_FIELDS = (*JSONL_FIELDS, "decision", "revise_id", "force")


def save_arguments(body: Any, default_memory: str | None) -> dict:
    """``Memory.observe``'s arguments from a request body, or InputError naming the field."""
    if not isinstance(body, dict):
        raise InputError(f"expected a statement object, got {json_type(body)}")
    try:
        reject_unknown_fields(body, SAVE_FIELDS)
    except LineRejected as rejected:
        raise InputError(rejected.reason) from None
    fields = {name: value for name, value in body.items() if value is not None}
    if given(body, "memory", default_memory) is not None:
        fields["memory"] = given(body, "memory", default_memory)
    if "memory" not in fields or "text" not in fields:
        raise InputError("a statement needs 'memory' (or ?memory=) and 'text'")
    force = fields.pop("force", False)
    if not isinstance(force, bool):
        raise InputError(f"force: expected true or false, got {json_type(force)}")
    revise_id = fields.pop("revise_id", None)
    if revise_id is not None and (isinstance(revise_id, bool) or not isinstance(revise_id, int)):
        raise InputError(f"revise_id: expected a statement id, got {json_type(revise_id)}")
    return {**fields, "force": force, "revise_id": revise_id}


router = routes("statements")
MEMORY = "The statement's memory, when the body names none"


@router.post(
    "/v1/observations",
    summary="Save an observation or a belief; close existing ones come back",
    status_code=201,
    response_model=None,
    responses={
        **answer(SaveAnswer, "Saved (added, or revised: the old one kept as history)", 201),
        **answer(
            NotSaved,
            "Not saved: close ones exist (action undecided), or a near-exact "
            "duplicate (action refused; force saves it)",
            409,
        ),
        **errors(400, 404, 408, 413, 415, 422, 502),
    },
    openapi_extra=json_body(
        ref(StatementIn),
        {"memory": "me", "text": "Prefers green tea in the morning.", "decision": "add"},
        "The statement (the fields of the JSONL import) and the decision about close ones",
    ),
)
async def save(
    request: Request,
    memory: MemoryDep,
    access: Writer,
    memory_name: str | None = Query(None, alias="memory", description=MEMORY),
) -> JSONResponse:
    arguments = save_arguments(await read_json(request), memory_name)
    name = writable_memory(access, arguments.pop("memory"))
    text = arguments.pop("text")
    outcome = await run_in_threadpool(memory.observe, name, text, **arguments)
    document = outcome.to_json()
    if outcome.action == "refused":
        return JSONResponse(
            {
                "error": f"a near-exact duplicate of statement #{outcome.duplicate_of} "
                "(force: true saves it anyway)",
                **document,
            },
            status_code=409,
        )
    if not outcome.saved:  # held back: close ones exist; nothing was written
        return JSONResponse({"error": outcome.message, **document}, status_code=409)
    return JSONResponse(document, status_code=201)


@router.get(
    "/v1/observations",
    summary="A memory's observations and beliefs, newest first",
    **answering(Statements, "The statements, newest first", 404, 422),
)
def listing(
    memory: MemoryDep,
    access: Caller,
    memory_name: str | None = Query(
        None, alias="memory", description="The memory", examples=["me"], json_schema_extra=REQUIRED
    ),
    kind: str | None = Query(None, description="observation or belief (default: both)"),
    all: bool = Query(False, description="Retired versions too"),
    limit: int = Query(100, description="At most this many (1 to 1,000)"),
) -> dict:
    if memory_name is None:
        raise InputError("'memory' is a required query parameter")
    name = readable_memory(memory, access, memory_name)
    rows = memory.observations(name, kind=kind, with_retired=all, limit=limit)
    return {"memory": name, "observations": [o.to_json() for o in rows]}


@router.patch(
    "/v1/observations/{observation_id}",
    summary="Mark a statement active, contested or retired",
    **answering(StatusChanged, "The statement's new status", 400, 404, 408, 413, 415, 422),
    openapi_extra=json_body(
        ref(StatusChange), {"memory": "me", "status": "contested"}, "The new status"
    ),
)
async def set_status(
    request: Request,
    memory: MemoryDep,
    access: Writer,
    observation_id: int = Path(description="The statement's id"),
    memory_name: str | None = Query(None, alias="memory", description=MEMORY),
) -> dict:
    body = await read_json(request)
    if not isinstance(body, dict) or set(body) - {"status", "memory"} or "status" not in body:
        raise InputError('expected {"status": "active" | "contested" | "retired"}')
    name = writable_memory(access, given(body, "memory", memory_name))
    await run_in_threadpool(memory.set_observation_status, name, observation_id, body["status"])
    return {"memory": name, "id": observation_id, "status": body["status"]}
