"""``retrieval_quality``: every memory's labelled questions scored on the search users get, its
figures as numeric metadata (the asset's Plots tab draws their trend) and pandas tables, with a
check that no memory's figures fell since its previous scoring."""

import dagster as dg

from memory_pipeline.domain.quality import DEFAULT_MARGIN, Figures, drops
from memory_pipeline.memory import MemoryQuality, figures_frame, markdown, misses_frame
from memory_pipeline.orchestration.assets import OWNERS
from memory_pipeline.orchestration.resources import MemoryResource

CHECK = "retrieval_quality_holds"


@dg.asset(
    group_name="quality",
    kinds={"postgres", "pandas"},
    owners=OWNERS,
    deps=["hnsw_index"],
    tags={"stage": "quality"},
    check_specs=[
        dg.AssetCheckSpec(
            CHECK,
            asset="retrieval_quality",
            description=f"No memory's fused first@1, recall@8 or MRR fell by more than "
            f"{DEFAULT_MARGIN} since its previous scoring.",
        )
    ],
    description=(
        "Each memory's labelled questions (`memory-pipeline questions`) searched as users search: "
        "first@1, recall@3/@8 and MRR of the fused default and of each channel, and the misses "
        "(question, expected, what came first). Numeric metadata per memory for the Plots tab. "
        "Materialized nightly, after an index run that changed a memory with questions, and on "
        "demand (`memory-pipeline quality` prints the same table)."
    ),
)
def retrieval_quality(context: dg.AssetExecutionContext, memory_api: MemoryResource):
    api = memory_api.api
    before = {row["memory"]: row for row in api.quality()}
    scored = api.score_questions()
    for one in scored:
        context.log.info(
            f"{one.memory}: {one.questions} questions, first@1 {one.fused.first_at_1}, "
            f"recall@8 {one.fused.recall_at_8} ({one.seconds:.1f} s)"
        )
    yield dg.MaterializeResult(metadata=quality_metadata(scored))
    yield _holds(scored, before)


def quality_metadata(scored: list[MemoryQuality]) -> dict:
    """Numeric entries per memory (``<memory>/first_at_1``...), the figures as a table, the
    misses as Markdown, and the row count (questions scored)."""
    frame = figures_frame(scored)
    metadata: dict = {
        "dagster/row_count": sum(one.questions for one in scored),
        "memories": len(scored),
        "figures": dg.MetadataValue.table(
            records=[dg.TableRecord(r) for r in frame.to_dict("records")],
            schema=dg.TableSchema(
                columns=[
                    dg.TableColumn(c, "string" if c in ("memory", "ranking") else "float")
                    for c in frame.columns
                ]
            ),
        ),
        "figures_markdown": dg.MetadataValue.md(markdown(frame)),
        "misses": dg.MetadataValue.md(markdown(misses_frame(scored))),
    }
    for one in scored:
        f = one.fused
        metadata |= {
            f"{one.memory}/questions": one.questions,
            f"{one.memory}/first_at_1": f.first_at_1,
            f"{one.memory}/recall_at_3": f.recall_at_3,
            f"{one.memory}/recall_at_8": f.recall_at_8,
            f"{one.memory}/mrr": f.mrr,
        }
        for name, ch in one.channels.items():
            metadata[f"{one.memory}/{name}/recall_at_8"] = ch.recall_at_8
    return metadata


def _holds(scored: list[MemoryQuality], before: dict[str, dict]) -> dg.AssetCheckResult:
    fallen = {}
    for one in scored:
        previous = before.get(one.memory)
        if previous is None or "fused" not in previous["figures"]:
            continue
        dropped = drops(Figures.from_json(previous["figures"]["fused"]), one.fused)
        if dropped:
            fallen[one.memory] = "; ".join(dropped)
    return dg.AssetCheckResult(
        check_name=CHECK,
        passed=not fallen,
        severity=dg.AssetCheckSeverity.WARN,
        description="; ".join(f"{m}: {d}" for m, d in fallen.items()) or None,
        metadata={"margin": DEFAULT_MARGIN, "memories_fallen": len(fallen)}
        | {f"{m}/fell": d for m, d in fallen.items()},
    )
