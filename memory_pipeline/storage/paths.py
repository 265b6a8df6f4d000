"""Where the project's files live: ``sql/``, ``dagster.yaml`` and ``workspace.yaml``.

They sit at the top of the repository; a wheel carries copies inside the package (``setup.py``
copies them at build time), so an installed package finds them from any folder. A checkout (an
editable install) has no copies and reads the repository's own.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
# The repository's top level when running from a checkout (tests and benchmarks use it).
PROJECT_ROOT = PACKAGE_DIR.parent


def project_file(name: str) -> Path:
    """``name`` inside the installed package if the wheel carried it, else the checkout's."""
    packaged = PACKAGE_DIR / name
    return packaged if packaged.exists() else PROJECT_ROOT / name


SQL_DIR = project_file("sql")
DAGSTER_YAML = project_file("dagster.yaml")
WORKSPACE_YAML = project_file("workspace.yaml")


@cache
def query(name: str) -> str:
    """The text of ``sql/queries/<name>.sql``, read once per process, without its whole-line
    comments: they are for readers, not the server, and psycopg converts a query's
    placeholders once and keeps the result only for queries of up to 4 KiB (a commented
    keyword query was converted again on every search)."""
    text = (SQL_DIR / "queries" / f"{name}.sql").read_text(encoding="utf-8")
    return (
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")) + "\n"
    )
