"""``memory-pipeline serve`` (HTTP API), ``mcp`` (MCP server) and ``tokens`` (their bearer tokens)."""

from __future__ import annotations

import socket
from errno import EADDRINUSE

from memory_pipeline.cli.common import err, open_memory, print_json
from memory_pipeline.errors import ConfigurationError, ExitCode, InputError

# Concurrent requests each hold up to storage.database.POOL_SIZE connections (a search runs its
# channels in parallel).
SERVER_POOL_SIZE = 16


def listening_socket(host: str, port: int) -> socket.socket:
    """Bind before anything starts, so a taken port is a plain error instead of a server log line."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError(f"--host {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        hint = "; another program holds it: --port picks another" if exc.errno == EADDRINUSE else ""
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror}{hint}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _require_tokens_off_loopback(mem, host: str) -> None:
    from memory_pipeline.server.guard import is_loopback

    if not is_loopback(host) and not mem.tokens_configured():
        raise ConfigurationError(
            f"no tokens are configured, so the server listens on loopback only (not {host}): create one "
            "with `memory-pipeline tokens create NAME --memory M`, or leave --host at 127.0.0.1"
        )


def _exposure(sock: socket.socket):
    """What the bound socket exposes (its real address: ``--host localhost`` may be ::1), with
    the environment's allowed names and client timeout; read before the server starts."""
    import os

    from memory_pipeline.server.guard import Exposure

    return Exposure.of(sock.getsockname()[0], os.environ)


def cmd_serve(args) -> int:
    from memory_pipeline.server.http_api import create_app
    from memory_pipeline.server.transport import serve_asgi

    with open_memory(pool_size=SERVER_POOL_SIZE) as mem:
        _require_tokens_off_loopback(mem, args.host)
        sock = listening_socket(args.host, args.port)
        exposure = _exposure(sock)
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        tokens = mem.tokens_configured()
        print(
            f"memory_pipeline API on http://{shown}:{port} (docs at /docs; "
            f"{access_line(tokens, exposure.loopback)}); Ctrl-C stops it",
            flush=True,
        )
        with TokenWatch(mem, exposure.loopback, tokens):
            serve_asgi(create_app(mem, exposure), sock, exposure.client_timeout_s)
    return ExitCode.OK


def access_line(tokens: bool, loopback: bool) -> str:
    """What the server's access is now. Every request checks the tokens afresh (``guard``), so
    the line says so rather than promising a state that ``tokens create`` may change."""
    if tokens:
        return "tokens exist: bearer tokens required on every request"
    if loopback:
        return "no tokens yet: loopback callers have full access until one is created"
    return "no tokens left: every request is refused (401) until one is created"


class TokenWatch:
    """Prints a line on stdout when tokens appear or the last one goes while the server runs,
    so the start-up line is never left saying what is no longer true."""

    def __init__(self, mem, loopback: bool, tokens: bool, every_s: float = 2.0):
        import threading

        self.mem, self.loopback, self.tokens, self.every_s = mem, loopback, tokens, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="token-watch", daemon=True)

    def __enter__(self) -> TokenWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(timeout=self.every_s + 5)

    def _watch(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                tokens = self.mem.tokens_configured()
            except Exception:  # noqa: BLE001 - the database is down: requests say so themselves
                continue
            if tokens != self.tokens:
                self.tokens = tokens
                print(f"memory_pipeline API: {access_line(tokens, self.loopback)}", flush=True)


def cmd_mcp(args) -> int:
    from memory_pipeline.domain.documents.document import return_large_buffers
    from memory_pipeline.server.access import Access, access_of_local_token
    from memory_pipeline.server.mcp_server import build_mcp_server, streamable_http_app
    from memory_pipeline.server.transport import serve_asgi

    with open_memory(pool_size=SERVER_POOL_SIZE) as mem:
        if args.http:
            _require_tokens_off_loopback(mem, args.host)
            sock = listening_socket(args.host, args.port)
            exposure = _exposure(sock)
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            print(
                f"memory_pipeline MCP server on http://{shown}:{port}/mcp (streamable HTTP); Ctrl-C stops it",
                flush=True,
            )
            serve_asgi(streamable_http_app(mem, exposure), sock, exposure.client_timeout_s)
            return ExitCode.OK
        stdio_access = Access.everything
        if args.token:
            token = args.token
            access_of_local_token(mem, token)  # refused at start, and again at every tool call
            stdio_access = lambda: access_of_local_token(mem, token)  # noqa: E731
        return_large_buffers()  # add_document's memory returned when it ends
        build_mcp_server(mem, stdio_access).run("stdio")
    return ExitCode.OK


def cmd_tokens(args) -> int:
    with open_memory(read_only=args.tokens_command == "list") as mem:
        if args.tokens_command == "create":
            memories = ["*"] if args.all_memories else (args.memory or [])
            if not memories:
                raise InputError(
                    "say which memories the token opens: --memory NAME (repeatable) or --all-memories"
                )
            token, stored = mem.create_token(args.name, memories, "write" if args.write else "read")
            if args.json:
                print_json({"token": token, **stored.to_json()})
            else:
                print(token)
                err(
                    f"token {stored.name!r}: {stored.access} access to {', '.join(stored.memories)}; "
                    "shown once, only its hash is stored"
                )
        elif args.tokens_command == "list":
            rows = mem.tokens()
            if args.json:
                print_json([t.to_json() for t in rows])
            for t in rows if not args.json else []:
                print(
                    f"{t.name}: {t.access} {', '.join(t.memories)} (created {t.created_at:%Y-%m-%d %H:%M} UTC)"
                )
            if not rows and not args.json:
                print("no tokens: `serve` and `mcp --http` listen on loopback only and need none")
        else:
            mem.revoke_token(args.name)
            print(f"revoked {args.name!r}")
    return ExitCode.OK
