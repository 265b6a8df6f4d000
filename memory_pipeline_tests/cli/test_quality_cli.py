"""``memory-pipeline questions`` and ``memory-pipeline quality`` as a user runs them."""

from __future__ import annotations

import csv
import io
import json

from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

NOTES = [
    ("Sourdough", "The sourdough starter needs rye flour and a warm kitchen at 26 degrees."),
    ("Dentist", "Doctor Marques found a small cavity in the upper molar; filling in June."),
]


def test_questions_are_added_imported_listed_scored_and_removed(cli, tmp_path):
    corpus = tmp_path / "notes.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(
                {
                    "memory": "me",
                    "kind": "note",
                    "title": t,
                    "occurred_at": "2026-05-01",
                    "body": b,
                    "id": t.lower(),
                }  # fmt: skip
            )
            + "\n"
            for t, b in NOTES
        ),
        encoding="utf-8",
    )
    with LoopbackEmbeddingServer(dim=512) as server:
        env = {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": server.url}
        assert cli("ingest", str(corpus), env=env).code == 0
        assert cli("index", env=env).code == 0
        episodes = cli("episodes", "--memory", "me", "--json", env=env).json()
        ids = {e["title"]: e["id"] for e in episodes["episodes"]}
        added = cli(
            "questions", "add", "what does the starter need?", "--memory", "me",
            "--expect", str(ids["Sourdough"]), env=env,
        )  # fmt: skip
        assert added.code == 0 and added.out.startswith("saved question #1 of memory 'me'")
        wrong = cli("questions", "add", "x?", "--memory", "me", "--expect", "nope", env=env)
        assert wrong.code == 2 and "not an episode, source or statement: 'nope'" in wrong.err
        assert "Traceback" not in wrong.err
        lines = tmp_path / "q.jsonl"
        lines.write_text(
            '{"question": "who found the cavity?", "expect": "source:dentist"}\n'
            '{"question": "broken", "expect_title": "Nope"}\nnot json\n',
            encoding="utf-8",
        )
        imported = cli("questions", "import", str(lines), "--memory", "me", env=env)
        assert imported.code == 3, imported.err
        assert "saved 1 question(s) (1 new), 2 rejected" in imported.out
        assert f"{lines}:2: memory 'me' has no current episode titled 'Nope'" in imported.err
        assert f"{lines}:3: malformed JSON" in imported.err
        listed = cli("questions", "list", "--memory", "me", env=env)
        assert "#2 [me] who found the cavity?  ->  source:id:dentist (Dentist)" in listed.out

        shown = cli("quality", env=env)
        as_csv = cli("quality", "--csv", env=env)
        to_file = cli("quality", "--csv", str(tmp_path / "q.csv"), env=env)
        as_json = cli("quality", "--memory", "me", "--json", env=env).json()
        removed = cli("questions", "remove", "1", "9", "--memory", "me", env=env)
        status = cli("status", "--json", env=env).json()

    assert shown.code == 0, shown.err
    assert "| memory   | ranking" in shown.out and "| me       | fused" in shown.out
    assert "misses (0):" in shown.out
    rows = list(csv.DictReader(io.StringIO(as_csv.out)))
    fused = next(r for r in rows if r["ranking"] == "fused")
    assert fused["memory"] == "me" and fused["questions"] == "2" and fused["first@1"] == "1.0"
    assert {r["ranking"] for r in rows} >= {"fused", "vector", "keyword"}
    assert to_file.code == 0 and (tmp_path / "q-misses.csv").read_text().startswith("memory,")
    assert (tmp_path / "q.csv").read_text() == as_csv.out
    [me] = as_json["memories"]
    assert me["figures"]["fused"]["recall_at_8"] == 1.0 and me["misses"] == []
    assert removed.code == 2 and "removed 1 question(s)" in removed.out
    assert "memory 'me' has no question #9" in removed.err
    assert status["quality"][0]["memory"] == "me"
    assert status["quality"][0]["figures"]["fused"]["first_at_1"] == 1.0


def test_index_refuses_a_worse_model_with_exit_6_and_accept_worse_switches(cli, tmp_path):
    from memory_pipeline_tests.helpers import QWEN
    from memory_pipeline_tests.search.test_quality_guard import (
        RANDOM_MODEL,
        TOPICS,
        random_vectors,
    )

    corpus = tmp_path / "topics.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(
                {
                    "memory": "me",
                    "kind": "note",
                    "title": t,
                    "occurred_at": "2026-05-01",
                    "body": f"A note on {t.lower()}: {words}.",
                }
            )
            + "\n"  # fmt: skip
            for t, words in TOPICS
        ),
        encoding="utf-8",
    )
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(
            json.dumps(
                {
                    "memory": "me",
                    "question": f"what about {w.split()[1]} {w.split()[2]}?",
                    "expect_title": t,
                }
            )
            + "\n"  # fmt: skip
            for t, w in TOPICS
        ),
        encoding="utf-8",
    )
    with LoopbackEmbeddingServer(dim=512, models={QWEN}) as good:
        env = {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": good.url}
        assert cli("ingest", str(corpus), env=env).code == 0
        assert cli("index", env=env).code == 0
        assert cli("questions", "import", str(questions), env=env).code == 0
        assert cli("quality", env=env).code == 0  # the serving generation's figures, recorded
    with LoopbackEmbeddingServer(dim=512, models={RANDOM_MODEL}, vector_fn=random_vectors) as worse:
        env = {
            "MEMORY_PIPELINE_EMBED_PROVIDER": "ollama",
            "OLLAMA_HOST": worse.url,
            "MEMORY_PIPELINE_EMBED_MODEL": RANDOM_MODEL,
            "MEMORY_PIPELINE_EMBED_DIM": "512",
        }
        refused = cli("index", env=env)
        still = cli("status", "--json", env=env).json()["activeProfile"]["model"]
        accepted = cli("index", "--accept-worse", env=env)
        now = cli("status", "--json", env=env).json()["activeProfile"]["model"]
    assert refused.code == 6, refused.err
    assert "the switch to ollama/random-embed@512 generation 1 was refused" in refused.err
    assert "--accept-worse" in refused.err and "Traceback" not in refused.err
    assert still == QWEN
    assert accepted.code == 0 and "quality guard:" in accepted.out and "accepted" in accepted.out
    assert now == RANDOM_MODEL
