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
