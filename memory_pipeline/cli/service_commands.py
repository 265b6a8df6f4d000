"""``memory-pipeline serve`` (HTTP API), ``mcp`` (MCP server), ``tokens`` (their bearer tokens) and
``ui`` (Dagster's web UI and daemon, a process group of their own)."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from errno import EADDRINUSE
from pathlib import Path

from memory_pipeline.cli.arguments import port, port_or_zero, switch
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


def serve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (off loopback only with tokens)"
    )
    p.add_argument("--port", type=port_or_zero, default=8765)


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


def mcp_options(p: argparse.ArgumentParser) -> None:
    switch(p, "--http", "serve streamable HTTP at /mcp instead of stdio")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=port_or_zero, default=8766)
    p.add_argument(
        "--token", help="stdio: act with this token's scope (default: every memory, read and write)"
    )


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


def tokens_options(p: argparse.ArgumentParser) -> None:
    tok = p.add_subparsers(dest="tokens_command", required=True, metavar="ACTION")
    q = tok.add_parser("create", help="a new token, printed once")
    q.add_argument("name")
    q.add_argument("--memory", action="append", help="a memory it opens (repeatable)")
    switch(q, "--all-memories", "every memory, present and future")
    switch(q, "--write", "may add, index and forget (default: read only)")
    switch(q, "--json")
    q = tok.add_parser("list", help="the tokens (names and scopes; never the tokens themselves)")
    switch(q, "--json")
    q = tok.add_parser("revoke", help="delete a token")
    q.add_argument("name")


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


def ui_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=port, default=3000)
    p.add_argument("--host", default="127.0.0.1")


def cmd_ui(args) -> int:
    from memory_pipeline.memory import WORKSPACE_YAML
    from memory_pipeline.orchestration.instance import apply_pool_limits, open_instance
    from memory_pipeline.orchestration.settings import OpsSettings

    OpsSettings.from_env()  # a bad schedule/sensor setting fails here, plainly, not in the code server
    # A taken port fails here, before anything starts, as `serve` does: dagster dev would print a
    # banner pointing at the other program, and its daemon would go on launching runs.
    listening_socket(args.host, args.port).close()
    with open_memory(record_in_dagster=False):
        pass  # starts the embedded server (held by this process) and migrates
    # open_instance sets DAGSTER_HOME and the storage URL in os.environ; dagster dev inherits a copy.
    instance = open_instance()
    env = dict(os.environ)
    # `dagster dev` calls itself superseded by `dg dev`, which runs this same command: the
    # notice only misleads (the project is a dg project; `dg dev` works from its folder too).
    superseded = "ignore:Function `dev_command` is superseded"
    env["PYTHONWARNINGS"] = ",".join(w for w in (env.get("PYTHONWARNINGS"), superseded) if w)
    pool_limit = apply_pool_limits(instance, env)
    instance.dispose()
    dagster = Path(sys.executable).with_name("dagster")
    command = [
        str(dagster),
        "dev",
        "-w",
        str(WORKSPACE_YAML),
        "-h",
        args.host,
        "-p",
        str(args.port),
    ]
    print(
        f"Dagster UI on http://{args.host}:{args.port} (Ctrl-C to stop); DAGSTER_HOME={env['DAGSTER_HOME']}; "
        f"embedding pool limit {pool_limit}"
    )
    # dagster dev ignores SIGINT/SIGTERM from a non-interactive parent (ENVIRONMENT.md): give it
    # its own process group and end the whole group ourselves. It runs in DAGSTER_HOME, whatever
    # the caller's folder: the code location is a module, found by import, and the folder of an
    # installed package's workspace.yaml (site-packages) is no place to start processes in.
    proc = subprocess.Popen(command, env=env, start_new_session=True, cwd=env["DAGSTER_HOME"])
    # SIGTERM (and SIGHUP, a closed terminal) would end this process at once, without the finally
    # below: dagster dev's group and the embedded server would outlive it. Raised as an exit
    # instead, they are stopped first; a second signal meanwhile does not cut that short.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    try:
        return proc.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        stop_process_group(proc)


def _exit_on_signal(signum: int, _frame) -> None:
    raise SystemExit(128 + signum)


def stop_process_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM the whole group, then SIGKILL whatever is left (children outlive the leader)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _group_alive(proc.pid):
            time.sleep(0.2)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
