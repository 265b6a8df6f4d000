"""The Dagster resource: the ``Memory`` Python API (``memory_pipeline.memory``), as assets use it.

One resource, ``memory_api``, so Dagster goes through the same core as the CLI and the servers
and nothing here rebuilds their objects: ``api`` is the ``Memory``, and the assets call its
methods and parts (``api.days``, ``api.upkeep``, ``api.models``), never the core below it. Each
field left unset comes from its environment variable
(``config.ENV_VARS``) when the resource is set up for a run, sensor tick or check, never when a
module is imported; a deployment that wants a value pinned sets the field, or binds it with
``dg.EnvVar("NAME")`` (which then requires the variable), and tests pass explicit values.
"""

from __future__ import annotations

import dagster as dg
from pydantic import PrivateAttr

from memory_pipeline.memory import POOL_SIZE, Memory


class MemoryResource(dg.ConfigurableResource):
    """PostgreSQL (``url``, else MEMORY_PIPELINE_DATABASE_URL, else the embedded server under
    ``home``), the embedding model (``embed_*``), the reranker (``rerank_*``) and the policies."""

    url: str | None = None
    home: str | None = None
    pool_size: int = POOL_SIZE
    embed_provider: str | None = None
    embed_model: str | None = None
    embed_dim: int | None = None
    embed_url: str | None = None
    embed_batch_size: int | None = None
    embed_timeout_s: float | None = None
    rerank_url: str | None = None
    rerank_model: str | None = None
    rerank_timeout_s: float | None = None
    policies_path: str | None = None
    telemetry: bool | None = None

    _memory: Memory | None = PrivateAttr(default=None)

    def open(self) -> Memory:
        # Dagster records its own materializations: the API need not report to it as well.
        return Memory.open(
            self.url,
            home=self.home,
            pool_size=self.pool_size,
            embed_provider=self.embed_provider,
            embed_model=self.embed_model,
            embed_dim=self.embed_dim,
            embed_url=self.embed_url,
            embed_batch_size=self.embed_batch_size,
            embed_timeout_s=self.embed_timeout_s,
            rerank_url=self.rerank_url,
            rerank_model=self.rerank_model,
            rerank_timeout_s=self.rerank_timeout_s,
            policies_path=self.policies_path,
            telemetry=self.telemetry,
            record_in_dagster=False,
        )

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._memory = self.open()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    @property
    def api(self) -> Memory:
        if self._memory is None:  # used outside a run (a script): open on first use
            self._memory = self.open()
        return self._memory

    def search(self, memory: str, query: str, **options):
        return self.api.search(memory, query, **options)
