"""``Memory.status``: what is stored, what is pending, which profile and generation search
serves and which is being built, the HNSW index, and where the data lives; a typed result whose
``to_json`` is the document the CLI, the HTTP API and MCP show."""

from __future__ import annotations

from dataclasses import dataclass

from memory_pipeline import config
from memory_pipeline.domain import calibration
from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.embedders.factory import describe
from memory_pipeline.indexing.estimate import Estimate, estimate
from memory_pipeline.storage import (
    episodes_store,
    health_store,
    hnsw_store,
    index_store,
    profiles_store,
    questions_store,
)
from memory_pipeline.storage.database import Database, redact
from memory_pipeline.storage.profiles_store import Generation, StoredProfile
from memory_pipeline.version import __version__


@dataclass(frozen=True)
class Status:
    """One look at the store: ``profile`` the active (serving) profile, ``target`` the configured
    one's stored row (else the active one), ``serving``/``building`` their generations."""

    data_folder: str | None
    database: str
    memories: int
    counts: dict[str, int]
    pending_by_day: dict[str, int]
    profile: StoredProfile | None
    target: StoredProfile | None
    configured: EmbeddingProfile | None  # None: the model cannot be told (detection failed)
    embedding: dict
    serving: Generation | None
    building: Generation | None
    index: dict | None
    calibration: calibration.Calibration | None
    telemetry_enabled: bool
    telemetry_retention_days: int
    pending_estimate: Estimate | None
    quality: list[dict]  # each memory's latest labelled-question figures (storage.questions_store)
    buffers: dict  # the server's shared_buffers now and from its next start (storage.health_store)
    version: str = __version__

    @property
    def pending_episodes(self) -> int:
        return sum(self.pending_by_day.values())

    def to_json(self) -> dict:
        profile, target, serving, building = self.profile, self.target, self.serving, self.building
        return {
            "version": self.version,
            "dataFolder": self.data_folder,
            "database": self.database,
            "sharedBuffers": self.buffers,
            "memories": self.memories,
            "episodes": self.counts["episodes"],
            "chunks": self.counts["chunks"],
            "vectors": self.counts["vectors"],
            "vectorsWithWindows": self.counts["vectors_with_windows"],
            "pendingEpisodes": self.pending_episodes,
            "activeProfile": (
                {
                    "name": profile.name,
                    "provider": profile.provider,
                    "model": profile.model,
                    "dim": profile.dim,
                    "generation": profile.generation,
                }
                if profile
                else None
            ),
            "pendingByDay": self.pending_by_day,
            "configuredProfile": self.configured.name if self.configured else None,
            "embedding": self.embedding,
            "canary": (
                {
                    "state": serving.state,
                    "reason": serving.stale_reason,
                    "recorded": serving.canary_vector is not None,
                }
                if serving
                else None
            ),
            "building": (
                {
                    "profile": target.name,
                    "generation": target.building_generation,
                    "state": building.state,
                }
                if target and building
                else None
            ),
            "index": self.index,
            # The serving generation's similarity cut-offs (domain.calibration), or the defaults
            # and why they hold.
            "calibration": self.calibration.to_json() if self.calibration else None,
            "telemetry": {
                "enabled": self.telemetry_enabled,
                "retentionDays": self.telemetry_retention_days,
            },
            # How long indexing the pending episodes takes with the configured model.
            "pendingEstimate": self.pending_estimate.to_json() if self.pending_estimate else None,
            "quality": self.quality,
        }


def status_of(
    db: Database,
    embed_settings: config.EmbedSettings,
    *,
    home: str | None,
    telemetry_enabled: bool,
    telemetry_retention_days: int,
) -> Status:
    """Counts, pending work per day, profiles, the HNSW index; where the data lives."""
    configured, embedding = describe(embed_settings)  # may detect the wire format
    with db.connection() as conn:
        profile = profiles_store.active_profile(conn)
        counts = index_store.count_summary(conn, profile)
        target = (profiles_store.get_profile(conn, configured) if configured else None) or profile
        by_day = index_store.pending_by_day(conn, target.writing() if target else None)
        serving = (
            profiles_store.get_generation(conn, profile.id, profile.generation) if profile else None
        )
        building = (
            profiles_store.get_generation(conn, target.id, target.building_generation)
            if target and target.building_generation
            else None
        )
        index = hnsw_store.inspect(conn, profile) if profile else None
        memories = episodes_store.memory_counts(conn)
        scored = questions_store.latest(conn)
        buffers = health_store.shared_buffers(conn, files=db.embedded is not None)
        measured = (
            profiles_store.stored_calibration(conn, profile.id, profile.generation)
            if profile
            else None
        )
    return Status(
        data_folder=home,
        database=redact(db.url) if db.embedded is None else f"embedded ({redact(db.url)})",
        memories=len(memories),
        counts=counts,
        pending_by_day=by_day,
        profile=profile,
        target=target,
        configured=configured,
        embedding=embedding,
        serving=serving,
        building=building,
        index=index,
        calibration=(measured or calibration.DEFAULT) if profile else None,
        telemetry_enabled=telemetry_enabled,
        telemetry_retention_days=telemetry_retention_days,
        pending_estimate=estimate(db, configured) if configured and by_day else None,
        quality=scored,
        buffers=buffers,
    )


def index_estimate(db: Database, embed_settings: config.EmbedSettings, day=None) -> Estimate | None:
    """How long indexing what is pending (of one ingest day) takes with the configured model,
    from its measured speed (``indexing.estimate``); None when the model cannot be told."""
    configured, _ = describe(embed_settings)
    return estimate(db, configured, day) if configured else None
