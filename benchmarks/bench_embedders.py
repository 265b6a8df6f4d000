"""The model a quality benchmark embeds with: the bundled local model (multilingual-e5-small, 384
dimensions) by default, or an OpenAI-compatible server given by ``--embed-url`` (loopback only),
as the tests run the benchmarks against a loopback server."""

from __future__ import annotations

import argparse

from memory_pipeline.config import EmbedSettings
from memory_pipeline.embedders.factory import build_embedder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embed-url",
        help="an OpenAI-compatible embedding server on loopback instead of the bundled model",
    )
    parser.add_argument("--embed-model", default="loopback")
    parser.add_argument("--embed-dim", type=int, default=384)


def embedder_for(args: argparse.Namespace, *, heading_anchors: bool = True):
    if args.embed_url:
        settings = EmbedSettings(
            "openai",
            args.embed_model,
            args.embed_dim,
            args.embed_url,
            16,
            120.0,
            heading_anchors=heading_anchors,
        )
    else:
        settings = EmbedSettings(
            "local", "multilingual-e5-small", 384, None, 16, 120.0, heading_anchors=heading_anchors
        )
    return build_embedder(settings)
