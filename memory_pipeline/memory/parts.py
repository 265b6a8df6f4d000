"""What a ``Memory`` part holds: the database, the embedder (built on first use) and the settings
it was opened with. The parts (``days``, ``upkeep``, ``models``, ``demo``) are the work the
Dagster assets and the CLI's operations do, each method one call into the core."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory_pipeline import config
from memory_pipeline.embedders.base import Embedder, EmbeddingProfile
from memory_pipeline.embedders.factory import profile_of
from memory_pipeline.storage.database import Database


@dataclass(frozen=True)
class Core:
    db: Database
    get_embedder: Callable[[], Embedder]  # the Memory's, built once on first use
    embed_settings: config.EmbedSettings

    @property
    def embedder(self) -> Embedder:
        return self.get_embedder()

    @property
    def profile(self) -> EmbeddingProfile:
        """The configured embedding profile, without loading the model (what the sensor and the
        checks count pending work for)."""
        return profile_of(self.embed_settings)
