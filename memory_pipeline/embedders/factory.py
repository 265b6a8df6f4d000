"""Build the embedder that ``EmbedSettings`` describe (local, ollama or openai provider, or the
one whose wire format a URL given alone speaks: ``embedders.detect``)."""

from __future__ import annotations

import threading

from memory_pipeline.config import EmbedSettings
from memory_pipeline.embedders.base import Embedder, EmbeddingProfile
from memory_pipeline.errors import ConfigurationError

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


# Settings to detect -> the settings detected, once per process (a failure is not kept: the
# next call asks again).
_detected: dict[EmbedSettings, EmbedSettings] = {}
_detected_lock = threading.Lock()


def resolved(settings: EmbedSettings) -> EmbedSettings:
    """``settings`` with a provider: as given, or detected from the URL's wire format
    (``embedders.detect``; this asks the endpoint, the first time only)."""
    if not settings.detecting:
        return settings
    with _detected_lock:
        known = _detected.get(settings)
    if known is None:
        from memory_pipeline.embedders.detect import resolve

        known = resolve(settings)
        with _detected_lock:
            _detected[settings] = known
    return known


def profile_of(settings: EmbedSettings) -> EmbeddingProfile:
    """The embedding profile ``settings`` name (provider, model, stored dimension); settings
    still to be detected are detected first (``resolved``)."""
    settings = resolved(settings)
    return EmbeddingProfile(provider=settings.provider, model=settings.model, dim=settings.dim)


def describe(settings: EmbedSettings) -> tuple[EmbeddingProfile | None, dict]:
    """The profile ``settings`` give and what status shows of them: the provider, the wire
    format and URL it speaks, and how it was chosen (named, default or detected). Detection
    that fails (the endpoint down, or speaking neither format) is shown, not raised: the
    profile is then None and ``problem`` says why."""
    from memory_pipeline.errors import MemoryPipelineError
    from memory_pipeline.redaction import mask_secrets

    url = mask_secrets(settings.url) if settings.url else None
    try:
        settings = resolved(settings)
    except MemoryPipelineError as exc:
        shown = {"provider": None, "wireFormat": None, "url": url, "chosenBy": "detect"}
        return None, {**shown, "problem": str(exc)}
    local = settings.provider == "local"
    return profile_of(settings), {
        "provider": settings.provider,
        "wireFormat": None if local else settings.provider,
        "url": None if local else (mask_secrets(settings.url) if settings.url else None),
        "chosenBy": settings.chosen_by,
        "problem": None,
    }


def build_embedder(settings: EmbedSettings) -> Embedder:
    """A ready embedder for ``settings``; nothing is contacted until the first embed or probe,
    except to detect the wire format of a URL given without a provider (``resolved``)."""
    settings = resolved(settings)
    embedder = _provider_embedder(settings)
    embedder.paragraph_windows = settings.paragraph_windows
    embedder.in_flight = settings.in_flight
    embedder.canary_every = settings.canary_every
    embedder.query_timeout_s = settings.query_timeout_s
    embedder.heading_anchors = settings.heading_anchors
    return embedder


def _provider_embedder(settings: EmbedSettings) -> Embedder:
    profile = profile_of(settings)
    # Provider modules are imported on demand so that, e.g., the local engine is not loaded
    # by a process configured for Ollama.
    if settings.provider == "local":
        from memory_pipeline.embedders.local import LocalEmbedder

        return LocalEmbedder(profile, batch_size=settings.batch_size)
    if settings.provider == "ollama":
        from memory_pipeline.embedders.ollama import OllamaEmbedder

        try:
            return OllamaEmbedder(
                profile,
                host=settings.url or DEFAULT_OLLAMA_HOST,
                batch_size=settings.batch_size,
                timeout_s=settings.timeout_s,
            )
        except ConfigurationError as exc:
            raise ConfigurationError(f"OLLAMA_HOST: {exc}") from None
    if settings.provider == "openai":
        from memory_pipeline.embedders.openai_compat import OpenAICompatibleEmbedder

        if not settings.url:
            raise ConfigurationError(
                "MEMORY_PIPELINE_EMBED_PROVIDER=openai needs MEMORY_PIPELINE_EMBED_URL "
                "(the server's base URL, e.g. http://127.0.0.1:8000)"
            )
        try:
            return OpenAICompatibleEmbedder(
                profile,
                base_url=settings.url,
                batch_size=settings.batch_size,
                timeout_s=settings.timeout_s,
            )
        except ConfigurationError as exc:
            raise ConfigurationError(f"MEMORY_PIPELINE_EMBED_URL: {exc}") from None
    raise ConfigurationError(
        f"MEMORY_PIPELINE_EMBED_PROVIDER={settings.provider!r}: expected one of local, ollama, openai"
    )
