"""A real HTTP rerank server on 127.0.0.1 speaking llama.cpp's ``POST /v1/rerank`` format, for tests.

Usage::

    from memory_pipeline_tests.support.rerank_server import LoopbackRerankServer

    with LoopbackRerankServer() as server:
        reranker = HttpReranker(server.url)
        scores = reranker.rerank("red fox", ["a red fox", "a blue bird"])   # [1.0, 0.0]
        assert server.requests[0]["top_n"] == 2

Route: ``POST /v1/rerank`` ``{"model", "query", "documents": [str], "top_n"?}`` ->
``{"model", "object": "list", "usage", "results": [{"index", "document": {"text"},
"relevance_score"}]}``, results sorted by score (highest first, ties by index) and cut to
``top_n``, as llama.cpp answers. Other paths get a 404, bodies that are not a rerank request a 400.

The score is ``word_overlap(query, document)``: the fraction of the query's distinct lowercased
``\\w+`` words that occur in the document, so expected values can be computed in the test.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["MODES", "LoopbackRerankServer", "word_overlap"]

_WORD = re.compile(r"\w+")

MODES = ("ok", "error500", "nonsense", "partial", "garbage")


def word_overlap(query: str, document: str) -> float:
    """The fraction of the query's distinct lowercased words found in the document (0.0 if none)."""
    wanted = set(_WORD.findall(query.lower()))
    if not wanted:
        return 0.0
    present = set(_WORD.findall(document.lower()))
    return len(wanted & present) / len(wanted)


class LoopbackRerankServer:
    """A threaded rerank server on 127.0.0.1:<free port>, started by the constructor.

    Options (may also be changed on the instance while it runs):

    * ``delay_s``: sleep before answering each rerank request (for client timeouts); ``stop()``
      cuts the sleep short.
    * ``mode``: ``"ok"`` (normal answers), ``"error500"`` (HTTP 500 with a JSON error),
      ``"nonsense"`` (``{"results": [{"index": 99, "relevance_score": "high"}]}``),
      ``"partial"`` (only the first, best-scored result), ``"garbage"`` (200 with a non-JSON body).
    * ``answer_override``: ``f(normal_answer, request_body) -> payload``; when set, ``"ok"`` requests
      are answered 200 with ``payload`` as JSON instead (NaN/Infinity allowed), for malformed-answer
      and alternative-format (``"data"``) tests.

    Attributes: ``url`` (``"http://127.0.0.1:PORT"``, no ``/v1``) and ``requests`` (a snapshot
    list of the parsed JSON bodies of every rerank request received, in arrival order, whatever
    the mode). Use as a context manager, or call ``stop()`` (idempotent).
    """

    def __init__(
        self,
        *,
        delay_s: float = 0.0,
        mode: str = "ok",
        answer_override: Callable[[dict, dict], object] | None = None,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.delay_s = delay_s
        self.mode = mode
        self.answer_override = answer_override
        self._lock = threading.Lock()
        self._requests: list[dict] = []
        self._stopping = threading.Event()
        self._stopped = False
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        # A short poll interval: stop() waits up to one interval, and tests stop many servers.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=f"loopback-rerank-{self.url}",
            daemon=True,
        )
        self._thread.start()

    # -- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> LoopbackRerankServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._stopping.set()  # wakes handlers sleeping in delay_s
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- inspection -------------------------------------------------------------------------
    @property
    def requests(self) -> list[dict]:
        with self._lock:
            return [json.loads(json.dumps(body)) for body in self._requests]

    # -- used by the handler ----------------------------------------------------------------
    def _admit(self, body: dict) -> tuple[str, float, Callable[[dict, dict], object] | None]:
        """Log the request; return the mode, delay and override it is answered with (read once)."""
        with self._lock:
            self._requests.append(body)
            return self.mode, self.delay_s, self.answer_override

    def _answer(self, body: dict) -> dict:
        query, documents = body["query"], body["documents"]
        scored = [(word_overlap(query, doc), index, doc) for index, doc in enumerate(documents)]
        scored.sort(key=lambda row: (-row[0], row[1]))  # best first, as llama.cpp answers
        top_n = body.get("top_n")
        if isinstance(top_n, int) and not isinstance(top_n, bool) and top_n >= 0:
            scored = scored[:top_n]
        results = [
            {"index": index, "document": {"text": doc}, "relevance_score": score}
            for score, index, doc in scored
        ]
        n_words = sum(len(_WORD.findall(doc)) for doc in documents)
        return {
            "model": body.get("model"),
            "object": "list",
            "usage": {"prompt_tokens": n_words, "total_tokens": n_words},
            "results": results,
        }


def _make_handler(server: LoopbackRerankServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Keep-alive like real servers, so clients that reuse connections are exercised.
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 - stdlib signature
            pass  # test output stays clean

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                # The client gave up (timeout tests) or the server is stopping.
                self.close_connection = True

        def _send_json(self, status: int, payload: object) -> None:
            self._send(
                status, json.dumps(payload).encode("utf-8"), "application/json; charset=utf-8"
            )

        def _error(self, status: int, message: str) -> None:
            kind = "server_error" if status >= 500 else "invalid_request_error"
            self._send_json(status, {"error": {"code": status, "message": message, "type": kind}})

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            if self.path in ("/", "/health"):
                self._send_json(200, {"status": "ok"})
            else:
                self._error(404, f"no route for GET {self.path}")

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            if self.path != "/v1/rerank":
                self._error(404, f"no route for POST {self.path}")
                return
            try:
                body = json.loads(raw.decode("utf-8") or "{}")
            except (UnicodeDecodeError, json.JSONDecodeError):
                self._error(400, "invalid JSON body")
                return
            if not isinstance(body, dict):
                self._error(400, "body must be a JSON object")
                return
            mode, delay_s, override = server._admit(body)
            documents = body.get("documents")
            if not isinstance(body.get("query"), str):
                self._error(400, "'query' must be a string")
                return
            if not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
                self._error(400, "'documents' must be an array of strings")
                return
            if delay_s > 0 and server._stopping.wait(delay_s):
                self.close_connection = True
                return  # stopping: nobody is waiting for this answer
            if mode == "error500":
                self._error(500, "loopback rerank server: injected failure")
            elif mode == "nonsense":
                self._send_json(200, {"results": [{"index": 99, "relevance_score": "high"}]})
            elif mode == "garbage":
                self._send(200, b"<html>502 Bad Gateway</html> {not json", "application/json")
            else:
                answer = server._answer(body)
                if mode == "partial":
                    answer["results"] = answer["results"][:1]
                elif override is not None:
                    answer = override(answer, body)
                self._send_json(200, answer)

    return Handler
