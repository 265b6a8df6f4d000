"""Reading a request's body for the HTTP API: bounded while it streams in, JSON only as JSON.

The routes read their bodies themselves rather than through FastAPI's body parameters: a body
is refused by its declared length before a byte is read, a JSON body must say
``application/json``, and each way a body can be unreadable has its own status and words
(``http_errors``). The request models (``http_models``) describe the bodies in the OpenAPI
document; the episode and statement rules stay the judges of what a body holds.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request

from memory_pipeline.server.guard import media_type, unsupported_media
from memory_pipeline.server.http_errors import BadRequest, TooLarge, UnsupportedMedia

MAX_BODY_BYTES = 8 * 1024 * 1024


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused as soon as it is known to pass ``limit``: by its declared length
    before a byte is read, else while it streams in (never buffered past the limit)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"the body is {int(declared)} bytes; at most {limit} are accepted")
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise TooLarge(f"the body is larger than {limit} bytes, the most accepted")
    return bytes(body)


async def read_json(request: Request) -> Any:
    # Only application/json: the types a web page may send anywhere without asking
    # (text/plain, forms) are never read as JSON.
    media = media_type(request.headers.get("content-type"))
    if media != "application/json":
        raise UnsupportedMedia(unsupported_media(media))
    body = await read_body(request, MAX_BODY_BYTES)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the body is not UTF-8 (invalid byte at offset {exc.start})") from None
    if not text.strip():
        raise BadRequest("the body is empty; expected JSON")
    try:
        return json.loads(text)
    except RecursionError:
        raise BadRequest("the JSON body is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
