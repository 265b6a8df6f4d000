"""A running Dagster web server's GraphQL API, as its UI uses it: launch, read and cancel a
backfill of a partitioned job, exactly as the Backfills page does. The end-to-end tests act as
the UI does through it; ``memory-pipeline backfill`` itself needs no web server
(``orchestration.backfills``), and both read a backfill into the same ``BackfillState``.
"""

from __future__ import annotations

import httpx

from memory_pipeline.errors import ExitCode, MemoryPipelineError
from memory_pipeline.orchestration.backfills import BackfillState

REPOSITORY = {"repositoryLocationName": "memory_pipeline", "repositoryName": "__repository__"}

LAUNCH = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on PartitionSetNotFoundError { message }
    ... on PartitionKeysNotFoundError { message }
    ... on UnauthorizedError { message }
    ... on InvalidSubsetError { message }
    ... on RunConflict { message }
  }
}"""

STATUS = """
query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill {
      status numPartitions jobName partitionNames
      partitionStatuses { results { partitionName runId runStatus } }
    }
    ... on PythonError { message }
    ... on BackfillNotFoundError { message }
  }
}"""

CANCEL = """
mutation($id: String!) {
  cancelPartitionBackfill(backfillId: $id) {
    __typename
    ... on PythonError { message }
    ... on UnauthorizedError { message }
  }
}"""


class DagsterUnavailable(MemoryPipelineError):
    """No Dagster web server answers at the URL, or it refused the request."""

    exit_code = ExitCode.DAGSTER_UNAVAILABLE


class DagsterApi:
    def __init__(self, url: str, timeout_s: float = 30.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _post(self, query: str, variables: dict) -> dict:
        try:
            response = httpx.post(
                f"{self.url}/graphql",
                json={"query": query, "variables": variables},
                timeout=self.timeout_s,
            )
        except httpx.HTTPError as exc:
            raise DagsterUnavailable(
                f"no Dagster web server answers at {self.url} ({type(exc).__name__}); start "
                "`memory-pipeline ui` (or `dagster dev` in the project folder), or pass --dagster-url"
            ) from None
        if response.status_code != 200:
            raise DagsterUnavailable(
                f"the Dagster web server at {self.url} answered HTTP {response.status_code}"
            )
        body = response.json()
        if body.get("errors"):
            raise DagsterUnavailable(
                f"the Dagster web server at {self.url} refused the request: "
                f"{body['errors'][0].get('message', body['errors'][0])}"
            )
        return body["data"]

    def ping(self) -> str:
        """The server's Dagster version; DagsterUnavailable when nothing answers."""
        return self._post("{ version }", {})["version"]

    def launch_backfill(self, job: str, partitions: list[str], tags: dict[str, str]) -> str:
        params = {
            "selector": {
                "partitionSetName": f"{job}_partition_set",
                "repositorySelector": REPOSITORY,
            },
            "partitionNames": partitions,
            "tags": [{"key": k, "value": v} for k, v in tags.items()],
        }
        result = self._post(LAUNCH, {"params": params})["launchPartitionBackfill"]
        if result["__typename"] != "LaunchBackfillSuccess":
            raise DagsterUnavailable(
                f"Dagster did not launch the backfill: {result['__typename']}: "
                f"{(result.get('message') or '').splitlines()[0] if result.get('message') else ''}"
            )
        return result["backfillId"]

    def backfill(self, backfill_id: str) -> BackfillState:
        node = self._post(STATUS, {"id": backfill_id})["partitionBackfillOrError"]
        if node["__typename"] != "PartitionBackfill":
            raise DagsterUnavailable(
                f"backfill {backfill_id}: {node.get('message', node['__typename'])}"
            )
        results = (node["partitionStatuses"] or {}).get("results", [])
        return BackfillState(
            backfill_id,
            node["status"],
            {r["partitionName"]: r["runStatus"] for r in results},
            {r["partitionName"]: r["runId"] for r in results},
            node["jobName"] or "",
            list(node["partitionNames"] or []),
        )

    def cancel_backfill(self, backfill_id: str) -> None:
        result = self._post(CANCEL, {"id": backfill_id})["cancelPartitionBackfill"]
        if result["__typename"] != "CancelBackfillSuccess":
            raise DagsterUnavailable(
                f"Dagster did not cancel backfill {backfill_id}: {result['__typename']}: "
                f"{(result.get('message') or '').splitlines()[0] if result.get('message') else ''}"
            )
