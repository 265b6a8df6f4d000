"""Tests for entities: name candidates in four languages, recurring names, mentions, import files."""

from __future__ import annotations

import json
import time
import unicodedata
from pathlib import Path

import pytest

from memory_pipeline.domain.entities import (
    Entity,
    EntityMatcher,
    InvalidEntity,
    episode_mentions,
    mentioned_entities,
    parse_entity_import,
)
from memory_pipeline.domain.proper_names import extract_proper_names, recurring_names

# --- extract_proper_names ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, names",
    [
        # "Mara" only starts the sentence: no evidence that it is a name.
        (
            "Mara met Tomás Rocha and Priya Nair at the Ledgerline review.",
            {"Tomás Rocha", "Priya Nair", "Ledgerline"},
        ),
        (
            "Ontem a Mara encontrou o Tomás da Silva em Lisboa.",
            {"Mara", "Tomás da Silva", "Lisboa"},
        ),
        ("Ana je u Zagrebu.", {"Zagrebu"}),
        ("Jučer je Ana Ilić bila u Splitu s Ivanom.", {"Ana Ilić", "Splitu", "Ivanom"}),
        ("Дмитрий сказал, что Мара бегает.", {"Мара"}),
        ("Вчера Дмитрий Петров и Мара были в Москве.", {"Дмитрий Петров", "Мара", "Москве"}),
        (
            "We met Ludwig van der Berg and Maria dos Santos.",
            {"Ludwig van der Berg", "Maria dos Santos"},
        ),
        ("We met Jean-Luc and Ana-Marija at NASA.", {"Jean-Luc", "Ana-Marija", "NASA"}),
    ],
)
def test_extracts_names_in_several_languages(text, names):
    assert extract_proper_names(text) == names


def test_sentence_initial_word_counts_only_with_mid_sentence_evidence():
    assert extract_proper_names("Mara called. Later I met Mara.") == {"Mara"}
    assert extract_proper_names("Mara called. Mara laughed!") == set()
    assert extract_proper_names("Where is Tomás? Priya knows.") == {"Tomás"}
    assert extract_proper_names("Good news! Priya knows. We asked Priya.") == {"Priya"}
    # A line break starts a sentence too (lists, chat logs).
    assert extract_proper_names("groceries\nBread and milk") == set()


def test_multi_word_run_at_sentence_start_is_kept():
    assert extract_proper_names("Tomás Rocha called.") == {"Tomás Rocha"}


def test_sentence_initial_common_word_is_dropped_from_a_run():
    # "Finally" also appears in lowercase, so it is an ordinary word, not part of the name.
    assert extract_proper_names("Finally Mara arrived. It finally rained.") == {"Mara"}
    # Without that evidence the heuristic cannot tell "Finally" from "Tomás": a known limit,
    # left to recurring_names (such a run rarely recurs) and to a person reviewing candidates.
    assert extract_proper_names("Finally Mara arrived.") == {"Finally Mara"}


def test_abbreviations_and_initials_do_not_end_a_sentence():
    assert extract_proper_names("I saw Dr. Rocha today.") == {"Rocha"}
    assert extract_proper_names("We asked Tomás R. Rocha.") == {"Tomás", "Rocha"}


def test_quotes_start_a_sentence():
    assert extract_proper_names('She said "Wonderful" to Mara.') == {"Mara"}


def test_stop_list_drops_common_capitalised_words():
    text = (
        "On Monday I said Hello to The Ledgerline team. In January We went home. "
        "Thanks, I'm fine. Yesterday Priya called."
    )
    assert extract_proper_names(text) == {"Ledgerline", "Priya"}
    assert extract_proper_names("Na segunda, em Janeiro, vi a Mara.") == {"Mara"}
    assert extract_proper_names("U ponedjeljak, Bok Ivana!") == {"Ivana"}
    assert extract_proper_names("В понедельник, Привет Мара.") == {"Мара"}


def test_possessives_are_stripped():
    assert extract_proper_names("I read Mara's notes and Tomás’s plan.") == {"Mara", "Tomás"}
    # A possessive ends a name: "Mara's Ledgerline" is two things.
    assert extract_proper_names("We saw Mara's Ledgerline demo.") == {"Mara", "Ledgerline"}
    assert extract_proper_names("We met O'Brien.") == {"O'Brien"}


@pytest.mark.parametrize(
    "text, names",
    [
        # Particles count only between two capitalised words, with nothing else between.
        (
            "Tomás da Silva met Ana van der Berg; da Silva came later, and Ana da casa Silva too.",
            {"Ana", "Ana van der Berg", "Silva", "Tomás da Silva"},
        ),
        (
            "Marta de's Silva and Marta de's Silva wrote; the da Vinci notes, Jean-Luc da Costa.",
            {"Jean-Luc da Costa", "Marta", "Silva", "Vinci"},
        ),
        ("Mara:\n- Ana da\nSilva da da da Costa van Dijk", {"Costa van Dijk", "Mara"}),
        # Capitals above U+FFFF start words; a circled letter is no letter of a word at all.
        (
            "We saw 𐐀dam and 𐐨dam with Ⓐna and Ⓐna Rocha at the 𝐀lpha depot; 𝐀lpha again.",
            {"Rocha", "𐐀dam", "𝐀lpha"},
        ),
        # The word before a capitalised one decides its position, whatever it is.
        (
            "finally Mara came. Finally Mara Rocha arrived, and Jean-\u2010Luc.",
            {"Jean", "Luc", "Mara", "Mara Rocha"},
        ),
        ("O'Brien met x'Ana; rock'n Roll with Mara's van Dijk.", {"Dijk", "Mara", "Roll"}),
    ],
)
def test_only_capitalised_words_and_the_particles_between_them_are_visited(text, names):
    # Expected sets computed by the earlier extraction, which visited every word of the text.
    assert extract_proper_names(text) == names


def test_punctuation_and_lowercase_words_split_runs():
    assert extract_proper_names("We met Mara, Tomás and Priya.") == {"Mara", "Tomás", "Priya"}
    assert extract_proper_names("We met Mara e João.") == {"Mara", "João"}


def test_long_title_case_runs_are_headings_not_names():
    assert extract_proper_names("see Quarterly Planning Review Meeting today") == set()
    assert extract_proper_names("see Quarterly Planning Review today") == {
        "Quarterly Planning Review"
    }


def test_speaker_labels_are_names():
    text = "Mara: Sure, see you then.\nTomás Rocha: Great!\n- Priya: ok"
    assert extract_proper_names(text) == {"Mara", "Tomás Rocha", "Priya"}


def test_codes_shouting_and_single_letters_are_not_names():
    assert extract_proper_names("we shipped Q3 and V2 and A and HELLOWORLD and Mara2") == set()


def test_output_is_nfc_and_deterministic():
    decomposed = unicodedata.normalize("NFD", "We met Tomás Ilić.")
    assert extract_proper_names(decomposed) == {"Tomás Ilić"}
    text = "We met Tomás Rocha, Priya Nair and Дмитрий in Lisboa."
    assert extract_proper_names(text) == extract_proper_names(text)


def test_empty_and_lowercase_text():
    assert extract_proper_names("") == set()
    assert extract_proper_names("nothing capitalised here, 42 times.") == set()


# --- recurring_names ---------------------------------------------------------------------------


def test_recurring_names_keeps_names_seen_in_enough_episodes():
    per_episode = {
        1: {"Mara", "Ledgerline"},
        2: {"Mara", "Priya Nair"},
        3: {"Mara", "Ledgerline"},
        4: set(),
    }
    assert recurring_names(per_episode) == {"Ledgerline": {1, 3}, "Mara": {1, 2, 3}}
    assert recurring_names(per_episode, min_episodes=3) == {"Mara": {1, 2, 3}}
    assert recurring_names(per_episode, min_episodes=1)["Priya Nair"] == {2}
    assert list(recurring_names(per_episode, min_episodes=1)) == [
        "Ledgerline",
        "Mara",
        "Priya Nair",
    ]
    assert recurring_names({}) == {}


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_recurring_names_rejects_bad_threshold(bad):
    with pytest.raises(ValueError, match="min_episodes"):
        recurring_names({1: {"Mara"}}, min_episodes=bad)


# --- Entity ------------------------------------------------------------------------------------


def test_entity_normalises_names_and_aliases():
    entity = Entity("  Tomás   Rocha ", ("Tomás", "Tomás Rocha", "Tomás", " Tom "))
    assert entity.name == "Tomás Rocha"
    assert entity.aliases == ("Tomás", "Tom")
    assert entity.names == ("Tomás Rocha", "Tomás", "Tom")
    assert Entity(unicodedata.normalize("NFD", "Tomás")).name == "Tomás"
    assert Entity("Mara", ["M"]).aliases == ("M",)


@pytest.mark.parametrize(
    "name, aliases, reason",
    [
        ("", (), "empty 'name'"),
        ("   ", (), "empty 'name'"),
        ("Ma\x00ra", (), "NUL character in 'name'"),
        (7, (), "'name' must be a string, got number"),
        ("Mara", ("",), "empty 'aliases[0]'"),
        ("Mara", ("M", 3), "'aliases[1]' must be a string, got number"),
        ("Mara", "M", "'aliases' must be a list of strings, got string"),
        ("x" * 201, (), "'name' too long: 201 characters (at most 200)"),
    ],
)
def test_entity_rejects_bad_names(name, aliases, reason):
    with pytest.raises(InvalidEntity) as caught:
        Entity(name, aliases)
    assert str(caught.value).startswith(reason)


# --- mentioned_entities and episode_mentions ---------------------------------------------------

PEOPLE = [
    ("ana", Entity("Ana")),
    ("tomas", Entity("Tomás Rocha", ("Tomás", "Tom"))),
    ("priya", Entity("Priya Nair", ("PN",))),
    ("cpp", Entity("C++ (v2)")),
    ("ab", Entity("a.b")),
    ("dima", Entity("Дмитрий", ("Дима",))),
]


@pytest.mark.parametrize(
    "query, expected",
    [
        ("what did Ana say?", ["ana"]),
        ("ANA and ana and Ana", ["ana"]),
        ("bananas, Banana, Anastasia, Ana2, _ana", []),
        ("Ana's notes", ["ana"]),
        ("notes from Ana-Marija", ["ana"]),
        ("when did tom meet ana", ["tomas", "ana"]),
        ("TOMÁS ROCHA and priya  nair", ["tomas", "priya"]),
        ("Priya\nNair", ["priya"]),
        ("Tomato and Tommy", []),
        ("pn? PN!", ["priya"]),
        ("is C++ (v2) out?", ["cpp"]),
        ("is c++ (v2)x out, or C++ v2?", []),
        ("see a.b and axb", ["ab"]),
        ("see axb", []),
        ("дима и ДМИТРИЙ", ["dima"]),
        ("Дмитриевич", []),
        ("", []),
        ("((( [ \\ ^$ .* ?", []),
    ],
)
def test_mentioned_entities(query, expected):
    assert mentioned_entities(query, PEOPLE) == expected


def test_mentions_come_in_order_of_first_occurrence_without_duplicates():
    query = "Priya Nair asked Tomás about Ana, then Tomás Rocha answered Priya Nair"
    assert mentioned_entities(query, PEOPLE) == ["priya", "tomas", "ana"]


def test_longest_name_wins_at_the_same_position():
    entities = [(1, Entity("Tomás")), (2, Entity("Tomás Rocha"))]
    assert mentioned_entities("ask Tomás Rocha", entities) == [2]
    assert mentioned_entities("ask Tomás Rochas", entities) == [1]
    assert mentioned_entities("ask Tomás", entities) == [1]


def test_shared_names_mention_every_entity_that_has_them():
    entities = [("a1", Entity("Ana Ilić", ("Ana",))), ("a2", Entity("Ana Rocha", ("Ana",)))]
    assert mentioned_entities("Ana said", entities) == ["a1", "a2"]
    assert mentioned_entities("Ana Rocha said", entities) == ["a2"]


def test_full_case_folding():
    assert mentioned_entities("STRASSE", [(1, Entity("Straße"))]) == [1]


def test_no_entities_mention_nothing():
    assert mentioned_entities("anything", []) == []
    assert EntityMatcher([]).mentions("anything") is False


def test_combining_marks_continue_a_word():
    # Devanagari vowel signs are marks, not letters: "राम" is not a whole word of "रामा".
    assert mentioned_entities("रामा", [(1, Entity("राम"))]) == []
    assert mentioned_entities("राम आया", [(1, Entity("राम"))]) == [1]


def test_matching_a_few_hundred_entities_is_fast():
    entities = [(i, Entity(f"Person{i} Surname{i}", (f"Nick{i}",))) for i in range(400)]
    matcher = EntityMatcher(entities)
    query = "what did nick17 tell person399 surname399 about the plan? " * 20
    start = time.perf_counter()
    for _ in range(200):
        found = matcher.find(query)
    assert found == [17, 399]
    assert mentioned_entities(query, entities) == [17, 399]
    assert time.perf_counter() - start < 2.0


def test_episode_mentions_uses_the_same_rule():
    tomas = Entity("Tomás Rocha", ("Tomás",))
    assert episode_mentions("Lunch with tomás today.", tomas)
    assert episode_mentions("Tomás\n  Rocha signed.", tomas)
    assert not episode_mentions("Tomásio and Rocha", tomas)
    assert not episode_mentions("", tomas)


# --- parse_entity_import -----------------------------------------------------------------------


def _import_file(tmp_path: Path, lines: list[str | bytes]) -> Path:
    path = tmp_path / "entities.jsonl"
    path.write_bytes(
        b"\n".join(line if isinstance(line, bytes) else line.encode() for line in lines)
    )
    return path


def test_import_reads_entities_with_optional_aliases(tmp_path):
    path = _import_file(
        tmp_path,
        [
            json.dumps({"memory": "alice", "name": "Tomás Rocha", "aliases": ["Tomás", "Tom"]}),
            "",
            json.dumps({"name": "Ledgerline"}) + "\r",
            json.dumps({"memory": None, "name": "Priya", "aliases": None}),
            "   ",
        ],
    )
    entities, rejections = parse_entity_import(path, memory="work")
    assert rejections == []
    assert entities == [
        ("alice", Entity("Tomás Rocha", ("Tomás", "Tom"))),
        ("work", Entity("Ledgerline")),
        ("work", Entity("Priya")),
    ]


def test_import_accepts_a_utf8_bom(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"memory": "m", "name": "Ana"}).encode())
    assert parse_entity_import(path) == ([("m", Entity("Ana"))], [])


BAD_LINES = [
    ('{"memory": "m", "name": "Ana"', "malformed JSON: Expecting ',' delimiter at column 30"),
    ('["Ana"]', "not a JSON object (got array)"),
    ('{"memory": "m"}', "missing field 'name'"),
    ('{"name": "Ana"}', "missing field 'memory' (or pass --memory)"),
    ('{"memory": "bad memory!", "name": "Ana"}', "invalid memory name 'bad memory!'"),
    ('{"memory": "m", "name": ""}', "empty 'name'"),
    ('{"memory": "m", "name": "  "}', "empty 'name'"),
    ('{"memory": "m", "name": 5}', "'name' must be a string, got number"),
    ('{"memory": "m", "name": "A\\u0000na"}', "NUL character in 'name'"),
    ('{"memory": "m", "name": "Ana\\ud800"}', "lone surrogate character in 'name'"),
    (b'{"memory": "m", "name": "A\x00na"}', "NUL character at column 27"),
    (
        '{"memory": "m", "name": "Ana", "aliases": "Annie"}',
        "'aliases' must be a list of strings, got string",
    ),
    (
        '{"memory": "m", "name": "Ana", "aliases": ["Annie", 7]}',
        "'aliases[1]' must be a string, got number",
    ),
    ('{"memory": "m", "name": "Ana", "aliases": [" "]}', "empty 'aliases[0]'"),
    ('{"memory": "m", "name": "Ana", "aliases": ["A\\u0000"]}', "NUL character in 'aliases[0]'"),
    (
        '{"memory": "m", "name": "Ana", "alias": ["Annie"]}',
        "unknown field 'alias' (expected memory, name, aliases)",
    ),
    ('{"memory": "m", "name": "Ana", "name": "Bo"}', "malformed JSON: duplicate key 'name'"),
    (b'{"memory": "m", "name": "\xff"}', "invalid UTF-8 at byte 26 of the line (0xff)"),
]


@pytest.mark.parametrize("line, reason", BAD_LINES)
def test_import_rejects_each_bad_line_with_its_location(tmp_path, line, reason):
    good = json.dumps({"memory": "m", "name": "Mara"})
    path = _import_file(tmp_path, [good, line, good])
    entities, rejections = parse_entity_import(path)
    assert entities == [("m", Entity("Mara")), ("m", Entity("Mara"))]
    assert len(rejections) == 1
    assert rejections[0].startswith(f"{path}:2: {reason}")


def test_import_of_a_missing_or_utf16_file(tmp_path):
    missing = tmp_path / "nope.jsonl"
    assert parse_entity_import(missing) == (
        [],
        [f"{missing}:0: cannot read: No such file or directory"],
    )
    utf16 = tmp_path / "u16.jsonl"
    utf16.write_bytes('{"memory": "m", "name": "Ana"}'.encode("utf-16"))
    assert parse_entity_import(utf16) == (
        [],
        [f"{utf16}:1: the file is UTF-16 text; save it as UTF-8"],
    )


def test_import_refuses_an_invalid_memory_argument(tmp_path):
    path = _import_file(tmp_path, ['{"name": "Ana"}'])
    with pytest.raises(ValueError, match="invalid memory name"):
        parse_entity_import(path, memory="no spaces allowed")


def test_the_matcher_finds_what_one_guard_with_every_mark_finds():
    # EntityMatcher splits its guard (the astral marks are checked apart, for speed): on texts
    # full of marks, astral letters and near-misses it must find exactly what the single guard
    # `(?<![\w{every mark}])` before a name found.
    import random
    import re

    from memory_pipeline.domain.entities import _match_form, _trie_pattern
    from memory_pipeline.domain.unicode_classes import marks

    names = ["Ana", "Ana Maria", "Tomás da Silva", "राम", "Zoë", "𐐀da", "Bo", "O'Brien", "a b"]
    keys = {" ".join(_match_form(name).split()): i for i, name in enumerate(names)}
    reference = re.compile(rf"(?<![\w{marks()}])(?:{_trie_pattern(keys)})(?![\w{marks()}])")
    matcher = EntityMatcher([(i, Entity(name)) for i, name in enumerate(names)])
    pieces = [
        *names,
        "ana",
        "maria",
        "silva",
        " ",
        "  ",
        "\n",
        ".",
        "-",
        "x",
        "7",
        "_",
        "\u0301",
        "\u093e",
        "\U0001d167",
        "\U00011001",
        "\U000101fd",
        "\U0001d400",
        "\U0001f600",
        "\U00010400",
        "é",
    ]
    rng = random.Random(12)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(4000)]
    texts += [
        "\U0001d167Ana",
        "x\U0001d167Ana Maria",
        "\U0001f600Ana",
        "\U00011001राम आया",
        "\U000101fda b",
    ]
    found_any = 0
    for text in texts:
        expected: dict[int, None] = {}
        for match in reference.finditer(_match_form(text)):
            expected.setdefault(keys[" ".join(match.group().split())], None)
        assert matcher.find(text) == list(expected), text
        assert matcher.mentions(text) == bool(expected), text
        found_any += bool(expected)
    assert 500 < found_any < len(texts) - 500  # both outcomes are well represented
    assert matcher.find("\U0001d167Ana") == [] and matcher.find("\U0001f600Ana") == [0]
