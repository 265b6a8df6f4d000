"""Build the embedder that ``EmbedSettings`` describe (local, ollama or openai provider)."""

from __future__ import annotations

from memory_pipeline.config import EmbedSettings
from memory_pipeline.embedders.base import Embedder, EmbeddingProfile
from memory_pipeline.errors import ConfigurationError

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


def profile_of(settings: EmbedSettings) -> EmbeddingProfile:
    """The embedding profile ``settings`` name (provider, model, stored dimension)."""
    return EmbeddingProfile(provider=settings.provider, model=settings.model, dim=settings.dim)


def build_embedder(settings: EmbedSettings) -> Embedder:
    """A ready embedder for ``settings``; nothing is contacted until the first embed or probe."""
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
