"""The package's imports: no circle, and every arrow points down (domain -> storage and embedders
-> the application core -> its face ``Memory`` -> the adapters).

Read from the source (``ast``), so an import inside a function counts as much as one at the top
of a module. ``import a.b.c`` runs the packages ``a`` and ``a.b`` first, but those implied arrows
to a parent's ``__init__`` are not drawn: a package face that imports nothing of its children at
import time closes no circle. An explicit ``from a import name`` of something the package
``__init__`` defines (not a submodule) is an arrow to that ``__init__``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "memory_pipeline"

# Floors, from the ground up: a module may import its own floor or a lower one. The first prefix
# that matches a module names its floor (a package name covers its submodules).
FLOORS: list[tuple[str, list[str]]] = [
    (
        "domain and the ground rules",
        ["memory_pipeline.domain", "memory_pipeline.errors", "memory_pipeline.redaction"]
        + ["memory_pipeline.progress"]
        + ["memory_pipeline.config", "memory_pipeline.version"],
    ),
    (
        "storage, embedders and rerankers",
        ["memory_pipeline.storage", "memory_pipeline.embedders", "memory_pipeline.rerankers"],
    ),
    (
        "the application core",
        ["memory_pipeline.indexing", "memory_pipeline.search", "memory_pipeline.ingest"]
        + ["memory_pipeline.statements", "memory_pipeline.tokens", "memory_pipeline.maintenance"]
        + ["memory_pipeline.reporting"],
    ),
    ("the core's face", ["memory_pipeline.memory"]),
    ("Dagster helpers", ["memory_pipeline.orchestration"]),
    (
        "adapters",
        ["memory_pipeline.server", "memory_pipeline.defs", "memory_pipeline.definitions"],
    ),
    ("the command line", ["memory_pipeline.cli"]),
    ("the package face", ["memory_pipeline"]),
]
ADAPTERS = ("memory_pipeline.cli", "memory_pipeline.server", "memory_pipeline.defs")


@dataclass(frozen=True)
class Arrow:
    source: str
    target: str
    where: str  # path:line of the import


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root`` (a package's ``__init__`` by its name)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def arrows(root: Path) -> Iterator[Arrow]:
    """The package's imports of its own modules, wherever in a file they are."""
    modules = module_names(root)
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        shown = path.relative_to(root.parent)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                for alias in node.names:
                    name = alias.name
                    while name and name not in modules:  # ``import a.b.c`` of a non-module c
                        name = name.rpartition(".")[0]
                    targets.append(name)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(module, path.name == "__init__.py", node)
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    targets.append(submodule if submodule in modules else base)
            for target in targets:
                if target in modules and target != module:
                    yield Arrow(module, target, f"{shown}:{node.lineno}")


def circles(edges: list[Arrow]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def floor_of(module: str) -> int:
    for number, (_, prefixes) in enumerate(FLOORS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return number
    raise AssertionError(f"{module} is on no floor: add it to FLOORS")


def _described(component: list[str], edges: list[Arrow]) -> str:
    inside = [e for e in edges if e.source in component and e.target in component]
    return " | ".join(f"{e.source} -> {e.target} ({e.where})" for e in inside)


def test_no_import_circle_in_the_package():
    edges = list(arrows(PACKAGE))
    found = circles(edges)
    assert not found, "import circles:\n" + "\n".join(
        f"{', '.join(c)}: {_described(c, edges)}" for c in found
    )


def test_every_module_is_on_a_floor_and_every_arrow_points_down():
    edges = list(arrows(PACKAGE))
    for module in module_names(PACKAGE):
        floor_of(module)
    up = [
        f"{e.where}: {e.source} ({FLOORS[floor_of(e.source)][0]}) imports {e.target} "
        f"({FLOORS[floor_of(e.target)][0]})"
        for e in edges
        if floor_of(e.target) > floor_of(e.source)
    ]
    assert not up, "arrows that point up:\n" + "\n".join(up)


def test_the_core_domain_and_storage_never_import_an_adapter():
    below = [
        name
        for name in module_names(PACKAGE)
        if floor_of(name) <= floor_of("memory_pipeline.memory")
    ]
    assert "memory_pipeline.memory" in below and "memory_pipeline.storage.database" in below
    reached = [
        f"{e.where}: {e.source} imports {e.target}"
        for e in arrows(PACKAGE)
        if e.source in below and e.target.startswith(ADAPTERS + ("memory_pipeline.orchestration",))
    ]
    assert not reached, "the core reaches an adapter:\n" + "\n".join(reached)


def test_the_reader_sees_function_level_relative_and_parent_package_imports(tmp_path):
    """The checks above can fail: a circle closed by an import inside a function, one closed by a
    relative import, and one through a name a package ``__init__`` defines are all found; the
    implied import of a parent package is not an arrow."""
    pkg = tmp_path / "memory_pipeline"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "def face():\n    from memory_pipeline.e import E\n",
        "e.py": "from memory_pipeline import face\nE = 1\n",
        "a.py": "import memory_pipeline.b\n",
        "b.py": "def late():\n    from memory_pipeline import a\n",
        "sub/__init__.py": "from .c import C\n",
        "sub/c.py": "C = 1\n\n\ndef late():\n    from . import d\n",
        "sub/d.py": "from memory_pipeline.sub.c import C\n",
        "f.py": "from memory_pipeline.sub.d import C\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text, encoding="utf-8")
    edges = list(arrows(pkg))
    pairs = {(e.source, e.target) for e in edges}
    assert ("memory_pipeline.b", "memory_pipeline.a") in pairs  # inside a function
    assert ("memory_pipeline.sub.c", "memory_pipeline.sub.d") in pairs  # relative
    assert ("memory_pipeline.e", "memory_pipeline") in pairs  # a name the package face defines
    # The parents of memory_pipeline.sub.d run first, but they are no arrows of f's.
    assert {t for s, t in pairs if s == "memory_pipeline.f"} == {"memory_pipeline.sub.d"}
    assert circles(edges) == [
        ["memory_pipeline", "memory_pipeline.e"],
        ["memory_pipeline.a", "memory_pipeline.b"],
        ["memory_pipeline.sub.c", "memory_pipeline.sub.d"],
    ]


# What an adapter may import: the face, the ground rules, Dagster's helpers (its own floor), its
# own package. Everything else of the core (storage, indexing, search, ingest...) is reached
# through ``Memory`` and what the ``memory`` package re-exports.
FACE_AND_GROUND = (
    "memory_pipeline.memory",
    "memory_pipeline.domain",
    "memory_pipeline.errors",
    "memory_pipeline.config",
    "memory_pipeline.version",
    "memory_pipeline.progress",
    "memory_pipeline.redaction",
)
ALLOWED_BEYOND_THE_FACE: dict[str, tuple[str, ...]] = {
    "memory_pipeline.defs": ("memory_pipeline.orchestration", "memory_pipeline.definitions"),
    # The command line starts the servers, and drives Dagster (``demo``, ``backfill``, ``ui``,
    # the reporter that records its work): Dagster's helpers and definitions, not the core.
    "memory_pipeline.cli": (
        "memory_pipeline.server",
        "memory_pipeline.orchestration",
        "memory_pipeline.defs",
        "memory_pipeline.definitions",
    ),
    "memory_pipeline.server": (),
}
# Parts of the core that only the core may hold: an adapter reading one reaches past the face.
PAST_THE_FACE = {"db", "search_service", "embed_settings"}


def _adapter_of(module: str) -> str | None:
    return next((a for a in ADAPTERS if module == a or module.startswith(a + ".")), None)


def reaches_past_the_face(root: Path) -> list[str]:
    """Every import of an adapter module past ``Memory``, and every read of a core part."""
    found = []
    for e in arrows(root):
        adapter = _adapter_of(e.source)
        if adapter is None:
            continue
        allowed = FACE_AND_GROUND + (adapter,) + ALLOWED_BEYOND_THE_FACE[adapter]
        if not any(e.target == p or e.target.startswith(p + ".") for p in allowed):
            found.append(f"{e.where}: {e.source} imports {e.target}")
    for module, path in module_names(root).items():
        if _adapter_of(module) is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        shown = path.relative_to(root.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in PAST_THE_FACE:
                found.append(f"{shown}:{node.lineno}: {module} reads .{node.attr}")
    return found


def test_no_adapter_reaches_past_memory():
    found = reaches_past_the_face(PACKAGE)
    assert not found, "adapters past the face:\n" + "\n".join(found)


def test_the_face_check_sees_imports_and_core_parts(tmp_path):
    pkg = tmp_path / "memory_pipeline"
    for folder in ("cli", "storage", "memory"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "storage" / "database.py").write_text("X = 1\n", encoding="utf-8")
    (pkg / "memory" / "facade.py").write_text("X = 1\n", encoding="utf-8")
    (pkg / "cli" / "ok.py").write_text(
        "from memory_pipeline.memory.facade import X\n\n\ndef f(mem):\n    return mem.days\n",
        encoding="utf-8",
    )
    (pkg / "cli" / "bad.py").write_text(
        "def f(mem):\n    from memory_pipeline.storage.database import X\n    return mem.db\n",
        encoding="utf-8",
    )
    found = reaches_past_the_face(pkg)
    assert found == [
        "memory_pipeline/cli/bad.py:2: memory_pipeline.cli.bad imports "
        "memory_pipeline.storage.database",
        "memory_pipeline/cli/bad.py:3: memory_pipeline.cli.bad reads .db",
    ]
