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


class SearchResource(dg.ConfigurableResource):
    """Fused retrieval over the materialized tables; used by the search op/job, the CLI and tests.

    ``rerank_url`` (else MEMORY_PIPELINE_RERANK_URL) turns reranking on; ``policies_path``
    (else MEMORY_PIPELINE_POLICIES, else the bundled file) names the policies.
    """

    database: DatabaseResource
    embedder: EmbedderResource
    rerank_url: Optional[str] = None
    rerank_model: Optional[str] = None
    rerank_timeout_s: Optional[float] = None
    policies_path: Optional[str] = None
    record_telemetry: bool = True

    _service: Optional[object] = PrivateAttr(default=None)

    def service(self):
        """The ``SearchService``, built once per resource instance."""
        if self._service is None:
            import os

            from memory_pipeline.domain.policies import default_policies_path, load_policies
            from memory_pipeline.errors import ConfigurationError
            from memory_pipeline.rerankers.http import reranker_from_env
            from memory_pipeline.search.service import SearchService

            environ = dict(os.environ)
            for name, value in (
                ("MEMORY_PIPELINE_RERANK_URL", self.rerank_url),
                ("MEMORY_PIPELINE_RERANK_MODEL", self.rerank_model),
                ("MEMORY_PIPELINE_RERANK_TIMEOUT", self.rerank_timeout_s),
            ):
                if value is not None:
                    environ[name] = str(value)
            path = self.policies_path or environ.get("MEMORY_PIPELINE_POLICIES") or default_policies_path()
            try:
                policies = load_policies(path)
            except (OSError, ValueError) as exc:
                raise ConfigurationError(f"policies: {exc}") from None
            self._service = SearchService(
                self.database.db,
                policies,
                embedder=lambda: self.embedder.embedder,
                reranker=reranker_from_env(environ),
                record=self.record_telemetry,
            )
        return self._service

    def search(self, memory: str, query: str, **options):
        return self.service().search(memory, query, **options)
