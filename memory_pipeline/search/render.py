"""Search responses for people: a terminal table and a Markdown table (Dagster metadata)."""

from __future__ import annotations

import shutil
import textwrap

from memory_pipeline.search.results import SearchResponse

CHANNEL_LETTERS = {
    "vector": "v",
    "keyword": "k",
    "graph": "g",
    "date": "d",
    "observation": "o",
    "belief": "b",
}


def _ranks(ranks: dict) -> str:
    return " ".join(f"{CHANNEL_LETTERS[ch]}{r}" for ch, r in ranks.items() if r is not None) or "-"


def _title(result) -> str:
    """The title, the headings above the passage (its anchor, without a repeated title), and how
    many chunks a sewn passage covers (one chunk says nothing); an earlier revision (search with
    history) says when it was superseded and by which."""
    n = len(result.chunk_ids)
    anchor = result.anchor
    if anchor == result.title or anchor.startswith(result.title + " > "):
        anchor = anchor[len(result.title) + 3 :]
    superseded = ""
    if result.superseded_at is not None:
        by = f" by #{result.superseded_by}" if result.superseded_by is not None else ""
        superseded = f" [superseded {result.superseded_at.date().isoformat()}{by}]"
    return (
        result.title
        + (f" § {anchor}" if anchor else "")
        + (f" ({n} adjacent chunks)" if n > 1 else "")
        + superseded
    )


def score_note(response: SearchResponse) -> str:
    """What the score column is: scores are relative to one search, and may be below 0."""
    if response.reranker == "ran":
        return (
            "score: the reranker's relevance, on its model's own scale (it may be negative); "
            "higher is better, comparable within this search only"
        )
    return (
        "score: fused relevance, comparable within this search only: each channel scales its "
        "candidates from 0 (its weakest) to its weight (its best) and a result's channels add "
        "up; salience and age break near-ties, so a weakest candidate can show just below 0"
        + (
            "; a superseded revision's score is its words' text rank among the superseded ones"
            if response.history
            else ""
        )
        + ". match: how well the result answers, against the embedding profile's calibration "
        "(strong, weak, none; - ungraded)"
    )


def match_line(response: SearchResponse) -> str | None:
    """The plain sentence a search whose results are no answer (or cannot be graded) leads with."""
    if response.nothing_matches:
        if not response.results:
            return None  # "no matching chunks" says it
        return (
            f"Nothing in memory {response.memory!r} matches this question well; "
            "the closest results follow, and none of them is an answer."
        )
    if response.match is None and response.match_reason:
        return f"note: {response.match_reason}"
    return None


def notes(response: SearchResponse) -> list[str]:
    lines = [line for line in [match_line(response)] if line]
    if not response.vector_available:
        lines.append(f"note: vector channel {response.vector_status}")
    if response.keyword_method == "substring":
        lines.append("note: full text found nothing; keyword results are literal substring matches")
    if response.entities:
        lines.append("entities: " + ", ".join(response.entities))
    if response.reranker.startswith("fallback"):
        lines.append(f"note: reranker {response.reranker}; fused order kept")
    if response.pending_episodes:
        count = f"{response.pending_episodes}{' or more' if response.pending_more else ''}"
        lines.append(
            f"note: {count} episode(s) of {response.memory!r} are not indexed yet, so search does "
            "not see them (memory-pipeline index)"
        )
        for match in response.pending_matches:
            lines.append(
                f"  not indexed yet, holds the query's words: #{match['episodeId']} "
                f"{match['title']} ({match['occurredAt'][:10]})"
            )
    return lines


def human_table(response: SearchResponse) -> str:
    width = shutil.get_terminal_size((120, 24)).columns
    head = (
        f"{len(response.results)} result(s) in {response.memory!r} for {response.query!r} "
        f"(policy {response.policy}, {response.latency_ms:.0f} ms)"
    )
    lines = [head, *notes(response)]
    if not response.results:
        lines.append("no matching chunks")
        return "\n".join(lines)
    lines.append(
        f"{'#':>2}  {'score':>7}  {'match':6}  {'date':10}  {'kind':8}  {'ranks':11}  "
        "title / snippet"
    )
    room = max(30, width - 56)
    for i, r in enumerate(response.results, 1):
        # The episode's id first: what ``read``, ``history`` and ``forget --episode`` take.
        title = (f"#{r.episode_id} " if r.episode_id is not None else "") + _title(r)
        lines.append(
            f"{i:>2}  {r.score:7.4f}  {r.grade or '-':6}  {r.occurred_at.date().isoformat():10}  "
            f"{r.kind[:8]:8}  {_ranks(r.ranks):11}  "
            f"{title if len(title) <= room else title[: room - 1] + '…'}"
        )
        # The whole snippet, wrapped: it is centred on the query's words (``make_snippet``), and a
        # cut at the column's width left the answer out more often than not.
        lines += [f"{'':>52}{line}" for line in textwrap.wrap(r.snippet, room)]
    lines += textwrap.wrap(score_note(response), max(40, width - 1), subsequent_indent="  ")
    return "\n".join(lines)


def markdown_table(response: SearchResponse) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [f"**{cell(response.query)}** in `{response.memory}` (policy `{response.policy}`)", ""]
    lines += [f"_{cell(n)}_" for n in notes(response)]
    lines += [
        "",
        "| # | score | match | date | kind | ranks | title | snippet |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(response.results, 1):
        lines.append(
            f"| {i} | {r.score:.4f} | {r.grade or '-'} | {r.occurred_at.date()} | {r.kind} | "
            f"{_ranks(r.ranks)} | "
            f"{cell(_title(r))} | {cell(r.snippet)} |"
        )
    if response.results:
        lines += ["", f"_{cell(score_note(response))}_"]
    return "\n".join(lines)
