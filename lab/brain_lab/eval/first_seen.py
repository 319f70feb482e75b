"""Each dev row's regex output as the detector that first met it gave it: ``FirstSeen`` records
stored as data (``lab/data/intent_first_seen.jsonl``), read by the intent fitter instead of any
git history (``intent_fit``'s docstring says why the fit needs them)."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from brain_lab.eval.intent_eval import DEFAULT_QUERIES, ORIGINAL, LabelledQuery
from brain_lab.paths import DATA
from brain_search.models import Intent
from brain_search.retrieval.intent import (
    CUES,
    QueryIntent,
    analyze,
    intent_for_z,
    is_bare_quote,
    is_statement,
    quotes_as_emphasis,
)
from brain_search.retrieval.intent.model import REGEX_FEATURES, TIERS, CueTable, cue_table

TIER_INDEX = {t.value: i for i, t in enumerate(TIERS)}
# every dev row's first-seen regex output (``FirstSeen``), one JSON object a line in the rows' order
FIRST_SEEN_PATH = DATA / "intent_first_seen.jsonl"


def dev_only(rows: Sequence[LabelledQuery]) -> list[LabelledQuery]:
    return [q for q in rows if q.split == "dev"]


def group_of(q: LabelledQuery) -> str:
    """``ORIGINAL`` (the stratified dev rows) or "batch <n>" (a dev-extra batch)."""
    if q.source is None:
        return ORIGINAL
    return f"batch {q.batch}" if q.batch else str(q.source)


@dataclass(frozen=True)
class Detector:
    """A regex detector: ``analyze`` and its cue table."""

    analyze: Callable[[str], QueryIntent]
    table: CueTable


def current_detector() -> Detector:
    return Detector(analyze, cue_table(CUES))


@dataclass(frozen=True)
class FirstSeen:
    """One dev row as the regex detector that first met it read it: everything the regex columns
    of its feature row (``REGEX_FEATURES``) and the validation's hybrid rule take from the regex.
    One line of ``lab/data/intent_first_seen.jsonl``."""

    line: int
    """the row's 1-based line in ``lab/data/intent_queries.jsonl``"""
    query: str
    detector: str
    """which detector: the commit whose intent detector produced the record (``brain_search/intent.py``
    until 44bd268, ``brain_search/retrieval/intent/`` after)"""
    tier: str
    target_z: float
    confidence: float
    cues: tuple[str, ...]
    toward: tuple[str, ...]
    """each cue's tier (of its Z in that detector's cue table), aligned with ``cues``"""
    ceil_cue: bool
    floor_cue: bool
    emphasis_quotes: bool
    """phrases were found and ``quotes_as_emphasis`` held (as of the record)"""
    statement: bool
    """``is_statement`` (as of the record)"""

    @classmethod
    def of(cls, line: int, query: str, qi: QueryIntent, table: CueTable, detector: str) -> FirstSeen:
        """The record of ``qi``, the result of a detector with cue table ``table`` on ``query``; the
        statement and emphasis values from today's ``is_statement`` and ``quotes_as_emphasis``."""
        cues = set(qi.cues)
        return cls(
            line=line,
            query=query,
            detector=detector,
            tier=qi.detected_intent.value,
            target_z=float(qi.target_z),
            confidence=float(qi.confidence),
            cues=tuple(qi.cues),
            toward=tuple(intent_for_z(table.z.get(name, 0.5)).value for name in qi.cues),
            ceil_cue=bool(cues & table.ceil),
            floor_cue=bool(cues & table.floor),
            emphasis_quotes=bool(qi.phrases) and quotes_as_emphasis(query),
            statement=is_statement(query),
        )

    def regex_features(self) -> np.ndarray:
        """``intent_model.regex_features`` of the stored result (``REGEX_FEATURES`` order)."""
        values = {f"regex_tier_{t.value}": float(self.tier == t.value) for t in TIERS}
        values |= {"regex_target_z": self.target_z, "regex_confidence": self.confidence}
        values |= {f"cues_toward_{t.value}": float(self.toward.count(t.value)) for t in TIERS}
        values |= {
            "quoted_phrase": float("quoted_phrase" in self.cues),
            "emphasis_quotes": float(self.emphasis_quotes),
            "statement": float(self.statement),
            "ceil_cue": float(self.ceil_cue),
            "floor_cue": float(self.floor_cue),
            "log_words": float(np.log1p(len(self.query.split()))),
        }
        return np.array([values[name] for name in REGEX_FEATURES], dtype=np.float64)

    def intent(self) -> QueryIntent:
        """The stored result as far as the hybrid rule (``combine``) reads it: tier, target Z,
        confidence and cues (no tolerance, lexical query or phrases)."""
        return QueryIntent(
            Intent(self.tier),
            self.target_z,
            0.0,
            self.confidence,
            self.cues,
            "",
            (),
            statement=self.statement,
            emphasis_quotes=self.emphasis_quotes,
            bare_quote=is_bare_quote(self.query),
        )

    def to_json(self) -> str:
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}
        return json.dumps(
            {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FirstSeen:
        if set(d) != set(cls.__dataclass_fields__):
            raise ValueError(f"a first-seen record has the fields {sorted(cls.__dataclass_fields__)}, not {sorted(d)}")
        if d["tier"] not in TIER_INDEX or len(d["cues"]) != len(d["toward"]):
            raise ValueError(f"line {d['line']}: unknown tier or one cue tier per cue missing")
        return cls(
            line=int(d["line"]),
            query=str(d["query"]),
            detector=str(d["detector"]),
            tier=str(d["tier"]),
            target_z=float(d["target_z"]),
            confidence=float(d["confidence"]),
            cues=tuple(map(str, d["cues"])),
            toward=tuple(map(str, d["toward"])),
            ceil_cue=bool(d["ceil_cue"]),
            floor_cue=bool(d["floor_cue"]),
            emphasis_quotes=bool(d["emphasis_quotes"]),
            statement=bool(d["statement"]),
        )


@dataclass(frozen=True)
class FirstSeenStore:
    """The first-seen records of the dev rows (``lab/data/intent_first_seen.jsonl``), in order."""

    records: tuple[FirstSeen, ...]

    @functools.cached_property
    def by_query(self) -> dict[str, FirstSeen]:
        out = {r.query: r for r in self.records}
        if len(out) != len(self.records):
            raise ValueError("two first-seen records for one query")
        return out

    def text(self) -> str:
        """The file: one record a line, keys sorted."""
        return "".join(r.to_json() + "\n" for r in self.records)

    @functools.cached_property
    def sha256(self) -> str:
        """sha256 of ``text()``, i.e. of the file: the model file records it (``first_seen_sha256``)."""
        return hashlib.sha256(self.text().encode()).hexdigest()

    def of(self, rows: Sequence[LabelledQuery]) -> list[FirstSeen]:
        """Each row's record. A dev row without one is an error: add a new batch's records with
        the current detector before anything changes it (``add_first_seen``)."""
        missing = [q for q in rows if q.query not in self.by_query]
        if missing:
            groups = ", ".join(dict.fromkeys(map(group_of, missing)))
            raise ValueError(
                f"no first-seen regex features for {len(missing)} dev rows ({groups}) in {FIRST_SEEN_PATH.name}:"
                " add them with `lab/scripts/fit_intent.py --add-first-seen COMMIT` before the regex changes"
            )
        return [self.by_query[q.query] for q in rows]


def dev_lines(queries: Path = DEFAULT_QUERIES) -> dict[int, str]:
    """1-based line → query of each dev row of the rows file (test rows are skipped unread beyond
    their split)."""
    out = {}
    for n, line in enumerate(queries.read_text().splitlines(), start=1):
        if line.strip() and (row := json.loads(line))["split"] == "dev":
            out[n] = row["query"]
    return out


def load_first_seen(path: Path = FIRST_SEEN_PATH, queries: Path | None = DEFAULT_QUERIES) -> FirstSeenStore:
    """The stored records, checked: written as ``FirstSeenStore.text`` writes them and, with
    ``queries`` (the rows file), each at the line of its dev row there."""
    text = path.read_text()
    store = FirstSeenStore(tuple(FirstSeen.from_json(json.loads(line)) for line in text.splitlines()))
    if store.text() != text:
        raise ValueError(f"{path.name} is not one record a line with sorted keys: rewrite it with --add-first-seen")
    store.by_query  # noqa: B018 (one record per query)
    if queries is not None:
        dev = dev_lines(queries)
        wrong = [r for r in store.records if dev.get(r.line) != r.query]
        if wrong:
            raise ValueError(
                f"{len(wrong)} records of {path.name} do not name their dev row of {queries.name} (first: line"
                f" {wrong[0].line}): renumber with `lab/scripts/fit_intent.py --add-first-seen COMMIT`"
            )
    return store


def add_first_seen(
    detector: str,
    path: Path = FIRST_SEEN_PATH,
    queries: Path = DEFAULT_QUERIES,
    current: Detector | None = None,
) -> tuple[FirstSeenStore, dict[str, int]]:
    """Give every dev row of ``queries`` without a record one from the current regex detector
    (``current``; ``detector``: its name, the commit it is run at), keep the others (renumbered
    where lines moved; those of rows gone are dropped) and rewrite ``path`` in the rows' order. Run
    it when a new dev batch is committed, before anything changes the regex: the current detector
    is the one that first meets the batch. Returns the store and the counts."""
    current = current or current_detector()
    old = load_first_seen(path, None).by_query if path.is_file() else {}
    records, counts = [], {"kept": 0, "renumbered": 0, "added": 0}
    for line, query in sorted(dev_lines(queries).items()):
        if (r := old.get(query)) is not None:
            counts["renumbered" if r.line != line else "kept"] += 1
            records.append(replace(r, line=line))
        else:
            counts["added"] += 1
            records.append(FirstSeen.of(line, query, current.analyze(query), current.table, detector))
    counts["dropped"] = len(set(old) - {r.query for r in records})
    store = FirstSeenStore(tuple(records))
    path.write_text(store.text())
    return store, counts
