"""Dataset loaders for the evaluation: LoCoMo (long conversations) and BEIR SciFact (RealMem:
``realmem.py``).

Both become the same shapes: memories grouped by tenant, and queries whose relevant memories are
graded (memory id → grade > 0). The data is read from ``settings.data_dir`` (``BRAIN_DATA_DIR``),
by default ``../shared/data`` next to the repository; it is never copied into the project.

Splits (the lead tunes on dev and reports on test):
- LoCoMo: conversations 0–6 are dev, 7–9 the held-out test;
- SciFact: train qrels are dev, test qrels are test (one corpus for both);
- RealMem: the first five persona files (alphabetically) are dev, the last five test.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from brain_search.config import Settings
from brain_search.errors import SetupError

# one LoCoMo reading for ingest and eval: the session stamp, the turn as a memory, the sessions in order
from brain_search.ingest.sources import locomo_sessions, session_time, turn_content

Split = Literal["dev", "test"]
SPLITS: tuple[Split, ...] = ("dev", "test")

LOCOMO_FILE = Path("locomo") / "locomo10.json"
LOCOMO_SPLITS: dict[Split, range] = {"dev": range(0, 7), "test": range(7, 10)}
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = "adversarial"

SCIFACT_DIR = Path("scifact")
SCIFACT_TENANT = "scifact"
SCIFACT_QRELS: dict[Split, str] = {"dev": "train", "test": "test"}

_EVIDENCE_TOKEN = re.compile(r"D(\d+):(\d+)")
_EVIDENCE_SEP = re.compile(r"[;,\s]+")


@dataclass(frozen=True)
class Memory:
    memory_id: str
    content: str
    node_id: str | None = None
    timestamp: datetime | None = None
    source: str | None = None
    conversation_id: str | None = None


@dataclass(frozen=True)
class EvalQuery:
    query_id: str
    tenant_id: str
    text: str
    relevant: dict[str, int]
    """memory id → relevance grade (> 0)."""
    category: str | None = None
    until: datetime | None = None
    """the latest memory time the query may see: its pool is the tenant's memories up to it
    (RealMem: the sessions before the query's own); None = every memory of the tenant"""
    reference_time: datetime | None = None
    """what the query's time words are read against, where it has its own (RealMem: its
    session's time); None = the tenant's (``Dataset.reference_times``)"""


@dataclass
class Dataset:
    name: str
    split: str
    memories: dict[str, list[Memory]]
    """tenant id → its memories."""
    queries: list[EvalQuery]
    counts: Counter[str] = field(default_factory=Counter)
    """What the loader skipped or noticed (malformed evidence ids, ...)."""
    reference_times: dict[str, datetime] = field(default_factory=dict)
    """tenant → the time its questions are asked at (LoCoMo: its last session's date)"""

    @property
    def n_memories(self) -> int:
        return sum(len(v) for v in self.memories.values())

    def pool(self, query: EvalQuery) -> list[Memory]:
        """The memories ``query`` is asked over: its tenant's, up to ``query.until`` (a memory
        without a time is outside any bound, as in the engine's range filter)."""
        mems = self.memories.get(query.tenant_id, [])
        if query.until is None:
            return list(mems)
        bound = query.until
        return [m for m in mems if m.timestamp is not None and m.timestamp <= bound]

    def content_by_id(self) -> dict[tuple[str, str], str]:
        """(tenant, memory id) → content, for checks on the returned ids."""
        return {(t, m.memory_id): m.content for t, ms in self.memories.items() for m in ms}


# --------------------------------------------------------------------------------------------
# where the data lives


def resolve_data_dir(settings: Settings) -> Path:
    """``settings.data_dir`` if set, else ``../shared/data`` beside the repository or the cwd."""
    if settings.data_dir is not None:
        if not settings.data_dir.is_dir():
            raise SetupError(f"BRAIN_DATA_DIR={settings.data_dir} is not a folder")
        return settings.data_dir
    from brain_lab.paths import REPO as repo

    for candidate in (repo.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate
    raise SetupError("the evaluation data was not found in ../shared/data; set BRAIN_DATA_DIR to its folder")


# --------------------------------------------------------------------------------------------
# LoCoMo


def parse_evidence(raw: Iterable[str]) -> tuple[list[str], list[str]]:
    """Evidence strings → (turn ids like ``D3:12``, tokens that are not turn ids).

    Defensive: some strings hold several ids (``"D8:6; D9:17"``, ``"D9:1 D4:4"``), some are
    malformed (``"D"``, ``"D:11:26"``) and some carry leading zeros (``"D30:05"``). Several ids are
    split, zeros are dropped; anything else is returned as skipped, never guessed at.
    """
    ids: list[str] = []
    skipped: list[str] = []
    for item in raw:
        for token in _EVIDENCE_SEP.split(str(item).strip()):
            if not token:
                continue
            m = _EVIDENCE_TOKEN.fullmatch(token)
            if m:
                ident = f"D{int(m.group(1))}:{int(m.group(2))}"
                if ident not in ids:
                    ids.append(ident)
            else:
                skipped.append(token)
    return ids, skipped


_SPOKEN = re.compile(r"^[^:]{1,60}: (.*?)(?: \[shared a photo: .*\])?$", re.S)


def spoken_text(memory: Memory) -> str:
    """What was said in a LoCoMo turn memory, without the speaker and the photo caption."""
    m = _SPOKEN.match(memory.content)
    return m.group(1) if m else memory.content


def load_locomo(
    data_dir: Path,
    split: Split | None = None,
    conversations: Sequence[int] | None = None,
) -> Dataset:
    """LoCoMo as one tenant per conversation (``conv-26``), one memory per turn (id = ``dia_id``),
    the session as node (``conv-26/session_3``) and the session date as timestamp. Each QA item
    with at least one known evidence turn is a query; category 5 (adversarial) is kept and marked.

    ``conversations`` (indices into the file) overrides ``split``; neither means all ten.
    """
    path = data_dir / LOCOMO_FILE
    if not path.is_file():
        raise SetupError(f"LoCoMo not found at {path}")
    samples = json.loads(path.read_text())
    indices = list(conversations) if conversations is not None else list(LOCOMO_SPLITS[split] if split else range(10))
    counts: Counter[str] = Counter()
    memories: dict[str, list[Memory]] = {}
    queries: list[EvalQuery] = []
    reference_times: dict[str, datetime] = {}
    for idx in indices:
        sample = samples[idx]
        tenant = str(sample["sample_id"])
        mems: list[Memory] = []
        for number, turns, stamp in locomo_sessions(sample["conversation"]):
            when = session_time(stamp)
            if stamp and when is None:
                counts["session dates unparsed"] += 1
            for turn in turns:
                mems.append(
                    Memory(
                        memory_id=str(turn["dia_id"]),
                        content=turn_content(turn),
                        node_id=f"{tenant}/session_{number}",
                        timestamp=when,
                        source="conversation",
                        conversation_id=tenant,
                    )
                )
        memories[tenant] = mems
        stamps = [m.timestamp for m in mems if m.timestamp is not None]
        if stamps:
            reference_times[tenant] = max(stamps)
        known = {m.memory_id for m in mems}
        for qi, qa in enumerate(sample["qa"]):
            ids, skipped = parse_evidence(qa.get("evidence", []))
            counts["evidence tokens malformed (skipped)"] += len(skipped)
            unknown = [i for i in ids if i not in known]
            counts["evidence ids not a turn (skipped)"] += len(unknown)
            relevant = {i: 1 for i in ids if i in known}
            if not relevant:
                counts["questions without usable evidence (skipped)"] += 1
                continue
            category = LOCOMO_CATEGORIES.get(int(qa.get("category", 0)), f"category {qa.get('category')}")
            queries.append(
                EvalQuery(
                    query_id=f"{tenant}/q{qi}",
                    tenant_id=tenant,
                    text=str(qa["question"]),
                    relevant=relevant,
                    category=category,
                )
            )
    label = "custom" if conversations is not None else (split or "all")
    return Dataset(
        name="locomo", split=label, memories=memories, queries=queries, counts=counts, reference_times=reference_times
    )


# --------------------------------------------------------------------------------------------
# SciFact


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """BEIR qrels TSV (header ``query-id corpus-id score``) → query id → {doc id: grade > 0}."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open() as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if n == 0 and parts[0] == "query-id":
                continue
            if len(parts) < 3:
                continue
            grade = int(float(parts[2]))
            if grade > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = grade
    return qrels


def scifact_content(doc: dict[str, Any]) -> str:
    """Title and abstract as one memory (as BEIR's dense baselines encode them)."""
    title = str(doc.get("title") or "").strip()
    text = str(doc.get("text") or "").strip()
    return f"{title} {text}".strip() if title else text


def load_scifact(data_dir: Path, split: Split) -> Dataset:
    """SciFact as one tenant holding the whole corpus; queries are the claims of the split's qrels."""
    root = data_dir / SCIFACT_DIR
    if not (root / "corpus.jsonl").is_file():
        raise SetupError(f"SciFact not found at {root}")
    corpus = _read_jsonl(root / "corpus.jsonl")
    mems = [
        Memory(memory_id=str(d["_id"]), content=scifact_content(d), node_id="scifact", source="document")
        for d in corpus
    ]
    texts = {str(q["_id"]): str(q["text"]) for q in _read_jsonl(root / "queries.jsonl")}
    qrels = read_qrels(root / "qrels" / f"{SCIFACT_QRELS[split]}.tsv")
    known = {m.memory_id for m in mems}
    counts: Counter[str] = Counter()
    queries = []
    for qid in sorted(qrels, key=lambda q: (len(q), q)):
        relevant = {d: g for d, g in qrels[qid].items() if d in known}
        counts["qrels docs not in corpus (skipped)"] += len(qrels[qid]) - len(relevant)
        if qid not in texts or not relevant:
            counts["queries skipped"] += 1
            continue
        queries.append(EvalQuery(query_id=qid, tenant_id=SCIFACT_TENANT, text=texts[qid], relevant=relevant))
    return Dataset(name="scifact", split=split, memories={SCIFACT_TENANT: mems}, queries=queries, counts=counts)


def subsample(dataset: Dataset, max_queries: int, extra_memories: int, seed: int = 7) -> Dataset:
    """A smaller copy for ``--quick``: the first ``max_queries`` queries, every memory relevant to
    them, plus ``extra_memories`` distractors per tenant drawn with a fixed seed."""
    import random

    queries = dataset.queries[:max_queries]
    needed = {(q.tenant_id, m) for q in queries for m in q.relevant}
    rng = random.Random(seed)
    memories: dict[str, list[Memory]] = {}
    for tenant, mems in dataset.memories.items():
        if not any(q.tenant_id == tenant for q in queries):
            continue
        keep = [m for m in mems if (tenant, m.memory_id) in needed]
        others = [m for m in mems if (tenant, m.memory_id) not in needed]
        keep += rng.sample(others, min(extra_memories, len(others)))
        memories[tenant] = keep
    return Dataset(dataset.name, dataset.split, memories, queries, Counter(dataset.counts))
