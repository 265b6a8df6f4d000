"""The quality guard in Dagster: ``serving_generation``'s launch config (``accept_worse``) and its
blocking check, whose metadata holds both generations' figures (``search.quality_guard``)."""

import dagster as dg

from memory_pipeline.domain.quality import DEFAULT_MARGIN
from memory_pipeline.search.quality_guard import Verdict

CHECK = "serving_generation_scores_no_worse"

QUALITY_GUARD_SPEC = dg.AssetCheckSpec(
    CHECK,
    asset="serving_generation",
    blocking=True,
    description=(
        "A new generation serves only if it scores within "
        f"{DEFAULT_MARGIN} of the serving one on each memory's labelled questions (fused and "
        "vector first@1, recall@8, MRR); a refused switch fails this check, which stops the "
        "run's later steps. Launch with `accept_worse: true` to switch anyway."
    ),
)


class SwitchConfig(dg.Config):
    """``serving_generation``'s launch config."""

    accept_worse: bool = False  # serve a new generation that scores worse, knowingly


def quality_guard_result(verdict: Verdict | None) -> dg.AssetCheckResult:
    """The check's result: passed when no switch was guarded, the new generation scored as
    well, or a worse one was accepted; both sets of figures in the metadata."""
    if verdict is None:
        return dg.AssetCheckResult(
            check_name=CHECK,
            passed=True,
            description="no switch was scored (none due, or no labelled questions)",
        )
    metadata: dict = {
        "serving": verdict.serving,
        "candidate": verdict.candidate,
        "margin": verdict.margin,
        "accepted_worse": verdict.accepted_worse,
        "figures": dg.MetadataValue.json(verdict.to_json()["memories"]),
    }
    for c in verdict.memories:
        for ranking, f in c.candidate.items():
            metadata[f"{c.memory}/{ranking}/candidate_first_at_1"] = f.first_at_1
            metadata[f"{c.memory}/{ranking}/candidate_recall_at_8"] = f.recall_at_8
        for ranking, f in (c.serving or {}).items():
            metadata[f"{c.memory}/{ranking}/serving_first_at_1"] = f.first_at_1
            metadata[f"{c.memory}/{ranking}/serving_recall_at_8"] = f.recall_at_8
    return dg.AssetCheckResult(
        check_name=CHECK,
        passed=not verdict.blocked,
        severity=dg.AssetCheckSeverity.ERROR,
        description=verdict.message,
        metadata=metadata,
    )
