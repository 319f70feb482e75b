"""Where `brain-search ingest` reads memories: JSON Lines, or the LoCoMo conversations.

Each record is a memory for a tenant (None: the caller's), or the reason a line was unreadable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from brain_search.ingest.models import MemoryIn

_SESSION_KEY = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class SourceRecord:
    where: str  # "line 12", "conv-26 D1:3"
    tenant_id: str | None = None
    memory: MemoryIn | None = None
    error: str | None = None
    history: list[dict[str, Any]] | None = None
    """earlier versions of the memory, as `brain-search export` writes them (sent as they are)"""


def _validation_message(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])


def read_jsonl(stream: IO[str]) -> Iterator[SourceRecord]:
    """One memory per line (the fields of ``POST /v1/memories``); blank lines are skipped."""
    for n, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        where = f"line {n}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            yield SourceRecord(where, error=f"not JSON: {exc.msg}")
            continue
        history = data.pop("history", None) if isinstance(data, dict) else None
        if history is not None and not isinstance(history, list):
            yield SourceRecord(where, error="history: a list of earlier versions (as `brain-search export` writes it)")
            continue
        try:
            yield SourceRecord(where, memory=MemoryIn.model_validate(data), history=history)
        except ValidationError as exc:
            yield SourceRecord(where, error=_validation_message(exc))


def read_jsonl_file(path: Path) -> Iterator[SourceRecord]:
    with path.open(encoding="utf-8") as fh:
        yield from read_jsonl(fh)


# --------------------------------------------------------------------------------------------
# LoCoMo: one tenant per conversation, one memory per turn, the session as node


def parse_session_date(text: str) -> datetime:
    """LoCoMo's session stamp, e.g. ``"1:56 pm on 8 May, 2023"`` → 2023-05-08T13:56 (UTC)."""
    return datetime.strptime(" ".join(text.split()).upper(), "%I:%M %p ON %d %B, %Y").replace(tzinfo=UTC)


def session_time(stamp: str | None) -> datetime | None:
    """A session's stamp parsed, or None when it is missing or unreadable (the session's turns are
    then kept without a timestamp rather than dropped)."""
    if not stamp:
        return None
    try:
        return parse_session_date(stamp)
    except ValueError:
        return None


def turn_content(turn: dict[str, Any]) -> str:
    """A turn as a memory: who said it, what was said, and the caption of a shared photo."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    return f"{text} [shared a photo: {caption}]" if caption else text


def locomo_sessions(conversation: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]], str | None]]:
    """(session number, turns, date text) in session order."""
    out = []
    for key, turns in conversation.items():
        m = _SESSION_KEY.fullmatch(key)
        if m and isinstance(turns, list):
            out.append((int(m.group(1)), turns, conversation.get(f"{key}_date_time")))
    return sorted(out, key=lambda s: s[0])


def read_locomo(path: Path, conversations: set[str] | None = None) -> Iterator[SourceRecord]:
    """LoCoMo (``locomo10.json``): tenant = ``sample_id`` (``conv-26``), node =
    ``conv-26/session_3``, timestamp = the session's date, memory id = the turn's ``dia_id``."""
    for sample in json.loads(path.read_text()):
        tenant = str(sample["sample_id"])
        if conversations and tenant not in conversations:
            continue
        for number, turns, stamp in locomo_sessions(sample["conversation"]):
            when = session_time(stamp)
            for turn in turns:
                where = f"{tenant} {turn.get('dia_id')}"
                try:
                    memory = MemoryIn(
                        content=turn_content(turn),
                        memory_id=str(turn["dia_id"]),
                        node_id=f"{tenant}/session_{number}",
                        timestamp=when,
                        source="conversation",
                        conversation_id=tenant,
                        metadata={"speaker": turn["speaker"], "session": number},
                    )
                except (KeyError, ValidationError) as exc:
                    yield SourceRecord(where, tenant, error=f"unreadable turn: {exc}")
                    continue
                yield SourceRecord(where, tenant, memory)
