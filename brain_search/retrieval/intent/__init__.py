"""Where on the Z axis a query wants its results: the regex detector over cue data, and the
learned model on top of it.

- ``types``    ``QueryIntent`` (every fact later stages read), ``Cue``, the detector protocol
- ``cues``     the cues as data (``CUES``) and the constants that combine them
- ``lexicon``  the vocabulary: quotes, money, dates, names, statement and request words
- ``detect``   ``analyze``: the regex detector (pure)
- ``model``    the learned detector (query vector + n-grams + the regex's output)
"""

from brain_search.retrieval.intent.cues import CUES
from brain_search.retrieval.intent.detect import (
    RegexIntentDetector,
    analyze,
    code_strings,
    extract_phrases,
    intent_for_z,
    is_bare_code,
    is_bare_quote,
    is_statement,
    named_entities,
    quotes_as_emphasis,
    reads_as_english,
    z_tolerance_for,
)
from brain_search.retrieval.intent.types import Cue, IntentDetector, QueryIntent
from brain_search.retrieval.zscale import TIER_BOUNDS, TIER_TARGETS

__all__ = [
    "CUES",
    "TIER_BOUNDS",
    "TIER_TARGETS",
    "Cue",
    "IntentDetector",
    "QueryIntent",
    "RegexIntentDetector",
    "analyze",
    "code_strings",
    "extract_phrases",
    "intent_for_z",
    "is_bare_code",
    "is_bare_quote",
    "is_statement",
    "named_entities",
    "quotes_as_emphasis",
    "reads_as_english",
    "z_tolerance_for",
]
