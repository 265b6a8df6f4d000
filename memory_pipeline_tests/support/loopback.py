"""A real HTTP embedding server on 127.0.0.1 speaking the Ollama and OpenAI wire formats, for tests.

Tests exercise the actual HTTP clients (``ollama.Client``, ``httpx``) against this server instead
of mocking them, so connection handling, status codes and JSON shapes are all on the real path.

Usage::

    from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, hashing_vector

    with LoopbackEmbeddingServer(dim=1024, models={"qwen3-embedding:0.6b"}) as server:
        embedder = OllamaEmbedder(profile, host=server.url)
        ...
        assert [r[2] for r in server.requests] == [16, 4]

Routes:

* ``POST /api/embed`` (Ollama): ``{"model", "input": str | [str]}`` ->
  ``{"model", "embeddings": [[...], ...]}``; an unserved model -> 404
  ``{"error": "model \\"x\\" not found, try pulling it first"}``.
* ``POST /v1/embeddings`` (OpenAI; ``/embeddings`` too): ``{"model", "input", "input_type"?,
  "encoding_format"?}`` ->
  ``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}], "model"}``;
  with ``"encoding_format": "base64"`` each embedding is the base64 of its little-endian float32
  bytes, as OpenAI answers; an unserved model -> 404
  ``{"error": {"message", "type", "code": "model_not_found"}}``.
* ``GET /``, ``GET /api/tags``, ``GET /v1/models``: liveness and model lists.

Every vector is ``hashing_vector(text, dim)`` of the exact input text, so expected values can be
computed in the test (``instruction_aware=True`` changes that for instruction-prefixed texts).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple

__all__ = [
    "EmbedRequest",
    "LoopbackEmbeddingServer",
    "hashing_vector",
    "strip_instruction",
    "unused_port_url",
]

_WORD = re.compile(r"\w+")

# Prefix lengths at which every token gets its own hashed slot. Providers keep a Matryoshka
# prefix of the served vector (e.g. 512 of 1024); a plain one-slot-per-token hash would leave a
# short text with no weight at all inside the kept prefix, so each token is written once per
# level, and the wider levels carry more weight so the full vector is dominated by its
# least-colliding level.
_LEVELS = (16, 64, 256, 1024, 4096, 16384)


def _levels(dim: int) -> list[int]:
    sizes = [size for size in _LEVELS if size < dim]
    sizes.append(dim)
    return sizes


def hashing_vector(text: str, dim: int) -> list[float]:
    """A deterministic bag-of-words unit vector: texts sharing words are close in cosine.

    Lowercased ``\\w+`` tokens are each hashed (blake2b) to a slot and a sign inside every
    prefix level (16, 64, 256, 1024, ... up to ``dim``), weighted by ``sqrt(level / dim)``, summed
    and L2-normalised. Any Matryoshka prefix of at least 16 numbers therefore still carries every
    token. A text without word characters (or whose contributions cancel) maps to the fixed unit
    vector ``[1, 0, 0, ...]``. Same input, same output, in every process and on every platform.
    """
    if dim <= 0:
        raise ValueError(f"dim must be positive, got {dim}")
    vector = [0.0] * dim
    levels = _levels(dim)
    for token in _WORD.findall(text.lower()):
        for level in levels:
            digest = hashlib.blake2b(
                token.encode("utf-8"), digest_size=8, person=f"lvl{level}".encode()
            ).digest()
            slot = int.from_bytes(digest[:4], "little") % level
            sign = 1.0 if digest[4] & 1 else -1.0
            vector[slot] += sign * math.sqrt(level / dim)
    norm = math.sqrt(sum(x * x for x in vector))
    if norm < 1e-12:
        vector = [0.0] * dim
        vector[0] = 1.0
        return vector
    return [x / norm for x in vector]


_INSTRUCTION = re.compile(r"\AInstruct:.*?\nQuery: ?", re.DOTALL)


def strip_instruction(text: str) -> str:
    """Drop a leading ``Instruct: ...\\nQuery: `` block (the qwen3-embedding query format)."""
    return _INSTRUCTION.sub("", text, count=1)


def token_count(text: str) -> int:
    """A tokenizer stand-in: words and punctuation marks (real tokenizers count a few more)."""
    return len(re.findall(r"\w+|[^\w\s]", text))


def unused_port_url() -> str:
    """``http://127.0.0.1:PORT`` with nothing listening on PORT, for "server is down" tests.

    The port is bound and released at once; another process could take it in between, which is
    unlikely enough on loopback for tests.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class EmbedRequest(NamedTuple):
    """One embed request as the server saw it; ``input_type`` is None when not sent (Ollama)."""

    path: str
    model: str | None
    n_inputs: int
    input_type: str | None


class LoopbackEmbeddingServer:
    """A threaded HTTP embedding server on 127.0.0.1:<free port>, started by the constructor.

    Options (all may also be changed on the instance while it runs):

    * ``dim``: dimension of the served vectors (1024, like qwen3-embedding:0.6b).
    * ``models``: the served model names; ``None`` serves any name. Others get a 404.
    * ``fail_after``: after this many successful embed requests every further request gets an
      HTTP 500 (``0``: fail from the start; ``None``: never).
    * ``delay_s``: sleep before answering each embed request (for client timeouts).
    * ``instruction_aware``: embed only the part after a leading ``Instruct: ...\\nQuery: `` block,
      as an instruction-tuned model would treat it as instruction rather than content. Off by
      default (vectors of the exact text). Turn it on for ranking tests through the qwen3 query
      prefix: its ~13 instruction words otherwise dominate the hash of a short query.
    * ``max_input_tokens``: reject a request holding an input of more tokens (counted as words and
      punctuation marks) the way llama.cpp's server does when an input exceeds its physical
      batch (``--ubatch-size``, default 512): HTTP 500 with ``{"error": {"code": 500, "message":
      "input (N tokens) is too large to process. increase the physical batch size (current batch
      size: B)", "type": "server_error"}}``. ``None``: no limit.
    * ``answer_override``: ``f(flavour, texts) -> body``; when set, successful embed requests are
      answered 200 with ``body`` as JSON instead of the normal answer (``flavour`` is "ollama" or
      "openai"). For malformed-answer and reordering tests.
    * ``slots``: at most this many embed requests are computed at once (the others queue), each
      holding its slot for ``delay_s`` plus the time its vectors take: a server with a fixed
      number of parallel slots, like ``OLLAMA_NUM_PARALLEL`` or llama.cpp's ``--parallel``.
      ``None`` (default): no limit.
    * ``vector_fn``: ``f(texts) -> rows`` (a float32 array or lists of floats, one row per text)
      instead of ``hashing_vector`` of each text; benchmarks use a cheaper one.
    * ``base64``: whether ``"encoding_format": "base64"`` is honoured (default True); False
      answers it with HTTP 400, like a server that only speaks floats.
    * ``keepalive_s``: an idle kept-alive connection is closed after this many seconds, like
      llama.cpp's and Go's idle timeouts. ``None`` (default): kept open.
    * ``wire_formats``: the formats served, ``{"ollama", "openai"}`` by default (both, as Ollama
      itself does). A format left out has no route: ``/api/embed`` then answers 404 with Go's
      plain-text ``404 page not found`` (an Ollama-style server's mux), the OpenAI routes 404
      with FastAPI's ``{"detail": "Not Found"}``, as a server speaking only the other one would.
    * ``answers_per_connection``: after answering this many embed requests on one connection, the
      next request on it is read and the connection closed without an answer (a server whose
      idle timeout fires just as a request arrives). ``None`` (default): no limit.

    Attributes:

    * ``url``: ``"http://127.0.0.1:PORT"`` (no trailing slash, no ``/v1``).
    * ``requests``: a snapshot list of ``EmbedRequest(path, model, n_inputs, input_type)``,
      one per embed request received (including refused ones), in arrival order.
    * ``inputs``: a snapshot list with the input texts of each request, parallel to ``requests``.
    * ``served``: how many embed requests were answered successfully.
    * ``max_in_flight``: the most embed requests the server was handling at one moment.
    * ``connections``: how many TCP connections embed requests came on.
    * ``dropped``: how many requests were closed unanswered (``answers_per_connection``).
    * ``authorizations``: the ``Authorization`` header of each embed request (None when absent).
    * ``unrouted``: the paths of embed requests in a format not served (``wire_formats``).

    Use as a context manager, or call ``stop()`` (idempotent). ``clear()`` forgets the request
    log and resets the success count that ``fail_after`` compares with.
    """

    def __init__(
        self,
        *,
        dim: int = 1024,
        models: Iterable[str] | None = None,
        fail_after: int | None = None,
        delay_s: float = 0.0,
        instruction_aware: bool = False,
        answer_override: Callable[[str, list[str]], object] | None = None,
        slots: int | None = None,
        vector_fn: Callable[[list[str]], object] | None = None,
        base64: bool = True,
        max_input_tokens: int | None = None,
        keepalive_s: float | None = None,
        answers_per_connection: int | None = None,
        wire_formats: Iterable[str] = ("ollama", "openai"),
    ):
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim
        self.models = None if models is None else set(models)
        self.fail_after = fail_after
        self.delay_s = delay_s
        self.instruction_aware = instruction_aware
        self.answer_override = answer_override
        self.max_input_tokens = max_input_tokens
        self.vector_fn = vector_fn
        self.base64 = base64
        self.keepalive_s = keepalive_s
        self.answers_per_connection = answers_per_connection
        self.wire_formats = set(wire_formats)
        self._unrouted: list[str] = []
        self._connections: set[tuple] = set()
        self._authorizations: list[str | None] = []
        self._dropped = 0
        self._slots = threading.BoundedSemaphore(slots) if slots else None
        self._in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._requests: list[EmbedRequest] = []
        self._inputs: list[list[str]] = []
        self._served = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        # A short poll interval: stop() waits up to one interval, and tests stop many servers.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=f"loopback-embed-{self.url}",
            daemon=True,
        )
        self._thread.start()
        self._stopped = False

    # -- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> LoopbackEmbeddingServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- inspection -------------------------------------------------------------------------
    @property
    def requests(self) -> list[EmbedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def inputs(self) -> list[list[str]]:
        with self._lock:
            return [list(texts) for texts in self._inputs]

    @property
    def served(self) -> int:
        with self._lock:
            return self._served

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._connections)

    @property
    def authorizations(self) -> list[str | None]:
        with self._lock:
            return list(self._authorizations)

    @property
    def dropped(self) -> int:
        with self._lock:
            return self._dropped

    @property
    def unrouted(self) -> list[str]:
        """The paths of embed requests in a format left out of ``wire_formats``, in order."""
        with self._lock:
            return list(self._unrouted)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._inputs.clear()
            self._served = 0

    # -- used by the handler ----------------------------------------------------------------
    def _admit(self, path: str, model: str | None, texts: list[str], input_type: str | None) -> str:
        """Log the request and decide its fate: "ok", "unknown_model" or "fail"."""
        with self._lock:
            self._requests.append(EmbedRequest(path, model, len(texts), input_type))
            self._inputs.append(list(texts))
            if self.fail_after is not None and self._served >= self.fail_after:
                return "fail"
            if self.models is not None and model not in self.models:
                return "unknown_model"
            # Counted before answering so concurrent requests cannot all slip under fail_after.
            self._served += 1
            return "ok"

    def _vectors(self, texts: list[str]):
        if self.instruction_aware:
            texts = [strip_instruction(t) for t in texts]
        if self.vector_fn is not None:
            return self.vector_fn(texts)
        return [hashing_vector(t, self.dim) for t in texts]

    def _enter(self) -> None:
        if self._slots is not None:
            self._slots.acquire()
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1
        if self._slots is not None:
            self._slots.release()


def _base64_rows(rows) -> list[str]:
    import numpy as np  # only when a client asks for base64 (the module is otherwise stdlib-only)

    matrix = np.asarray(rows, dtype="<f4")
    return [base64.b64encode(row.tobytes()).decode("ascii") for row in matrix]


def _float_rows(rows) -> list[list[float]]:
    return rows.tolist() if hasattr(rows, "tolist") else rows


_EMBED_ROUTES = {"/api/embed": "ollama", "/v1/embeddings": "openai", "/embeddings": "openai"}


def _make_handler(server: LoopbackEmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Keep-alive like real servers, so clients that reuse connections are exercised.
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY, as real model servers set it: headers and body go out as two writes, and
        # with Nagle's algorithm the body waited for the client's delayed ACK of the headers
        # (about 40 ms on Linux) on many requests, a stall no real server has.
        disable_nagle_algorithm = True

        answered = 0  # embed requests answered on this handler's connection

        @property
        def timeout(self) -> float | None:  # read by ``setup``: the idle connection's timeout
            return server.keepalive_s

        def log_message(self, format, *args):  # noqa: A002 - stdlib signature
            pass  # test output stays clean

        def _send_json(self, status: int, payload: object) -> None:
            body = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, flavour: str, status: int, message: str, code: str | None = None) -> None:
            if flavour == "ollama":
                self._send_json(status, {"error": message})
            else:
                kind = "server_error" if status >= 500 else "invalid_request_error"
                self._send_json(status, {"error": {"message": message, "type": kind, "code": code}})

        def _no_route(self, flavour: str) -> None:
            """What a server that does not speak ``flavour`` answers on its route."""
            with server._lock:
                server._unrouted.append(self.path)
            if flavour == "ollama":  # asked of an OpenAI-style server (FastAPI)
                self._send_json(404, {"detail": "Not Found"})
                return
            body = b"404 page not found"  # asked of an Ollama-style server (Go's mux)
            self.send_response(404)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            names = sorted(server.models) if server.models is not None else []
            if self.path == "/":
                body = b"Ollama is running"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif self.path == "/api/tags":
                self._send_json(200, {"models": [{"name": n, "model": n} for n in names]})
            elif self.path == "/v1/models":
                data = [{"id": n, "object": "model", "owned_by": "loopback"} for n in names]
                self._send_json(200, {"object": "list", "data": data})
            else:
                self._error("openai", 404, f"no route for GET {self.path}")

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            with server._lock:
                server._connections.add(self.client_address)
                server._authorizations.append(self.headers.get("Authorization"))
                drop = (
                    server.answers_per_connection is not None
                    and self.answered >= server.answers_per_connection
                )
                server._dropped += drop
            if drop:
                self.close_connection = True
                return
            self.answered += 1
            flavour = _EMBED_ROUTES.get(self.path)
            if flavour is None:
                self._error("openai", 404, f"no route for POST {self.path}")
                return
            if flavour not in server.wire_formats:
                self._no_route(flavour)
                return
            try:
                body = json.loads(raw.decode("utf-8") or "{}")
            except (UnicodeDecodeError, json.JSONDecodeError):
                self._error(flavour, 400, "invalid JSON body")
                return
            if not isinstance(body, dict):
                self._error(flavour, 400, "body must be a JSON object")
                return
            model = body.get("model")
            texts = body.get("input")
            if isinstance(texts, str):
                texts = [texts]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                self._error(flavour, 400, "'input' must be a string or an array of strings")
                return
            input_type = body.get("input_type") if flavour == "openai" else None

            encoding = body.get("encoding_format") if flavour == "openai" else None
            if encoding not in (None, "float", "base64") or (
                encoding == "base64" and not server.base64
            ):
                self._error(flavour, 400, f"encoding_format: unsupported value {encoding!r}")
                return

            verdict = server._admit(self.path, model, texts, input_type)
            if verdict != "ok":
                if server.delay_s > 0:
                    time.sleep(server.delay_s)
                if verdict == "fail":
                    self._error(flavour, 500, "loopback server: injected failure (fail_after)")
                elif flavour == "ollama":
                    self._error(flavour, 404, f'model "{model}" not found, try pulling it first')
                else:
                    self._error(
                        flavour, 404, f"The model `{model}` does not exist.", "model_not_found"
                    )
                return
            longest = max((token_count(t) for t in texts), default=0)
            if server.max_input_tokens is not None and longest > server.max_input_tokens:
                limit = server.max_input_tokens
                self._send_json(
                    500,
                    {
                        "error": {
                            "code": 500,
                            "type": "server_error",
                            "message": f"input ({longest} tokens) is too large to process. increase the "
                            f"physical batch size (current batch size: {limit})",
                        }
                    },
                )
                return
            server._enter()
            try:
                if server.delay_s > 0:
                    time.sleep(server.delay_s)
                if server.answer_override is not None:
                    answer = server.answer_override(flavour, texts)
                elif flavour == "ollama":
                    answer = {"model": model, "embeddings": _float_rows(server._vectors(texts))}
                else:
                    rows = server._vectors(texts)
                    rows = _base64_rows(rows) if encoding == "base64" else _float_rows(rows)
                    data = [
                        {"object": "embedding", "index": i, "embedding": row}
                        for i, row in enumerate(rows)
                    ]
                    usage = {"prompt_tokens": 0, "total_tokens": 0}
                    answer = {"object": "list", "data": data, "model": model, "usage": usage}
            finally:
                server._leave()
            self._send_json(200, answer)

    return Handler
