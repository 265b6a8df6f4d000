"""Which wire format an embedding endpoint speaks: Ollama's ``/api/embed`` or OpenAI's ``/v1/embeddings``.

With ``MEMORY_PIPELINE_EMBED_URL`` set and no provider named, the probe embeds
``base.PROBE_TEXT`` in one format, then the other (OpenAI's first for a URL ending in ``/v1``);
a format is spoken when the answer has its embedding shape or its "model not found". The
detected format is the provider, so a server gives the same profile named or detected.
Unreachable, timing out, asking for credentials or 5xx: ``EmbedderUnavailable`` (exit 5);
neither format, or a named one the endpoint lacks: ``ConfigurationError`` (exit 7).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import httpx

from memory_pipeline.config import PROVIDER_DEFAULTS, EmbedSettings
from memory_pipeline.embedders.base import PROBE_TEXT
from memory_pipeline.errors import ConfigurationError, EmbedderUnavailable, shortened

FORMATS = ("ollama", "openai")
ROUTES = {"ollama": "/api/embed", "openai": "/v1/embeddings"}
NAMES = {"ollama": "Ollama's /api/embed", "openai": "OpenAI's /v1/embeddings"}
# A cold Ollama loads the model on its first embedding: give that time, but bounded, since a
# search may be what asks first.
DETECT_TIMEOUT_S = 30.0
# Answers that say "not now" or "not you" rather than "no such route".
_UNAVAILABLE = {401, 403, 408, 429}


def endpoint(url: str, wire_format: str) -> str:
    """The embedding route of ``wire_format`` under the base ``url`` (a trailing ``/v1`` is the
    OpenAI-style base: not doubled, and not part of Ollama's path)."""
    base = url.strip().rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return base + ROUTES[wire_format]


def _json(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None


def _speaks(wire_format: str, response: httpx.Response) -> bool:
    body = _json(response)
    if not isinstance(body, dict):
        return False
    if response.status_code == 200:
        key = "embeddings" if wire_format == "ollama" else "data"
        return isinstance(body.get(key), list)
    if response.status_code != 404:
        return False
    error = body.get("error")
    if wire_format == "ollama":  # {"error": "model \"x\" not found, try pulling it first"}
        return isinstance(error, str) and "model" in error.lower()
    # {"error": {"message": "The model `x` does not exist.", "code": "model_not_found"}}
    return isinstance(error, dict) and (
        error.get("code") == "model_not_found" or "model" in str(error.get("message", "")).lower()
    )


def ask(url: str, wire_format: str, model: str, timeout_s: float) -> tuple[bool, int, str]:
    """Ask ``url`` for one embedding in ``wire_format``: (spoken, HTTP status, what it said).
    EmbedderUnavailable when nothing answers."""
    target = endpoint(url, wire_format)
    payload: dict = {"model": model, "input": [PROBE_TEXT]}
    if wire_format == "openai":
        payload["encoding_format"] = "float"
    try:
        with httpx.Client(timeout=timeout_s) as client:
            response = client.post(target, json=payload)
    except httpx.TimeoutException:
        raise EmbedderUnavailable(
            "configured",
            f"no answer from {target} within {timeout_s:g}s while detecting its format",
        ) from None
    except (httpx.HTTPError, ValueError) as exc:
        raise EmbedderUnavailable(
            "configured",
            f"cannot connect to {url} to detect its wire format: {shortened(exc, 120)}",
        ) from None
    said = f"{ROUTES[wire_format]} answered HTTP {response.status_code}"
    text = shortened(response.text, 80)
    return (
        _speaks(wire_format, response),
        response.status_code,
        f"{said} ({text})" if text else said,
    )


def detect(url: str, models: Mapping[str, str], timeout_s: float = DETECT_TIMEOUT_S) -> str:
    """The format ``url`` speaks, asked with ``models[format]``; see the module docstring."""
    first_openai = url.strip().rstrip("/").endswith("/v1")
    said, unavailable = [], []
    for wire_format in ("openai", "ollama") if first_openai else FORMATS:
        spoken, status, what = ask(url, wire_format, models[wire_format], timeout_s)
        if spoken:
            return wire_format
        said.append(what)
        if status >= 500 or status in _UNAVAILABLE:
            unavailable.append(what)
    if unavailable:
        raise EmbedderUnavailable(
            "configured", f"{url} could not be asked its wire format: {'; '.join(said)}"
        )
    raise ConfigurationError(
        f"MEMORY_PIPELINE_EMBED_URL={url}: speaks neither {NAMES['ollama']} nor "
        f"{NAMES['openai']} ({'; '.join(said)}); point it at an embedding server's base URL, or "
        "name the provider with MEMORY_PIPELINE_EMBED_PROVIDER"
    )


def resolve(settings: EmbedSettings) -> EmbedSettings:
    """``settings`` with the detected format as provider and that provider's defaults for a
    model and dimension left unnamed; ``chosen_by`` "detected"."""
    url = settings.url or ""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError):
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigurationError(
            f"MEMORY_PIPELINE_EMBED_URL={url!r}: expected http(s)://HOST[:PORT][/v1]"
        )
    models = {f: settings.model or PROVIDER_DEFAULTS[f][0] for f in FORMATS}
    wire_format = detect(url, models, min(settings.timeout_s, DETECT_TIMEOUT_S))
    host = url.strip().rstrip("/")
    if wire_format == "ollama" and host.endswith("/v1"):
        host = host[: -len("/v1")]
    return dataclasses.replace(
        settings,
        provider=wire_format,
        model=models[wire_format],
        dim=settings.dim or PROVIDER_DEFAULTS[wire_format][1],
        url=host if wire_format == "ollama" else url,
        chosen_by="detected",
    )


def wrong_route(
    status: int, named: str, url: str, model: str, timeout_s: float
) -> ConfigurationError | None:
    """A named provider's HTTP ``status``: when it says no such route (404, 405) and ``url``
    speaks the other format, the plain wrong setting to raise; else None."""
    if status not in (404, 405):
        return None
    return wrong_format(named, url, model, timeout_s)


def not_found(
    status: int,
    message: str,
    named: str,
    url: str,
    model: str,
    timeout_s: float,
    *,
    missing: Exception,
    absent: Exception,
) -> Exception | None:
    """A named provider's HTTP ``status`` read as "not found": ``missing`` (the model) when a 404
    names a model, the wrong format set when ``url`` speaks the other one, ``absent`` (the
    route) for another 404; None for any other status."""
    if status == 404 and "model" in message.lower():
        return missing
    refusal = wrong_route(status, named, url, model, timeout_s)
    if refusal is not None:
        return refusal
    return absent if status == 404 else None


def wrong_format(named: str, url: str, model: str, timeout_s: float) -> ConfigurationError | None:
    """For a named provider whose route ``url`` lacks: the refusal to raise when ``url``
    speaks the other format instead (None when it does not, or cannot be asked)."""
    other = "openai" if named == "ollama" else "ollama"
    try:
        spoken, _, _ = ask(url, other, model, min(timeout_s, DETECT_TIMEOUT_S))
    except EmbedderUnavailable:
        return None
    if not spoken:
        return None
    return ConfigurationError(
        f"MEMORY_PIPELINE_EMBED_PROVIDER={named}, but {url} does not speak {NAMES[named]}: it "
        f"speaks {NAMES[other]}. Set MEMORY_PIPELINE_EMBED_PROVIDER={other}, or leave it unset "
        "to have the format detected; nothing was written"
    )
