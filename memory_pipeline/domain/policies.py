"""Search policies: named sets of filters and knobs (kinds, time window, channels, limit) from YAML.

A policy file maps a policy name to its fields (kinds, window_days, salience_weight, channels,
contested_beliefs, rerank, limit), each of which may be left out; ``policy_fields`` holds the
rule of each and docs/retrieval.md#search-policies describes them. A file must define
``default``, the policy a search uses when none is named.

Every problem is a ``PolicyError`` (a ValueError) located as ``FILE:LINE: policy 'x': reason``,
with the line of the offending value taken from the YAML node marks. The command line can
override ``channels`` and ``limit``; those errors name the option instead of a line.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memory_pipeline.domain.policy_fields import (
    CHANNELS,
    EXPECTED_CHANNELS,
    MAX_LIMIT,
    InvalidValue,
    PolicyError,
    canonical_channels,
    check_channel,
    check_channels,
    check_flag,
    check_kind,
    check_kinds,
    check_limit,
    check_name,
    check_rerank,
    check_salience_weight,
    check_window_days,
    is_int,
    shown,
)

DEFAULT_LIMIT = 8
DEFAULT_SALIENCE_WEIGHT = 0.1
DEFAULT_POLICY = "default"
# A policy file is a map of maps of short lists (three levels): these bounds refuse a hostile or
# mistaken file (nesting that would exhaust the parser's recursion, a file that is not a policy
# file at all) with a located message before it costs time or memory.
MAX_POLICY_FILE_BYTES = 1 << 20
MAX_POLICY_DEPTH = 16

_FIELDS = (
    "kinds",
    "window_days",
    "salience_weight",
    "channels",
    "contested_beliefs",
    "rerank",
    "limit",
)


@dataclass(frozen=True)
class Policy:
    """How one search runs: which episodes it may return and how it ranks them."""

    name: str
    kinds: tuple[str, ...] | None = None  # None: every kind
    window_days: int | None = None  # None: no cutoff on occurred_at
    salience_weight: float = DEFAULT_SALIENCE_WEIGHT  # 0 disables salience
    channels: tuple[str, ...] = CHANNELS  # always in CHANNELS order
    contested_beliefs: bool = False  # the belief channel also returns contested beliefs
    rerank: bool = True
    limit: int = DEFAULT_LIMIT

    def __post_init__(self) -> None:
        # A Policy built in code passes the same rules as one read from a file, and lists
        # become tuples so a policy stays hashable.
        try:
            check_name(self.name)
            object.__setattr__(self, "kinds", check_kinds(self.kinds))
            object.__setattr__(self, "window_days", check_window_days(self.window_days))
            object.__setattr__(self, "salience_weight", check_salience_weight(self.salience_weight))
            object.__setattr__(self, "channels", check_channels(self.channels))
            check_flag("contested_beliefs", self.contested_beliefs)
            check_rerank(self.rerank)
            check_limit(self.limit)
        except InvalidValue as error:
            raise PolicyError(
                f"policy {shown(self.name)}: {error.reason}",
                reason=error.reason,
                policy=self.name if isinstance(self.name, str) else None,
            ) from None

    def with_overrides(
        self,
        *,
        channels: str | Sequence[str] | None = None,
        limit: int | None = None,
        contested_beliefs: bool | None = None,
    ) -> Policy:
        """This policy with the command line's ``--channels`` and ``--limit`` applied (and the
        service's ``contested``: whether the belief channel also returns contested beliefs).

        ``channels`` is either the option's text (``"vector,keyword"``, see ``parse_channels``)
        or a sequence of names. Errors name the option: ``--limit 0: must be between 1 and 50``.
        """
        new_channels = self.channels
        if channels is not None:
            if isinstance(channels, str):
                new_channels = parse_channels(channels)
            else:
                new_channels = _override_channels(",".join(map(str, channels)), list(channels))
        new_limit = self.limit
        if limit is not None:
            if not is_int(limit) or not 1 <= limit <= MAX_LIMIT:
                reason = f"must be between 1 and {MAX_LIMIT}"
                if not is_int(limit):
                    reason = f"must be an integer between 1 and {MAX_LIMIT}"
                raise PolicyError(
                    f"--limit {shlex.quote(str(limit))}: {reason}", reason=reason, policy=self.name
                )
            new_limit = limit
        contested = self.contested_beliefs
        if contested_beliefs is not None:
            check_flag("contested_beliefs", contested_beliefs)
            contested = contested_beliefs
        return dataclasses.replace(
            self, channels=new_channels, limit=new_limit, contested_beliefs=contested
        )


def _override_channels(text: str, names: list[Any]) -> tuple[str, ...]:
    def fail(reason: str) -> PolicyError:
        return PolicyError(f"--channels {shlex.quote(text)}: {reason}", reason=reason)

    if not names:
        raise fail(f"no channel given (expected some of {EXPECTED_CHANNELS})")
    chosen: list[str] = []
    for name in names:
        try:
            channel = check_channel(name)
        except InvalidValue as error:
            raise fail(error.reason) from None
        if channel not in chosen:
            chosen.append(channel)
    return canonical_channels(chosen)


def parse_channels(text: str) -> tuple[str, ...]:
    """``"vector, keyword"`` -> ``("vector", "keyword")``: trimmed, deduplicated, in CHANNELS order.

    Empty items (a trailing comma) are skipped; no channel at all, or an unknown name, is a
    PolicyError that quotes the option: ``--channels foo: unknown channel 'foo' (expected ...)``.
    """
    if not isinstance(text, str):
        raise PolicyError(f"--channels: expected text, got {shown(text)}")
    names = [part.strip() for part in text.split(",")]
    return _override_channels(text, [name for name in names if name])


def default_policies_path() -> Path:
    """The policies.yaml bundled with the package."""
    return Path(__file__).resolve().parent.parent / "policies.yaml"


def load_policies(path: str | os.PathLike[str] | None = None) -> dict[str, Policy]:
    """Every policy in a YAML file (the bundled one when ``path`` is None), by name.

    Raises PolicyError, located ``FILE:LINE: policy 'x': reason``, for the first problem
    found: unreadable file, invalid YAML, duplicate names or fields, unknown fields, values of
    the wrong type or out of range, or a missing ``default`` policy.
    """
    if path is None:
        path = default_policies_path()
    display = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_POLICY_FILE_BYTES + 1)
    except OSError as error:
        raise PolicyError(f"{display}: cannot read: {error.strerror or error}") from None
    if len(data) > MAX_POLICY_FILE_BYTES:
        raise PolicyError(
            f"{display}: larger than {MAX_POLICY_FILE_BYTES // (1 << 20)} MiB; "
            "a policy file is a few short policies"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise PolicyError(f"{display}: not UTF-8 text (byte {error.start + 1})") from None
    return _Loader(display, text).load()


class _TooDeep(yaml.MarkedYAMLError):
    pass


class _DepthLimitedLoader(yaml.SafeLoader):
    """A SafeLoader whose composer refuses nesting deeper than MAX_POLICY_DEPTH.

    PyYAML composes (and later constructs) a node tree by recursion, so a file nested thousands
    deep would end in a RecursionError; here it ends at the first node too deep, located."""

    _depth = 0

    def compose_node(self, parent, index):
        if self._depth >= MAX_POLICY_DEPTH:
            mark = self.peek_event().start_mark
            raise _TooDeep(
                problem=f"nested deeper than {MAX_POLICY_DEPTH} levels", problem_mark=mark
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _Loader:
    def __init__(self, display: str, text: str):
        self.display = display
        self.text = text
        # One SafeLoader both composes the node tree (for line numbers) and constructs each
        # value from its node, so values get exactly safe_load's types (int, bool, null, ...).
        self.yaml = _DepthLimitedLoader(text)

    def error(self, node: yaml.Node | None, reason: str, policy: str | None = None) -> PolicyError:
        line = node.start_mark.line + 1 if node is not None else 1
        where = f"policy {shown(policy)}: " if policy is not None else ""
        return PolicyError(
            f"{self.display}:{line}: {where}{reason}", reason=reason, line=line, policy=policy
        )

    def value(self, node: yaml.Node, policy: str | None) -> Any:
        try:
            return self.yaml.construct_object(node, deep=True)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None) or node.start_mark
            raise PolicyError(
                f"{self.display}:{mark.line + 1}: "
                + (f"policy {shown(policy)}: " if policy is not None else "")
                + f"invalid value: {getattr(error, 'problem', None) or error}",
                line=mark.line + 1,
                policy=policy,
            ) from None

    def check_tag(self, node: yaml.CollectionNode, policy: str | None) -> None:
        # The loader walks mappings and lists itself instead of constructing them, so a tag on
        # one (say !!python/object) would otherwise be ignored rather than refused.
        kind = "map" if isinstance(node, yaml.MappingNode) else "seq"
        plain = f"tag:yaml.org,2002:{kind}"
        if node.tag != plain:
            raise self.error(node, f"unsupported YAML tag {node.tag!r}", policy)

    def load(self) -> dict[str, Policy]:
        try:
            try:
                root = self.yaml.get_single_node()
            except yaml.MarkedYAMLError as error:
                mark = error.problem_mark or error.context_mark
                line = mark.line + 1 if mark is not None else 1
                problem = error.problem or error.context or "syntax error"
                raise PolicyError(
                    f"{self.display}:{line}: invalid YAML: {problem}", line=line
                ) from None
            except yaml.YAMLError as error:
                raise PolicyError(f"{self.display}:1: invalid YAML: {error}", line=1) from None
            return self.policies(root)
        finally:
            self.yaml.dispose()

    def policies(self, root: yaml.Node | None) -> dict[str, Policy]:
        if root is None or (isinstance(root, yaml.ScalarNode) and self.value(root, None) is None):
            raise PolicyError(
                f"{self.display}:1: no policies (the file must define '{DEFAULT_POLICY}')", line=1
            )
        if not isinstance(root, yaml.MappingNode):
            raise self.error(root, "expected a mapping of policy names to their fields")
        self.check_tag(root, None)
        policies: dict[str, Policy] = {}
        for key_node, value_node in root.value:
            name = self.value(key_node, None)
            try:
                check_name(name)
            except InvalidValue as invalid:
                raise self.error(key_node, invalid.reason) from None
            if name in policies:
                raise self.error(key_node, "defined twice", name)
            policies[name] = self.policy(name, value_node)
        if DEFAULT_POLICY not in policies:
            raise PolicyError(
                f"{self.display}:{root.start_mark.line + 1}: no '{DEFAULT_POLICY}' policy "
                "(a search that names no policy uses it)",
                line=root.start_mark.line + 1,
            )
        return policies

    def policy(self, name: str, node: yaml.Node) -> Policy:
        if isinstance(node, yaml.ScalarNode) and self.value(node, name) is None:
            return Policy(name=name)  # "name:" alone: every field at its default
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, "expected a mapping of fields", name)
        self.check_tag(node, name)
        checks = {
            "kinds": lambda n: self.kinds(n, name),
            "window_days": lambda n: check_window_days(self.value(n, name)),
            "salience_weight": lambda n: check_salience_weight(self.value(n, name)),
            "channels": lambda n: self.channels(n, name),
            "contested_beliefs": lambda n: check_flag("contested_beliefs", self.value(n, name)),
            "rerank": lambda n: check_rerank(self.value(n, name)),
            "limit": lambda n: check_limit(self.value(n, name)),
        }
        fields: dict[str, Any] = {}
        for key_node, value_node in node.value:
            field_name = self.value(key_node, name)
            if not isinstance(field_name, str) or field_name not in checks:
                raise self.error(
                    key_node,
                    f"unknown field {shown(field_name)} (expected {', '.join(_FIELDS)})",
                    name,
                )
            if field_name in fields:
                raise self.error(key_node, f"field {field_name!r} given twice", name)
            try:
                fields[field_name] = checks[field_name](value_node)
            except _Located as located:
                raise self.error(located.node, located.reason, name) from None
            except InvalidValue as invalid:
                raise self.error(value_node, invalid.reason, name) from None
        return Policy(name=name, **fields)

    def items(self, node: yaml.Node, name: str, what: str) -> list[tuple[yaml.Node, Any]] | None:
        """A sequence's items with their nodes, so a bad item is reported on its own line."""
        if isinstance(node, yaml.SequenceNode):
            self.check_tag(node, name)
            return [(item, self.value(item, name)) for item in node.value]
        value = self.value(node, name)
        if value is None:
            return None
        raise InvalidValue(f"{what} must be a list, got {shown(value)}")

    def channels(self, node: yaml.Node, name: str) -> tuple[str, ...]:
        items = self.items(node, name, "channels")
        if items is None:
            raise InvalidValue("channels is null (leave it out for every channel)")
        if not items:
            check_channels([])
        return canonical_channels(self.distinct(items, check_channel, "channel"))

    def kinds(self, node: yaml.Node, name: str) -> tuple[str, ...] | None:
        items = self.items(node, name, "kinds")
        if items is None:
            return None
        if not items:
            check_kinds([])
        return tuple(self.distinct(items, check_kind, "kind"))

    @staticmethod
    def distinct(
        items: list[tuple[yaml.Node, Any]], check_item: Callable[[Any], str], what: str
    ) -> list[str]:
        """Each item checked by ``check_item``, none listed twice; an error is located at the
        item's own node."""
        seen: list[str] = []
        for item_node, item in items:
            try:
                checked = check_item(item)
                if checked in seen:
                    raise InvalidValue(f"{what} {checked!r} is listed twice")
            except InvalidValue as invalid:
                raise _Located(item_node, invalid.reason) from None
            seen.append(checked)
        return seen


class _Located(Exception):
    """An invalid item of a list, reported at the item's own node rather than the list's."""

    def __init__(self, node: yaml.Node, reason: str):
        super().__init__(reason)
        self.node = node
        self.reason = reason
