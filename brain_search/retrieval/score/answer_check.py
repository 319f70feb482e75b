"""Whether a memory can answer what a question asks for (pure).

The relevance floor reads how close a memory is to a question; it cannot read that a memory close
in topic is about someone or something else. Two checks a reader makes before anything else:

- **who or what the question is about.** A question that names someone or something ("How much did
  I earn at Finlo?", "What's Priya's phone number?") is answered only by a memory that mentions at
  least one of them; one that names a person by role ("my next dentist appointment") only by a
  memory that names the role. The Harbor offer is not what was earned at Finlo; the physio is not
  the dentist. Kinship is not read (``PEOPLE``).
- **what kind of answer it wants.** A question for an amount of money ("how much did I earn…")
  is answered by a memory that holds a figure; one for an identifying number (a phone, membership
  or account number) by one that holds a string of digits.

A memory that fails either does not clear the floor (strict mode drops it; a recall none of whose
memories clears it says "nothing matched"); the ranking does not read the checks. Exact matches
(the question's phrase or all its words) are never checked. English cue words; names are read by
their capital in any Latin script (in German, where every noun is capitalised, acronyms only:
``intent.detect.named_entities``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cached_property

from brain_search.retrieval.intent.detect import english_words_lead, named_entities, reads_as_english

PEOPLE: dict[str, frozenset[str]] = {
    word: frozenset(forms)
    for forms in (
        ("dentist",),
        ("doctor", "dr", "gp"),
        ("vet",),
        ("landlord", "landlady"),
        ("manager", "boss"),
        ("therapist",),
        ("physio", "physiotherapist"),
        ("accountant",),
        ("lawyer", "solicitor"),
        ("mechanic",),
        ("hairdresser", "barber"),
        ("babysitter", "nanny"),
    )
    for word in forms
}
"""a person named by role → the words that name the same person. Kinship is not read: on LoCoMo
dev, where people talk of their families, 20 of the 31 evidence turns a kinship check would
refuse leave the person implicit ("We all made our own pots" for "Melanie and her kids")"""

_PEOPLE_WORDS = "|".join(sorted(PEOPLE, key=len, reverse=True))
_PERSON_AFTER = re.compile(
    rf"\b(?:my|our|the|his|her|their|your)\s+(?:\w+\s+)?({_PEOPLE_WORDS})(?:'s|’s)?\b", re.IGNORECASE
)
_MONEY_QUESTION = re.compile(
    r"^\W*how much\b.*\b(?:earn|earned|earning|earns|make|made|paid|pay|pays|paying|cost|costs|costing|spend|spent|"
    r"spending|salary|wage|wages|rent|price|charge|charged|owe|owed|worth|insurance|fee|fees|bill|budget|offer|"
    r"offered|borrow|borrowed|lend|lent|loan|sell|sold|buy|bought)\b",
    re.IGNORECASE | re.DOTALL,
)
_ID_QUESTION = re.compile(  # the number is what is asked: "what's Priya's phone number", not "whose phone number"
    r"^\W*(?:what|which)(?:'s|’s|\s+is|\s+was|\s+are|\s+were)?\s+(?:\S+\s+){0,3}?"
    r"(?:phone|mobile|cell|telephone|membership|member|account|passport|licen[cs]e|policy|reference|order|tracking|"
    r"customer|card|pin|booking|confirmation|insurance|tax|social security|id)\s+(?:number|no\b|#|code)",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
_DIGIT_RUN = re.compile(r"\+?\d[\d \-./]{3,}\d")
_NUMBER_WORDS = re.compile(
    r"\b(?:hundred|thousand|million|billion|grand|k)\b|[$€£¥]|\b(?:euros?|dollars?|pounds?|quid|bucks|francs?|yen|"
    r"eur|usd|gbp)\b",
    re.IGNORECASE,
)
_NOT_NAMES = frozenset(
    "january february march april may june july august september october november december monday tuesday "
    "wednesday thursday friday saturday sunday".split()
)
"""capitalised words that date a question rather than name what it is about"""


@dataclass(frozen=True)
class Asked:
    """What a question asks about and for (``asked``)."""

    names: tuple[str, ...] = ()
    """names in the question, lower case: a memory must mention one of them (accents aside)"""
    people: tuple[frozenset[str], ...] = ()
    """persons named by role, each as the words that name them"""
    money: bool = False
    """an amount of money: the memory must hold a figure"""
    identifier: bool = False
    """an identifying number: the memory must hold a string of at least five digits"""
    english: bool = True
    """the question reads as English (read only where it gives names or roles): those are looked for
    only in memories written the same way ("Tokyo" is 東京 in a Japanese memory, "Munich" München in
    a German one)"""

    @property
    def checks(self) -> bool:
        return bool(self.names or self.people or self.money or self.identifier)

    @cached_property
    def named(self) -> re.Pattern[str] | None:
        """Any of ``names`` as a word of folded text (None: no names)."""
        return _any_word(fold(n) for n in self.names) if self.names else None

    @cached_property
    def roles(self) -> tuple[re.Pattern[str], ...]:
        """Per person named by role, any of its words in lower-case text."""
        return tuple(_any_word(forms) for forms in self.people)

    def without_common(self, counts: Callable[[str], tuple[int, int]]) -> Asked:
        """Without its names when ``counts`` (name → how many of the tenant's memories hold it,
        and how many it has) puts every one of them in at least ``COMMON_NAME_MEMORIES`` memories
        and ``COMMON_NAME_SHARE`` of them: a name in most of a tenant's memories is who the tenant
        is about (a speaker of every other turn), and the turns that answer a question about Ana
        may call her "you". A question that also names something rarer ("What did Ana buy for
        Scout?") keeps them all."""
        if not self.names or not all(_common(*counts(n)) for n in self.names):
            return self
        return replace(self, names=())


COMMON_NAME_SHARE = 0.2
"""a name in at least this share of a tenant's memories does not gate (``Asked.without_common``):
LoCoMo's two speakers each open about half of a conversation's turns, the names a chat user's
memories mention are in a few of them"""
COMMON_NAME_MEMORIES = 20
"""…and in at least this many: in a tenant of five memories one mention is no pattern"""


def _common(held: int, memories: int) -> bool:
    return held >= COMMON_NAME_MEMORIES and held >= COMMON_NAME_SHARE * memories


MAX_QUESTION_WORDS = 25
"""a query longer than this, or of more than one sentence, is a request, not a question: nothing
is checked (RealMem's multi-paragraph messages name every tool they mention)"""
_SENTENCE_END = re.compile(r"[.!?](?:\s+|$)(?=\S)")


def fold(text: str) -> str:
    """Lower case without accents ("Tomás" → "tomas")."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def asked(query: str) -> Asked:
    """What ``query`` asks about and for (pure); nothing for a request of several sentences or
    more than ``MAX_QUESTION_WORDS`` words."""
    if len(query.split()) > MAX_QUESTION_WORDS or _SENTENCE_END.search(query.strip()):
        return Asked()
    names = tuple(dict.fromkeys(n for n in (e.lower() for e in named_entities(query)) if n not in _NOT_NAMES))
    people = tuple(dict.fromkeys(PEOPLE[m.group(1).lower()] for m in _PERSON_AFTER.finditer(query)))
    identifier = _ID_QUESTION.search(query) is not None
    money = not identifier and _MONEY_QUESTION.search(query) is not None
    english = reads_as_english(query) if names or people else True  # read only beside names and roles
    return Asked(names=names, people=people, money=money, identifier=identifier, english=english)


_NON_LATIN = re.compile(  # Greek, Cyrillic, Hebrew, Arabic, Indic, kana, CJK, Hangul
    r"[\u0370-\u03ff\u0400-\u04ff\u0590-\u06ff\u0900-\u0dff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"
)


def _english(content: str) -> bool:
    """``intent.detect.reads_as_english`` for a memory, cheaply: no Greek, Cyrillic, Hebrew,
    Arabic, Indic, Japanese, Chinese or Korean letter, and no more other-language function words
    than English ones."""
    return _NON_LATIN.search(content) is None and english_words_lead(content)


def _any_word(words: Iterable[str]) -> re.Pattern[str]:
    """Any of ``words`` at the start of a word: "Japan" is in "Japanese", "dentist" in "dentists"
    (a refusal is the costly mistake here, so the match leans to finding)."""
    return re.compile("(?<!\\w)(?:" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) + ")")


def answers(question: Asked, content: str) -> bool:
    """Whether a memory of ``content`` can answer ``question``: it mentions one of the names the
    question gives (or the question gives none), each person the question names by role, and the
    kind of figure it asks for. Names and roles are looked for only in a memory written the way the
    question is (``Asked.english``)."""
    if not question.checks:
        return True
    if question.names or question.people:
        folded = fold(content)
        unnamed = question.named is not None and question.named.search(folded) is None
        if (unnamed or any(r.search(folded) is None for r in question.roles)) and _english(content) is question.english:
            return False
    if question.identifier and not any(sum(c.isdigit() for c in m.group(0)) >= 5 for m in _DIGIT_RUN.finditer(content)):
        return False
    return not (question.money and not _DIGIT.search(content) and not _NUMBER_WORDS.search(content))
