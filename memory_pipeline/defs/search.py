"""Search from Dagster: an op and a job, so a person can search from the Launchpad.

The Launchpad opens with a preset that works after ``memory-pipeline demo`` (the sample
corpus's memory and one of its questions). The job runs in its run's own process: a search is
well under a second, a process per step would add seconds. A search that cannot be answered
(an unknown memory, a bad policy, the model server down) ends the run as failed, never as a
success: the op logs the reason as one plain ERROR line and raises ``dg.Failure`` with that
line as its description (metadata: memory, query, error; no retries: asking again gives the
same answer). Dagster 1.13 still attaches the raising frames to any step failure (the UI shows
them under "Stack Trace" below the description); the line above it is the whole message.
"""

import dagster as dg

from memory_pipeline.domain.policies import parse_channels
from memory_pipeline.errors import MemoryPipelineError
from memory_pipeline.memory import markdown_table
from memory_pipeline.orchestration.resources import MemoryResource

EXAMPLE_MEMORY = "mara"  # the sample corpus's (memory_pipeline/sample_corpus), loaded by the demo
EXAMPLE_QUERY = "what actually caused customers to be billed twice in May?"


class SearchConfig(dg.Config):
    memory: str = EXAMPLE_MEMORY
    query: str = EXAMPLE_QUERY
    policy: str = "default"
    limit: int | None = None
    channels: str | None = None  # e.g. "vector,keyword"


@dg.op(
    description="Fused search in one memory; the results appear as a Markdown table in the run's metadata."
)
def search_op(
    context: dg.OpExecutionContext, config: SearchConfig, memory_api: MemoryResource
) -> dict:
    try:
        channels = parse_channels(config.channels) if config.channels else None
        response = memory_api.search(
            config.memory, config.query, policy=config.policy, limit=config.limit, channels=channels
        )
    except (MemoryPipelineError, ValueError) as exc:
        line = f"search failed: {exc}"
        context.log.error(line)
        raise dg.Failure(
            description=line,
            allow_retries=False,
            metadata={"memory": config.memory, "query": config.query, "error": str(exc)},
        ) from None
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


@dg.job(
    description="Search one memory: set memory, query (and optionally policy, limit, channels) in the Launchpad.",
    executor_def=dg.in_process_executor,
    config=dg.RunConfig(
        ops={"search_op": SearchConfig(memory=EXAMPLE_MEMORY, query=EXAMPLE_QUERY)}
    ),
    tags={"memory_pipeline/kind": "search"},
)
def search_memory_job():
    search_op()
