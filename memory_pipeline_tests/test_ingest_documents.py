"""Documents end to end: real HTML, PDF and DOCX files ingested from a folder, indexed and searched."""

from __future__ import annotations

from memory_pipeline.domain.policies import load_policies
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.search.render import human_table
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage.search_store import chunk_rows
from memory_pipeline_tests.helpers import ollama_embedder
from memory_pipeline_tests.support.documents import DEEP_PHRASE, document_folder
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer


def test_a_folder_of_documents_is_stored_and_each_bad_one_rejected_with_its_reason(db, tmp_path):
    expected = document_folder(tmp_path / "docs")
    report = ingest_paths(db, [tmp_path / "docs"], memory="m")
    rejected = {str(r).split(": ", 1)[0]: str(r).split(": ", 1)[1] for r in report.rejections}
    bad = {name: reason for name, reason in expected.items() if reason}
    assert set(rejected) == {str(tmp_path / "docs" / name) for name in bad}
    for name, reason in bad.items():
        assert reason in rejected[str(tmp_path / "docs" / name)], (name, rejected)
    assert report.inserted == 4
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT title, kind, metadata->>'format', occurred_at::date::text, body "
            "FROM episodes ORDER BY title"
        ).fetchall()
    by_title = {title: (kind, fmt, day, body) for title, kind, fmt, day, body in rows}
    assert set(by_title) == {"A note", "Club Minutes", "Riverside Blog", "River Survey 2025"}
    assert by_title["River Survey 2025"][:3] == ("doc", "pdf", "2025-06-01")
    assert by_title["Club Minutes"][:2] == ("doc", "docx") and by_title["Riverside Blog"][:2] == (
        "doc",
        "html",
    )
    assert by_title["A note"][0] == "note"
    blog = by_title["Riverside Blog"][3]
    assert blog.startswith("# Riverside Blog\n\n## blog part 1\n\n") and "SCRIPT TEXT" not in blog
    assert "Archive of every post" not in blog  # navigation dropped
    survey = by_title["River Survey 2025"][3]
    assert survey.startswith("# River Survey\n\n") and "\n\n### Survey wildlife notes\n\n" in survey


def test_a_phrase_from_a_deep_section_finds_its_document_with_the_headings_above_it(db, tmp_path):
    document_folder(tmp_path / "docs")
    ingest_paths(db, [tmp_path / "docs"], memory="m")
    with LoopbackEmbeddingServer(dim=1024) as server:
        embedder = ollama_embedder(server.url)
        index_pending(db, embedder)
        service = SearchService(db, load_policies(), embedder=embedder)
        response = service.search("m", DEEP_PHRASE, channels=("keyword",), limit=3)
        found = {r.title: r for r in response.results}
        # The chunk holding the phrase starts under the section above the deep subsection (the
        # PDF's pages put the subsection's heading at the start of its chunk).
        for title, subject, anchor in [
            ("Club Minutes", "minutes", "Club Minutes > minutes part 3"),
            ("Riverside Blog", "blog", "Riverside Blog > blog part 3"),
            ("River Survey 2025", "survey", "River Survey > Survey part 2 > Survey wildlife notes"),
        ]:
            assert (
                f"{DEEP_PHRASE} ({subject})" in found[title].text and found[title].anchor == anchor
            )
        top = response.results[0]
        assert response.to_json()["results"][0]["anchor"] == top.anchor
        shown = human_table(response)
        assert (
            "Club Minutes § minutes part 3" in shown
            and "River Survey 2025 § River Survey > Survey part 2" in shown
        )
        # The anchor is in the keyword index too: a chunk whose text never names its section is
        # found by the section's words.
        with db.connection() as conn:
            silent = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE tsv @@ plainto_tsquery('english', 'minutes')) FROM chunks "
                "WHERE anchor LIKE 'Club Minutes > %%' AND strpos(lower(text), 'minutes') = 0"
            ).fetchone()
            rows = chunk_rows(conn, "m", [top.chunk_id])
        assert silent[0] >= 2 and silent[1] == silent[0]
        # ... and in what the model read: the chunk was embedded after its anchor.
        assert any(
            text.startswith(top.anchor + "\n\n") and text.endswith(rows[top.chunk_id].text)
            for batch in server.inputs
            for text in batch
        )


def test_anchors_off_means_none_is_stored_indexed_embedded_or_shown_whichever_path_chunks(
    db, db_url, tmp_path, monkeypatch
):
    import datetime as dt

    import dagster as dg

    from memory_pipeline.defs.assets.index import chunks, embeddings
    from memory_pipeline.orchestration.resources import MemoryResource

    day = "2026-11-02"
    document_folder(tmp_path / "docs")
    ingest_paths(
        db, [tmp_path / "docs" / "minutes.docx"], memory="m", ingest_day=dt.date.fromisoformat(day)
    )
    monkeypatch.setenv("MEMORY_PIPELINE_HEADING_ANCHORS", "off")
    with LoopbackEmbeddingServer(dim=512) as server:
        instance = dg.DagsterInstance.ephemeral()
        instance.add_dynamic_partitions("ingest_days", [day])
        resources = {
            "memory_api": MemoryResource(url=db_url, embed_provider="ollama", embed_url=server.url)
        }
        assert dg.materialize(
            [chunks, embeddings], partition_key=day, resources=resources, instance=instance
        ).success
        # The index pass (CLI, API) over another episode, too.
        ingest_paths(db, [tmp_path / "docs" / "page.html"], memory="m")
        embedder = ollama_embedder(server.url)
        embedder.heading_anchors = False  # what the factory sets from the switch
        index_pending(db, embedder)
        model_inputs = [text for batch in server.inputs for text in batch]
        response = SearchService(db, load_policies(), embedder=embedder).search(
            "m", DEEP_PHRASE, limit=3
        )
    with db.connection() as conn:
        anchors = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE anchor <> '') FROM chunks"
        ).fetchone()
        # The section's words are not in the keyword index of chunks whose text does not hold them.
        section_only = conn.execute(
            "SELECT count(*) FROM chunks WHERE tsv @@ plainto_tsquery('english', 'minutes') "
            "AND strpos(lower(text), 'minutes') = 0"
        ).fetchone()[0]
    assert anchors[0] > 4 and anchors[1] == 0 and section_only == 0
    assert not any(text.startswith(("Club Minutes >", "Riverside Blog >")) for text in model_inputs)
    assert response.results and all(r.anchor == "" for r in response.results)
    assert " § " not in human_table(response)
