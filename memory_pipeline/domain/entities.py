"""Entities of a memory (people, projects, places): the entity, its import files, and mentions.

Matching rule, shared by search (which entities does a query mention?) and indexing (which
episodes mention an entity?): a name or alias occurs when its text appears case-insensitively
(full Unicode case folding, NFC-normalised) with no letter, digit, underscore or combining mark
directly before or after it. Whitespace inside a multi-word name matches any run of whitespace.
So "Ana" is found in "ana's notes" and "Ana-Marija" but not in "Banana" or "Anastasia", and
names full of regex metacharacters ("C++ (v2)", "a.b") match only themselves.

Name candidates found in episodes (``extract_proper_names``) live in ``domain.proper_names``.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from memory_pipeline.domain.episodes import InvalidEpisode, validate_memory_name
from memory_pipeline.domain.jsonl import (
    LineRejected,
    iter_lines,
    json_type,
    parse_object_line,
    reject_unknown_fields,
)
from memory_pipeline.domain.unicode_classes import is_astral_mark, marks

K = TypeVar("K", bound=Hashable)

# Longer than any real name or alias; a bound keeps one bad line from building a huge pattern.
MAX_NAME_CHARS = 200
IMPORT_FIELDS = ("memory", "name", "aliases")

# PostgreSQL text cannot hold NUL, and UTF-8 cannot encode a lone surrogate.
_UNSTORABLE_RE = re.compile("[\x00\ud800-\udfff]")
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


class InvalidEntity(ValueError):
    """An entity name or alias breaks a rule; ``str(error)`` is the reason."""


def _normalise_name(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidEntity(f"{what} must be a string, got {json_type(value)}")
    bad = _UNSTORABLE_RE.search(value)
    if bad is not None:
        if bad.group() == "\x00":
            raise InvalidEntity(f"NUL character in {what} (PostgreSQL text cannot hold it)")
        raise InvalidEntity(f"lone surrogate character in {what} (not valid Unicode text)")
    # One spelling per name: composed accents and single spaces, whatever the source typed.
    text = " ".join(unicodedata.normalize("NFC", value).split())
    if not text:
        raise InvalidEntity(f"empty {what}")
    if len(text) > MAX_NAME_CHARS:
        raise InvalidEntity(f"{what} too long: {len(text)} characters (at most {MAX_NAME_CHARS})")
    return text


@dataclass(frozen=True)
class Entity:
    """A named thing of one memory. Names are stored NFC with whitespace collapsed to one space."""

    name: str
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        name = _normalise_name(self.name, "'name'")
        if isinstance(self.aliases, str) or not isinstance(self.aliases, (list, tuple)):
            raise InvalidEntity(
                f"'aliases' must be a list of strings, got {json_type(self.aliases)}"
            )
        aliases: list[str] = []
        for index, alias in enumerate(self.aliases):
            alias = _normalise_name(alias, f"'aliases[{index}]'")
            if alias != name and alias not in aliases:
                aliases.append(alias)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "aliases", tuple(aliases))

    @property
    def names(self) -> tuple[str, ...]:
        """The name, then each alias."""
        return (self.name, *self.aliases)


# -- matching ------------------------------------------------------------------------------------


def _match_form(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


class EntityMatcher(Generic[K]):
    """One compiled pattern for many entities: build it once, run it over many texts."""

    def __init__(self, entities: Iterable[tuple[K, Entity]]):
        # Several entities may share a name or an alias (two people called Ana); a mention of
        # it mentions all of them.
        self._keys: dict[str, list[K]] = {}
        for key, entity in entities:
            for name in entity.names:
                keys = self._keys.setdefault(" ".join(_match_form(name).split()), [])
                if key not in keys:
                    keys.append(key)
        # The guards: no word character (``\w`` or a mark) just before or after a name. sre tests
        # a class's ranges above U+FFFF one by one, and the marks have hundreds: in the guard
        # before the name, every position of every text paid for all of them (most of the
        # matcher's time: `git show 93c90e6:benchmarks/README.md`, "EntityMatcher"). So that guard holds the BMP
        # marks only, and ``_matches`` skips a match after an astral mark: the same matches as
        # the full guard (test_entities compares them).
        self._pattern = (
            re.compile(
                rf"(?<![\w{marks(bmp=True)}])(?:{_trie_pattern(self._keys)})(?![\w{marks()}])"
            )
            if self._keys
            else None
        )

    def find(self, text: str) -> list[K]:
        """Keys of the entities mentioned in ``text``, in order of first mention, each once."""
        if self._pattern is None:
            return []
        found: dict[K, None] = {}
        for match in self._matches(_match_form(text)):
            for key in self._keys[" ".join(match.group().split())]:
                found.setdefault(key, None)
        return list(found)

    def mentions(self, text: str) -> bool:
        """Whether ``text`` mentions any of the entities."""
        return (
            self._pattern is not None and next(self._matches(_match_form(text)), None) is not None
        )

    def _matches(self, text: str) -> Iterator[re.Match[str]]:
        """``finditer`` of the pattern with the whole guard before a name (``__init__``)."""
        position = 0
        while (match := self._pattern.search(text, position)) is not None:  # type: ignore[union-attr]
            start = match.start()
            if start and is_astral_mark(text[start - 1]):
                position = start + 1  # no name starts here; one may start inside this match
                continue
            yield match
            position = match.end()  # names are never empty


def _trie_pattern(names: Iterable[str]) -> str:
    r"""One regex for many names, nested as a trie of their characters ("ana", "ana maria",
    "bob" -> ``(?:ana(?:\s+maria)?|bob)``), longer continuations tried first.

    The regex engine tries a flat alternation's branches one by one at every position, so its
    cost grew with the number of names; the trie tries one branch per distinct next character.
    At a position it finds the longest name there that the whole-word guard after it accepts,
    falling back to shorter ones, as the longest-first flat alternation did (the branches of a
    node start with different characters, so at most one of them matches).
    """
    trie: dict = {}
    for name in names:
        node = trie
        for char in name:
            node = node.setdefault(char, {})
        node[""] = {}  # a name ends here

    def pattern(node: dict) -> str:
        branches = [
            (r"\s+" if char == " " else re.escape(char)) + pattern(child)
            for char, child in sorted(node.items())
            if char
        ]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:  # a name may end here: the longer continuation first, then nothing
            return f"(?:{body})?"
        return body

    return pattern(trie)


def entity_matcher(entities: Iterable[Any]) -> EntityMatcher[int]:
    """The matcher of a memory's stored entities (anything with ``id``, ``name`` and ``aliases``,
    as ``search_store.memory_entities`` returns them), keyed by id."""
    return EntityMatcher([(e.id, Entity(e.name, tuple(e.aliases))) for e in entities])


def mentioned_entities(query: str, entities: Iterable[tuple[K, Entity]]) -> list[K]:
    """Keys of the entities whose name or an alias occurs in ``query`` (see the matching rule).

    In order of first occurrence in the query, without duplicates; where two entities share
    the name that occurs, both are returned, in the order they were given.
    """
    return EntityMatcher(entities).find(query)


def episode_mentions(text: str, entity: Entity) -> bool:
    """Whether ``text`` mentions ``entity`` by its name or an alias (the same rule as search)."""
    return EntityMatcher([(0, entity)]).mentions(text)


# -- import files --------------------------------------------------------------------------------


def parse_entity_import(
    path: str | os.PathLike[str], memory: str | None = None
) -> tuple[list[tuple[str, Entity]], list[str]]:
    """Read an entity import file: JSONL, one ``{"memory", "name", "aliases"}`` object a line.

    ``memory`` is the default for lines without one (``--memory``); ``aliases`` is optional.
    Returns the (memory, entity) pairs of the good lines, in file order, and one
    ``FILE:LINE: reason`` string for each bad line (line 0 when the file cannot be read).
    Blank lines are skipped. An invalid ``memory`` argument raises ValueError.
    """
    if memory is not None:
        memory = validate_memory_name(memory)
    display = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        return [], [f"{display}:0: cannot read: {error.strerror or error}"]
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    elif data.startswith(_UTF16_BOMS):
        return [], [f"{display}:1: the file is UTF-16 text; save it as UTF-8"]

    entities: list[tuple[str, Entity]] = []
    rejections: list[str] = []
    for number, raw in iter_lines(data):
        try:
            entities.append(_import_line(raw, memory))
        except LineRejected as rejected:
            rejections.append(f"{display}:{number}: {rejected.reason}")
    return entities, rejections


def _import_line(raw: bytes, default_memory: str | None) -> tuple[str, Entity]:
    value = parse_object_line(raw)
    reject_unknown_fields(value, IMPORT_FIELDS, f" (expected {', '.join(IMPORT_FIELDS)})")
    # null means "not given", as in episode files.
    memory = value.get("memory")
    if memory is None:
        memory = default_memory
    if memory is None:
        raise LineRejected("missing field 'memory' (or pass --memory)")
    try:
        memory = validate_memory_name(memory)
    except InvalidEpisode as error:
        raise LineRejected(str(error)) from None
    if value.get("name") is None:
        raise LineRejected("missing field 'name'")
    aliases = value.get("aliases")
    if aliases is None:
        aliases = []
    elif not isinstance(aliases, list):
        raise LineRejected(f"'aliases' must be a list of strings, got {json_type(aliases)}")
    try:
        return memory, Entity(name=value["name"], aliases=tuple(aliases))
    except InvalidEntity as error:
        raise LineRejected(str(error)) from None
