"""The ``retrieval_quality`` asset through the real ``memory-pipeline ui``: a job launched over
GraphQL scores a memory's labelled questions, and GraphQL shows the materialization's numeric
figures for the memory and its check passed."""

from __future__ import annotations

import json

import pytest

from memory_pipeline_tests.e2e.conftest import (
    METADATA_FIELDS,
    REPOSITORY,
    UiServer,
    metadata_values,
    wait_for,
)
from memory_pipeline_tests.e2e.test_webserver import (
    LAUNCH_RUN,
    _run_failure_details,
    _wait_for_run,
)
from memory_pipeline_tests.helpers import write_jsonl

pytestmark = pytest.mark.slow

MEMORY = "e2e-quality"
NOTES = {
    "Sourdough": "The sourdough starter needs rye flour and a warm kitchen.",
    "Dentist": "Doctor Marques found a cavity in the upper molar.",
}
MATERIALIZATIONS = """
query($key: AssetKeyInput!) {
  assetOrError(assetKey: $key) {
    __typename
    ... on Asset { assetMaterializations(limit: 10) { runId metadataEntries { FIELDS } } }
  }
}""".replace("FIELDS", METADATA_FIELDS)
CHECKS = """
query($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    __typename
    ... on AssetNode {
      assetChecksOrError {
        __typename
        ... on AssetChecks { checks { name executionForLatestMaterialization { status runId } } }
      }
    }
  }
}"""


def test_a_launched_scoring_shows_numeric_figures_and_a_passed_check(ui: UiServer, tmp_path):
    rows = [
        {"memory": MEMORY, "kind": "note", "title": t, "occurred_at": "2026-05-01", "body": b}
        for t, b in NOTES.items()
    ]
    assert ui.cli("ingest", str(write_jsonl(tmp_path / "q.jsonl", rows))).returncode == 0
    assert ui.cli("index").returncode == 0
    for question, title in (("rye flour starter?", "Sourdough"), ("molar cavity?", "Dentist")):
        line = json.dumps({"memory": MEMORY, "question": question, "expect_title": title})
        (tmp_path / "questions.jsonl").write_text(line + "\n", encoding="utf-8")
        saved = ui.cli("questions", "import", str(tmp_path / "questions.jsonl"))
        assert saved.returncode == 0, saved.stderr

    params = {"selector": {**REPOSITORY, "jobName": "score_retrieval_quality_job"}}
    launched = ui.graphql(LAUNCH_RUN, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    status = _wait_for_run(ui, run_id)
    assert status == "SUCCESS", f"run {run_id} ended {status}:\n{_run_failure_details(ui, run_id)}"

    asset = ui.graphql(MATERIALIZATIONS, {"key": {"path": ["retrieval_quality"]}})["assetOrError"]
    [mine] = [m for m in asset["assetMaterializations"] if m["runId"] == run_id]
    meta = metadata_values(mine["metadataEntries"])
    assert isinstance(meta[f"{MEMORY}/first_at_1"], float)
    assert meta[f"{MEMORY}/recall_at_8"] == 1.0 and meta[f"{MEMORY}/questions"] == 2

    # retrieval_quality_sensor may score the new questions in a run of its own meanwhile: the
    # check of the latest materialization is read once no run is evaluating it.
    def check_status() -> str:
        node = ui.graphql(CHECKS, {"key": {"path": ["retrieval_quality"]}})["assetNodeOrError"]
        checks = {c["name"]: c["executionForLatestMaterialization"] for c in
                  node["assetChecksOrError"]["checks"]}  # fmt: skip
        return checks["retrieval_quality_holds"]["status"]

    wait_for(lambda: check_status() != "IN_PROGRESS", timeout=150)
    assert check_status() == "SUCCEEDED"
