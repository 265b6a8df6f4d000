"""Seeing episodes (issue 37): ids in ``ingest``'s and ``search``'s human output, ``episodes``
(current ones, newest first, with source and revision count), ``history`` (every revision of a
source) and ``search --history``, through the real console script."""

from __future__ import annotations

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

    missing = cli("history", "999999")
    assert missing.code != 0 and "no episode 999999" in missing.err and not missing.out
    unknown = cli("episodes", "--memory", "nobody")
    assert unknown.code != 0 and "unknown memory 'nobody'" in unknown.err
