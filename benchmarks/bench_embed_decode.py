#!/usr/bin/env python
"""Decoding Ollama's ``/api/embed`` answer: the ``ollama`` client's own path against ours.

Ollama answers ``{"embeddings": [[float, ...], ...]}`` as JSON text (no binary or base64 form).
``ollama.Client.embed`` parses it with ``json.loads`` and validates every number through its
pydantic response model before we make an array of it; ``OllamaEmbedder`` (since this
benchmark) sends the same request through the client and parses the body with orjson into the
array. Both run here against ``model_server.py`` in its own process (answers at once), batches
of ``--batch`` texts, at each ``--dims``; per call: the client process's CPU time (what limits
an index pass with several calls in flight) and wall time, medians over ``--calls`` calls,
the two paths alternated call by call.

    python benchmarks/bench_embed_decode.py                      # dims 384,1024, batch 16
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import ollama
from bench_index_server import ServerProcess  # a sibling module (benchmarks/)

from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.embedders.ollama import OllamaEmbedder

MODEL = "bench-decode"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dims", default="384,1024")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    texts = [
        f"decode probe text number {i} about the garden and the invoice" for i in range(args.batch)
    ]
    for dim in (int(d) for d in args.dims.split(",")):
        with ServerProcess(slots=0, latency_ms=0, batch=args.batch, dim=dim) as server:
            client = ollama.Client(host=server.url)
            embedder = OllamaEmbedder(
                EmbeddingProfile("ollama", MODEL, dim), host=server.url, batch_size=args.batch
            )

            def client_path() -> np.ndarray:
                return np.asarray(
                    client.embed(model=MODEL, input=texts).embeddings, dtype=np.float32
                )

            def our_path() -> np.ndarray:
                return embedder._embed_batch(texts, is_query=False)

            assert np.array_equal(client_path(), our_path()), "the two paths disagree"
            cpu: dict[str, list[float]] = {"client": [], "ours": []}
            wall: dict[str, list[float]] = {"client": [], "ours": []}
            for _ in range(args.calls):
                for name, call in (("client", client_path), ("ours", our_path)):
                    c0, w0 = time.process_time(), time.perf_counter()
                    call()
                    cpu[name].append(time.process_time() - c0)
                    wall[name].append(time.perf_counter() - w0)
            embedder.close()
            client._client.close()
        c, o = (statistics.median(cpu[k]) * 1000 for k in ("client", "ours"))
        wc, wo = (statistics.median(wall[k]) * 1000 for k in ("client", "ours"))
        print(
            f"dim {dim}, {args.batch} vectors a call: client CPU {c:.2f} ms -> {o:.2f} ms a call ({c / o:.1f}x less); "
            f"wall {wc:.2f} -> {wo:.2f} ms (medians of {args.calls})"
        )
    print(
        f"load average (1, 5, 15 min): {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
