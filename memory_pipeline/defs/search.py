"""Search from Dagster: an op and a job, so a person can search from the Launchpad."""

from typing import Optional

import dagster as dg

from memory_pipeline.domain.policies import parse_channels
from memory_pipeline.errors import MemoryPipelineError
from memory_pipeline.resources import SearchResource
from memory_pipeline.search.render import markdown_table


class SearchConfig(dg.Config):
    memory: str
    query: str
    policy: str = "default"
    limit: Optional[int] = None
    channels: Optional[str] = None  # e.g. "vector,keyword"


@dg.op(description="Fused search in one memory; the results appear as a Markdown table in the run's metadata.")
def search_op(context: dg.OpExecutionContext, config: SearchConfig, search: SearchResource) -> dict:
    try:
        channels = parse_channels(config.channels) if config.channels else None
        response = search.search(config.memory, config.query, policy=config.policy, limit=config.limit,
                                 channels=channels)
    except (MemoryPipelineError, ValueError) as exc:
        # A bad query is the user's to fix: say so plainly instead of a stack trace.
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    context.add_output_metadata(
        {
            "results": dg.MetadataValue.md(markdown_table(response)),
            "result_count": len(response.results),
            "vector_channel": response.vector_status,
            "reranker": response.reranker,
            "latency_ms": round(response.latency_ms, 1),
        }
    )
    return response.to_json()


@dg.job(description="Search one memory: set memory, query (and optionally policy, limit, channels) in the Launchpad.")
def search_memory_job():
    search_op()
