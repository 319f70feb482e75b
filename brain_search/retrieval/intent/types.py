"""The intent detector's types: a cue, the detected intent every later stage reads, the protocol."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from brain_search.models import Intent


@dataclass(frozen=True)
class Cue:
    name: str
    pattern: re.Pattern[str]
    z: float
    weight: float
    strip: bool = True  # remove the matched words from the lexical query
    bound: str | None = None  # "ceil": an explicit request for exactness caps the target; "floor": for breadth
    # only introduces the topic ("notes on", "anything about"): ignored when another cue fired
    topic: bool = False
    # the question's form ("how much", "did we"): ignored beside an exact, opinion or exploration cue
    form: bool = False


@dataclass(frozen=True)
class QueryIntent:
    detected_intent: Intent
    target_z: float
    z_tolerance: float
    confidence: float
    cues: tuple[str, ...]
    lexical_query: str
    phrases: tuple[str, ...]
    # what the query is, as the detector found it (later stages read these instead of re-parsing)
    statement: bool = False
    """a plain statement (``is_statement``): it asks for nothing but its topic"""
    emphasis_quotes: bool = False
    """it quotes phrases, as emphasis or coined terms, not as words to find (``quotes_as_emphasis``)"""
    bare_quote: bool = False
    """nothing but quoted words (``is_bare_quote``)"""


class IntentDetector(Protocol):
    def analyze(self, query: str, vector: np.ndarray | None = None) -> QueryIntent:
        """``vector``: the query's sentence embedding where the caller has it (a learned detector
        reads it; the regex detector ignores it)."""
        ...
