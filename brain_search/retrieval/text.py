"""The service's text helpers, one place: stop words, normalisation for phrase containment, and a
query's topic terms. The engine's analyzers do the indexing; these read texts the API holds (the
query, a candidate's content)."""

from __future__ import annotations

import re
from functools import lru_cache

_NON_ALNUM = re.compile(r"[^\w]+", re.UNICODE)
# Han, Hiragana and Katakana: written without spaces, so each character is a word of its own here
# (the engine's standard tokenizer reads them the same way: one token a character)
_CJK = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f])")

# Words that carry no topic; they do not count as query terms for coverage.
STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then there
    these they this to was will with i me my mine we us our you your he him his she her it its them what
    which who whom whose when where why how do does did done have has had having am been being can could
    would should shall may might must about any some all just so than too very again also up down out
    over under s t don't didn't i'm i've we're""".split()
)


@lru_cache(maxsize=8192)
def normalize_text(text: str) -> str:
    """Lower-case, punctuation and whitespace folded to single spaces, each Han, Hiragana or
    Katakana character a word (for phrase containment).

    Cached: a recall tests each candidate against the same phrases, and the same memories come
    back across recalls."""
    return " ".join(_NON_ALNUM.sub(" ", _CJK.sub(r" \1 ", text.lower().replace("_", " "))).split())


@lru_cache(maxsize=8192)
def padded_text(text: str) -> str:
    """``normalize_text`` between two spaces ("" when nothing is left): a phrase occurs in a text
    on word boundaries when its padded form is in the text's (cached like ``normalize_text``)."""
    n = normalize_text(text)
    return f" {n} " if n else ""


def query_terms(text: str, limit: int = 16) -> list[str]:
    """Distinct topic words of a query, in order (stopwords dropped unless nothing else is left)."""
    words = [w for w in normalize_text(text).split() if w]
    terms = [w for w in words if w not in STOPWORDS]
    chosen = terms or words
    return list(dict.fromkeys(chosen))[:limit]
