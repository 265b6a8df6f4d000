"""The Python API: one ``Memory``, the face of the core, that the CLI, the HTTP and MCP servers and
Dagster's resource use, and the few types and renderers of the core they show.

    from memory_pipeline import Memory

    with Memory.open() as mem:                      # the embedded server under MEMORY_PIPELINE_HOME
        mem.add([{"memory": "me", "kind": "note", "title": "Bread",
                  "occurred_at": "2026-05-01", "body": "Sourdough needs a warm kitchen."}])
        mem.index()
        for hit in mem.search("me", "how do I bake bread?").results:
            print(hit.title, hit.score)

``facade`` holds the class; ``status`` and ``paging`` its typed results for status and
reading; ``days``, ``upkeep``, ``models`` and ``demo`` its parts (``mem.days.cut(day)``,
``mem.upkeep.promote_entities()``...), the work the Dagster assets and the CLI's operations do.
An adapter imports from here and nothing of the core below (``test_architecture``).
"""

from memory_pipeline.embedders.detect import NAMES as WIRE_FORMAT_NAMES
from memory_pipeline.errors import UnknownMemory
from memory_pipeline.indexing.report import IndexReport
from memory_pipeline.ingest import IngestReport, utc_today
from memory_pipeline.memory.adding import AddReport
from memory_pipeline.memory.facade import MAX_ADD_ITEMS, PURGE_EVERY_S, Memory
from memory_pipeline.memory.observing import MAX_LIST_STATEMENTS
from memory_pipeline.memory.opening import TelemetrySettings
from memory_pipeline.memory.paging import MAX_LIST, History, Page, UnknownEpisode
from memory_pipeline.memory.status import Status
from memory_pipeline.search.quality import MemoryQuality
from memory_pipeline.search.quality_tables import figures_frame, markdown, misses_frame
from memory_pipeline.search.questions import read_question_file
from memory_pipeline.search.render import human_table, markdown_table
from memory_pipeline.search.results import SearchResponse
from memory_pipeline.search.service import parse_as_of
from memory_pipeline.statements import UnknownStatement
from memory_pipeline.storage.champions_store import CHAMPIONS
from memory_pipeline.storage.database import POOL_SIZE
from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm
from memory_pipeline.storage.keyword_store import CAP as KEYWORD_LIST_CAP
from memory_pipeline.storage.paths import WORKSPACE_YAML
from memory_pipeline.tokens import ALL_MEMORIES

__all__ = [
    "ALL_MEMORIES",
    "CHAMPIONS",
    "KEYWORD_LIST_CAP",
    "MAX_ADD_ITEMS",
    "MAX_LIST",
    "MAX_LIST_STATEMENTS",
    "POOL_SIZE",
    "PURGE_EVERY_S",
    "WIRE_FORMAT_NAMES",
    "WORKSPACE_YAML",
    "AddReport",
    "History",
    "IndexReport",
    "IngestReport",
    "Memory",
    "MemoryQuality",
    "Page",
    "SearchResponse",
    "Status",
    "TelemetrySettings",
    "UnknownEpisode",
    "UnknownMemory",
    "UnknownStatement",
    "exit_cleanly_on_sigterm",
    "figures_frame",
    "markdown",
    "misses_frame",
    "human_table",
    "parse_as_of",
    "read_question_file",
    "markdown_table",
    "utc_today",
]
