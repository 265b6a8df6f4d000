"""Dagster resources: the database and the embedder, configured by fields or environment.

Each field left unset falls back to the matching environment variable (see ``config``), read
when a run starts, not when the module is imported, so one set of definitions serves every
environment and tests pass explicit values instead of patching the environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import dagster as dg
from pydantic import PrivateAttr

from memory_pipeline import config
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.embedders.factory import build_embedder
from memory_pipeline.storage.database import Database


class DatabaseResource(dg.ConfigurableResource):
    """PostgreSQL with pgvector: ``url`` (else MEMORY_PIPELINE_DATABASE_URL) or the embedded server."""

    url: Optional[str] = None
    home: Optional[str] = None
    pool_size: int = 4

    _db: Optional[Database] = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._db = Database.open(
            self.url or None, home=Path(self.home) if self.home else None, max_size=self.pool_size
        )

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def db(self) -> Database:
        if self._db is None:  # used outside a run (a sensor, a script): open on first use
            self.setup_for_execution(None)  # type: ignore[arg-type]
        assert self._db is not None
        return self._db


class EmbedderResource(dg.ConfigurableResource):
    """The embedding model; unset fields come from MEMORY_PIPELINE_EMBED_* (and OLLAMA_HOST)."""

    provider: Optional[str] = None
    model: Optional[str] = None
    dim: Optional[int] = None
    url: Optional[str] = None
    batch_size: Optional[int] = None
    timeout_s: Optional[float] = None

    _embedder: Optional[Embedder] = PrivateAttr(default=None)

    def settings(self) -> config.EmbedSettings:
        import os

        environ = dict(os.environ)
        overrides = {
            "MEMORY_PIPELINE_EMBED_PROVIDER": self.provider,
            "MEMORY_PIPELINE_EMBED_MODEL": self.model,
            "MEMORY_PIPELINE_EMBED_DIM": self.dim,
            "MEMORY_PIPELINE_EMBED_BATCH": self.batch_size,
            "MEMORY_PIPELINE_EMBED_TIMEOUT": self.timeout_s,
        }
        for name, value in overrides.items():
            if value is not None:
                environ[name] = str(value)
        if self.url:
            environ["OLLAMA_HOST"] = self.url
            environ["MEMORY_PIPELINE_EMBED_URL"] = self.url
        return config.EmbedSettings.from_env(environ)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = build_embedder(self.settings())
        return self._embedder

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._embedder is not None:
            self._embedder.close()
            self._embedder = None
