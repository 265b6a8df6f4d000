#!/usr/bin/env python
"""A loopback embedding server with a set capacity, for the indexing benchmarks.

It is the tests' ``LoopbackEmbeddingServer`` (``memory_pipeline_tests/support/loopback.py``: the
real Ollama ``/api/embed`` and OpenAI ``/v1/embeddings`` wire formats, base64 included) with
``--slots`` parallel slots, each busy ``--latency-ms`` per started ``--batch`` of inputs, like a
model on a small GPU (``OLLAMA_NUM_PARALLEL=4``, 40 ms per batch of 16: 1,600 inputs/s). Its
vectors cost almost nothing to make (a seeded pool of unit vectors, one picked per text by
crc32), so what is measured is the client's pipeline, not this process.

``--vectors words`` answers structured vectors instead (``WordVectors``: a text is the normalized
sum of fixed random vectors of its words, so texts sharing words are near each other, like a
real model's neighbourhoods); the search benchmarks store the corpus's vectors the same way.

    python benchmarks/model_server.py --slots 4 --latency-ms 40 --batch 16 --dim 384
    python benchmarks/model_server.py --latency-ms 0          # answers at once, no slot limit
    python benchmarks/model_server.py --latency-ms 0 --slots 0 --vectors words

It prints its URL and serves until interrupted. Loopback only (127.0.0.1).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import threading
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer  # noqa: E402

POOL = 4096
_WORD = re.compile(r"\w+")


class WordVectors:
    """Structured vectors: a text is the normalized sum of a fixed random unit vector per word
    (lower-cased ``\\w+`` tokens, each seeded by its crc32), the same in every process."""

    def __init__(self, dim: int, seed: int = 7):
        self.dim, self.seed = dim, seed
        self._index: dict[str, int] = {}
        self._rows = np.zeros((1024, dim), dtype=np.float32)  # grown by doubling
        self._lock = threading.Lock()

    def _ids(self, words: list[str]) -> np.ndarray:
        with self._lock:
            new = [w for w in dict.fromkeys(words) if w not in self._index]
            if new:
                rows = np.stack(
                    [
                        np.random.default_rng([self.seed, zlib.crc32(w.encode("utf-8"))])
                        .standard_normal(self.dim)
                        .astype(np.float32)
                        for w in new
                    ]
                )
                rows /= np.linalg.norm(rows, axis=1, keepdims=True)
                n = len(self._index)
                while n + len(new) > len(self._rows):
                    self._rows = np.concatenate([self._rows, np.zeros_like(self._rows)])
                self._rows[n : n + len(new)] = rows
                for w in new:
                    self._index[w] = len(self._index)
            return np.fromiter((self._index[w] for w in words), dtype=np.int64, count=len(words))

    def __call__(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            ids = self._ids(words or ["\0"])  # no word at all: a fixed direction, not a zero vector
            out[i] = self._rows[ids].sum(axis=0)  # after _ids: it may have grown the rows
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-12)
        return out


class CapacityServer:
    """``slots`` x (``batch`` inputs per ``latency_s``): the capacity in inputs per second."""

    def __init__(
        self,
        *,
        slots: int | None,
        latency_s: float,
        batch: int,
        dim: int,
        seed: int = 7,
        vectors: str = "pool",
    ):
        self.slots, self.latency_s, self.batch, self.dim = slots, latency_s, batch, dim
        rng = np.random.default_rng(seed)
        pool = rng.standard_normal((POOL, dim)).astype(np.float32)
        self.pool = pool / np.linalg.norm(pool, axis=1, keepdims=True)
        self.words = WordVectors(dim, seed) if vectors == "words" else None
        self.inputs = 0
        self._lock = threading.Lock()
        self.server = LoopbackEmbeddingServer(dim=dim, slots=slots, vector_fn=self._vectors)
        self.url = self.server.url

    @property
    def capacity(self) -> float:
        """Inputs per second with every slot busy on full batches (inf when latency is 0)."""
        if self.latency_s <= 0 or not self.slots:
            return math.inf
        return self.slots * self.batch / self.latency_s

    def _vectors(self, texts: list[str]) -> np.ndarray:
        # Runs inside a slot: the slot is busy for one latency per started batch of inputs.
        if self.latency_s > 0:
            time.sleep(self.latency_s * math.ceil(len(texts) / self.batch))
        with self._lock:
            self.inputs += len(texts)
        if self.words is not None:
            return self.words(texts)
        return self.pool[[zlib.crc32(t.encode("utf-8")) % POOL for t in texts]]

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> CapacityServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--slots", type=int, default=4, help="parallel slots (0: unlimited)")
    parser.add_argument(
        "--latency-ms", type=float, default=40.0, help="time a slot is busy per batch"
    )
    parser.add_argument("--batch", type=int, default=16, help="inputs per batch of latency")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument(
        "--vectors",
        choices=("pool", "words"),
        default="pool",
        help="pool: one of 4,096 random unit vectors per text (crc32); words: WordVectors",
    )
    args = parser.parse_args(argv)
    with CapacityServer(
        slots=args.slots or None,
        latency_s=args.latency_ms / 1000,
        batch=args.batch,
        dim=args.dim,
        vectors=args.vectors,
    ) as server:
        print(f"{server.url}  capacity {server.capacity:,.0f} inputs/s", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
