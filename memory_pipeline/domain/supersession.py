"""What is true now: a query's reading of time, and the order among candidates that tell one
subject at different times.

Fusion's recency only breaks near-ties, since over a whole memory newer is not better; within
one subject told several times it is evidence. A query asked of today wants the latest note, one
naming a year or a month the note in force by its end, one naming an earlier state ("before",
"used to") an older note; past tense alone, or a named day (the date channel's), leaves fusion's
order. Candidates tell one subject when the query finds them about as relevant as the first
result and their stored vectors are alike to the first's: the same-subject cosine sits
``SAME_SUBJECT_POSITION`` of the way from the calibration's unrelated median to its paraphrase
median (``same_subject_cut``; thresholds follow the model), ``SAME_SUBJECT`` without measured
medians. Constants chosen leave-one-memory-out (``benchmarks/knowledge_loo.py``). Conversation
transcripts (``TRANSCRIPT_KINDS``) take no part; candidates written at one moment (a document's
chunks) keep fusion's order among themselves. Cues in English, German, Portuguese, Spanish and
French (imperfect tenses such as "morava", "vivía", "habitait" read as past).
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from memory_pipeline.domain.dates import named_periods

BAND = 0.03
SCORE_SHARE = 0.6
SAME_SUBJECT = 0.86
SAME_SUBJECT_POSITION = 0.385
MARGIN = 0.0
DEPTH = 3
SPREAD = 10
# Episodes that record talk rather than state how things are: a later session of a conversation
# is alike to an earlier one without replacing it (on LoCoMo's sessions the step cost recall@1
# even with MARGIN), so they are never contenders.
TRANSCRIPT_KINDS = frozenset({"chat"})

_YEAR = re.compile(r"\b(19[5-9]\d|20\d\d)\b")
# "before X": the state the query names is the match; the answer is the state before it.
_BEFORE = re.compile(
    r"\b(before|prior to|bevor|davor|zuvor|antes|avant|auparavant)\b", re.IGNORECASE
)
# "before merging": a step of a procedure, not an earlier state, unless the query is in the past.
_BEFORE_STEP = re.compile(r"\bbefore\s+\w+ing\b", re.IGNORECASE)
# An earlier state without naming the one that replaced it.
_EARLIER = re.compile(
    r"\b(used to|did \w+ use to|previous(ly)?|former(ly)?|old|earlier|originally|at first|back then|"
    r"früher|frueher|vorher|ehemalig\w*|damals|alten?|alter|ursprünglich|anfangs|bisherig\w*|"
    r"antigamente|anteriormente|antig[oa]s?|costumava\w*|dantes|"
    r"antiguamente|antigu[oa]s?|anterior(es)?|sol[ií]a\w*|"
    r"autrefois|jadis|ancien(ne)?s?|précédent(e)?s?|à l'époque)\b",
    re.IGNORECASE,
)
# Past tense or a past time without a year: reading it as "now" would be wrong, and it does not
# say which older note. (German "Was ...?" opens a question: "was" first in the query is not
# English past tense.)
_PAST = re.compile(
    r"\b(did|were|had|went|got|ago|last year|war|waren|hatte|hatten|wurde|wurden|gab|ging|"
    r"foi|foram|era|eram|tinha|tinham|estava|estavam|fue|fueron|eran|ten[ií]a|ten[ií]an|"
    r"était|étaient|avait|avaient|fut)\b"
    r"|(?<!^)\bwas\b"
    # Portuguese, Spanish and French imperfects of regular verbs: "morava", "trabajaba",
    # "habitaient" (Spanish "-ía" is left out: "compañía", "energía" are nouns of today).
    r"|\b\w{3,}(avam?|aban?|aient)\b",
    re.IGNORECASE,
)
# Regular past forms: English "-ed" ("joined", "caused"; not "need", "speed"), German participles
# ("gearbeitet", "getroffen"); with a present auxiliary ("where is the API hosted?") a passive
# or perfect of today.
_PAST_FORM = re.compile(r"\b(\w{2,}[^\We]ed|ge\w{3,}(t|en))\b", re.IGNORECASE)
_PRESENT_AUX = re.compile(r"\b(is|are|am|has|have|ist|sind|hat|haben)\b", re.IGNORECASE)


@dataclass(frozen=True)
class QueryTime:
    """When a query asks about: ``tense`` "present", "past" or "neutral" (past tense that names
    no time or earlier state: no preference); ``year``: the latest year it names; ``before``: it
    names the state after the one it wants ("before X")."""

    tense: str
    year: int | None = None
    before: bool = False
    # The end of the latest month it names ("in March 2024": 1 April 2024), read as a year is.
    until: dt.datetime | None = None

    def end(self) -> dt.datetime | None:
        """The moment before which the note in force then was written (a year's or a month's
        end; None: the query names neither)."""
        if self.year is not None:
            return dt.datetime(self.year + 1, 1, 1, tzinfo=dt.UTC)
        return self.until


def read_query_time(query: str) -> QueryTime:
    """The query's reading of time (module docstring)."""
    query = query.strip()
    periods = named_periods(query)
    if any(p.end - p.start <= dt.timedelta(days=1) for p in periods):
        return QueryTime("neutral")  # an event on a day: the date channel lists its notes
    years = [] if periods else [int(y) for y in _YEAR.findall(query)]
    past = bool(_PAST.search(query)) or bool(
        _PAST_FORM.search(query) and not _PRESENT_AUX.search(query)
    )
    before = bool(_BEFORE.search(query)) and (past or not _BEFORE_STEP.search(query))
    if periods:
        return QueryTime("past", before=before, until=max(p.end for p in periods))
    if years:
        return QueryTime("past", year=max(years), before=before)
    if before:
        return QueryTime("past", before=True)
    if _EARLIER.search(query):
        return QueryTime("past")
    if past:
        return QueryTime("neutral")
    return QueryTime("present")


def same_subject_cut(
    medians: Mapping[str, float] | None, position: float = SAME_SUBJECT_POSITION
) -> float:
    """The cosine from which two notes tell one subject under a profile whose calibration
    measured ``medians`` (``domain.calibration``: "unrelated" and "same", paraphrases):
    ``position`` of the way from the first to the second; ``SAME_SUBJECT`` without them."""
    if not medians or "unrelated" not in medians or "same" not in medians:
        return SAME_SUBJECT
    low, high = medians["unrelated"], medians["same"]
    if not high > low:
        return SAME_SUBJECT
    return low + position * (high - low)


@dataclass(frozen=True)
class Grouping:
    """When a candidate tells the first result's subject (module docstring)."""

    band: float = BAND
    score_share: float = SCORE_SHARE
    same_subject: float = SAME_SUBJECT
    depth: int = DEPTH
    margin: float = MARGIN
    spread: int = SPREAD


def contenders(
    order: Sequence[str],
    closeness: Mapping[str, float],
    scores: Mapping[str, float],
    likeness: Callable[[str, list[str]], Mapping[str, float]],
    grouping: Grouping,
) -> list[str]:
    """The first of ``order`` and the candidates among the first ``grouping.depth`` that tell
    its subject. ``closeness``: the vector channel's scores; ``scores``: fused; ``likeness(first,
    others)``: the cosine of each of ``others`` to ``first`` (asked only when some pass the
    query's side)."""
    if not order or order[0] not in closeness or order[0] not in scores:
        return []
    first = order[0]
    near = [
        k
        for k in order[1 : grouping.depth]
        if k in closeness
        and closeness[k] >= closeness[first] - grouping.band
        and scores.get(k, 0.0) >= grouping.score_share * scores[first]
    ]
    if not near:
        return [first]
    rest = list(order[grouping.depth : grouping.spread])
    alike = likeness(first, near + rest)
    # How alike the first is to what the query found less relevant: in a memory whose every
    # chunk is alike (one conversation's sessions) likeness says nothing of a subject.
    usual = statistics.median([alike[k] for k in rest if k in alike] or [0.0])
    floor = max(grouping.same_subject, usual + grouping.margin)
    return [first, *(k for k in near if alike.get(k, 0.0) >= floor)]


def pick(reading: QueryTime, group: Sequence[str], written: Mapping[str, dt.datetime]) -> str:
    """The contender ``reading`` wants among ``group`` (``group[0]``: the fused first)."""
    first = group[0]
    place = {k: i for i, k in enumerate(group)}
    # Contenders written at one moment (the chunks of one document, notes of one import) are no
    # later or earlier state of each other: among them the fused order decides, so each moment
    # is stood for by its best-placed contender (sorted last among its equals).
    by_time = sorted(group, key=lambda k: (written[k], -place[k]))

    def earlier(key: str) -> str:
        """The latest contender written before ``key``; ``key`` itself when none was."""
        before = [k for k in by_time if written[k] < written[key]]
        return before[-1] if before else key

    if reading.tense == "present":
        return by_time[-1]
    end = reading.end()
    if end is not None:
        then = [k for k in by_time if written[k] < end]
        if not then:
            return first
        if reading.before:  # "before X in 2023": the state before the one of that year
            return earlier(then[-1])
        return then[-1]
    if reading.tense == "past" and (reading.before or by_time[-1] == first):
        return earlier(first)
    return first


def in_time(
    query: str,
    order: Sequence[str],
    *,
    written: Mapping[str, dt.datetime],
    closeness: Mapping[str, float],
    scores: Mapping[str, float],
    likeness: Callable[[str, list[str]], Mapping[str, float]],
    grouping: Grouping = Grouping(),
    as_of: bool = False,
) -> list[str]:
    """``order`` (fused, best first) with the contender the query's time wants moved first; the
    others keep their order. Unchanged when the query names no time preference or the first
    result tells its subject alone. ``written``: each candidate's ``occurred_at``. ``as_of``:
    the search asks as of a moment (its candidates are those in force then), and a query that
    names no time of its own asks about that moment: the latest note then."""
    reading = read_query_time(query)
    if as_of and reading.tense == "neutral" and reading.year is None:
        reading = QueryTime("present")
    if reading.tense == "neutral":
        return list(order)
    group = [k for k in contenders(order, closeness, scores, likeness, grouping) if k in written]
    if len(group) < 2:
        return list(order)
    chosen = pick(reading, group, written)
    return [chosen, *(k for k in order if k != chosen)]
