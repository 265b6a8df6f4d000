"""How alike an embedding model finds texts: its built-in probe set, and the similarity cut-offs
derived from the cosines it gives them.

A cut-off tuned on one model sits below the unrelated-text baseline of another, so each
embedding profile is measured once against ``PROBES`` (``indexing.calibration`` stores the
result with the profile's generation) and its cut-offs follow from it: ``close`` (a statement
shown back before it is saved) between the cosines of other facts and of the same fact in other
words, ``duplicate`` (refused unless forced) above it, and ``query_floor`` / ``query_match``
(a question against an unrelated passage and against its answer), which ``domain.grades`` reads
results against. When the measurement fails the defaults hold (``DEFAULT``, ``measured: false``)
with the reason kept for ``status``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Version of the probe set and the derivation: a stored calibration of another version is
# measured again.
VERSION = 1
CLOSE_POSITION = 0.5
DUPLICATE_SHARE = 0.8
DEFAULT_CLOSE = 0.85
DEFAULT_DUPLICATE = 0.97
# The bundled multilingual-e5-small's own measurement, to 2 places, shown until a profile is
# measured.
DEFAULT_QUERY_FLOOR = 0.73
DEFAULT_QUERY_MATCH = 0.86


@dataclass(frozen=True)
class Probe:
    """One fact: a statement of it, the same fact in other words, another fact about the same
    subject, and a question the statement answers. ``subject`` groups facts that are about the
    same person or thing (their statements are never paired as unrelated)."""

    subject: str
    statement: str
    same: str
    related: str
    question: str


# Written for calibration (not drawn from any benchmark); several languages, since the bundled
# model is multilingual. benchmarks/data/calibration/ holds a second set it never sees.
PROBES: tuple[Probe, ...] = (
    Probe(
        "priya",
        "Priya drives a Skoda Fabia.",
        "Priya's car is a Skoda Fabia.",
        "Priya's physiotherapist is Dr. Okafor.",
        "What car does Priya have?",
    ),
    Probe(
        "marek",
        "Marek is allergic to peanuts.",
        "Marek cannot eat peanuts without a reaction.",
        "Marek plays the cello in an amateur orchestra.",
        "Which food must Marek avoid?",
    ),
    Probe(
        "heat pump",
        "The heat pump was serviced on 3 June.",
        "The engineer looked over the heat pump in early June, on the 3rd.",
        "The heat pump sits on the north wall of the house.",
        "When did the heat pump last get maintenance?",
    ),
    Probe(
        "optician",
        "My eye test is booked for 12 May at 10 am.",
        "The optician expects me on the morning of 12 May, ten o'clock.",
        "The optician's shop is next to the post office.",
        "When do I get my eyes checked?",
    ),
    Probe(
        "sofia",
        "Sofia swims at the lido before work.",
        "Sofia does her lengths in the outdoor pool ahead of the working day.",
        "Sofia is learning Japanese at the community college.",
        "When does Sofia go for a swim?",
    ),
    Probe(
        "release",
        "Version 4.1 of the app added offline maps.",
        "Since 4.1 the maps work without a connection.",
        "Version 4.1 of the app was built by the Krakow team.",
        "Which release brought maps without a connection?",
    ),
    Probe(
        "hiroshi",
        "Hiroshi is on the support rota for the billing API this week.",
        "Questions about the billing API go to Hiroshi this week.",
        "Hiroshi joined the company from a games studio.",
        "Who handles billing API support at the moment?",
    ),
    Probe(
        "parking",
        "The residents' parking permit costs 95 pounds a year.",
        "A year's residents' parking permit is £95.",
        "The parking permit must be shown behind the windscreen.",
        "How much is the yearly permit for parking on my street?",
    ),
    Probe(
        "dog",
        "The dog needs a walk of at least an hour every day.",
        "The dog has to be taken out for an hour or longer daily.",
        "The dog came from a rescue centre in Wales.",
        "How much exercise does the dog need?",
    ),
    Probe(
        "grandad",
        "Grandad's train reaches York at 14:20 on Friday.",
        "On Friday grandad arrives in York by train at 2:20 pm.",
        "Grandad used to work on the railways.",
        "When does my grandfather get in on Friday?",
    ),
    Probe(
        "ana",
        "Ana's laptop battery lasts about three hours now.",
        "Unplugged, Ana's computer now manages around three hours.",
        "Ana's laptop has a Portuguese keyboard layout.",
        "How long does Ana's laptop last unplugged?",
    ),
    Probe(
        "tomatoes",
        "The tomatoes in the garden need watering every second day.",
        "Every other day the garden tomatoes should be watered.",
        "The tomatoes were planted from seed in March.",
        "How often do the tomatoes need water?",
    ),
    Probe(
        "ingrid",
        "Ingrid asked me to lead the data migration next quarter.",
        "Ingrid wants me in charge of moving the data next quarter.",
        "Ingrid cycles to the office from Clapham.",
        "What did Ingrid ask me to take on?",
    ),
    Probe(
        "lasagne",
        "The lasagne bakes for 45 minutes at 190 degrees.",
        "Bake the lasagne 45 minutes in a 190-degree oven.",
        "The lasagne recipe came from Aunt Rosa.",
        "How long and how hot does the lasagne cook?",
    ),
    Probe(
        "cache",
        "The search service caches results in Redis for ten minutes.",
        "Redis keeps the search answers for ten minutes.",
        "The search service is written in Rust.",
        "How long are search results kept in the cache?",
    ),
    Probe(
        "jonah",
        "Jonah's driving licence expires in September.",
        "Jonah must renew his driving licence before September.",
        "Jonah wants to drive to Scotland in the summer.",
        "When does Jonah's licence run out?",
    ),
    Probe(
        "heizung",
        "Die Heizkostenabrechnung kommt jedes Jahr im März.",
        "Jedes Jahr im März kommt die Abrechnung der Heizkosten.",
        "Die Heizung im Bad ist seit Montag kaputt.",
        "Wann kommt die Abrechnung für die Heizung?",
    ),
    Probe(
        "pedro",
        "A aula de natação do Pedro é aos sábados às dez.",
        "O Pedro tem natação todos os sábados, às 10h.",
        "O Pedro aprendeu a nadar com o avô.",
        "Quando é a natação do Pedro?",
    ),
    Probe(
        "mecanico",
        "O mecânico disse que os travões do carro precisam de ser trocados.",
        "Segundo o mecânico, é preciso mudar os travões do carro.",
        "O carro foi comprado em segunda mão em 2019.",
        "O que disse o mecânico sobre o carro?",
    ),
    Probe(
        "pension",
        "My pension contribution goes up to 8% from April.",
        "Starting in April, 8% of my pay goes to the pension.",
        "The pension provider sends a statement every autumn.",
        "How much am I putting into my pension from spring?",
    ),
    Probe(
        "checkout",
        "Checkout failed for an hour because the payment provider's API key was rotated.",
        "A rotated API key at the payment provider broke checkout for an hour.",
        "The checkout page was redesigned last spring.",
        "Why did checkout stop working?",
    ),
    Probe(
        "noor",
        "Noor has practised the violin every evening since March.",
        "Noor picks up her violin every night, and has since March.",
        "Noor's violin belonged to her grandmother.",
        "How often does Noor practise her instrument?",
    ),
    Probe(
        "conference",
        "The conference budget is 1,200 euros per engineer.",
        "An engineer can use up to 1,200 euros a year for conference trips.",
        "The conference in Berlin is in October.",
        "How much can an engineer spend on conferences?",
    ),
    Probe(
        "rabbit",
        "The vet prescribed ear drops twice a day for the rabbit.",
        "The rabbit gets ear drops two times a day, as the vet said.",
        "The rabbit lives in a hutch at the end of the garden.",
        "What did the vet give the rabbit?",
    ),
)


@dataclass(frozen=True)
class Calibration:
    """A profile's measured (or default) similarity anchors; ``reason`` says why the defaults
    hold when ``measured`` is false."""

    close: float = DEFAULT_CLOSE
    duplicate: float = DEFAULT_DUPLICATE
    query_floor: float = DEFAULT_QUERY_FLOOR
    query_match: float = DEFAULT_QUERY_MATCH
    measured: bool = False
    separated: bool = True
    version: int = VERSION
    reason: str | None = "not measured yet"
    medians: Mapping[str, float] | None = None
    retry: bool = False  # the model could not be reached: measure again on the next chance

    def to_json(self) -> dict:
        return {
            "measured": self.measured,
            "version": self.version,
            "close": round(self.close, 4),
            "duplicate": round(self.duplicate, 4),
            "queryFloor": round(self.query_floor, 4),
            "queryMatch": round(self.query_match, 4),
            "separated": self.separated,
            "reason": self.reason,
            "retry": self.retry,
            "medians": None
            if self.medians is None
            else {k: round(v, 4) for k, v in self.medians.items()},
        }

    @classmethod
    def from_json(cls, data: object) -> Calibration:
        """The stored form back; anything unreadable (another version included) is the default,
        with the reason, to be measured again (``retry``)."""
        if not isinstance(data, Mapping):
            return Calibration(reason="stored calibration is unreadable", retry=True)
        if data.get("version") != VERSION:
            return Calibration(
                reason=f"stored calibration is version {data.get('version')!r}", retry=True
            )
        try:
            close, duplicate = float(data["close"]), float(data["duplicate"])
            query_floor, query_match = float(data["queryFloor"]), float(data["queryMatch"])
        except (KeyError, TypeError, ValueError):
            return Calibration(reason="stored calibration is unreadable", retry=True)
        medians = data.get("medians")
        return Calibration(
            close=close,
            duplicate=duplicate,
            query_floor=query_floor,
            query_match=query_match,
            measured=bool(data.get("measured")),
            separated=bool(data.get("separated", True)),
            reason=data.get("reason") if isinstance(data.get("reason"), str) else None,
            medians=dict(medians) if isinstance(medians, Mapping) else None,
            retry=bool(data.get("retry", False)),
        )


DEFAULT = Calibration()


def failed(reason: str, *, retry: bool = False) -> Calibration:
    """The defaults, saying why they hold (``retry``: the failure may pass, measure again)."""
    return Calibration(reason=reason, retry=retry)


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0


def probe_cosines(
    statements: Sequence[Sequence[float]],
    same: Sequence[Sequence[float]],
    related: Sequence[Sequence[float]],
    questions: Sequence[Sequence[float]],
    probes: Sequence[Probe] = PROBES,
) -> dict[str, list[float]]:
    """The probe set's cosines by class, from the vectors of each probe's texts (statements,
    same and related as documents, questions as queries, in ``probes``' order)."""
    n = len(probes)
    if not (len(statements) == len(same) == len(related) == len(questions) == n):
        raise ValueError("one vector per probe text is needed")
    other = [
        (i, j)
        for i in range(n)
        for j in range(n)
        if i != j and probes[i].subject != probes[j].subject
    ]
    return {
        "same": [_cosine(statements[i], same[i]) for i in range(n)],
        "related": [_cosine(statements[i], related[i]) for i in range(n)],
        "unrelated": [_cosine(statements[i], statements[j]) for i, j in other if i < j],
        "answer": [_cosine(questions[i], statements[i]) for i in range(n)],
        "off_topic": [_cosine(questions[i], statements[j]) for i, j in other],
    }


def derive(cosines: Mapping[str, Sequence[float]]) -> Calibration:
    """The cut-offs and anchors from the probe cosines (see the module docstring); the defaults,
    with the reason, when the numbers cannot be used."""
    needed = ("same", "related", "unrelated", "answer", "off_topic")
    if any(len(cosines.get(name, ())) < 2 for name in needed):
        return failed("too few probe cosines")
    values = [v for name in needed for v in cosines[name]]
    if any(not math.isfinite(v) or not -1.0001 <= v <= 1.0001 for v in values):
        return failed("the probe cosines are not cosines (outside [-1, 1] or not numbers)")
    medians = {name: statistics.median(cosines[name]) for name in needed}
    if medians["same"] >= 0.9999 and medians["unrelated"] >= 0.9999:
        return failed("the model gives every probe text the same vector")
    other = max(_quantile(cosines["related"], 0.95), _quantile(cosines["unrelated"], 0.99))
    same = _quantile(cosines["same"], 0.10)
    separated = other < same
    if separated:
        close = other + CLOSE_POSITION * (same - other)
    else:
        close = (medians["same"] + medians["related"]) / 2
    floor, match = medians["off_topic"], medians["answer"]
    if not match > floor:
        return failed(
            "the model puts a question no nearer its answer than other passages "
            f"(median {match:.3f} against {floor:.3f})"
        )
    duplicate = close + DUPLICATE_SHARE * (1.0 - close)
    return Calibration(
        close=close,
        # A model that cannot tell paraphrases from other facts must not refuse on its word:
        # only the default's near-identity counts as a duplicate then.
        duplicate=duplicate if separated else max(duplicate, DEFAULT_DUPLICATE),
        query_floor=floor,
        query_match=match,
        measured=True,
        separated=separated,
        reason=None
        if separated
        else "the probes' paraphrases and other facts overlap: close statements are a compromise",
        medians=medians,
    )


def probe_texts(probes: Sequence[Probe] = PROBES) -> tuple[list[str], list[str]]:
    """(documents, queries) to embed: each probe's statement, same and related, in that order;
    and its question."""
    documents = [t for p in probes for t in (p.statement, p.same, p.related)]
    return documents, [p.question for p in probes]


def from_vectors(
    documents: Sequence[Sequence[float]],
    queries: Sequence[Sequence[float]],
    probes: Sequence[Probe] = PROBES,
) -> Calibration:
    """``derive`` over the vectors of ``probe_texts``' documents and queries, in their order."""
    if len(documents) != 3 * len(probes) or len(queries) != len(probes):
        return failed(
            f"the model answered {len(documents)} + {len(queries)} vectors for "
            f"{3 * len(probes)} + {len(probes)} probe texts"
        )
    return derive(probe_cosines(documents[0::3], documents[1::3], documents[2::3], queries, probes))
