"""Tests for search policies: the bundled file, every located error, and command-line overrides."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from memory_pipeline.domain.policies import (
    CHANNELS,
    MAX_LIMIT,
    Policy,
    PolicyError,
    default_policies_path,
    load_policies,
    parse_channels,
)

FIELDS = "kinds, window_days, salience_weight, channels, contested_beliefs, rerank, limit"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policies.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _error(tmp_path: Path, text: str) -> tuple[Path, PolicyError]:
    path = _write(tmp_path, text)
    with pytest.raises(PolicyError) as caught:
        load_policies(path)
    return path, caught.value


# --- the bundled file --------------------------------------------------------------------------


def test_bundled_policies_load():
    policies = load_policies(default_policies_path())
    assert set(policies) == {"default", "recent", "journal", "work", "exact"}
    assert policies["default"] == Policy(
        name="default",
        kinds=None,
        window_days=None,
        salience_weight=0.1,
        channels=("vector", "keyword", "graph", "date", "observation", "belief"),
        contested_beliefs=False,
        rerank=True,
        limit=8,
    )
    assert policies["recent"] == Policy(name="recent", window_days=30)
    assert policies["journal"] == Policy(name="journal", kinds=("journal", "note"))
    assert policies["work"] == Policy(
        name="work", kinds=("note", "doc", "email", "chat"), salience_weight=0.2
    )
    assert policies["exact"] == Policy(name="exact", channels=("keyword", "graph"), rerank=False)
    assert load_policies() == policies  # no path: the bundled file


def test_bundled_file_says_what_each_policy_is_for():
    path = default_policies_path()
    assert path.name == "policies.yaml" and path.parent.name == "memory_pipeline"
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        if line and not line[0].isspace() and not line.startswith("#"):
            assert lines[number - 1].startswith("# "), line


def test_policy_defaults_and_hashability():
    policy = Policy(name="x")
    assert (policy.kinds, policy.window_days, policy.salience_weight) == (None, None, 0.1)
    assert (policy.channels, policy.rerank, policy.limit) == (CHANNELS, True, 8)
    assert hash(policy) == hash(Policy(name="x"))


def test_policy_built_in_code_is_validated_and_normalised():
    policy = Policy(name="x", kinds=["note"], channels=["graph", "vector"])
    assert policy.kinds == ("note",)
    assert policy.channels == ("vector", "graph")  # CHANNELS order
    with pytest.raises(
        PolicyError, match=r"^policy 'x': limit must be an integer between 1 and 50, got 0$"
    ):
        Policy(name="x", limit=0)
    with pytest.raises(PolicyError, match="invalid policy name 'Bad'"):
        Policy(name="Bad")


def test_minimal_file_fills_in_defaults(tmp_path):
    path = _write(
        tmp_path,
        """
        default:
        other: {}
        third:
          limit: 50
          salience_weight: 0
          window_days: 1
          rerank: false
          kinds: [note]
          channels:
            - keyword
            - vector
    """,
    )
    policies = load_policies(path)
    assert policies["default"] == Policy(name="default")
    assert policies["other"] == Policy(name="other")
    assert policies["third"] == Policy(
        name="third",
        limit=50,
        salience_weight=0.0,
        window_days=1,
        rerank=False,
        kinds=("note",),
        channels=("vector", "keyword"),
    )


# --- located errors ----------------------------------------------------------------------------

# (file text, line, policy, reason)
INVALID = [
    ("default:\n  limt: 5\n", 2, "default", f"unknown field 'limt' (expected {FIELDS})"),
    (
        "default:\n  rerank: true\n  limit: 0\n",
        3,
        "default",
        "limit must be an integer between 1 and 50, got 0",
    ),
    ("default:\n  limit: 51\n", 2, "default", "limit must be an integer between 1 and 50, got 51"),
    (
        "default:\n  limit: '8'\n",
        2,
        "default",
        "limit must be an integer between 1 and 50, got '8'",
    ),
    (
        "default:\n  limit: 2.5\n",
        2,
        "default",
        "limit must be an integer between 1 and 50, got 2.5",
    ),
    (
        "default:\n  limit: true\n",
        2,
        "default",
        "limit must be an integer between 1 and 50, got true",
    ),
    (
        "default:\n  salience_weight: 1.5\n",
        2,
        "default",
        "salience_weight must be a number between 0 and 1, got 1.5",
    ),
    (
        "default:\n  salience_weight: -0.1\n",
        2,
        "default",
        "salience_weight must be a number between 0 and 1, got -0.1",
    ),
    (
        "default:\n  salience_weight: .nan\n",
        2,
        "default",
        "salience_weight must be a number between 0 and 1, got nan",
    ),
    (
        "default:\n  salience_weight: high\n",
        2,
        "default",
        "salience_weight must be a number between 0 and 1, got 'high'",
    ),
    (
        "default: {}\nrecent:\n  window_days: 0\n",
        3,
        "recent",
        "window_days must be an integer between 1 and 36500, got 0 (leave it out for no cutoff)",
    ),
    (
        "default: {}\nrecent:\n  window_days: -3\n",
        3,
        "recent",
        "window_days must be an integer between 1 and 36500, got -3 (leave it out for no cutoff)",
    ),
    (
        "default: {}\nrecent:\n  window_days: 7.5\n",
        3,
        "recent",
        "window_days must be an integer between 1 and 36500, got 7.5 (leave it out for no cutoff)",
    ),
    (
        "default:\n  channels: [vector, foo]\n",
        2,
        "default",
        "unknown channel 'foo' (expected vector, keyword, graph, date, observation, belief)",
    ),
    (
        "default:\n  channels:\n    - vector\n    - keyword\n    - grpah\n",
        5,
        "default",
        "unknown channel 'grpah' (expected vector, keyword, graph, date, observation, belief)",
    ),
    (
        "default:\n  channels:\n    - vector\n    - vector\n",
        4,
        "default",
        "channel 'vector' is listed twice",
    ),
    (
        "default:\n  channels: []\n",
        2,
        "default",
        "channels is empty (expected some of vector, keyword, graph, date, observation, belief)",
    ),
    ("default:\n  channels: vector\n", 2, "default", "channels must be a list, got 'vector'"),
    ("default:\n  channels:\n", 2, "default", "channels is null (leave it out for every channel)"),
    (
        "default:\n  kinds: [note, Journal]\n",
        2,
        "default",
        "invalid kind 'Journal': use 1 to 40 lowercase letters, digits, '_' or '-', starting with a letter",
    ),
    (
        "default:\n  kinds:\n    - note\n    - 'two words'\n",
        4,
        "default",
        "invalid kind 'two words': use 1 to 40 lowercase letters, digits, '_' or '-', starting with a letter",
    ),
    (
        "default:\n  kinds:\n    - note\n    - 7\n",
        4,
        "default",
        "invalid kind 7: use 1 to 40 lowercase letters, digits, '_' or '-', starting with a letter",
    ),
    ("default:\n  kinds: [note, note]\n", 2, "default", "kind 'note' is listed twice"),
    ("default:\n  kinds: []\n", 2, "default", "kinds is empty (leave it out for every kind)"),
    ("default:\n  kinds: note\n", 2, "default", "kinds must be a list, got 'note'"),
    ("default:\n  rerank: 'yes'\n", 2, "default", "rerank must be true or false, got 'yes'"),
    ("default:\n  rerank: 1\n", 2, "default", "rerank must be true or false, got 1"),
    (
        "default:\n  contested_beliefs: 'no'\n",
        2,
        "default",
        "contested_beliefs must be true or false, got 'no'",
    ),
    ("default:\n  limit: 5\n  limit: 6\n", 3, "default", "field 'limit' given twice"),
    ("default:\n  limit: 5\ndefault:\n  limit: 6\n", 3, "default", "defined twice"),
    ("default:\n  - limit\n", 2, "default", "expected a mapping of fields"),
    ("default: 8\n", 1, "default", "expected a mapping of fields"),
    (
        "default:\n  ? [a, b]\n  : 1\n",
        2,
        "default",
        f"unknown field ['a', 'b'] (expected {FIELDS})",
    ),
]


@pytest.mark.parametrize("text, line, policy, reason", INVALID)
def test_invalid_policy_gives_located_message(tmp_path, text, line, policy, reason):
    path, error = _error(tmp_path, text)
    assert str(error) == f"{path}:{line}: policy '{policy}': {reason}"
    assert (error.line, error.policy, error.reason) == (line, policy, reason)
    assert isinstance(error, ValueError)


def test_error_line_points_into_a_longer_file(tmp_path):
    path, error = _error(
        tmp_path,
        """
        # comments and other policies first
        default:
          limit: 8

        recent:
          window_days: 30
          channels: [vector, keyword]
          limit: 500
    """,
    )
    assert (
        str(error)
        == f"{path}:8: policy 'recent': limit must be an integer between 1 and 50, got 500"
    )


# (file text, expected message after "FILE:")
INVALID_FILES = [
    (
        "recent:\n  window_days: 30\n",
        "1: no 'default' policy (a search that names no policy uses it)",
    ),
    ("", "1: no policies (the file must define 'default')"),
    ("# only a comment\n", "1: no policies (the file must define 'default')"),
    ("- default\n", "1: expected a mapping of policy names to their fields"),
    ("default:\n  limit: [1\n", "3: invalid YAML: expected ',' or ']', but got '<stream end>'"),
    (
        "default: {}\nBad Name: {}\n",
        "2: invalid policy name 'Bad Name': use 1 to 40 lowercase "
        "letters, digits, '_' or '-', starting with a letter",
    ),
    ("default: {}\n---\nother: {}\n", "2: invalid YAML: but found another document"),
    (
        "default: !!python/name:os.system {}\n",
        "1: policy 'default': unsupported YAML tag 'tag:yaml.org,2002:python/name:os.system'",
    ),
    ("default:\n  limit: !!python/name:os.system 5\n", None),
    (
        "default:\n  kinds: !!set {note}\n",
        "2: policy 'default': kinds must be a list, got {'note'}",
    ),
]


@pytest.mark.parametrize("text, message", INVALID_FILES)
def test_invalid_file_gives_located_message(tmp_path, text, message):
    path, error = _error(tmp_path, text)
    if message is None:
        assert str(error).startswith(
            f"{path}:2: policy 'default': invalid value: could not "
            "determine a constructor for the tag"
        )
    else:
        assert str(error) == f"{path}:{message}"


def test_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(PolicyError, match=r"nope\.yaml: cannot read: No such file"):
        load_policies(path)


# --- overrides ---------------------------------------------------------------------------------


def test_overrides_replace_only_channels_and_limit():
    base = Policy(name="work", kinds=("note",), window_days=9, salience_weight=0.5, rerank=False)
    changed = base.with_overrides(channels="keyword, vector", limit=20)
    assert changed == Policy(
        name="work",
        kinds=("note",),
        window_days=9,
        salience_weight=0.5,
        rerank=False,
        channels=("vector", "keyword"),
        limit=20,
    )
    assert base.limit == 8 and base.channels == CHANNELS
    assert base.with_overrides() == base
    assert base.with_overrides(channels=("graph",)).channels == ("graph",)
    assert base.with_overrides(limit=MAX_LIMIT).limit == 50


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"limit": 0}, "--limit 0: must be between 1 and 50"),
        ({"limit": 51}, "--limit 51: must be between 1 and 50"),
        ({"limit": -3}, "--limit -3: must be between 1 and 50"),
        ({"limit": "8"}, "--limit 8: must be an integer between 1 and 50"),
        ({"limit": True}, "--limit True: must be an integer between 1 and 50"),
        (
            {"channels": "foo"},
            "--channels foo: unknown channel 'foo' (expected vector, keyword, graph, date, observation, belief)",
        ),
        (
            {"channels": "vector,foo"},
            "--channels vector,foo: unknown channel 'foo' (expected vector, keyword, graph, date, observation, belief)",
        ),
        (
            {"channels": ""},
            "--channels '': no channel given (expected some of vector, keyword, graph, date, observation, belief)",
        ),
        (
            {"channels": " , "},
            "--channels ' , ': no channel given (expected some of vector, keyword, graph, date, observation, belief)",
        ),
        (
            {"channels": ()},
            "--channels '': no channel given (expected some of vector, keyword, graph, date, observation, belief)",
        ),
        (
            {"channels": ("vector", "Graph")},
            "--channels vector,Graph: unknown channel 'Graph' (expected vector, keyword, graph, date, observation, belief)",
        ),
    ],
)
def test_bad_overrides_name_the_option(kwargs, message):
    with pytest.raises(PolicyError) as caught:
        Policy(name="default").with_overrides(**kwargs)
    assert str(caught.value) == message
    assert caught.value.line is None


@pytest.mark.parametrize(
    "text, channels",
    [
        ("vector", ("vector",)),
        (" keyword , vector ", ("vector", "keyword")),
        ("graph,vector,graph", ("vector", "graph")),
        ("vector,keyword,graph,date,observation,belief,", CHANNELS),
    ],
)
def test_parse_channels_strips_dedupes_and_orders(text, channels):
    assert parse_channels(text) == channels


@pytest.mark.parametrize("text", ["", ",", "  ", "vectors", "vector;keyword"])
def test_parse_channels_rejects_empty_and_unknown(text):
    with pytest.raises(PolicyError, match=r"^--channels "):
        parse_channels(text)


def test_contested_beliefs_is_a_policy_field(tmp_path):
    path = _write(
        tmp_path, "default:\nwith_doubts:\n  contested_beliefs: true\n  channels: [belief]\n"
    )
    policies = load_policies(path)
    assert policies["with_doubts"].contested_beliefs is True
    assert policies["with_doubts"].channels == ("belief",)
    assert policies["default"].contested_beliefs is False
