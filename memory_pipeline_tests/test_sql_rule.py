"""Where SQL lives: a statement that spans more than one line is a named file in ``sql/queries/``,
every such file is run by some module, and every name the code asks ``query`` for exists.

Read from the source (``ast``): a string constant or f-string that starts like a SQL statement
and spans more than one line of Python (a triple-quoted block or implicitly joined pieces) breaks
the rule; docstrings are prose and are not read.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from memory_pipeline.storage.paths import SQL_DIR

PACKAGE = Path(__file__).resolve().parents[1] / "memory_pipeline"

# A statement's opening, not an English sentence that starts with the same verb ("delete an
# episode ... from it" is help text): each verb with what must follow it in SQL.
STATEMENT = re.compile(
    r"^\s*\(?\s*("
    r"select\b.*\bfrom\b|select\s+\w+\s*\(|select\s+exists\b|insert\s+into\b"
    r"|update\s+\w+(\s+\w+)?\s+set\b|delete\s+from\b|with\s+(recursive\s+)?\w+\s+as\b"
    r"|create\s+(or\s+replace\s+|unique\s+|temp\s+|temporary\s+)*"
    r"(table|index|function|view|trigger|extension|sequence)\b"
    r"|alter\s+(table|index)\b|drop\s+(table|index|function|view|trigger)\b|copy\s+\w+"
    r")",
    re.IGNORECASE | re.DOTALL,
)


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _text(node: ast.AST) -> str | None:
    """A string literal's text, an f-string's with ``{}`` where its values go."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def multi_line_sql(source: str, where: str) -> Iterator[str]:
    """``where:line`` of each string literal in ``source`` that is a multi-line SQL statement."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
        text = _text(node)
        if text is None or id(node) in skip or not STATEMENT.match(text):
            continue
        if node.end_lineno != node.lineno or "\n" in text.strip():  # type: ignore[attr-defined]
            yield f"{where}:{node.lineno}"  # type: ignore[attr-defined]


def _sources() -> Iterator[tuple[Path, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, path.read_text(encoding="utf-8")


def _string_constants() -> set[str]:
    return {
        node.value
        for _, source in _sources()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def _query_calls() -> Iterator[tuple[str, str]]:
    """(name, path:line) of each ``query("name")`` call with a literal name."""
    for path, source in _sources():
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "query"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                yield node.args[0].value, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"


def _named_queries() -> set[str]:
    return {path.stem for path in (SQL_DIR / "queries").glob("*.sql")}


def test_the_package_holds_no_multi_line_sql_literal():
    found = [
        hit
        for path, source in _sources()
        for hit in multi_line_sql(source, str(path.relative_to(PACKAGE.parent)))
    ]
    assert found == [], "move these statements into named files in sql/queries/"


def test_every_named_query_is_run_by_some_module():
    dead = sorted(_named_queries() - _string_constants())
    assert dead == [], "sql/queries files no module names"


def test_every_query_the_code_asks_for_exists():
    missing = sorted(
        f"{where}: {name}" for name, where in _query_calls() if name not in _named_queries()
    )
    assert missing == []


def test_the_rule_sees_multi_line_statements_and_only_them():
    source = '''
def store(conn):
    """Select the rows FROM the table; a docstring is prose."""
    conn.execute("SELECT 1 FROM t WHERE a = %s", (1,))
    conn.execute(
        "SELECT a FROM t "
        "WHERE b = %s",
        (2,),
    )
    conn.execute("""
        update t SET a = 1""")
    conn.execute(f"""DELETE FROM {table}
        WHERE a = 1""")
    help = ("delete an episode with everything derived "
            "from it")
'''
    assert list(multi_line_sql(source, "x.py")) == ["x.py:6", "x.py:10", "x.py:12"]
