"""Search as of a date (DESIGN.md "current / as of"): only what had occurred by then, each
source's revision current then, the statements valid then; bad dates are located errors."""

from __future__ import annotations

import datetime as dt

import pytest

from memory_pipeline.errors import InputError
from memory_pipeline.search.service import parse_as_of


def note(title: str, occurred: str, body: str) -> dict:
    return {"memory": "me", "kind": "note", "title": title, "occurred_at": occurred, "body": body}


def found(response) -> list[str]:
    return [r.title for r in response.results]


DENTIST_OLD = note("Dentist", "2023-02-01T09:00:00Z", "My dentist is Dr Okafor in Leeds.")
DENTIST_NEW = note("New dentist", "2025-06-01T09:00:00Z", "My dentist is now Dr Varga in York.")


def test_only_what_had_occurred_by_the_date_is_found_in_every_channel(mem):
    mem.add([DENTIST_OLD, DENTIST_NEW])
    mem.index()
    for query, channels in [
        ("my dentist", None),
        ("my dentist", ("vector",)),
        ("dentist", ("keyword",)),
        ("what happened in February 2023 and June 2025", ("date",)),
    ]:
        now = mem.search("me", query, channels=channels)
        assert "New dentist" in found(now), (query, channels)
        then = mem.search("me", query, channels=channels, as_of="2024-12-31")
        assert "New dentist" not in found(then), (query, channels)
        assert "Dentist" in found(then), (query, channels)
        assert then.to_json()["asOf"] == "2024-12-31"
    # A date is the whole day: the note of that very morning counts.
    assert "New dentist" in found(mem.search("me", "my dentist", as_of="2025-06-01"))
    assert "New dentist" not in found(mem.search("me", "my dentist", as_of="2025-06-01T08:59:59Z"))


def test_as_of_before_a_revision_answers_with_the_revision_current_then(mem):
    fence = {**note("Fence", "2026-03-01T09:00:00Z", "Fence estimate: 180 EUR."), "id": "fence"}
    old = mem.add([fence]).inserted_ids[0]
    new = mem.add([{**fence, "body": "Fence estimate: 240 EUR."}]).inserted_ids[0]
    mem.index()
    yesterday = (dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).date().isoformat()
    then = mem.search("me", "fence estimate", as_of=yesterday)
    ids = [r.episode_id for r in then.results]
    assert old in ids and new not in ids
    old_result = then.results[ids.index(old)]
    assert "180" in old_result.text and old_result.to_json()["superseded"] is True
    today = dt.datetime.now(dt.UTC).date().isoformat()
    now = [r.episode_id for r in mem.search("me", "fence estimate", as_of=today).results]
    assert new in now and old not in now
    # History as of a date adds nothing current then twice.
    both = mem.search("me", "fence estimate", as_of=yesterday, history=True)
    assert [r.episode_id for r in both.results].count(old) == 1


def test_statements_valid_then_and_revised_beliefs_as_they_were(mem):
    mem.add([DENTIST_OLD])
    mem.index()
    leeds = mem.observe(
        "me", "I live in Leeds", valid_from="2020-01-01", valid_until="2024-03-31", decision="add"
    )
    york = mem.observe("me", "I live in York now", valid_from="2024-04-01", decision="add")
    belief = mem.observe("me", "Tomás prefers tea", kind="belief", decision="add")
    between = dt.datetime.now(dt.UTC)
    revised = mem.observe(
        "me", "Tomás prefers coffee", kind="belief", decision="revise", revise_id=belief.saved_id
    )
    mem.index()

    def statement_ids(query: str, as_of=None) -> list[int]:
        response = mem.search("me", query, channels=("observation", "belief"), as_of=as_of)
        return [
            int(r.chunk_id.partition(":")[2])
            for r in response.results
            if r.kind in ("observation", "belief")
        ]

    assert leeds.saved_id in statement_ids("where do I live", "2022-05-01")
    assert york.saved_id not in statement_ids("where do I live", "2022-05-01")
    assert statement_ids("where do I live", "2025-01-01") == [york.saved_id]
    # Without as_of every active statement is a candidate, as every current episode is.
    assert {leeds.saved_id, york.saved_id} <= set(statement_ids("where do I live"))
    yesterday = (dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).isoformat()
    # The belief was recorded today: as of yesterday neither version was held yet...
    assert not {belief.saved_id, revised.saved_id} & set(
        statement_ids("what does Tomás prefer", yesterday)
    )
    # ...as of a moment before the revision, the first version...
    before = set(statement_ids("what does Tomás prefer", between))
    assert belief.saved_id in before and revised.saved_id not in before
    # ...and as of now only the revision; the first version is superseded, kept as history.
    now = set(statement_ids("what does Tomás prefer", dt.datetime.now(dt.UTC)))
    assert revised.saved_id in now and belief.saved_id not in now
    # With history the superseded version is listed after the results, marked as such.
    told = mem.search("me", "Tomás prefers tea", history=True).results
    superseded = [r for r in told if r.superseded_at is not None]
    assert [r.chunk_id for r in superseded] == [f"belief:{belief.saved_id}"]
    assert superseded[0].superseded_by == revised.saved_id and told[-1] is superseded[0]
    assert superseded[0].to_json()["superseded"] is True
    assert not [r for r in mem.search("me", "Tomás prefers tea").results if r.superseded_at]
    old = next(o for o in mem.observations("me", with_retired=True) if o.id == belief.saved_id)
    assert old.status == "retired" and old.superseded_at is not None
    document = old.to_json()
    assert document["supersededAt"] and document["recordedAt"]
    assert leeds_json(mem, leeds.saved_id)["validUntil"].startswith("2024-03-31")


def leeds_json(mem, statement_id: int) -> dict:
    return next(o for o in mem.observations("me") if o.id == statement_id).to_json()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yesterday", "as_of 'yesterday' is not a date"),
        ("2024-13-01", "as_of '2024-13-01' is not a date"),
        ("", "as_of '' is not a date"),
        (20240101, "as_of must be a date, got int"),
        ("9999-12-31", "out of range"),
    ],
)
def test_a_bad_date_is_a_located_input_error(mem, value, message):
    mem.add([DENTIST_OLD])
    with pytest.raises(InputError, match=message):
        mem.search("me", "dentist", as_of=value)


def test_the_moment_a_date_or_a_date_time_stands_for():
    assert parse_as_of("2024-05-01") == (dt.datetime(2024, 5, 2, tzinfo=dt.UTC), "2024-05-01")
    until, shown = parse_as_of("2024-05-01T10:00:00+02:00")
    assert until == dt.datetime(2024, 5, 1, 8, 0, 0, 1, tzinfo=dt.UTC)
    assert shown == "2024-05-01T10:00:00+02:00"
    assert parse_as_of(dt.date(2024, 5, 1))[0] == dt.datetime(2024, 5, 2, tzinfo=dt.UTC)


@pytest.mark.parametrize("until", [None, dt.datetime(2024, 1, 1, tzinfo=dt.UTC)])
def test_the_in_force_test_is_inlined_and_folds_away_without_as_of(db, until):
    # One definition (migration 0034) that the planner inlines: no per-row function call, and
    # without as_of nothing of it is left in the plan, so a search without as_of pays nothing.
    from memory_pipeline.storage.paths import query

    params = {
        "memory": "me",
        "starts": [dt.datetime(2024, 1, 1, tzinfo=dt.UTC)],
        "ends": [dt.datetime(2024, 2, 1, tzinfo=dt.UTC)],
        "kinds": None,
        "since": None,
        "until": until,
        "limit": 10,
    }
    with db.connection() as conn:
        plan = [r[0] for r in conn.execute("EXPLAIN (VERBOSE) " + query("date_chunks"), params)]
    tests = "\n".join(line for line in plan if "Filter:" in line or "Cond:" in line)
    assert "episode_in_force" not in "\n".join(plan)
    assert ("current_from" in tests) == (until is not None), plan
