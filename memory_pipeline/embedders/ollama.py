"""Embeddings from an Ollama server (``/api/embed``).

The ``ollama`` client package reads the host (``HOST``, ``HOST:PORT`` or a URL) and makes the
request headers (``OLLAMA_API_KEY`` included); the request goes through ``embedders.transport``
(``http.client`` kept-alive connections for a plain http host, the client's own httpx otherwise,
and for a redirect, which the client follows), and the client's ``ResponseError`` carries an
HTTP error as before. The answer's JSON (Ollama has no binary form) is parsed here with orjson
and made one float32 array, instead of the client's ``json.loads`` and pydantic model checking
every number: less client CPU per call (``benchmarks/bench_embed_decode.py``), which counts when
several calls are in flight.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import httpx
import numpy as np
import orjson

from memory_pipeline.embedders import transport
from memory_pipeline.embedders.base import Embedder, EmbeddingProfile, finite, status_error
from memory_pipeline.embedders.detect import not_found
from memory_pipeline.errors import ConfigurationError, EmbedderUnavailable, ModelRefused, shortened

try:
    import ollama
except ValueError as exc:  # the package builds a default client from OLLAMA_HOST when imported
    raise ConfigurationError(
        f"OLLAMA_HOST={os.environ.get('OLLAMA_HOST', '')!r}: {exc}; expected http://HOST:PORT"
    ) from None

# qwen3-embedding is instruction-tuned on the query side only: queries carry the task, documents
# are embedded as they are (the model card reports lower retrieval scores without it).
QWEN3_QUERY_INSTRUCTION = (
    "Instruct: Given a question, retrieve passages from a personal memory that answer it\nQuery: "
)


def query_prefix_for(model: str) -> str:
    """The text put before every query for ``model``; documents never get one."""
    # Also matches registry paths such as "hf.co/Qwen/Qwen3-Embedding-0.6B-GGUF".
    base_name = model.rsplit("/", 1)[-1].lower()
    return QWEN3_QUERY_INSTRUCTION if base_name.startswith("qwen3-embedding") else ""


def _check_host(host: str) -> None:
    """Refuse a host that could never work, rather than report it later as a network outage."""
    # Like the ollama client, accept "HOST", "HOST:PORT" and full URLs.
    text = host.strip()
    try:
        url = httpx.URL(text if "://" in text else f"http://{text}")
    except (httpx.InvalidURL, ValueError, TypeError):
        url = None
    malformed = not text or any(c.isspace() for c in text)
    if malformed or url is None or url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(f"invalid Ollama host {host!r}: expected http://HOST:PORT")


class OllamaEmbedder(Embedder):
    """One Ollama model; one ``/api/embed`` call per batch."""

    service_name = "Ollama"

    def __init__(
        self,
        profile: EmbeddingProfile,
        host: str,
        batch_size: int = 16,
        timeout_s: float = 120.0,
    ):
        super().__init__(profile, batch_size=batch_size)
        self.host = host
        self.timeout_s = timeout_s
        self.query_prefix = query_prefix_for(profile.model)
        _check_host(host)
        try:
            self._client = ollama.Client(host=host, timeout=timeout_s)
        except (ValueError, TypeError, httpx.InvalidURL) as exc:
            raise ConfigurationError(f"invalid Ollama host {host!r}: {shortened(exc)}") from None
        http = self._client._client  # the client's httpx.Client: its base URL and headers
        self.base_url = str(http.base_url).rstrip("/")
        url = (
            str(http.base_url).rstrip("/") + "/api/embed"
        )  # below a base path too, as the client does
        self._httpx = transport.HttpxPoster(http, url, headers={})
        self._poster: transport.LeanPoster | transport.HttpxPoster = self._httpx
        if transport.lean_applies(url):
            # The client's headers but the encodings: the lean transport reads bodies as they come.
            headers = {
                k: v
                for k, v in http.headers.items()
                if k.lower() not in ("accept-encoding", "connection")
            }
            self._poster = transport.LeanPoster(url, timeout_s=timeout_s, headers=headers)

    def close(self) -> None:
        if self._poster is not self._httpx:
            self._poster.close()
        self._client.close()

    def _embed_batch(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        model = self.profile.model
        inputs = [self.query_prefix + t for t in texts] if is_query else list(texts)
        try:
            response = self._post(orjson.dumps({"model": model, "input": inputs}))
            if response.status >= 400:
                # The client's own error: the server's ``{"error"}`` message, or its body.
                raise ollama.ResponseError(response.text, response.status)
            answer = orjson.loads(response.content)
        except ollama.ResponseError as exc:
            raise self._response_error(exc) from None
        except transport.TransportTimeout:
            raise EmbedderUnavailable(
                self.service_name, f"no answer from {self.host} within {self.timeout_s:g}s"
            ) from None
        except transport.TransportFailed as exc:
            if exc.connecting:
                raise EmbedderUnavailable(
                    self.service_name,
                    f"cannot connect to {self.host}; is `ollama serve` running there?",
                ) from None
            raise EmbedderUnavailable(
                self.service_name, f"cannot talk to {self.host}: {shortened(exc, 120)}"
            ) from None
        except (ValueError, TypeError) as exc:
            # Non-JSON body or a JSON shape the client's pydantic model rejects.
            raise ModelRefused(
                f"the Ollama server at {self.host} answered something that is not an embedding "
                f"response for model {model!r}: {shortened(exc, 120)}"
            ) from None
        return self._vectors(
            answer.get("embeddings") if isinstance(answer, dict) else None, len(inputs)
        )

    def _post(self, body: bytes) -> transport.Answer:
        response = self._poster.post(body)
        if 300 <= response.status < 400 and self._poster is not self._httpx:
            response = self._httpx.post(body)  # the client follows redirects
        return response

    def _response_error(self, exc: ollama.ResponseError) -> Exception:
        status, message = exc.status_code, shortened(exc.error)
        model = self.profile.model
        refusal = not_found(
            status,
            message,
            "ollama",
            self.base_url,
            model,
            self.timeout_s,
            missing=ModelRefused(
                f"model {model!r} is not available on the Ollama server at {self.host} "
                f"(run: ollama pull {model})"
            ),
            absent=EmbedderUnavailable(
                self.service_name,
                f"{self.host} has no /api/embed (HTTP 404: {message}); is it an Ollama server?",
            ),
        )
        if refusal is not None:
            return refusal
        server = f"the Ollama server at {self.host}"
        return status_error(self.service_name, self.host, server, model, status, message)

    def _vectors(self, embeddings: object, expected: int) -> np.ndarray:
        try:
            raw = np.asarray(embeddings, dtype=np.float32)
        except (ValueError, TypeError):
            raw = None
        if raw is None or raw.ndim != 2 or raw.shape[0] != expected or raw.shape[1] == 0:
            raise ModelRefused(
                f"the Ollama server at {self.host} answered a malformed embedding list for model "
                f"{self.profile.model!r} (expected {expected} vectors of equal length)"
            )
        return finite(raw, f"the Ollama server at {self.host}", self.profile.model)
