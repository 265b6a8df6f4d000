"""Reading ``Memory.open``'s settings: keyword arguments over the environment, the telemetry
settings and the policies file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_pipeline import config
from memory_pipeline.domain.policies import Policy, default_policies_path, load_policies
from memory_pipeline.errors import ConfigurationError

if TYPE_CHECKING:
    from memory_pipeline.rerankers.http import HttpReranker


@dataclass(frozen=True)
class TelemetrySettings:
    enabled: bool = True
    retention_days: int = 90

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> TelemetrySettings:
        return cls(
            enabled=config.switch(environ, "MEMORY_PIPELINE_TELEMETRY", True),
            retention_days=config.env_int(
                environ, "MEMORY_PIPELINE_TELEMETRY_DAYS", 90, maximum=36500
            ),
        )


def overridden(environ: Mapping[str, str] | None, overrides: Mapping[str, Any]) -> dict[str, str]:
    merged = dict(os.environ if environ is None else environ)
    for name, value in overrides.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "on" if value else "off"
        merged[name] = str(value)
    return merged


def policies_from(path: str | os.PathLike) -> dict[str, Policy]:
    try:
        return load_policies(path)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"MEMORY_PIPELINE_POLICIES: {exc}") from None


DEFAULT_TELEMETRY = TelemetrySettings()

# ``Memory.open``'s keyword arguments and the environment variables they stand for.
ENV_NAMES = {
    "home": "MEMORY_PIPELINE_HOME",
    "embed_provider": "MEMORY_PIPELINE_EMBED_PROVIDER",
    "embed_model": "MEMORY_PIPELINE_EMBED_MODEL",
    "embed_dim": "MEMORY_PIPELINE_EMBED_DIM",
    "embed_batch_size": "MEMORY_PIPELINE_EMBED_BATCH",
    "embed_timeout_s": "MEMORY_PIPELINE_EMBED_TIMEOUT",
    "paragraph_windows": "MEMORY_PIPELINE_PARAGRAPH_WINDOWS",
    "rerank_url": "MEMORY_PIPELINE_RERANK_URL",
    "rerank_model": "MEMORY_PIPELINE_RERANK_MODEL",
    "rerank_timeout_s": "MEMORY_PIPELINE_RERANK_TIMEOUT",
    "policies_path": "MEMORY_PIPELINE_POLICIES",
    "telemetry": "MEMORY_PIPELINE_TELEMETRY",
    "telemetry_days": "MEMORY_PIPELINE_TELEMETRY_DAYS",
}


def environment(
    environ: Mapping[str, str] | None, *, embed_url: str | None = None, **given: Any
) -> dict[str, str]:
    """``environ`` (else ``os.environ``) with the settings given (``ENV_NAMES``) in place of
    their variables; ``embed_url`` is both the openai provider's base URL and the Ollama host."""
    if given.get("embed_provider") is not None:
        given["embed_provider"] = given["embed_provider"].strip().lower() or None
    for key in ("home", "policies_path"):
        if given.get(key) is not None:
            given[key] = os.fspath(given[key])
    env = overridden(environ, {ENV_NAMES[key]: value for key, value in given.items()})
    if embed_url:
        env["MEMORY_PIPELINE_EMBED_URL"] = embed_url
        env["OLLAMA_HOST"] = embed_url
    return env


@dataclass(frozen=True)
class Settings:
    """What ``Memory.open`` reads of the environment, every one checked."""

    embed: config.EmbedSettings
    telemetry: TelemetrySettings
    policies: dict[str, Policy]
    reranker: HttpReranker | None

    @classmethod
    def read(cls, env: Mapping[str, str]) -> Settings:
        from memory_pipeline.rerankers.http import reranker_from_env  # imported when used

        return cls(
            embed=config.EmbedSettings.from_env(env),
            telemetry=TelemetrySettings.from_env(env),
            policies=policies_from(env.get("MEMORY_PIPELINE_POLICIES") or default_policies_path()),
            reranker=reranker_from_env(env),
        )
