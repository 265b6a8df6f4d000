"""Proper-name candidates in episode text, and the ones that recur across episodes.

Name candidates (``extract_proper_names``) are a deterministic heuristic, not a model: runs of
one to three capitalised words in any cased script (Latin with diacritics, Cyrillic, Greek...),
with lowercase particles such as "da" or "van" allowed between them. Capitalisation at the start
of a sentence proves nothing, so a lone word there counts only if the same text also capitalises
it mid-sentence; common capitalised words (pronouns, days, months, greetings, headers) are
dropped. ``recurring_names`` then keeps what recurs across episodes, which filters most noise.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from memory_pipeline.domain.unicode_classes import char_ranges, class_ranges, marks

MAX_CAPITALISED_WORDS = 3

# Lowercase particles of personal and place names; "e"/"y" ("and") are left out on purpose, or
# "Maria e João" would become one name.
_CONNECTORS = frozenset(
    "da das de del della der des di do dos du van von den ter bin ibn al".split()
)

# Capitalised words that are almost never the name of a person, project or place. Compared
# casefolded. Kept small: recurring_names drops most one-off noise anyway.
_STOP_WORDS = frozenset(
    """
    i i'm i've i'll i'd im ive a an the and or but nor so yet if then than this that these
    those there here it it's its he she we they you me him her us them my mine our your yours
    his hers their what when where why how who whom which whose yes no not ok okay also just
    maybe perhaps still well oh ah hi hello hey dear thanks thank please sorry cheers regards
    best good great nice welcome bye goodbye morning afternoon evening night today tonight
    yesterday tomorrow now soon later in on at to for of with from by about after before
    since until as is was are were be been do does did done have has had can could would
    shall should may might must let let's lets all any some every each both one two three
    new next last first my our note notes todo update summary edit ps re fwd fw cc bcc
    subject date sent attendees agenda action actions status question answer user assistant
    system human ai bot mr mrs ms dr prof sir madam
    monday tuesday wednesday thursday friday saturday sunday
    mon tue tues wed thu thur thurs fri sat sun
    january february march april may june july august september october november december
    eu tu ele ela nós nos vós eles elas você vocês o os as um uma uns umas isto isso aquilo
    hoje ontem amanhã olá oi obrigado obrigada bom boa bem sim não também mas
    segunda terça quarta quinta sexta sábado domingo
    janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro
    ja ti on ona ono mi vi oni one ona taj ta to danas jučer sutra bok zdravo hvala
    dobar dobro da ne ali i u na
    ponedjeljak utorak srijeda četvrtak petak subota nedjelja
    siječanj veljača ožujak travanj svibanj lipanj srpanj kolovoz rujan listopad studeni prosinac
    я ты он она оно мы вы они это этот эта эти тот та те сегодня вчера завтра привет
    здравствуйте спасибо пожалуйста да нет но и а в на
    понедельник вторник среда четверг пятница суббота воскресенье
    январь февраль март апрель май июнь июль август сентябрь октябрь ноябрь декабрь
    января февраля марта апреля мая июня июля августа сентября октября ноября декабря
    """.split()
)

# Titles and single initials end with a period that does not end a sentence ("Dr. Rocha").
_ABBREVIATIONS = frozenset("mr mrs ms dr prof st sr jr mt".split())
_SENTENCE_END = re.compile(r"[.!?…:]")
_OPENING_QUOTES = "\"'“„«‘‚‹"
_HORIZONTAL_SPACE = re.compile(r"[^\S\n]+")
_LABEL_PREFIX = re.compile(r"[\s\-*•>#]*")
_LABEL_SUFFIX = re.compile(r"[*_]*[^\S\n]*:")
_POSSESSIVE = re.compile(r"['’]s\Z", re.IGNORECASE)


@functools.cache
def _token_pattern() -> re.Pattern[str]:
    # Letters, digits, underscores and marks, with inner apostrophes ("O'Brien", "Mara's").
    char = rf"[\w{marks()}]"
    return re.compile(rf"{char}+(?:['’]{char}+)*")


def _is_word_char(char: str) -> bool:
    """One character of ``_token_pattern``'s words (``\\w`` is ``isalnum`` or "_")."""
    return char.isalnum() or char == "_" or unicodedata.category(char).startswith("M")


@functools.cache
def _capitalised_word_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(the words ``_token_pattern`` finds that start with a capital; a stretch of text that
    holds particles only; one particle), for ``_tokens``.

    sre tests the ranges of a character class above U+FFFF one by one: were the astral capitals
    in the leading class, every character of a text would pay for all of them. So the leading
    class takes every astral character as one range and the astral capitals are checked only
    after one is found; the lookbehinds then check that the word starts there."""
    char = rf"[\w{marks()}]"
    capitals = char_ranges(lambda c: (c.isupper() or c.istitle()) and _is_word_char(c))
    bmp = class_ranges((low, min(high, 0xFFFF)) for low, high in capitals if low <= 0xFFFF)
    astral = class_ranges((max(low, 0x10000), high) for low, high in capitals if high > 0xFFFF)
    capitalised = (
        rf"[{bmp}\U00010000-\U0010ffff](?:(?<=[{bmp}])|(?<=[{astral}]))"
        rf"(?<!{char}.)(?<!{char}['’].){char}*(?:['’]{char}+)*"
    )
    particle = (
        "(?:"
        + "|".join(sorted(_CONNECTORS, key=len, reverse=True))
        + rf")(?:['’][sS])?(?!{char}|['’]{char})"
    )
    gap = rf"[^\w{marks()}]*"
    return (
        re.compile(capitalised),
        re.compile(rf"(?:{gap}(?<!{char}){particle})*{gap}"),
        re.compile(rf"(?<!{char}){particle}"),
    )


def _word_before(text: str, start: int, floor: int) -> tuple[int, int] | None:
    """(start, end) of the last of ``_token_pattern``'s words in ``text[floor:start]``, or None."""
    end = start
    while end > floor and not _is_word_char(text[end - 1]):
        end -= 1
    if end == floor:
        return None
    begin = end
    while begin > floor:
        char = text[begin - 1]
        if _is_word_char(char) or (
            char in "'’" and begin - 2 >= floor and _is_word_char(text[begin - 2])
        ):
            begin -= 1
        else:
            break
    return begin, end


def _strip_possessive(word: str) -> str:
    return word[:-2] if _is_possessive(word) else word


@dataclass
class _Token:
    text: str  # possessive stripped
    start: int
    end: int
    capitalised: bool
    connector: bool
    stop: bool
    possessive: bool
    sentence_start: bool
    line_start: bool


def _is_capitalised(word: str) -> bool:
    if not (word[0].isupper() or word[0].istitle()):
        return False
    letters = [char for char in word if char.isalpha()]
    if len(letters) != sum(1 for char in word if char.isalnum()):
        return False  # digits inside: a code, not a name
    if not letters:
        return False
    if any(char.islower() for char in letters[1:]):
        return True
    # All capitals: an acronym ("NASA", "ООН") if short, shouting if long.
    return 2 <= len(letters) <= 5


def _tokens(text: str) -> list[_Token]:
    """The tokens runs are made of: capitalised words, and the particles between two of them.

    Only capitalised words are visited (``_capitalised_word_patterns``): any other word only
    ends a run, and the gap it leaves between the tokens on either side ends it the same way
    (``_runs`` joins only across horizontal space), so most words of a text are never looked at;
    for each capitalised word, only the word just before it (what ``_position`` reads). A particle
    ("da", "van") can join a run only when nothing but particles stands between two capitalised
    words ("Tomás da Silva"); anywhere else it ends a run like any other word, so only those are
    kept.
    """
    capitalised, only_particles, particle = _capitalised_word_patterns()
    tokens: list[_Token] = []
    last: _Token | None = None  # the last capitalised word kept
    for match in capitalised.finditer(text):
        word = match.group()
        start, end = match.span()
        before = _word_before(text, start, last.end if last is not None else 0)
        if before is None:  # the word just before is the last token, or there is none
            previous = last
            previous_end = last.end if last is not None else 0
            previous_text = last.text if last is not None else None
        else:
            previous, previous_end = None, before[1]
            previous_text = _strip_possessive(text[before[0] : before[1]])
            if last is not None and only_particles.fullmatch(text, last.end, start):
                for found in particle.finditer(text, last.end, start):
                    possessive = _is_possessive(found.group())
                    tokens.append(
                        _Token(
                            _strip_possessive(found.group()),
                            *found.span(),
                            False,
                            True,
                            False,
                            possessive,
                            False,
                            False,
                        )
                    )
        gap = text[previous_end:start]
        # A hyphen between two capitalised parts joins them ("Jean-Luc", "Ana-Marija").
        if (
            previous is not None
            and gap in ("-", "\u2010")
            and previous.capitalised
            and not previous.possessive
            and _is_capitalised(word)
        ):
            tokens[-1] = last = _make_token(
                previous.text + gap + word,
                previous.start,
                end,
                previous.sentence_start,
                previous.line_start,
            )
            continue
        sentence_start, line_start = _position(gap, previous_text)
        last = _make_token(word, start, end, sentence_start, line_start)
        tokens.append(last)
    return tokens


def _lowercase_words(text: str) -> set[str]:
    """The casefolded words ``text`` writes in lowercase (possessives stripped)."""
    found = set()
    for word in _token_pattern().findall(text):
        if not (word[0].isupper() or word[0].istitle()):
            stripped = _strip_possessive(word)
            if stripped[:1].islower():
                found.add(stripped.casefold())
    return found


def _position(gap: str, previous: str | None) -> tuple[bool, bool]:
    """(starts a sentence, starts a line) for a token after ``gap`` and the word ``previous``."""
    if previous is None or "\n" in gap:
        line_part = gap.rsplit("\n", 1)[-1]
        return True, _LABEL_PREFIX.fullmatch(line_part) is not None
    stripped = gap.rstrip()
    if stripped and stripped[-1] in _OPENING_QUOTES:
        return True, False
    end = _SENTENCE_END.search(gap)
    if end is None:
        return False, False
    # "Dr. Rocha", "Tomás R. Rocha": the period closes an abbreviation, not the sentence.
    if gap.strip() == "." and (
        previous.casefold() in _ABBREVIATIONS or (len(previous) == 1 and previous.isupper())
    ):
        return False, False
    return True, False


def _is_possessive(word: str) -> bool:
    # The apostrophe test first: most words have none, and the regex is the slower check.
    return len(word) > 2 and ("'" in word or "’" in word) and _POSSESSIVE.search(word) is not None


def _make_token(word: str, start: int, end: int, sentence_start: bool, line_start: bool) -> _Token:
    possessive = _is_possessive(word)
    text = word[:-2] if possessive else word
    capitalised = _is_capitalised(text)
    return _Token(
        text=text,
        start=start,
        end=end,
        capitalised=capitalised,
        connector=text in _CONNECTORS,
        stop=text.casefold() in _STOP_WORDS,
        possessive=possessive,
        sentence_start=sentence_start,
        line_start=line_start,
    )


def _runs(text: str, tokens: list[_Token]) -> list[list[_Token]]:
    """Maximal runs of capitalised words (particles allowed between), split at punctuation."""
    runs: list[list[_Token]] = []
    current: list[_Token] = []
    particles: list[_Token] = []
    previous: _Token | None = None
    for token in tokens:
        joins = (
            previous is not None
            and bool(current or particles)
            and not previous.possessive
            and _HORIZONTAL_SPACE.fullmatch(text, previous.end, token.start) is not None
        )
        if not joins:
            if current:
                runs.append(current)
            current, particles = [], []
        if token.capitalised and not token.stop:
            if current:
                current.extend(particles)
            particles = []
            current.append(token)
        elif token.connector and current and len(particles) < 2:
            particles.append(token)
        else:
            if current:
                runs.append(current)
            current, particles = [], []
        previous = token
    if current:
        runs.append(current)
    return runs


def _is_label(text: str, run: list[_Token]) -> bool:
    # "Mara: see you" at the start of a line is a speaker: a name, whatever its position.
    return run[0].line_start and _LABEL_SUFFIX.match(text, run[-1].end) is not None


def extract_proper_names(text: str) -> set[str]:
    """Proper-name candidates in ``text``: runs of 1 to 3 capitalised words, as written.

    Possessives are stripped ("Mara's" -> "Mara"), particles kept ("Tomás da Silva"), and a
    longer run of capitalised words (a title-case heading) is not a name. A lone capitalised
    word that starts a sentence counts only if the text also capitalises it mid-sentence; a
    sentence-initial word before other capitalised words is dropped when the text also uses it
    in lowercase ("Finally Mara arrived ... it finally rained"), and otherwise kept, since it may
    be a first name ("Tomás Rocha called."): "Finally Mara arrived." alone gives "Finally Mara",
    a candidate that rarely recurs. The result is deterministic.
    """
    text = unicodedata.normalize("NFC", text)
    lowercase_words: set[str] | None = None  # read for few texts: found when first needed

    runs: list[list[_Token]] = []
    for run in _runs(text, _tokens(text)):
        head = run[0]
        if head.sentence_start and not _is_label(text, run) and len(run) > 1:
            if lowercase_words is None:
                lowercase_words = _lowercase_words(text)
            if head.text.casefold() in lowercase_words:
                run = run[1:]
                while run and run[0].connector:
                    run = run[1:]
        if run:
            runs.append(run)

    # Capitalisation that proves something: anywhere but the first word of a sentence.
    evidence = {
        token.text
        for run in runs
        for position, token in enumerate(run)
        if position > 0 or not token.sentence_start or _is_label(text, run)
    }
    names: set[str] = set()
    for run in runs:
        if sum(1 for token in run if not token.connector) > MAX_CAPITALISED_WORDS:
            continue
        if (
            len(run) == 1
            and run[0].sentence_start
            and not _is_label(text, run)
            and run[0].text not in evidence
        ):
            continue
        names.add(" ".join(token.text for token in run))
    return names


def recurring_names(
    per_episode: Mapping[Hashable, set[str]], *, min_episodes: int = 2
) -> dict[str, set]:
    """Names found in at least ``min_episodes`` episodes -> the keys of those episodes.

    ``per_episode`` maps an episode key to the names found in it (``extract_proper_names``).
    The result is ordered by name, so it reads the same on every run.
    """
    if isinstance(min_episodes, bool) or not isinstance(min_episodes, int) or min_episodes < 1:
        raise ValueError(f"min_episodes must be an integer >= 1, got {min_episodes!r}")
    episodes_of: dict[str, set] = {}
    for episode, names in per_episode.items():
        for name in names:
            episodes_of.setdefault(name, set()).add(episode)
    return {
        name: episodes
        for name, episodes in sorted(episodes_of.items())
        if len(episodes) >= min_episodes
    }
