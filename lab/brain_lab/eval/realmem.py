"""RealMem (RealMemBench, ``realmem/*_dialogues_256k.json``) as an evaluation dataset.

One tenant per persona (``realmem-kim-ji-young``), one memory per turn: id
``<session_uuid>:<turn index>``, the turn's content as is, the session as node
(``<tenant>/<session_identifier>``), the session's uuid as conversation. Each query turn is a
query asked *during* its session: its pool is the turns of the sessions before it
(``EvalQuery.until``), its time words are read against its session's time
(``EvalQuery.reference_time``), its relevant memories are the turns its answer drew on.

Time. ``current_time`` is a day (``2025-12-19 (Friday)``) and the files are in session order,
but some sessions are dated before the one ahead of them (two personas' later topics are all
dated 2025-12-21/22): file order is the time order. A session's timestamp is the latest day seen
so far in its file plus its index in the file as minutes, so every session is strictly later than
the one before it and no session is stamped before an earlier one's day.

Evidence. The turn after a query turn (the answer) lists ``memory_used``: ``{session_uuid,
content}`` items, each the ``content`` of one ``extracted_memory`` item of that session. That
item's ``source_content_snapshot`` is the text of the turn it was extracted from, and finds the
turn: the turn with exactly that content, else the one turn holding it or held by it (the turn was
edited after the extraction). ``source_turn`` is not used: in this release it names the
snapshot's turn for fewer than half of the evidence items and the turn after it (or past the end)
for most others. What cannot be resolved is counted and skipped, never guessed at.

Splits: the first five files (alphabetically) are dev, the last five test.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from brain_lab.eval.datasets import Dataset, EvalQuery, Memory, Split
from brain_search.errors import SetupError
from brain_search.models import MAX_QUERY_CHARS

REALMEM_DIR = Path("realmem")
REALMEM_GLOB = "*_dialogues_256k.json"
REALMEM_SPLITS: dict[Split, range] = {"dev": range(0, 5), "test": range(5, 10)}
"""indices into the persona files sorted by name"""
TENANT_PREFIX = "realmem-"
POOL_MARGIN = timedelta(seconds=1)
"""a query's pool ends this long before its own session"""
FIRST_DAY = date(1970, 1, 1)
"""the day of a first session whose date cannot be read"""

_DAY = re.compile(r"\s*(\d{4}-\d{2}-\d{2})")
_NOT_ID = re.compile(r"[^a-z0-9]+")


def realmem_files(data_dir: Path) -> list[Path]:
    """The persona files, sorted by name (the order the splits index)."""
    root = data_dir / REALMEM_DIR
    files = sorted(root.glob(REALMEM_GLOB), key=lambda p: p.name)
    if not files:
        raise SetupError(f"RealMem not found at {root} (no {REALMEM_GLOB})")
    return files


def tenant_of(person: str) -> str:
    """``Kim_Ji_young`` → ``realmem-kim-ji-young`` (the service's tenant id characters)."""
    return TENANT_PREFIX + (_NOT_ID.sub("-", person.lower()).strip("-") or "persona")


def is_query(turn: dict[str, Any]) -> bool:
    """``is_query`` as a flag: a bool, or the strings ``"True"``/``"False"``; absent = False."""
    flag = turn.get("is_query", False)
    return flag if isinstance(flag, bool) else str(flag).strip().lower() == "true"


def memory_used(turn: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The answer turn's evidence items; a Python-literal or JSON string is parsed. None when
    the turn has none or it cannot be read."""
    raw = turn.get("memory_used")
    if isinstance(raw, str):
        try:
            raw = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            try:
                raw = json.loads(raw)
            except ValueError:
                return None
    if not isinstance(raw, list):
        return None
    return [item for item in raw if isinstance(item, dict)]


def session_day(current_time: Any) -> date | None:
    m = _DAY.match(str(current_time or ""))
    if not m:
        return None
    try:
        return date.fromisoformat(m.group(1))
    except ValueError:
        return None


@dataclass(frozen=True)
class _Session:
    index: int
    uuid: str
    identifier: str
    stamp: datetime
    turns: list[dict[str, Any]]
    extracted: list[dict[str, Any]]


def _sessions(dialogues: Sequence[dict[str, Any]], counts: Counter[str]) -> list[_Session]:
    out: list[_Session] = []
    latest: date | None = None
    for i, s in enumerate(dialogues):
        day = session_day(s.get("current_time"))
        if day is None:
            counts["session dates unparsed (previous day used)"] += 1
            day = latest or FIRST_DAY
        elif latest is not None and day < latest:
            counts["sessions dated before an earlier session (kept in file order)"] += 1
        latest = day if latest is None else max(latest, day)
        stamp = datetime.combine(latest, time(0, 0), UTC) + timedelta(minutes=i)
        out.append(
            _Session(
                index=i,
                uuid=str(s.get("session_uuid") or f"session{i}"),
                identifier=str(s.get("session_identifier") or f"session_{i}"),
                stamp=stamp,
                turns=list(s.get("dialogue_turns") or []),
                extracted=list(s.get("extracted_memory") or []),
            )
        )
    return out


@dataclass(frozen=True)
class Resolved:
    turn: int | None
    """the index of the turn holding the evidence, None when not found"""
    how: str
    """``exact``, ``edited`` (see ``evidence_turn``) or why it was not found"""
    source_turn: Any = None
    """the item's own ``source_turn`` (kept for the counts only)"""


def evidence_turn(session: _Session, content: str) -> Resolved:
    """The turn of ``session`` holding the extracted memory ``content``: the turn whose content is
    the item's snapshot (``exact``), else the one turn holding the snapshot or held by it
    (``edited``: the dialogue was edited after the extraction)."""
    items = [x for x in session.extracted if x.get("content") == content]
    if not items:
        return Resolved(None, "not an extracted memory of its session")
    texts = [str(t.get("content") or "").strip() for t in session.turns]
    snapshots = [(str(x.get("source_content_snapshot") or "").strip(), x.get("source_turn")) for x in items]
    snapshots = [(snap, st) for snap, st in snapshots if snap]
    if not snapshots:
        return Resolved(None, "no source turn")
    for snap, st in snapshots:
        exact = [i for i, t in enumerate(texts) if t == snap]
        if exact:
            return Resolved(min(exact, key=lambda i: abs(i - st) if isinstance(st, int) else 0), "exact", st)
    for snap, st in snapshots:
        near = [i for i, t in enumerate(texts) if t and (snap in t or t in snap)]
        if len(near) == 1:
            return Resolved(near[0], "edited", st)
    return Resolved(None, "snapshot matches no turn")


def _source_turn_note(found: Resolved) -> str:
    """How the item's ``source_turn`` relates to the turn its snapshot found (for the counts)."""
    if found.source_turn == found.turn:
        return "source_turn names it"
    if isinstance(found.turn, int) and found.source_turn == found.turn + 1:
        return "source_turn is the turn after it"
    return "source_turn elsewhere"


def load_persona(path: Path, counts: Counter[str]) -> tuple[str, list[Memory], list[EvalQuery], datetime | None]:
    """One persona file → (tenant, memories, queries, its last session's time)."""
    data = json.loads(path.read_text())
    person = str((data.get("_metadata") or {}).get("person_name") or path.name.split("_dialogues")[0])
    tenant = tenant_of(person)
    sessions = _sessions(data.get("dialogues") or [], counts)
    by_uuid = {s.uuid: s for s in sessions}
    mems: list[Memory] = []
    for s in sessions:
        for ti, turn in enumerate(s.turns):
            if "is_query" not in turn:
                counts["turns without is_query (not queries)"] += 1
            content = str(turn.get("content") or "")
            if not content.strip():
                counts["empty turns (not memories)"] += 1
                continue
            mems.append(
                Memory(
                    memory_id=f"{s.uuid}:{ti}",
                    content=content,
                    node_id=f"{tenant}/{s.identifier}",
                    timestamp=s.stamp,
                    source="conversation",
                    conversation_id=s.uuid,
                )
            )
    known = {m.memory_id for m in mems}
    queries: list[EvalQuery] = []
    for s in sessions:
        for ti, turn in enumerate(s.turns):
            answer = s.turns[ti + 1] if ti + 1 < len(s.turns) else None
            if not is_query(turn):
                if answer is not None and memory_used(answer):
                    counts["answer turns with evidence after no query (ignored)"] += 1
                continue
            items = memory_used(answer) if answer is not None else None
            if items is None:
                counts["queries without an answer turn listing evidence (skipped)"] += 1
                continue
            relevant = _relevant(s, items, by_uuid, known, counts)
            text = str(turn.get("content") or "").strip()
            if not relevant or not text:
                counts["queries without usable evidence (skipped)"] += 1
                continue
            if len(text) > MAX_QUERY_CHARS:  # the service's limit: the opening, cut at a word
                counts[f"queries cut to their first {MAX_QUERY_CHARS} characters"] += 1
                text = text[:MAX_QUERY_CHARS].rsplit(None, 1)[0]
            qid = turn.get("query_id") or f"{s.uuid}:{ti}"
            queries.append(
                EvalQuery(
                    query_id=f"{tenant}/{qid}",
                    tenant_id=tenant,
                    text=text,
                    relevant=relevant,
                    category=str(turn.get("category_name") or "") or None,
                    until=s.stamp - POOL_MARGIN,
                    reference_time=s.stamp,
                )
            )
    return tenant, mems, queries, (sessions[-1].stamp if sessions else None)


def _relevant(
    query_session: _Session,
    items: Sequence[dict[str, Any]],
    by_uuid: dict[str, _Session],
    known: set[str],
    counts: Counter[str],
) -> dict[str, int]:
    relevant: dict[str, int] = {}
    for item in items:
        counts["evidence items"] += 1
        source = by_uuid.get(str(item.get("session_uuid")))
        if source is None:
            counts["evidence: session unknown (skipped)"] += 1
            continue
        found = evidence_turn(source, str(item.get("content") or ""))
        if found.turn is None:
            counts[f"evidence: {found.how} (skipped)"] += 1
            continue
        counts[f"evidence turn found: {found.how}"] += 1
        counts[f"evidence turn found, {_source_turn_note(found)}"] += 1
        if source.index >= query_session.index:
            counts["evidence in the query's own or a later session (dropped)"] += 1
            continue
        ident = f"{source.uuid}:{found.turn}"
        if ident not in known:
            counts["evidence: an empty turn (skipped)"] += 1
            continue
        relevant[ident] = 1
    return relevant


def load_realmem(data_dir: Path, split: Split | None = None, personas: Sequence[int] | None = None) -> Dataset:
    """RealMem as one tenant per persona; ``personas`` (indices into the sorted files) overrides
    ``split``; neither means all ten."""
    files = realmem_files(data_dir)
    indices = list(personas) if personas is not None else list(REALMEM_SPLITS[split] if split else range(len(files)))
    counts: Counter[str] = Counter()
    memories: dict[str, list[Memory]] = {}
    queries: list[EvalQuery] = []
    reference_times: dict[str, datetime] = {}
    for idx in indices:
        tenant, mems, qs, last = load_persona(files[idx], counts)
        if tenant in memories:
            raise SetupError(f"two RealMem files map to tenant {tenant}")
        memories[tenant] = mems
        queries += qs
        if last is not None:
            reference_times[tenant] = last
    label = "custom" if personas is not None else (split or "all")
    return Dataset("realmem", label, memories, queries, counts, reference_times)


def realmem_tenants(data_dir: Path, indices: Sequence[int]) -> list[str]:
    """The tenant ids of these persona files (read from each file's ``_metadata``)."""
    files = realmem_files(data_dir)
    out = []
    for i in indices:
        data = json.loads(files[i].read_text())
        person = (data.get("_metadata") or {}).get("person_name") or files[i].name.split("_dialogues")[0]
        out.append(tenant_of(str(person)))
    return out
