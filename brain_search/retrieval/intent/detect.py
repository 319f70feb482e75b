"""Query intent: where on the Z axis (exact ↔ broad) a query wants its results.

Cues are data (``cues.CUES``; the vocabulary in ``lexicon``): each is a bounded regex with a Z it
pulls toward and a weight. Cues are matched most specific first and a matched span is consumed,
so "what do I think about" counts once (not also as "think about"). The target Z is the weighted
mean of the cues that fired; with none, the query is balanced (spec 3.2). Every regex is
linear-time: no nested quantifiers, and the input is length-checked before any matching.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from brain_search.errors import InvalidInput
from brain_search.models import MAX_PHRASES, MAX_QUERY_CHARS, Intent
from brain_search.retrieval.intent.cues import (
    BROAD_FLOOR,
    CUES,
    EXACT_CEILING,
    EXAMPLE_QUOTE_WEIGHT,
    STATEMENT_CUE_MAX_Z,
)
from brain_search.retrieval.intent.lexicon import (
    ABSTRACT_NOUNS,
    CLOSERS,
    CODE,
    CODE_SEARCH_WORDS,
    DATE,
    ENGLISH_WORDS,
    ENTITY,
    GERMAN_WORDS,
    IMPERATIVE_NEXT,
    LEAD_FILLER,
    MONEY,
    NAME_AFTER_PREP,
    NUMBER,
    OTHER_WORDS,
    POSSESSIVE_NAME,
    QUOTED,
    RELATIVE_DATE,
    REPORTED_SPEECH,
    REQUEST_LEAD,
    REQUEST_ONLY,
    REQUEST_TAIL,
    REQUEST_VERBS,
    SENTENCE_OPENERS,
    STATEMENT_OPENERS,
    TRACKING,
    WORD,
)
from brain_search.retrieval.intent.types import QueryIntent
from brain_search.retrieval.zscale import intent_tier


def z_tolerance_for(confidence: float) -> float:
    """The Z tolerance (0–1) that goes with a detection's confidence (0–1)."""
    return 0.2 if confidence > 0.7 else 0.35 if confidence > 0.4 else 0.3


def intent_for_z(z: float) -> Intent:
    """The tier a Z falls in (``zscale.intent_tier``)."""
    return intent_tier(z)


def named_entities(text: str) -> list[str]:
    """Capitalised words that are not sentence-initial, and acronyms (CTO, Q2, PR). A sentence
    may open after Spanish ¿ ¡ or an opening quote; in German, where every noun is capitalised,
    only acronyms count (``reads_as_german``)."""
    german = reads_as_german(text)
    out = []
    for m in ENTITY.finditer(text):
        before = text[: m.start()].rstrip()
        if m.group(0) == "I" or not before or before[-1] in SENTENCE_OPENERS:
            continue
        if german and not any(c.isdigit() for c in m.group(0)) and not m.group(0).isupper():
            continue
        out.append(m.group(0))
    return out


def reads_as_german(text: str) -> bool:
    """Two distinct German function words that English does not share, or one and a word with
    ä, ö, ü or ß."""
    words = {w.lower() for w in WORD.findall(text)}
    hits = len(GERMAN_WORDS.intersection(words))
    return hits >= 2 or (hits == 1 and any(c in w for w in words for c in "äöüß"))


def reads_as_english(text: str) -> bool:
    """Whether a question is written in English (pure): mostly Latin letters (not Chinese,
    Japanese, Korean, Cyrillic, Greek, Arabic …; a claim's "IL-1β" stays English) and no more
    function words of German, Spanish, French, Portuguese or Italian than of English. A name with
    an accent ("Tomás") stays English."""
    letters = [c for c in text if c.isalpha()]
    latin = sum("LATIN" in unicodedata.name(c, "") for c in letters)
    if latin * 2 < len(letters):
        return False
    return english_words_lead(text)


def english_words_lead(text: str) -> bool:
    """Whether ``text`` holds no more function words of German, Spanish, French, Portuguese or
    Italian than of English (pure; the second half of ``reads_as_english``)."""
    words = {w.lower().strip("'’") for w in WORD.findall(text)}
    return len(OTHER_WORDS.intersection(words)) <= len(ENGLISH_WORDS.intersection(words))


def extract_phrases(query: str) -> list[str]:
    """Quoted phrases in straight, curly or single quotes (apostrophes inside words excluded)."""
    out: list[str] = []
    for m in QUOTED.finditer(query):
        phrase = next(g for g in m.groups() if g is not None).strip()
        if phrase and phrase not in out:
            out.append(phrase)
    if len(out) > MAX_PHRASES:
        raise InvalidInput("query", f"at most {MAX_PHRASES} distinct quoted phrases (got {len(out)})")
    return out


def is_statement(query: str) -> bool:
    """A declarative sentence: ends with one full stop (not "..." or "?"; a closing quote or
    bracket may follow it) and does not open with a question word, an auxiliary, a request
    ("Find ...", "Show me ...", "I need ...") or an imperative verb ("Explain ...", "Map out ...")."""
    text = query.strip().rstrip(CLOSERS)
    if not text.endswith(".") or text.endswith("..") or REQUEST_LEAD.match(text):
        return False
    if REQUEST_TAIL.search(text):
        return False
    words = text.split(maxsplit=2)
    token = words[0].strip("\"'“‘(")
    first = token.lower()
    following = words[1].lower().strip("\"'“‘(,") if len(words) > 1 else ""
    if first in REQUEST_VERBS and following in IMPERATIVE_NEXT and not token.isupper():
        return False
    return first not in STATEMENT_OPENERS


def is_bare_quote(query: str) -> bool:
    """The query is nothing but quoted words (``"10% each for"``, ``“a CTO who still codes”.``):
    there is nothing else it could ask for than those words."""
    return bool(QUOTED.search(query)) and not WORD.search(QUOTED.sub(" ", query))


# identifier strings: a hashtag, a snake_case name or key prefix, a ticket or invoice number
# (INC-4471, INV-2023-0417), a tracking code (1Z999AA10123456784)


def code_strings(query: str) -> list[str]:
    """The identifier strings in ``query`` (``CODE``; a tracking code: 8+ letters and digits with
    at least three digits and two letters)."""
    out = [m.group() for m in CODE.finditer(query)]
    for m in TRACKING.finditer(query):
        t = m.group()
        if sum(c.isdigit() for c in t) >= 3 and sum(c.isalpha() for c in t) >= 2 and t not in out:
            out.append(t)
    return out


def is_bare_code(query: str) -> bool:
    """The query asks for identifier strings and nothing else (``code_strings``, beside at most
    the words of a search: ``CODE_SEARCH_WORDS``): ``ERR_CONN_RESET``, ``#reno-week3``, ``INC-4471
    mentions``. A string has no meaning to broaden: the user wants the memories holding it."""
    return not is_statement(query) and _only_codes(query)


def _only_codes(query: str) -> bool:
    """``is_bare_code`` without the statement check (for a caller that has made it)."""
    codes = code_strings(query)
    if not codes:
        return False
    rest = query
    for c in codes:
        rest = rest.replace(c, " ")
    return all(w.lower().strip("'’") in CODE_SEARCH_WORDS for w in WORD.findall(rest))


def quotes_as_emphasis(query: str) -> bool:
    """In a statement, quotes mark emphasis or a coined term, not words to find: true when the
    query is a statement with words outside its quotes and no quote reports speech or writing.
    ``Tom said "ship it" on Friday.`` and a bare ``"ship it."`` stay requests for the words."""
    if not is_statement(query):
        return False
    spans = [m.span() for m in QUOTED.finditer(query)]
    if not spans:
        return False
    outside = QUOTED.sub(" ", query)
    if len(WORD.findall(outside)) < 2:
        return False
    # the verb sits within three words of the quote: a bounded look-back keeps this linear
    return not any(REPORTED_SPEECH.search(query[max(0, s - 80) : s]) for s, _ in spans)


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(span[0] < e and s < span[1] for s, e in taken)


def analyze(query: str, max_chars: int = MAX_QUERY_CHARS) -> QueryIntent:
    """Detect the Z target of ``query``. ``target_z``, ``z_tolerance`` and ``confidence`` are 0–1."""
    if len(query) > max_chars:
        raise InvalidInput("query", f"longer than {max_chars} characters")
    if not query.strip():
        raise InvalidInput("query", "empty")
    fired: list[tuple[str, float, float]] = []
    taken: list[tuple[int, int]] = []
    strip_spans: list[tuple[int, int]] = []
    bounds: set[str] = set()
    topic_cues: set[str] = set()
    form_cues: set[str] = set()

    phrases = extract_phrases(query)
    for m in QUOTED.finditer(query):
        taken.append(m.span())
    statement = is_statement(query)
    emphasis = bool(phrases) and quotes_as_emphasis(query)
    facts = {"statement": statement, "emphasis_quotes": emphasis, "bare_quote": is_bare_quote(query)}
    # emphasis quotes still count as phrases (a memory holding them ranks higher) but pull no Z
    if phrases and not emphasis:
        fired.append(("quoted_phrase", 0.05, 3.0))
    if not statement and _only_codes(query):  # is_bare_code, with the statement test made above
        fired.append(("code_string", 0.05, 3.0))

    for cue in CUES:
        for m in cue.pattern.finditer(query):
            if _overlaps(m.span(), taken):
                continue
            taken.append(m.span())
            if cue.strip:
                strip_spans.append(m.span())
            fired.append((cue.name, cue.z, cue.weight))
            if cue.topic:
                topic_cues.add(cue.name)
            if cue.form:
                form_cues.add(cue.name)
            if cue.bound:
                bounds.add(cue.bound)
            break  # one firing per cue

    if any(n not in topic_cues for n, _, _ in fired):
        fired = [f for f in fired if f[0] not in topic_cues]
    # a question's form ("how much", "which", "did we") yields to an explicit request for the
    # literal words or for an opinion / exploration
    if any(z >= 0.6 or z <= 0.2 for n, z, _ in fired if n not in form_cues):
        fired = [f for f in fired if f[0] not in form_cues]
    # A plain statement ("Sarah moved to Lisbon in 2019.") asks for nothing: its names, numbers and
    # nouns are what it is about, and so are words that would be cues in a request ("a pattern of
    # late invoices", "thinks it was a good idea", "the number of cells rises"). Only an explicit
    # request for the literal words counts: a quote of what was said, "word for word", "exactly".
    if statement:
        fired = [f for f in fired if f[1] <= STATEMENT_CUE_MAX_Z and f[0] not in REQUEST_ONLY]
    blanked = list(query)  # the query with every span a cue or a quote took blanked out
    for start, end in taken:
        blanked[start:end] = " " * (end - start)
    outside = "".join(blanked)
    # An opinion / theme cue makes specifics (names, numbers) the topic, not a request for exactness.
    soft = any(z >= 0.6 for _, z, _ in fired)
    if fired and fired[0][0] == "quoted_phrase" and any(z >= 0.75 for n, z, _ in fired if n != "quoted_phrase"):
        fired[0] = ("quoted_phrase", 0.05, EXAMPLE_QUOTE_WEIGHT)  # "ideas similar to '...'": the quote is an example
    spec_w = 0.3 if soft else 1.0
    specific = statement
    if not statement and MONEY.search(outside):
        fired.append(("money_or_percent", 0.2, 1.0 * spec_w))
        specific = True
    if not statement and (DATE.search(outside) or RELATIVE_DATE.search(outside)):
        fired.append(("date", 0.25, 1.0 * spec_w))
        specific = True
    elif NUMBER.search(outside) and not specific:
        fired.append(("number", 0.25, 0.7 * spec_w))
        specific = True
    if not statement and (POSSESSIVE_NAME.search(outside) or NAME_AFTER_PREP.search(outside)):
        fired.append(("proper_noun_with_modifier", 0.3, 1.0 * spec_w))
        specific = True
    elif not statement and named_entities(outside):
        fired.append(("named_entity", 0.3, 1.0 * spec_w))
        specific = True
    words = [w.lower().strip("'’") for w in WORD.findall(outside)]
    # in a factual question ("when did we last change the filter") an abstract noun is just its topic
    factual = any(n in form_cues for n, _, _ in fired)
    if not specific and not phrases and not factual and any(w in ABSTRACT_NOUNS for w in words):
        fired.append(("abstract_noun", 0.75, 0.75))

    lexical_query = _strip_spans(query, strip_spans)
    if not fired:
        return QueryIntent(Intent.balanced, 0.5, 0.3, 0.5, (), lexical_query, tuple(phrases), **facts)
    total = sum(w for _, _, w in fired)
    target = sum(z * w for _, z, w in fired) / total
    if "floor" in bounds and "ceil" not in bounds:
        target = max(target, BROAD_FLOOR)
    elif "ceil" in bounds and "floor" not in bounds:
        target = min(target, EXACT_CEILING)
    spread = (sum(w * (z - target) ** 2 for _, z, w in fired) / total) ** 0.5
    confidence = max(0.05, min(1.0, total / 3.0) * (1.0 - min(spread, 0.5)))
    tolerance = z_tolerance_for(confidence)
    return QueryIntent(
        detected_intent=intent_for_z(target),
        target_z=round(target, 4),
        z_tolerance=tolerance,
        confidence=round(confidence, 4),
        cues=tuple(n for n, _, _ in fired),
        lexical_query=lexical_query,
        phrases=tuple(phrases),
        **facts,
    )


def _strip_spans(query: str, spans: list[tuple[int, int]]) -> str:
    """The query minus cue words (quoted phrases keep their words), minus leading filler."""
    out = []
    last = 0
    for s, e in sorted(spans):
        out.append(query[last:s])
        last = max(last, e)
    out.append(query[last:])
    text = " ".join("".join(out).split())
    text = QUOTED.sub(lambda m: " " + next(g for g in m.groups() if g is not None) + " ", text)
    stripped = LEAD_FILLER.sub("", text).strip(" \t?.!,;:")
    return " ".join(stripped.split()) or " ".join(text.split()).strip(" ?.!")


class RegexIntentDetector:
    """The default detector (the `IntentDetector` protocol's implementation)."""

    def __init__(self, max_chars: int = MAX_QUERY_CHARS) -> None:
        self.max_chars = max_chars

    def analyze(self, query: str, vector: np.ndarray | None = None) -> QueryIntent:
        return analyze(query, self.max_chars)
