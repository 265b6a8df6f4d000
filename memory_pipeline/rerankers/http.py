"""A cross-encoder reranker behind ``POST /v1/rerank`` (llama.cpp's server, TEI-compatible servers).

Wire format::

    -> {"model": "...", "query": "...", "documents": ["...", ...], "top_n": N}
    <- {"results": [{"index": i, "relevance_score": s}, ...]}   (or under "data"; any order)

``HttpReranker.rerank`` returns one score per document in the given order. Reranking is optional:
every way it can go wrong raises ``RerankerFailed`` with a plain reason, and search keeps its
fused order.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping, Sequence

import httpx

from memory_pipeline.config import check_url, env_float
from memory_pipeline.errors import ConfigurationError, shortened

__all__ = [
    "DEFAULT_RERANK_MODEL",
    "DEFAULT_TIMEOUT_S",
    "HttpReranker",
    "RerankerFailed",
    "rerank_url",
    "reranker_from_env",
]

DEFAULT_RERANK_MODEL = "qwen3-reranker:0.6b"
DEFAULT_TIMEOUT_S = 5.0

URL_VAR = "MEMORY_PIPELINE_RERANK_URL"
MODEL_VAR = "MEMORY_PIPELINE_RERANK_MODEL"
TIMEOUT_VAR = "MEMORY_PIPELINE_RERANK_TIMEOUT"

# A rerank answer is a few dozen bytes per document; anything near this is not one.
_MAX_ANSWER_BYTES = 16 * 1024 * 1024


class RerankerFailed(Exception):
    """The reranker gave no usable answer; ``reason`` says why in plain words.

    Search catches this and keeps its fused order, so it is deliberately not a
    ``MemoryPipelineError`` (it never reaches a command's top level).
    """

    def __init__(self, reason: str, url: str = ""):
        self.reason = reason
        self.url = url
        super().__init__(f"the reranker at {url} failed: {reason}" if url else reason)


def rerank_url(base_url: str) -> str:
    """``{base}/v1/rerank``; a base ending with ``/v1`` (or already ``/v1/rerank``) is not doubled."""
    base = base_url.strip().rstrip("/")
    if base.endswith("/v1/rerank"):
        return base
    if base.endswith("/v1"):
        return f"{base}/rerank"
    return f"{base}/v1/rerank"


def _server_message(raw: bytes) -> str:
    """The error text in an HTTP error body: ``{"error": {"message"}}``, ``{"error": str}``, or text."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return shortened(raw.decode("utf-8", errors="replace"), 120)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message") or error
    if error is None and isinstance(body, dict):
        error = body.get("detail") or body.get("message") or body
    return shortened(error if error is not None else body, 120)


def _connect_reason(exc: Exception) -> str:
    text = str(exc)
    if "refused" in text.lower():
        return "unreachable (connection refused)"
    return f"unreachable ({shortened(text, 120) or type(exc).__name__})"


class HttpReranker:
    """One reranking model behind a ``/v1/rerank`` endpoint; one POST per ``rerank`` call.

    ``timeout_s`` bounds connecting, sending and waiting for the answer (each phase gets it,
    and the answer's body must be complete within ``timeout_s`` of the start), so a slow server
    costs a search at most a few seconds before it falls back to the fused order.
    """

    def __init__(
        self, url: str, model: str = DEFAULT_RERANK_MODEL, timeout_s: float = DEFAULT_TIMEOUT_S
    ):
        if not isinstance(url, str) or not url.strip():
            raise ValueError("the reranker URL is empty: expected http(s)://HOST[:PORT][/v1]")
        if not isinstance(model, str) or not model.strip():
            raise ValueError("the reranker model name is empty")
        if (
            isinstance(timeout_s, bool)
            or not isinstance(timeout_s, (int, float))
            or not math.isfinite(timeout_s)
            or timeout_s <= 0
        ):
            raise ValueError(
                f"the reranker timeout must be a positive number of seconds, got {timeout_s!r}"
            )
        self.base_url = url.strip()
        self.url = rerank_url(url)
        self.model = model.strip()
        self.timeout_s = float(timeout_s)
        try:
            parsed = httpx.URL(self.url)
        except (httpx.InvalidURL, ValueError, TypeError) as exc:
            raise ValueError(f"invalid reranker URL {url!r}: {shortened(exc)}") from None
        # Otherwise a typo only surfaces at the first search, looking like a network outage.
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"invalid reranker URL {url!r}: expected http(s)://HOST[:PORT][/v1]")
        # One client for the reranker's life: searches reuse the kept-alive connection.
        self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s))

    def __repr__(self) -> str:
        return (
            f"HttpReranker({self.base_url!r}, model={self.model!r}, timeout_s={self.timeout_s!r})"
        )

    def __enter__(self) -> HttpReranker:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in the order given (higher is more relevant).

        Raises ``RerankerFailed`` for anything short of a complete, well-formed answer.
        """
        documents = list(documents)
        if not documents:
            return []
        payload = {
            "model": self.model,
            "query": query,
            "documents": documents,
            # Every document must come back scored: asking for fewer would leave holes.
            "top_n": len(documents),
        }
        status, raw = self._post(payload)
        if not 200 <= status < 300:
            message = _server_message(raw)
            raise self._failed(f"HTTP {status}: {message}" if message else f"HTTP {status}")
        return self._scores(raw, len(documents))

    # -- internals ---------------------------------------------------------------------------
    def _failed(self, reason: str) -> RerankerFailed:
        return RerankerFailed(reason, self.url)

    def _post(self, payload: dict) -> tuple[int, bytes]:
        deadline = time.monotonic() + self.timeout_s
        timed_out = self._failed(f"timed out after {self.timeout_s}s")
        try:
            with self._client.stream("POST", self.url, json=payload) as response:
                chunks: list[bytes] = []
                size = 0
                # httpx bounds each read; the deadline bounds a server that trickles its answer.
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > _MAX_ANSWER_BYTES:
                        raise self._failed(f"answer larger than {_MAX_ANSWER_BYTES} bytes")
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise timed_out
                if time.monotonic() > deadline:
                    raise timed_out
                return response.status_code, b"".join(chunks)
        except httpx.TimeoutException:
            raise timed_out from None
        except httpx.ConnectError as exc:
            raise self._failed(_connect_reason(exc)) from None
        except (httpx.HTTPError, httpx.StreamError, OSError) as exc:
            raise self._failed(
                f"transport error: {shortened(exc, 120) or type(exc).__name__}"
            ) from None

    def _scores(self, raw: bytes, expected: int) -> list[float]:
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            raise self._failed("malformed answer: not JSON") from None
        if not isinstance(body, dict):
            raise self._failed(f"malformed answer: a JSON {type(body).__name__}, not an object")
        key = "results" if "results" in body else "data" if "data" in body else None
        if key is None:
            raise self._failed("malformed answer: missing 'results'")
        items = body[key]
        if not isinstance(items, list):
            raise self._failed(f"malformed answer: '{key}' is not a list")

        scores: list[float | None] = [None] * expected
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                raise self._failed(f"malformed answer: result {position} is not an object")
            index = item.get("index")
            if isinstance(index, bool) or not isinstance(index, int):
                raise self._failed(
                    f"malformed answer: result {position} has index {shortened(repr(index), 40)}"
                )
            if not 0 <= index < expected:
                raise self._failed(
                    f"malformed answer: index {index} out of range for {expected} documents"
                )
            if scores[index] is not None:
                raise self._failed(f"malformed answer: index {index} appears twice")
            score = item.get("relevance_score")
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise self._failed(
                    f"malformed answer: score {shortened(repr(score), 40)} for index {index} is not a number"
                )
            try:
                value = float(score)
            except OverflowError:  # an integer beyond float range
                value = math.inf
            if not math.isfinite(value):
                raise self._failed("non-finite score")
            scores[index] = value
        covered = sum(score is not None for score in scores)
        if covered != expected:
            raise self._failed(f"answer covers {covered} of {expected} documents")
        return [float(score) for score in scores]  # type: ignore[arg-type]


def _timeout_from(environ: Mapping[str, str]) -> float:
    return env_float(environ, TIMEOUT_VAR, DEFAULT_TIMEOUT_S)


def reranker_from_env(environ: Mapping[str, str] | None = None) -> HttpReranker | None:
    """The reranker configured by ``MEMORY_PIPELINE_RERANK_*``, or None when no URL is set.

    ``MEMORY_PIPELINE_RERANK_URL``: the server's base URL (``/v1`` optional);
    ``MEMORY_PIPELINE_RERANK_MODEL``: default ``qwen3-reranker:0.6b``;
    ``MEMORY_PIPELINE_RERANK_TIMEOUT``: seconds per call, default 5.
    Invalid values raise ``ConfigurationError`` naming the variable.
    """
    environ = os.environ if environ is None else environ
    url = environ.get(URL_VAR, "").strip()
    if not url:
        return None
    check_url(URL_VAR, url)
    model = environ.get(MODEL_VAR, "").strip() or DEFAULT_RERANK_MODEL
    timeout_s = _timeout_from(environ)
    try:
        return HttpReranker(url, model=model, timeout_s=timeout_s)
    except ValueError as exc:
        raise ConfigurationError(f"{URL_VAR}: {exc}") from None
