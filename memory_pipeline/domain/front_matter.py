"""The YAML front matter of a Markdown source file: its recognised keys, the line of each, and
every other key as JSON metadata, or a located ``FrontMatterRejected``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import yaml

from memory_pipeline.domain.jsonl import json_type

FENCE = "---"
KEYS = frozenset({"title", "occurred_at", "date", "kind", "memory", "salience"})

# YAML aliases repeat a value wherever they are used: nine lines of nine aliases each stand for
# 9**9 values ("billion laughs"). Front matter is a handful of keys; this bounds what one file
# may expand to before anything is built from it.
MAX_FRONT_MATTER_VALUES = 10_000


@dataclass
class FrontMatter:
    values: dict[str, Any]  # the recognised keys that were set (null means not set)
    lines: dict[str, int]  # file line of each top-level key
    metadata: dict[str, Any]  # every other key, made JSON-serialisable

    @classmethod
    def parse(cls, source: str, *, first_line: int) -> FrontMatter:
        node, data = _load(source, first_line)
        if data is None:
            return cls({}, {}, {})
        if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
            raise FrontMatterRejected(
                f"front matter must be keys and values, got {json_type(data)}", first_line
            )
        lines, raw, plain_numbers = _key_lines(node, first_line)
        if "occurred_at" in data and "date" in data:
            raise FrontMatterRejected(
                "set 'occurred_at' or 'date' in front matter, not both",
                max(lines.get("occurred_at", first_line), lines.get("date", first_line)),
            )
        values: dict[str, Any] = {}
        metadata: dict[str, Any] = {}
        for key, value in data.items():
            name = str(key)
            if name not in KEYS:
                metadata[name] = _metadata_value(name, value, lines.get(name, first_line))
                continue
            if value is None:
                continue
            target = "occurred_at" if name == "date" else name
            if target in ("title", "memory", "kind") and name in raw:
                value = raw[name]
            elif name in plain_numbers:
                # YAML 1.1 reads an unquoted 1e-3 (no dot) as text; it is written as a number.
                value = _plain_number(plain_numbers[name])
            values[target] = value
            if target != name:
                lines[target] = lines.get(name, first_line)
        return cls(values, lines, metadata)


def _load(source: str, first_line: int) -> tuple[yaml.Node | None, Any]:
    """The document's node and the value built from it, checked for alias expansion first."""
    loader = node = None
    try:
        loader = yaml.SafeLoader(source)
        node = loader.get_single_node()
        if node is not None:
            _check_expansion(node, first_line)
        return node, (loader.construct_document(node) if node is not None else None)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = first_line + mark.line if mark is not None else first_line
        problem = error.problem or error.context or "invalid YAML"
        raise FrontMatterRejected(f"malformed front matter: {problem}", line) from None
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as error:
        # e.g. "date: 2024-13-45" looks like a timestamp to YAML and fails to construct.
        line = _failing_key_line(node, first_line) if node is not None else first_line
        raise FrontMatterRejected(f"malformed front matter: {error}", line) from None
    finally:
        if loader is not None:
            loader.dispose()


def _key_lines(
    node: yaml.MappingNode, first_line: int
) -> tuple[dict[str, int], dict[str, Any], dict[str, str]]:
    """The file line of each top-level key, the raw text of its scalar values, and the
    unquoted text of a salience YAML read as a string."""
    lines: dict[str, int] = {}
    raw: dict[str, Any] = {}
    plain_numbers: dict[str, str] = {}
    for key_node, value_node in node.value:
        key = str(key_node.value)
        line = first_line + key_node.start_mark.line
        if key in lines:
            # YAML keeps the last value, but the raw scalars above would keep another one:
            # refuse rather than guess which the writer meant (JSONL lines refuse it too).
            raise FrontMatterRejected(
                f"front matter key '{key}' repeated (first on line {lines[key]})", line
            )
        lines[key] = line
        # Names and titles are text as written: YAML would read `title: 1984` as a number
        # and `memory: yes` as true.
        if isinstance(value_node, yaml.ScalarNode) and value_node.tag != "tag:yaml.org,2002:null":
            raw[key] = value_node.value
            if key == "salience" and value_node.style is None and value_node.tag.endswith(":str"):
                plain_numbers[key] = value_node.value
    return lines, raw, plain_numbers


def _metadata_value(name: str, value: Any, line: int) -> Any:
    try:
        return _jsonable(value)
    except _NotJson as error:
        raise FrontMatterRejected(
            f"front matter '{name}' holds {error.what}, which metadata cannot store", line
        ) from None


def _failing_key_line(node: yaml.Node, first_line: int) -> int:
    """The line of the top-level key whose value YAML cannot build (the document failed as a
    whole, which does not say where); the first line when no single value fails alone."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            try:
                yaml.constructor.SafeConstructor().construct_document(value_node)
            except (yaml.YAMLError, ValueError, TypeError, RecursionError):
                return first_line + key_node.start_mark.line
    return first_line


def _plain_number(text: str) -> Any:
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def _check_expansion(node: yaml.Node, first_line: int) -> None:
    """Reject front matter that refers to itself or expands past MAX_FRONT_MATTER_VALUES
    through aliases, at the line of the top-level key where that happens."""
    sizes: dict[int, int] = {}
    pairs = node.value if isinstance(node, yaml.MappingNode) else [(node, node)]
    total = 0
    for key_node, value_node in pairs:
        line = first_line + key_node.start_mark.line
        try:
            total += _expanded_size(key_node, sizes, set()) + _expanded_size(
                value_node, sizes, set()
            )
        except _SelfReference:
            raise FrontMatterRejected(
                "front matter refers to itself through a YAML alias", line
            ) from None
        except RecursionError:
            raise FrontMatterRejected("malformed front matter: nested too deeply", line) from None
        if total > MAX_FRONT_MATTER_VALUES:
            # Each node is walked once (``sizes`` holds those walked): a total beyond their
            # number is values repeated by aliases; otherwise the file itself holds that many.
            if total > len(sizes):
                reason = f"front matter expands to more than {MAX_FRONT_MATTER_VALUES} values through YAML aliases"
            else:
                reason = (
                    f"front matter holds more than {MAX_FRONT_MATTER_VALUES} keys and values "
                    "(it is for a few fields; put long data in the body)"
                )
            raise FrontMatterRejected(reason, line)


class _SelfReference(Exception):
    pass


def _expanded_size(node: yaml.Node, sizes: dict[int, int], active: set[int]) -> int:
    # An alias is the same node object met again: memoised by identity, the walk is linear in
    # the file's size while the count is that of the expanded document.
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in active:
        raise _SelfReference
    active.add(key)
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [item for pair in node.value for item in pair]
    else:
        children = []
    total = 1
    for child in children:
        total += _expanded_size(child, sizes, active)
        if total > MAX_FRONT_MATTER_VALUES:
            break
    active.discard(key)
    sizes[key] = total
    return total


class _NotJson(Exception):
    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def _jsonable(value: Any) -> Any:
    """A YAML value as plain JSON: dates become ISO 8601 strings, sets become lists."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, (set, frozenset)):
        # A set has no order of its own; sorting keeps the stored metadata stable run to run.
        try:
            items = sorted(value)
        except TypeError:
            items = sorted(value, key=repr)
        return [_jsonable(item) for item in items]
    if isinstance(value, (bytes, bytearray)):
        raise _NotJson("binary data")
    return value


class FrontMatterRejected(Exception):
    def __init__(self, reason: str, line: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.line = line
