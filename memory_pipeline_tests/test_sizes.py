"""Sizes: no module of the package over 500 lines, no function over 80 (a function counts from its
``def`` line to its last line, docstring included).

Today's offenders are listed with their sizes and may only shrink: an entry that grew fails, and
so does one now within the limit (delete it), so the list says what is left to split.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "memory_pipeline"
MODULE_LIMIT = 500
FUNCTION_LIMIT = 80

# path relative to the repository (a function as path::name) -> its size when listed.
ALLOWED: dict[str, int] = {}


def sizes() -> dict[str, int]:
    """Every module's line count, and every function's (nested ones too) by path::name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(PACKAGE.parent).as_posix()
        found[where] = len(source.splitlines())
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{where}::{node.name}"
                found[key] = max(found.get(key, 0), node.end_lineno - node.lineno + 1)  # type: ignore[operator]
    return found


def _limit(key: str) -> int:
    return FUNCTION_LIMIT if "::" in key else MODULE_LIMIT


def test_no_module_or_function_over_its_limit_beyond_the_listed_ones():
    over = {key: size for key, size in sizes().items() if size > _limit(key)}
    grown = {key: size for key, size in over.items() if size > ALLOWED.get(key, _limit(key))}
    assert grown == {}, "split these (the limits: 500 lines a module, 80 a function)"


def test_the_list_of_offenders_only_shrinks():
    found = sizes()
    settled = sorted(key for key in ALLOWED if found.get(key, 0) <= _limit(key))
    assert settled == [], "within the limit now (or gone): delete these from ALLOWED"
