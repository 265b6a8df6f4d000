"""The index's freshness in Dagster with no daemon: `memory-pipeline ingest` records the
`index_is_current` check of `embeddings` as failed (the episodes pending, since when, how far
behind), `memory-pipeline index` as passed, read back from the real instance and through the
web UI's GraphQL schema over the project's definitions (what the asset graph shows)."""

from __future__ import annotations

import datetime as dt

import dagster as dg
from dagster._core.test_utils import in_process_test_workspace
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster_graphql.test.utils import execute_dagster_graphql

from memory_pipeline.indexing.pending import IndexLag
from memory_pipeline.orchestration import freshness
from memory_pipeline_tests.helpers import dagster_instance, episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

KEY = dg.AssetCheckKey(dg.AssetKey("embeddings"), "index_is_current")
# What the asset graph and the asset's Checks tab ask for.
CHECKS = """
query {
  assetNodeOrError(assetKey: {path: ["embeddings"]}) {
    ... on AssetNode { assetChecksOrError { ... on AssetChecks { checks {
      name
      executionForLatestMaterialization {
        status evaluation { severity description success }
      }
    } } } }
  }
}"""


def _shown(workspace) -> dict:
    """The ``index_is_current`` check's latest execution as the UI shows it."""
    result = execute_dagster_graphql(workspace, CHECKS)
    assert not result.errors, result.errors
    checks = result.data["assetNodeOrError"]["assetChecksOrError"]["checks"]
    [check] = [c for c in checks if c["name"] == "index_is_current"]
    return check["executionForLatestMaterialization"]


def _latest(instance) -> dg.AssetCheckEvaluation:
    record = instance.event_log_storage.get_latest_asset_check_execution_by_key([KEY])[KEY]
    return record.event.asset_check_evaluation


def test_ingest_shows_the_index_behind_and_index_shows_it_current(
    cli, tmp_path, db_url, monkeypatch
):
    path = tmp_path / "notes.jsonl"
    write_jsonl(path, [episode(i, words="harbour walk with Marta") for i in range(3)])
    # The code location's settings, as `memory-pipeline ui` gives them.
    monkeypatch.setenv("MEMORY_PIPELINE_DATABASE_URL", db_url)
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "home"))
    with (
        LoopbackEmbeddingServer(dim=1024) as server,
        dagster_instance(db_url, tmp_path / "dagster_home") as instance,
        in_process_test_workspace(
            instance, LoadableTargetOrigin(module_name="memory_pipeline.definitions")
        ) as workspace,
    ):
        env = {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": server.url}
        ingested = cli("ingest", str(path), "--memory", "m", env=env)
        assert ingested.code == 0 and "warning" not in ingested.err, ingested.err
        behind = _latest(instance)
        assert not behind.passed and behind.severity == dg.AssetCheckSeverity.WARN
        assert behind.metadata["pending_episodes"].value == 3
        assert behind.metadata["window_minutes"].value == 60.0
        assert behind.description.startswith("3 episodes pending since ")
        assert "minutes behind ingest (within the 60-minute window)" in behind.description
        shown = _shown(workspace)
        assert shown["status"] == "FAILED" and shown["evaluation"]["severity"] == "WARN"
        assert shown["evaluation"]["description"] == behind.description

        indexed = cli("index", env=env)
        assert indexed.code == 0 and "warning" not in indexed.err, indexed.err
        current = _latest(instance)
        assert current.passed and current.metadata["pending_episodes"].value == 0
        assert current.description == "every ingested episode is indexed"
        assert _shown(workspace)["status"] == "SUCCEEDED"


def test_a_lag_beyond_the_window_is_an_error():
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=90)
    evaluation = freshness.index_check_evaluation(IndexLag(1, long_ago), 60.0)
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["behind_minutes"].value >= 90
    assert "1 episode pending since" in evaluation.description
    assert "beyond the 60-minute window" in evaluation.description
