"""Learned intent: a multinomial logistic regression on top of the regex detector.

The regex cues (``brain_search.retrieval.intent``) are precise where they fire but do not generalise to new
phrasings (each new batch of dev queries scored 0.67–0.80 when first seen). The model reads the
query's sentence embedding (the vector recall computes anyway), the regex detector's own output
(its tier, target Z, confidence and which kinds of cue fired) and which of the word unigrams and
bigrams seen in its training rows the query holds (``ngrams``: the embedding says what a query is
about, the function words say what it asks for), and predicts the tier. A hybrid rule decides
(``HybridRule``): the regex may be kept where the query quotes the words to find or is a plain
statement; where no cue fired the model decides, and it overrides fired cues only when confident
enough; a change gives the model's tier and that tier's centre Z.

The weights ship as package data (``brain_search/data/intent_model.json``, with provenance) and are
fitted by ``lab/scripts/fit_intent.py`` (``brain_lab.eval.intent_fit``) from the dev rows only.
Nothing is loaded at import time: the detector reads the file on its first use.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from brain_search.models import MAX_QUERY_CHARS, Intent
from brain_search.retrieval.intent import (
    CUES,
    IntentDetector,
    QueryIntent,
    RegexIntentDetector,
    analyze,
    intent_for_z,
    reads_as_english,
    z_tolerance_for,
)
from brain_search.retrieval.zscale import TIER_TARGETS

TIERS: tuple[Intent, ...] = tuple(Intent)  # exact < precise < balanced < conceptual < broad
DEFAULT_MODEL_PATH = Path(__file__).resolve().parents[2] / "data" / "intent_model.json"
# the cues ``analyze`` adds outside ``CUES`` (quotes and specifics) and the Z each pulls toward
_OTHER_CUE_Z = {
    "quoted_phrase": 0.05,
    "code_string": 0.05,
    "money_or_percent": 0.2,
    "date": 0.25,
    "number": 0.25,
    "proper_noun_with_modifier": 0.3,
    "named_entity": 0.3,
    "abstract_noun": 0.75,
}


@dataclass(frozen=True)
class CueTable:
    """What the features need to know of a detector's cues: the Z each pulls toward and which
    bound the target (a historical detector, for validation, brings its own)."""

    z: dict[str, float]
    ceil: frozenset[str]
    floor: frozenset[str]


def cue_table(cues: Sequence[Any] = CUES) -> CueTable:
    """From cue objects with ``name``, ``z`` and optionally ``bound``."""
    return CueTable(
        {**{c.name: c.z for c in cues}, **_OTHER_CUE_Z},
        frozenset(c.name for c in cues if getattr(c, "bound", None) == "ceil"),
        frozenset(c.name for c in cues if getattr(c, "bound", None) == "floor"),
    )


REGEX_FEATURES: tuple[str, ...] = (
    *(f"regex_tier_{t.value}" for t in TIERS),
    "regex_target_z",
    "regex_confidence",
    *(f"cues_toward_{t.value}" for t in TIERS),
    "quoted_phrase",
    "emphasis_quotes",
    "statement",
    "ceil_cue",
    "floor_cue",
    "log_words",
)


@functools.cache
def _current_table() -> CueTable:
    return cue_table()


def regex_features(query: str, qi: QueryIntent, table: CueTable | None = None) -> np.ndarray:
    """The regex detector's output as numbers (``REGEX_FEATURES`` order)."""
    table = table or _current_table()
    tier = [1.0 if qi.detected_intent is t else 0.0 for t in TIERS]
    toward = [0.0] * len(TIERS)
    for name in qi.cues:
        toward[TIERS.index(intent_for_z(table.z.get(name, 0.5)))] += 1.0
    cues = set(qi.cues)
    return np.array(
        [
            *tier,
            qi.target_z,
            qi.confidence,
            *toward,
            float("quoted_phrase" in cues),
            float(qi.emphasis_quotes),
            float(qi.statement),
            float(bool(cues & table.ceil)),
            float(bool(cues & table.floor)),
            float(np.log1p(len(query.split()))),
        ],
        dtype=np.float64,
    )


_NGRAM_TOKEN = re.compile(r"[a-z0-9']+|[\"“”?]")


def ngrams(query: str) -> frozenset[str]:
    """The query's lower-cased word unigrams and bigrams (the first word also as ``<s> word``;
    a run of digits is ``<num>``; quote marks and ``?`` are tokens)."""
    toks = ["<num>" if t.isdigit() else t for t in _NGRAM_TOKEN.findall(query.lower())]
    return frozenset(toks) | frozenset(f"{a} {b}" for a, b in zip(["<s>", *toks], toks, strict=False))


def ngram_vocab(queries: Iterable[str], min_count: int) -> tuple[str, ...]:
    """The n-grams held by at least ``min_count`` of ``queries``, sorted."""
    counts = Counter(g for q in queries for g in ngrams(q))
    return tuple(sorted(g for g, c in counts.items() if c >= min_count))


def features(
    query: str,
    qi: QueryIntent,
    vector: np.ndarray,
    table: CueTable | None = None,
    *,
    vocab: Mapping[str, int] | None = None,
) -> np.ndarray:
    """One row: the sentence embedding (384 floats, L2-normalised), ``regex_features``, then one
    0/1 per n-gram of ``vocab`` (n-gram → column)."""
    parts = [np.asarray(vector, dtype=np.float64).ravel(), regex_features(query, qi, table)]
    if vocab:
        grams = np.zeros(len(vocab), dtype=np.float64)
        for g in ngrams(query):
            if (i := vocab.get(g)) is not None:
                grams[i] = 1.0
        parts.append(grams)
    return np.concatenate(parts)


@dataclass(frozen=True)
class IntentModel:
    """Softmax over ``TIERS`` of ``((x - mean) / scale) @ weights + bias``."""

    weights: np.ndarray  # (n_features, n_tiers)
    bias: np.ndarray  # (n_tiers,)
    mean: np.ndarray  # (n_features,)
    scale: np.ndarray  # (n_features,)
    provenance: dict[str, Any] = field(default_factory=dict)
    vocab: tuple[str, ...] = ()  # the n-gram columns, after the embedding and the regex features

    @functools.cached_property
    def vocab_index(self) -> dict[str, int]:
        return {g: i for i, g in enumerate(self.vocab)}

    def featurize(self, query: str, qi: QueryIntent, vector: np.ndarray, table: CueTable | None = None) -> np.ndarray:
        """``features`` with this model's n-gram columns."""
        return features(query, qi, vector, table, vocab=self.vocab_index)

    def proba(self, x: np.ndarray) -> np.ndarray:
        """Tier probabilities (rows sum to 1) for feature rows ``x`` of shape (n, n_features)."""
        return _softmax(((np.atleast_2d(x) - self.mean) / self.scale) @ self.weights + self.bias)

    def to_json(self) -> dict[str, Any]:
        return {
            "tiers": [t.value for t in TIERS],
            "regex_features": list(REGEX_FEATURES),
            "ngrams": list(self.vocab),
            "provenance": self.provenance,
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "bias": self.bias.tolist(),
            "weights": self.weights.tolist(),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IntentModel:
        if d.get("tiers") != [t.value for t in TIERS] or d.get("regex_features") != list(REGEX_FEATURES):
            raise ValueError("the intent model was fitted for other tiers or regex features: refit it")
        model = cls(
            weights=np.array(d["weights"], dtype=np.float64),
            bias=np.array(d["bias"], dtype=np.float64),
            mean=np.array(d["mean"], dtype=np.float64),
            scale=np.array(d["scale"], dtype=np.float64),
            provenance=dict(d.get("provenance", {})),
            vocab=tuple(d.get("ngrams", ())),
        )
        n = model.weights.shape[0]
        if model.mean.shape != (n,) or model.scale.shape != (n,) or n < len(model.vocab):
            raise ValueError("the intent model's arrays do not match its features: refit it")
        return model


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    out: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return out


def fit_softmax(x: np.ndarray, y: np.ndarray, l2: float, iterations: int = 3000) -> IntentModel:
    """Multinomial logistic regression: mean cross-entropy + ``l2``/2 · ‖W‖² (bias free), on
    standardised features, by Nesterov-accelerated gradient descent from zero (convex: one optimum;
    no randomness: the same rows give the same weights). ``y``: tier indices 0–4."""
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    xs = (x - mean) / scale
    n, d = xs.shape
    k = len(TIERS)
    onehot = np.eye(k)[y]
    # step 1/L: the cross-entropy's gradient is (‖X‖²/n)/2-Lipschitz (plus l2 for the penalty)
    lip = float(np.linalg.norm(xs, 2) ** 2 + n) / (2 * n) + l2
    w, b = np.zeros((d, k)), np.zeros(k)
    w_prev, b_prev = w, b
    for t in range(1, iterations + 1):
        mom = (t - 1) / (t + 2)
        vw, vb = w + mom * (w - w_prev), b + mom * (b - b_prev)
        g = (_softmax(xs @ vw + vb) - onehot) / n
        w_prev, b_prev = w, b
        w = vw - (xs.T @ g + l2 * vw) / lip
        b = vb - g.sum(axis=0) / lip
    return IntentModel(weights=w, bias=b, mean=mean, scale=scale)


def load_model(path: Path = DEFAULT_MODEL_PATH) -> IntentModel:
    return IntentModel.from_json(json.loads(path.read_text()))


@dataclass(frozen=True)
class HybridRule:
    """When the model's tier replaces the regex's.

    With ``keep_quoted`` the regex stands where the query quotes words (its quoted-phrase cue);
    it always stands where the query is nothing but quoted words (``is_bare_quote``); with
    ``keep_statements``, where the query is a plain statement (``is_statement``: a claim asks
    for nothing, and the regex sends it to balanced on purpose). Elsewhere, where no regex cue
    fired (its default, balanced) the model decides; where cues fired, it overrides them only with
    a probability of at least ``min_probability`` (a name, a date or an opinion word is evidence
    the model must beat). Quoted words are searched as phrases whatever the tier (the phrase
    clauses and the phrase bonus come from the regex's ``phrases``), so letting the model read a
    quoted query changes its target Z, not whether the quote is found."""

    min_probability: float = 0.0
    keep_statements: bool = True
    keep_quoted: bool = True

    @property
    def label(self) -> str:
        kept = [n for n, k in (("quoted", self.keep_quoted), ("statements", self.keep_statements)) if k]
        return f"p>={self.min_probability}" + (f" keep {'+'.join(kept)}" if kept else "")


def regex_stands(query: str, regex: QueryIntent, rule: HybridRule) -> bool:
    """Whether ``rule`` keeps ``regex`` whatever the model says (a quoted search; a statement)."""
    if "quoted_phrase" in regex.cues and (rule.keep_quoted or regex.bare_quote):
        return True
    if "code_string" in regex.cues:  # a search for identifier strings only (``is_bare_code``)
        return True
    return rule.keep_statements and regex.statement


def model_decides(query: str, regex: QueryIntent, p: float, rule: HybridRule) -> bool:
    """Whether ``rule`` lets the model's tier (probability ``p``) replace ``regex`` for ``query``."""
    if regex_stands(query, regex, rule):
        return False
    return not regex.cues or p >= rule.min_probability


def combine(query: str, regex: QueryIntent, probs: np.ndarray, rule: HybridRule) -> QueryIntent:
    """The regex result, or the model's tier (target Z: the tier's centre; confidence: its
    probability) where ``rule`` lets the model decide. Lexical query, phrases and cues stay the
    regex's (they drive BM25 and the phrase bonus); a change adds the cue ``learned_<tier>``."""
    best = int(np.argmax(probs))
    tier, p = TIERS[best], float(probs[best])
    if tier is regex.detected_intent or not model_decides(query, regex, p, rule):
        return regex
    conf = round(p, 4)
    return replace(
        regex,
        detected_intent=tier,
        target_z=TIER_TARGETS[tier],
        z_tolerance=z_tolerance_for(conf),
        confidence=conf,
        cues=(*regex.cues, f"learned_{tier.value}"),
    )


class LearnedIntentDetector:
    """The regex detector corrected by the learned model (the ``IntentDetector`` protocol).

    Without a vector it is the regex detector. The model file is read on first use."""

    def __init__(
        self,
        model_path: Path = DEFAULT_MODEL_PATH,
        rule: HybridRule | None = None,
        max_chars: int = MAX_QUERY_CHARS,
        cache_size: int = 1024,
    ) -> None:
        self.model_path = model_path
        self.rule = rule
        self.max_chars = max_chars
        self.cache_size = cache_size
        self._model: IntentModel | None = None
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[str, bytes], QueryIntent] = OrderedDict()

    @property
    def model(self) -> IntentModel:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = load_model(self.model_path)
        return self._model

    def hybrid_rule(self) -> HybridRule:
        """The rule given, else the one the model was fitted with (its provenance)."""
        if self.rule is not None:
            return self.rule
        prov = self.model.provenance
        return HybridRule(
            float(prov.get("min_probability", HybridRule.min_probability)),
            bool(prov.get("keep_statements", HybridRule.keep_statements)),
            bool(prov.get("keep_quoted", HybridRule.keep_quoted)),
        )

    def analyze(self, query: str, vector: np.ndarray | None = None) -> QueryIntent:
        """The query's intent; the last ``cache_size`` answers are kept by query and vector (a
        repeated question, as the query-vector cache serves it, costs no parsing or features:
        ~0.5 ms of the API's CPU per recall, lab/reports/performance.md)."""
        if vector is None:
            return analyze(query, self.max_chars)
        key = (query, np.ascontiguousarray(vector, dtype=np.float32).tobytes())
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None:
                self._seen.move_to_end(key)
                return seen
        intent = self._analyze(query, vector)
        with self._lock:
            self._seen[key] = intent
            if len(self._seen) > self.cache_size:
                self._seen.popitem(last=False)
        return intent

    def _analyze(self, query: str, vector: np.ndarray) -> QueryIntent:
        regex = analyze(query, self.max_chars)
        rule = self.hybrid_rule()
        if regex_stands(query, regex, rule):  # no features or model run where the regex stands anyway
            return regex
        if not reads_as_english(query):  # the model learned from English questions only: elsewhere
            return regex  # it sent "我最喜欢喝什么茶？" to Exact (multilingual set, e5's model)
        probs = self.model.proba(self.model.featurize(query, regex, vector))[0]
        return combine(query, regex, probs, rule)


def make_intent_detector(learned: bool = True, encoder: str = "all-MiniLM-L6-v2") -> IntentDetector:
    """The service's detector: learned on top of the regex (``Settings.intent_model``), or the
    regex. The learned model reads the query's vector, so each encoder has its own, fitted on its
    vectors (``model_path_for``, checked against its provenance's ``embedding_model``); an
    encoder without one gets the regex alone."""
    path = model_path_for(encoder)
    if learned and model_fits(encoder, path):
        return LearnedIntentDetector(path)
    return RegexIntentDetector()


def model_path_for(encoder: str) -> Path:
    """The learned model of ``encoder``: ``intent_model.json`` for all-MiniLM-L6-v2 (the first),
    ``intent_model-<encoder>.json`` for any other."""
    if encoder == "all-MiniLM-L6-v2":
        return DEFAULT_MODEL_PATH
    return DEFAULT_MODEL_PATH.with_name(f"intent_model-{encoder}.json")


def model_fits(encoder: str, path: Path = DEFAULT_MODEL_PATH) -> bool:
    """Whether the model at ``path`` exists and was fitted on ``encoder``'s query vectors."""
    if not path.is_file():
        return False
    fitted_on = str(load_model(path).provenance.get("embedding_model", ""))
    return fitted_on.split(" ")[0] == encoder
