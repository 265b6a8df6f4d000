"""The embedder interface: separate document and query embedding, batching, truncation, the probe.

Providers implement only ``_embed_batch`` (one model call on up to ``batch_size`` texts, raw
vectors back). Everything that must behave the same whatever the provider lives here:
splitting into batches, Matryoshka truncation to the profile's dimension, L2 normalisation, and
refusing a model that serves fewer dimensions than the profile stores.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory_pipeline.errors import EmbedderUnavailable, ModelRefused

# HTTP statuses that say "try again later / fix access", not "this model is wrong".
UNAVAILABLE_STATUSES = {401, 403, 408, 429}

# Embedded before the first write of every run: a wrong or unreachable model stops the run
# before a single vector is stored.
PROBE_TEXT = "memory_pipeline probe: is this the model the profile was built with?"


@dataclass(frozen=True)
class EmbeddingProfile:
    """provider + model + stored dimension; every stored vector is stamped with one."""

    provider: str
    model: str
    dim: int

    @property
    def name(self) -> str:
        return f"{self.provider}/{self.model}@{self.dim}"


def truncate_and_normalize(raw: np.ndarray, dim: int) -> np.ndarray:
    """Keep the first ``dim`` numbers of each row (Matryoshka prefix), then scale rows to length 1.

    Models trained with Matryoshka representation learning front-load meaning, so a prefix is
    itself a valid embedding; re-normalising makes cosine distance and dot product agree.
    """
    vectors = np.asarray(raw, dtype=np.float32)[:, :dim]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0  # an all-zero vector stays zero rather than becoming NaN
    return vectors / norms


class Embedder(abc.ABC):
    """One embedding model behind a provider. Subclasses implement ``_embed_batch``."""

    #: Used in user-facing messages: "the {service_name} embedding service is unavailable".
    service_name: str = "embedding"
    #: Whether index passes also embed each chunk's paragraph windows (``domain.windows``);
    #: MEMORY_PIPELINE_PARAGRAPH_WINDOWS, set by ``embedders.factory``.
    paragraph_windows: bool = True
    #: How many model calls an index pass keeps in flight at once (MEMORY_PIPELINE_EMBED_PARALLEL,
    #: set by ``embedders.factory``): match the server's parallel slots. Calls must be thread-safe.
    in_flight: int = 1
    #: One model call in this many carries the canary during an index pass (``indexing``;
    #: MEMORY_PIPELINE_CANARY_EVERY, set by ``embedders.factory``). 1: every call.
    canary_every: int = 1
    #: How long a search waits for ``embed_query`` (``search.query_embedding``); an index pass
    #: waits for the provider's own, much longer, timeout. MEMORY_PIPELINE_QUERY_EMBED_TIMEOUT.
    query_timeout_s: float = 5.0
    #: Whether index passes give chunks their heading anchors (``domain.anchors``): to the model
    #: with the text, and to the keyword index; MEMORY_PIPELINE_HEADING_ANCHORS, set by
    #: ``embedders.factory``.
    heading_anchors: bool = True

    def __init__(self, profile: EmbeddingProfile, batch_size: int = 16):
        if profile.dim <= 0:
            raise ValueError(f"embedding dimension must be positive, got {profile.dim}")
        if batch_size <= 0:
            raise ValueError(f"batch size must be positive, got {batch_size}")
        self.profile = profile
        self.batch_size = batch_size

    @abc.abstractmethod
    def _embed_batch(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        """One model call: raw (len(texts), served_dim) vectors, before truncation.

        Raises ``EmbedderUnavailable`` when the service cannot be reached or fails.
        """

    def close(self) -> None:  # noqa: B027 (a concrete default, not an abstract hook)
        """Release clients/sockets; the default has nothing to release."""

    # -- public API -------------------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), profile.dim) float32 unit vectors, in ``batch_size`` model calls."""
        return self._in_batches(texts, is_query=False)

    def embed_query(self, text: str) -> np.ndarray:
        """(profile.dim,) float32 unit vector for a search query."""
        return self._checked([text], is_query=True)[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """``embed_query`` of each text, in ``batch_size`` model calls (calibration's probes)."""
        return self._in_batches(texts, is_query=True)

    def probe(self) -> int:
        """Embed ``PROBE_TEXT``; return the served dimension or raise before anything is written."""
        raw = self._embed_batch([PROBE_TEXT], is_query=False)
        served = self._served_dim(raw, expected_rows=1)
        self._refuse_if_too_small(served)
        return served

    # -- helpers ----------------------------------------------------------------------------
    def _in_batches(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        out = np.empty((len(texts), self.profile.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            out[start : start + len(batch)] = self._checked(batch, is_query=is_query)
        return out

    def _checked(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        raw = self._embed_batch(texts, is_query=is_query)
        self._refuse_if_too_small(self._served_dim(raw, expected_rows=len(texts)))
        return truncate_and_normalize(raw, self.profile.dim)

    def _served_dim(self, raw: np.ndarray, *, expected_rows: int) -> int:
        if raw.ndim != 2 or raw.shape[0] != expected_rows:
            raise ModelRefused(
                f"the {self.service_name} embedding service answered {raw.shape[0] if raw.ndim else 0} "
                f"vectors for {expected_rows} inputs; refusing to store them"
            )
        return int(raw.shape[1])

    def _refuse_if_too_small(self, served: int) -> None:
        if served < self.profile.dim:
            raise ModelRefused(
                f"model {self.profile.model!r} serves {served}-dimensional vectors but profile "
                f"{self.profile.name} stores {self.profile.dim}; nothing was written. Set "
                f"MEMORY_PIPELINE_EMBED_DIM to at most {served} (a new profile) or serve the right model."
            )


def status_error(
    service: str, where: str, server: str, model: str, status: int, message: str
) -> Exception:
    """An HTTP provider's error answer that no more particular rule explains: the ``service``
    unavailable (5xx, access, timeout, rate limit, no status at all) or the model refused.
    ``where``: the address named; ``server``: the phrase naming the server."""
    if status >= 500 or status in UNAVAILABLE_STATUSES or status < 0:
        return EmbedderUnavailable(service, f"{where} answered HTTP {status}: {message}")
    return ModelRefused(
        f"{server} refused to embed with model {model!r} (HTTP {status}): {message}"
    )


def finite(raw: np.ndarray, server: str, model: str) -> np.ndarray:
    """``raw``, unless a number in it is NaN or infinite (a broken model: never stored)."""
    if not np.isfinite(raw).all():
        raise ModelRefused(
            f"{server} answered non-finite numbers (NaN/inf) for model {model!r}; refusing to "
            "store them"
        )
    return raw
