"""What is true now, through search: among results that tell one subject, a question of today
gets the latest, a question of a year the note of that year (``search.in_time``).

A fresh database per test and a loopback Ollama-format model, whose bag-of-words vectors make
the two dentist notes (the same words but the names) alike and the others not."""

from __future__ import annotations

COMMON = (
    "check-up every six months with a scale and polish, the receptionist books appointments by "
    "phone, and the practice is ten minutes from home on the bus. Grinding at night, a guard "
    "was suggested."
)
NOTES = [
    ("Teeth, spring", "2023-03-14", f"My dentist is Dr Okafor at the Harehills practice: {COMMON}"),
    (
        "Teeth after the move",
        "2026-04-09",
        f"My dentist is Dr Brandt at the Clifton Moor practice in York: {COMMON}",
    ),
    ("Garden", "2025-04-26", "Planted potatoes, broad beans and beetroot by the fence."),
    ("Dal", "2026-02-08", "Red lentils with turmeric, a tarka of cumin, garlic and chilli."),
    ("Bike", "2024-10-05", "New gravel bike on the cycle-to-work scheme, steel frame."),
]


def indexed(mem, kind: str = "note"):
    mem.add(
        [
            {"memory": "maya", "kind": kind, "title": t, "occurred_at": d, "body": b}
            for t, d, b in NOTES
        ]
    )
    mem.index()
    return mem


def titles(response) -> list[str]:
    return [r.title for r in response.results]


def test_a_question_of_today_gets_the_latest_note_of_its_subject(mem):
    indexed(mem)
    keyword_only = titles(mem.search("maya", "which dentist do I go to?", channels=("keyword",)))
    assert keyword_only[0] == "Teeth, spring"  # fusion's channels alone prefer the older note
    assert titles(mem.search("maya", "which dentist do I go to?"))[0] == "Teeth after the move"


def test_a_question_of_a_year_gets_the_note_in_force_that_year(mem):
    indexed(mem)
    assert titles(mem.search("maya", "which dentist did I see in 2023?"))[0] == "Teeth, spring"


def test_sessions_of_a_conversation_keep_the_fused_order(mem):
    indexed(mem, kind="chat")  # a later session is alike to an earlier one, not its successor
    assert titles(mem.search("maya", "which dentist do I go to?"))[0] == "Teeth, spring"


def test_notes_written_at_one_moment_keep_the_fused_order(mem):
    # Two alike notes of the same moment (as the chunks of one document are): neither is the
    # later state, so a question of today keeps fusion's first, as a question without a time
    # preference does (past tense alone: "search.in_time" leaves the order).
    same_day = [(t, "2026-04-09" if t.startswith("Teeth") else d, b) for t, d, b in NOTES]
    mem.add(
        [
            {"memory": "maya", "kind": "note", "title": t, "occurred_at": d, "body": b}
            for t, d, b in same_day
        ]
    )
    mem.index()
    now = titles(mem.search("maya", "which dentist do I go to?"))
    assert now[0] == titles(mem.search("maya", "which dentist did I go to?"))[0]
    assert now[:2] == ["Teeth, spring", "Teeth after the move"]
