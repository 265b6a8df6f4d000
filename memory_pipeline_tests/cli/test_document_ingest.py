"""`memory-pipeline ingest` on a folder of good and bad documents: exit 3, `FILE: reason`, the rest stored."""

from __future__ import annotations

from memory_pipeline_tests.support.documents import document_folder


def test_bad_documents_are_rejected_plainly_and_cost_nothing_else(cli, tmp_path):
    expected = document_folder(tmp_path / "docs")
    result = cli("ingest", str(tmp_path / "docs"), "--memory", "m", "--json")
    assert result.code == 3, result.err
    assert "Traceback" not in result.err and "EOF marker" not in result.err
    for name, reason in expected.items():
        lines = [
            line
            for line in result.err.splitlines()
            if line.startswith(str(tmp_path / "docs" / name) + ": ")
        ]
        if reason:
            assert len(lines) == 1 and reason in lines[0], (name, result.err)
        else:
            assert not lines, (name, result.err)
    assert result.json()["inserted"] == 4
    no_memory = cli("ingest", str(tmp_path / "docs" / "page.html"))
    assert (
        no_memory.code == 3
        and f"{tmp_path / 'docs' / 'page.html'}: no memory: pass --memory" in no_memory.err
    )


def test_hostile_but_honest_files_are_stored_clean_and_oversized_fields_refused_at_their_line(
    cli, tmp_path
):
    import json

    folder = tmp_path / "odd"
    folder.mkdir()
    refs = "&#0; &#xD800; &#99999999; " * 300
    (folder / "refs.html").write_text(
        f"<html><head><title>Refs</title></head><body><p>{refs}</p><p>ferry times</p></body></html>",
        encoding="ascii",
    )
    (folder / "dtd.html").write_text(
        '<!DOCTYPE html [\n<!ENTITY x "boom">\n]>\n<html><head><title>Dtd</title></head>'
        "<body><p>Harbour notes</p></body></html>",
        encoding="utf-8",
    )
    (folder / "keys.md").write_text(
        "---\n" + "\n".join(f"k{i}: {i}" for i in range(20_000)) + "\n---\nbody\n", encoding="utf-8"
    )
    (folder / "bidi\u202eltxt.md").write_text("a note with a tricky name\n", encoding="utf-8")
    base = {"kind": "note", "title": "t", "occurred_at": "2026-05-01", "body": "x"}
    (folder / "big.jsonl").write_text(
        "\n".join(
            json.dumps({**base, **extra})
            for extra in (
                {"body": "kept line"},
                {"body": "meta", "metadata": {"blob": "m" * 100_000}},
                {"body": "src", "source": "s" * 10_000},
            )
        )
        + "\n",
        encoding="utf-8",
    )
    result = cli("ingest", str(folder), "--memory", "m", "--json")
    assert result.code == 3, result.err
    assert "Traceback" not in result.err
    report = result.json()
    assert {r["location"]: r["reason"] for r in report["rejected"]} == {
        f"{folder}/big.jsonl:2": "metadata too large: 100,011 bytes as JSON (at most 65,536); "
        "'metadata.blob' alone is 100,002",
        f"{folder}/big.jsonl:3": "source too long: 10,000 characters (at most 8,192)",
        f"{folder}/keys.md:5002": "front matter holds more than 10000 keys and values "
        "(it is for a few fields; put long data in the body)",
    }
    stored = {}
    for episode_id in report["episodeIds"]:
        page = cli("read", str(episode_id), "--json")
        assert page.code == 0, page.err
        stored[page.json()["title"]] = page.json()["text"]
    assert set(stored) == {"Refs", "Dtd", "bidiltxt", "t"}
    assert "ferry times" in stored["Refs"]
    assert "]>" not in stored["Dtd"] and "Harbour notes" in stored["Dtd"]
    assert stored["t"] == "kept line"
