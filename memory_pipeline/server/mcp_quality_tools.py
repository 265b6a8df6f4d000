"""The MCP tools for labelled questions and retrieval quality: an agent that found its answer
records it ("this result answered my question"), lists a memory's questions, and reads the
latest figures (``Memory.add_questions``, ``questions``, ``quality``). Functions over the
server's ``ToolContext``, as ``mcp_tools``."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from memory_pipeline.errors import InputError
from memory_pipeline.server.access import Access, readable_memory, writable_memory
from memory_pipeline.server.mcp_context import ToolContext, call


def record_answer(
    memory: str,
    question: str,
    ctx: Context,
    episode_id: int | None = None,
    statement: str | None = None,
) -> dict:
    """Record that a search result answered your question, so the memory's retrieval quality
    is measured on it: `episode_id` (a result's episodeId) or `statement` ("observation:ID"
    or "belief:ID", a statement result's chunkId). Saving the same question again moves it."""

    def run(tools: ToolContext, access: Access) -> dict:
        name = writable_memory(access, memory)
        if (episode_id is None) == (statement is None):
            raise InputError("give exactly one of episode_id or statement")
        expect = episode_id if episode_id is not None else statement
        item = {"memory": name, "question": question, "expect": expect}
        report = tools.memory.add_questions([("arguments", item)], author="mcp")
        if report.rejections:
            raise InputError(report.rejections[0].reason)
        return report.to_json()

    return call(ctx, run)


def list_questions(memory: str, ctx: Context) -> dict:
    """A memory's labelled questions with what answers each, oldest first."""

    def run(tools: ToolContext, access: Access) -> dict:
        name = readable_memory(tools.memory, access, memory)
        return {"memory": name, "questions": [q.to_json() for q in tools.memory.questions(name)]}

    return call(ctx, run)


def retrieval_quality(ctx: Context, memory: str | None = None) -> dict:
    """The latest retrieval-quality figures of each memory you can read (first@1, recall@3,
    recall@8 and MRR of the fused search and of each channel, over its labelled questions)."""

    def run(tools: ToolContext, access: Access) -> dict:
        name = None if memory is None else readable_memory(tools.memory, access, memory)
        return {"quality": [r for r in tools.memory.quality(name) if access.sees(r["memory"])]}

    return call(ctx, run)


QUALITY_TOOLS = (record_answer, list_questions, retrieval_quality)
