"""The rule for each field of a search policy, and ``PolicyError``, the located error every
broken rule becomes (``domain.policies`` says where the value came from)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from memory_pipeline.domain.episodes import KIND_RE

CHANNELS = ("vector", "keyword", "graph", "date", "observation", "belief")

MAX_LIMIT = 50

# A window wider than a century is a typo, and datetime arithmetic overflows past year 1 anyway
# (a million days before today): "no cutoff" is written by leaving window_days out.
MAX_WINDOW_DAYS = 36_500

# Policy names are typed after --policy and shown in logs: the same shape as episode kinds.
POLICY_NAME_RE = KIND_RE

EXPECTED_CHANNELS = ", ".join(CHANNELS)


class PolicyError(ValueError):
    """A policy file or override breaks a rule; ``str(error)`` is the located message."""

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        line: int | None = None,
        policy: str | None = None,
    ):
        super().__init__(message)
        self.reason = reason if reason is not None else message
        self.line = line  # 1-based line in the file, None when not from a file
        self.policy = policy


class InvalidValue(Exception):
    """A reason without its location; the caller knows where the value came from."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def shown(value: Any) -> str:
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:39] + "…"
        return repr(text)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def is_int(value: Any) -> bool:
    # YAML's "true" is a bool, which Python counts as an int; "limit: true" is still a mistake.
    return isinstance(value, int) and not isinstance(value, bool)


def check_limit(value: Any) -> int:
    if not is_int(value) or not 1 <= value <= MAX_LIMIT:
        raise InvalidValue(
            f"limit must be an integer between 1 and {MAX_LIMIT}, got {shown(value)}"
        )
    return value


def check_salience_weight(value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or math.isnan(value)
        or not 0 <= value <= 1
    ):
        raise InvalidValue(f"salience_weight must be a number between 0 and 1, got {shown(value)}")
    return float(value)


def check_window_days(value: Any) -> int | None:
    if value is None:
        return None
    if not is_int(value) or not 1 <= value <= MAX_WINDOW_DAYS:
        raise InvalidValue(
            f"window_days must be an integer between 1 and {MAX_WINDOW_DAYS}, got {shown(value)} "
            "(leave it out for no cutoff)"
        )
    return value


def check_rerank(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidValue(f"rerank must be true or false, got {shown(value)}")
    return value


def check_flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidValue(f"{name} must be true or false, got {shown(value)}")
    return value


def check_channel(value: Any) -> str:
    if not isinstance(value, str) or value not in CHANNELS:
        raise InvalidValue(f"unknown channel {shown(value)} (expected {EXPECTED_CHANNELS})")
    return value


def _check_word(value: Any, pattern: re.Pattern, what: str) -> str:
    """``value`` if ``pattern`` (a kind's or a policy name's) matches it whole."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise InvalidValue(
            f"invalid {what} {shown(value)}: use 1 to 40 lowercase letters, digits, '_' or '-', "
            "starting with a letter"
        )
    return value


def check_kind(value: Any) -> str:
    return _check_word(value, KIND_RE, "kind")


def canonical_channels(channels: Sequence[str]) -> tuple[str, ...]:
    # Fusion does not depend on channel order, so one order makes equal policies compare equal.
    return tuple(channel for channel in CHANNELS if channel in channels)


def _check_distinct(
    value: Any, name: str, items: str, empty: str, check_item: Callable[[Any], str]
) -> list[str]:
    """``value``'s items, each checked by ``check_item``, when it is a non-empty list of distinct
    ones; ``name`` (plural), ``items`` and ``empty`` word the errors."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise InvalidValue(f"{name} must be a list of {items}, got {shown(value)}")
    if not value:
        raise InvalidValue(f"{name} is empty ({empty})")
    seen: list[str] = []
    for item in value:
        checked = check_item(item)
        if checked in seen:
            raise InvalidValue(f"{name[:-1]} {checked!r} is listed twice")
        seen.append(checked)
    return seen


def check_channels(value: Any) -> tuple[str, ...]:
    empty = f"expected some of {EXPECTED_CHANNELS}"
    return canonical_channels(
        _check_distinct(value, "channels", "channel names", empty, check_channel)
    )


def check_kinds(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    empty = "leave it out for every kind"
    return tuple(_check_distinct(value, "kinds", "episode kinds", empty, check_kind))


def check_name(value: Any) -> str:
    return _check_word(value, POLICY_NAME_RE, "policy name")
