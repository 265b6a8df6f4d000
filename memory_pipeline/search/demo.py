"""The demo's searches: run each sample question through fused search and print the best chunks."""

from __future__ import annotations

from memory_pipeline.search.service import SearchService


def print_demo_searches(
    service: SearchService, queries: list[dict], memory: str = "mara", top: int = 3
) -> None:
    for item in queries:
        response = service.search(memory, item["query"], limit=top)
        print(f"\nsearch: {item['query']}   ({response.latency_ms:.0f} ms)")
        for rank, result in enumerate(response.results, 1):
            channels = ",".join(ch for ch, r in result.ranks.items() if r is not None)
            print(f"  {rank}. {result.title}  [{channels}]")
            print(f"     {result.snippet[:150]}")
