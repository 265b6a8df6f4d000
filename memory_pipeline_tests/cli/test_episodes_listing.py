"""Seeing episodes (issue 37): ids in ``ingest``'s and ``search``'s human output, ``episodes``
(current ones, newest first, with source and revision count), ``history`` (every revision of a
source) and ``search --history``, through the real console script."""

from __future__ import annotations

import datetime as dt
import json
import re


def write(folder, name: str, text: str) -> None:
    (folder / name).write_text(text, encoding="utf-8")


def test_edited_notes_list_as_one_episode_each_with_their_history(cli, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    write(notes, "fence.md", "# Fence\n\nCost estimate: 180 EUR for the garden fence.\n")
    write(notes, "tulips.md", "# Tulips\n\nPlanted tulip bulbs by the shed.\n")
    first = cli("ingest", str(notes), "--memory", "me")
    assert first.code == 0, first.err
    ids = [int(i) for i in re.findall(r"#(\d+)", first.out)]
    assert "new episodes: #" in first.out and len(ids) == 2
    assert cli("index").code == 0
    between = dt.datetime.now(dt.UTC).isoformat()  # after the notes were written, before the edit

    write(notes, "fence.md", "# Fence\n\nCost estimate: 240 EUR for the garden fence.\n")
    second = cli("ingest", str(notes), "--memory", "me", "--json")
    assert second.code == 0, second.err
    document = second.json()
    assert (document["inserted"], document["revised"], document["duplicates"]) == (1, 1, 1)
    new = document["episodeIds"][0]
    assert cli("index").code == 0

    listed = cli("episodes", "--memory", "me", "--json").json()["episodes"]
    tulips = next(e["id"] for e in listed if e["sourceId"] == "notes/tulips.md")
    assert [(e["id"], e["sourceId"], e["revisions"]) for e in listed] == [
        (new, "notes/fence.md", 2),
        (tulips, "notes/tulips.md", 1),
    ]
    human = cli("episodes", "--memory", "me").out
    assert f"#{new}" in human and "2 revisions" in human
    assert cli("memories", "--json").json()[0]["episodes"] == 2

    old = next(i for i in ids if i != tulips)
    history = cli("history", str(old), "--json").json()
    assert history["sourceId"] == "notes/fence.md"
    assert [(r["id"], r["current"]) for r in history["revisions"]] == [(new, True), (old, False)]
    assert history["revisions"][1]["supersededBy"] == new
    told = cli("history", str(new)).out
    assert "2 revision(s) of 'notes/fence.md'" in told and "superseded" in told

    found = cli("search", "fence cost estimate", "--memory", "me", "--channels", "keyword")
    assert f"#{new} Fence" in found.out and f"#{old} " not in found.out
    with_history = cli(
        "search", "fence 180", "--memory", "me", "--channels", "keyword", "--history", "--json"
    ).json()
    superseded = [r for r in with_history["results"] if r.get("superseded")]
    assert [r["episodeId"] for r in superseded] == [old]
    shown = cli("search", "fence 180", "--memory", "me", "--history").out
    assert f"#{old} Fence [superseded " in shown

    # As of before the edit the old revision was current: found in its place, the new one not.
    then = cli("search", "fence cost", "--memory", "me", "--as-of", between, "--json")
    assert then.code == 0, then.err
    assert [r["episodeId"] for r in then.json()["results"] if "Fence" in r["title"]] == [old]
    assert then.json()["asOf"] == between
    bad = cli("search", "fence", "--memory", "me", "--as-of", "last week")
    assert bad.code == 2 and "--as-of: 'last week' is not a date" in bad.err, bad.err
    assert "Traceback" not in bad.err
    batch = tmp_path / "q.jsonl"
    batch.write_text(
        json.dumps({"memory": "me", "query": "fence cost", "as_of": between})
        + '\n{"memory": "me", "query": "fence", "as_of": "soon"}\n',
        encoding="utf-8",
    )
    answered = [json.loads(line) for line in cli("search", "--batch", str(batch)).out.splitlines()]
    assert answered[0]["asOf"] == between
    assert answered[1]["error"].startswith("as_of 'soon' is not a date")

    # A statement's validity, given where it is written, comes back in its JSON.
    saved = cli(
        "observe", "We live in York", "--memory", "me", "--valid-from", "2024-04-01", "--json"
    )
    assert saved.code == 0, saved.err
    listed = cli("observations", "list", "--memory", "me", "--json").json()
    assert listed[0]["validFrom"].startswith("2024-04-01") and listed[0]["validUntil"] is None
    told = cli("observations", "list", "--memory", "me").out
    assert "(valid 2024-04-01 to ...)" in told, told
    wrong = cli(
        "observe",
        "x",
        "--memory",
        "me",
        "--valid-from",
        "2024-04-01",
        "--valid-until",
        "2023-01-01",
    )
    assert wrong.code == 2 and "'valid_until' 2023-01-01" in wrong.err, wrong.err

    missing = cli("history", "999999")
    assert missing.code != 0 and "no episode 999999" in missing.err and not missing.out
    unknown = cli("episodes", "--memory", "nobody")
    assert unknown.code != 0 and "unknown memory 'nobody'" in unknown.err
