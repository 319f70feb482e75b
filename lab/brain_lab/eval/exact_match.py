"""The spec's exact-match precision: when the query quotes a phrase, does the top result contain it?

Phrases are sampled with a fixed seed from the evaluation corpora (LoCoMo turns, SciFact abstracts):
windows of 4–8 words within one sentence that occur in exactly one memory of their tenant, so "the top result
contains the phrase" has one right answer. Each phrase is asked in one of several phrasings (with
straight and curly quotes, with and without surrounding words). Containment is checked on text
normalised for Unicode width, case, quotes, punctuation and whitespace.
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from brain_lab.eval.baselines import RetrievalSystem
from brain_lab.eval.datasets import Memory

PHRASINGS: dict[str, str] = {
    "find_where_said": 'Find where I said "{p}"',
    "bare_quotes": '"{p}"',
    "quote_command": 'quote "{p}"',
    "curly_bare": "“{p}”",
    "curly_find": "Find where I said “{p}”",
    "surrounded": 'what was going on when "{p}" came up?',
}
QUOTE_CHARS = "\"'“”‘’«»„‟`´"
_WS = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Compatibility-folded, lower-cased, punctuation and symbols turned to spaces, spaces collapsed."""
    folded = unicodedata.normalize("NFKC", text).lower()
    chars = [" " if unicodedata.category(c)[0] in "PSZC" else c for c in folded]
    return _WS.sub(" ", "".join(chars)).strip()


def contains_phrase(content: str, phrase: str) -> bool:
    """Whole-word containment of ``phrase`` in ``content`` after ``normalize``."""
    p = normalize(phrase)
    return bool(p) and f" {p} " in f" {normalize(content)} "


@dataclass(frozen=True)
class Phrase:
    phrase_id: str
    tenant_id: str
    memory_id: str
    text: str
    corpus: str


@dataclass(frozen=True)
class PhraseQuery:
    phrase: Phrase
    phrasing: str
    query: str


def doc_split(memory_id: str, dev_share: float = 0.6) -> str:
    """A fixed dev/test assignment of a document by hash (SciFact's corpus serves both splits)."""
    h = int(hashlib.sha256(memory_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "dev" if h < dev_share else "test"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _window(text: str, rng: random.Random, min_words: int, max_words: int) -> str | None:
    """A run of ``min_words``–``max_words`` words inside one sentence of ``text`` (a person quotes
    a stretch of one sentence, rarely the end of one and the start of the next)."""
    sentences = [s.split() for s in _SENTENCE_END.split(text)]
    sentences = [w for w in sentences if len(w) >= min_words]
    if not sentences:
        return None
    words = rng.choice(sentences)
    n = rng.randint(min_words, min(max_words, len(words)))
    start = rng.randint(0, len(words) - n)
    return " ".join(words[start : start + n]).strip(".,;:!?()[]{}-–— ")


def sample_phrases(
    pools: dict[str, list[Memory]],
    n: int,
    seed: int,
    corpus: str,
    text_of: Callable[[Memory], str] = lambda m: m.content,
    eligible: Callable[[Memory], bool] = lambda m: True,
    min_words: int = 4,
    max_words: int = 8,
    max_attempts: int = 50,
) -> list[Phrase]:
    """``n`` phrases that occur in exactly one memory of their tenant (fixed seed, spread over
    tenants round-robin). ``text_of`` picks the part of a memory phrases come from, ``eligible``
    which memories may give one; uniqueness is always checked against the whole tenant."""
    rng = random.Random(seed)
    normalized = {t: [f" {normalize(m.content)} " for m in ms] for t, ms in pools.items()}
    candidates = {t: [m for m in ms if eligible(m)] for t, ms in pools.items()}
    tenants = sorted(t for t, ms in candidates.items() if ms)
    if not tenants:
        return []
    out: list[Phrase] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < n and attempts < n * max_attempts:
        attempts += 1
        tenant = tenants[len(out) % len(tenants)]
        mem = rng.choice(candidates[tenant])
        candidate = _window(text_of(mem), rng, min_words, max_words)
        if not candidate or any(q in candidate for q in QUOTE_CHARS):
            continue
        norm = normalize(candidate)
        if len(norm) < 15 or len(norm.split()) < min_words or norm in seen:
            continue
        needle = f" {norm} "
        if sum(1 for text in normalized[tenant] if needle in text) != 1:
            continue
        seen.add(norm)
        out.append(Phrase(f"{corpus}-{len(out)}", tenant, mem.memory_id, candidate, corpus))
    return out


def phrase_queries(phrases: Sequence[Phrase], seed: int) -> list[PhraseQuery]:
    """Each phrase asked in one phrasing; phrasings are dealt out evenly in a seeded order."""
    rng = random.Random(seed)
    order = list(range(len(phrases)))
    rng.shuffle(order)
    names = list(PHRASINGS)
    out: list[PhraseQuery] = [None] * len(phrases)  # type: ignore[list-item]
    for slot, i in enumerate(order):
        name = names[slot % len(names)]
        out[i] = PhraseQuery(phrases[i], name, PHRASINGS[name].format(p=phrases[i].text))
    return out


@dataclass
class ExactMatchFailure:
    system: str
    query: str
    phrasing: str
    corpus: str
    tenant_id: str
    expected: str
    top_id: str | None
    top_content: str
    rank_of_expected: int | None


@dataclass
class ExactMatchResult:
    split: str
    queries: list[PhraseQuery]
    hits: dict[str, dict[str, bool]] = field(default_factory=dict)
    """system → phrase id → top result contains the phrase."""
    failures: list[ExactMatchFailure] = field(default_factory=list)

    def precision(self, system: str, phrasing: str | None = None, corpus: str | None = None) -> float:
        sel = [
            q.phrase.phrase_id
            for q in self.queries
            if (phrasing is None or q.phrasing == phrasing) and (corpus is None or q.phrase.corpus == corpus)
        ]
        vals = [self.hits[system][i] for i in sel]
        return sum(vals) / len(vals) if vals else 0.0

    def counts(self) -> Counter[str]:
        return Counter(q.phrase.corpus for q in self.queries)


def evaluate_exact_match(
    queries: Sequence[PhraseQuery],
    systems: Sequence[RetrievalSystem],
    contents: dict[tuple[str, str], str],
    split: str,
    limit: int = 10,
    progress: Callable[[int], None] | None = None,
) -> ExactMatchResult:
    """precision@1 per system: the first result contains the quoted phrase (normalised)."""
    result = ExactMatchResult(split=split, queries=list(queries))
    hits: dict[str, dict[str, bool]] = defaultdict(dict)
    for pq in queries:
        ph = pq.phrase
        for system in systems:
            ranked = system.search(ph.tenant_id, pq.query, limit)
            top = ranked[0] if ranked else None
            top_content = contents.get((ph.tenant_id, top), "") if top else ""
            ok = contains_phrase(top_content, ph.text)
            hits[system.name][ph.phrase_id] = ok
            if not ok:
                rank = ranked.index(ph.memory_id) + 1 if ph.memory_id in ranked else None
                result.failures.append(
                    ExactMatchFailure(
                        system.name, pq.query, pq.phrasing, ph.corpus, ph.tenant_id, ph.text, top, top_content, rank
                    )
                )
        if progress:
            progress(1)
    result.hits = dict(hits)
    return result
