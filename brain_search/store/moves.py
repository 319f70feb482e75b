"""Moving the memories to a new index while the current one serves: the re-embedding migration of
an encoder change (``brain-search reindex --encoder NAME``), built so that a tenant's own index can
reuse it (a move is a source, a target and what to re-embed).

A move from the alias's current index ``A`` to the next version ``B``:

1. **copy**: every document of ``A`` (memories and tombstones) is written into ``B`` with its
   own external version (``external_gte``, as every write of the service), its vector
   re-encoded by the target encoder's passage side, and marked ``moved_from: A``. Documents whose
   version ``B`` already holds are skipped (``_mget`` of ``B``'s versions first), so a pass can
   restart from the beginning at no encoding cost: that is how a killed move resumes.
2. **catch-up**: the same pass again, for what was written to ``A`` during the copy.
3. **swap**: the alias (reads and writes) moves to ``B`` in one atomic alias action.
4. **grace**, then **final**: a last forward pass copies what landed in ``A`` while writers
   still held the old alias resolution; then a pass over ``B`` deletes what the move copied and
   ``A`` no longer holds (forgotten or erased during the move), and re-encodes any memory that a
   writer which had not yet followed the swap wrote with the old encoder.

Because every copy carries its source version and ``B`` keeps the larger one, a write or delete
accepted during the move is never undone by the copy: nothing comes back, nothing is doubled
(the document ``_id`` is the tenant and memory id). The move's state (phase, started, swapped)
lives in ``B``'s mapping ``_meta``; ``A`` is kept (for rollback) and can be deleted after.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.helpers import scan

from brain_search.config import Settings
from brain_search.encoders.base import EncoderInfo, index_meta
from brain_search.encoders.embedding import Embedder
from brain_search.errors import SetupError
from brain_search.index_names import IndexNames

log = logging.getLogger(__name__)

MOVED_FROM = "moved_from"
PAGE = 200
PHASES = ("copy", "catch-up", "swapped", "final", "done")


@dataclass
class PassCounts:
    """What one pass did."""

    seen: int = 0
    written: int = 0
    encoded: int = 0
    skipped: int = 0
    """``B`` already held that version or a newer one"""
    deleted: int = 0
    repaired: int = 0


@dataclass
class MoveReport:
    source: str
    target: str
    encoder: str
    passes: dict[str, PassCounts] = field(default_factory=dict)
    resumed: bool = False


Progress = Callable[[str, int, int], None]
"""(phase, documents seen in this pass, documents in the source)"""


def next_index(settings: Settings, current: str) -> str:
    """``<prefix>-memories-v<n+1>`` after ``current`` (``…-v<n>``)."""
    base = IndexNames.of(settings).memories_index.rsplit("-v", 1)[0]
    try:
        n = int(current.rsplit("-v", 1)[1])
    except (IndexError, ValueError):
        raise SetupError(f"memories index {current} has no version suffix (-v<n>)") from None
    return f"{base}-v{n + 1}"


class IndexMove:
    """One move of the memories alias to a new index, with ``embedder`` (the target encoder's
    passage side) re-encoding every memory. ``grace_s``: how long after the swap writers may
    still land in the old index (their alias resolution is cached at most ``encoder_ttl_s``)."""

    def __init__(
        self,
        client: OpenSearch,
        settings: Settings,
        target: EncoderInfo,
        embedder: Embedder,
        grace_s: float = 10.0,
        progress: Progress | None = None,
    ) -> None:
        if embedder.name != target.name:
            raise SetupError(f"the move's embedder is {embedder.name}, not {target.name}")
        self.client, self.settings, self.target, self.embedder = client, settings, target, embedder
        self.grace_s = grace_s
        self.progress = progress or (lambda phase, seen, total: None)
        self.alias = settings.memories_alias

    # -- state -----------------------------------------------------------------------------------
    def current(self) -> str:
        return next(iter(self.client.indices.get_alias(name=self.alias)))

    def _meta(self, index: str) -> dict[str, Any]:
        mapping = self.client.indices.get_mapping(index=index)
        return dict(next(iter(mapping.values()))["mappings"].get("_meta") or {})

    def _state(self, target: str) -> dict[str, Any]:
        return dict(self._meta(target).get("move") or {})

    def _set_state(self, target: str, **update: Any) -> None:
        meta = self._meta(target)
        meta["move"] = {**(meta.get("move") or {}), **update}
        self.client.indices.put_mapping(index=target, body={"_meta": meta})

    def pending(self) -> tuple[str, str] | None:
        """(source, target) of a move begun and not done, found from the alias's index and the next."""
        current = self.current()
        for source, target in ((current, next_index(self.settings, current)), (self._moved_from(current), current)):
            if source and self.client.indices.exists(index=target):
                state = self._state(target)
                if state.get("from") == source and state.get("phase") != "done":
                    return source, target
        return None

    def _moved_from(self, index: str) -> str | None:
        return str(self._state(index).get("from") or "") or None

    # -- the move --------------------------------------------------------------------------------
    def run(self) -> MoveReport:
        """Move (or resume a move) to ``self.target``; returns what each pass did."""
        found = self.pending()
        resumed = found is not None
        if found is None:
            source = self.current()
            target = next_index(self.settings, source)
            self._create(source, target)
        else:
            source, target = found
        report = MoveReport(source, target, self.target.name, resumed=resumed)
        state = self._state(target)
        phase = str(state.get("phase", "copy"))
        if phase in ("copy", "catch-up"):
            report.passes["copy"] = self._forward(source, target, "copy")
            self._set_state(target, phase="catch-up")
            report.passes["catch-up"] = self._forward(source, target, "catch-up")
            self._swap(source, target)
            phase = "swapped"
        if phase == "swapped":
            since = float(self._state(target).get("swapped_at", 0.0))
            wait = self.grace_s - (time.time() - since)
            if wait > 0:
                self.progress(f"grace ({wait:.0f} s)", 0, 0)
                time.sleep(wait)
            self._set_state(target, phase="final")
            phase = "final"
        if phase == "final":
            report.passes["final"] = self._forward(source, target, "final")
            report.passes["clean-up"] = self._backward(source, target)
            self._set_state(target, phase="done", done_at=time.time())
        return report

    def _create(self, source: str, target: str) -> None:
        from brain_search.store.templates import memories_template

        s = self.settings.model_copy(update={"embedding_model": self.target.name})
        template = memories_template(s, self.target.dimension)["template"]
        body = {"settings": template["settings"], "mappings": template["mappings"]}
        body["mappings"]["_meta"] = {
            **index_meta(self.target),
            "move": {"from": source, "phase": "copy", "started_at": time.time()},
        }
        if self.client.indices.exists(index=target):
            raise SetupError(
                f"{target} exists and is no move from {source}: delete it, or move the alias by hand "
                "(docs/operations.md)"
            )
        self.client.indices.create(index=target, body=body, params={"wait_for_active_shards": "1"})

    def _swap(self, source: str, target: str) -> None:
        self.client.indices.refresh(index=target)
        self.client.indices.update_aliases(
            body={
                "actions": [
                    {"remove": {"index": source, "alias": self.alias}},
                    {"add": {"index": target, "alias": self.alias, "is_write_index": True}},
                ]
            }
        )
        self._set_state(target, phase="swapped", swapped_at=time.time())
        log.warning("memories alias %s moved from %s to %s (%s)", self.alias, source, target, self.target.name)

    def _pages(self, index: str, label: str) -> Iterator[list[dict[str, Any]]]:
        """Every document of ``index`` (without its vector), a page at a time, with its version,
        sequence number and routing; progress reported under ``label`` after each page."""
        total = int(self.client.count(index=index)["count"])
        page: list[dict[str, Any]] = []
        seen = 0
        for hit in scan(
            self.client,
            index=index,
            query={"query": {"match_all": {}}, "_source": {"excludes": ["embedding"]}},
            size=PAGE,
            scroll="5m",
            version=True,
            seq_no_primary_term=True,
        ):
            page.append(hit)
            if len(page) == PAGE:
                seen += len(page)
                yield page
                self.progress(label, seen, total)
                page = []
        if page:
            seen += len(page)
            yield page
        self.progress(label, seen, total)

    def _versions(self, index: str, hits: Sequence[dict[str, Any]]) -> dict[str, int]:
        docs = [{**_addressed(h), "_source": False} for h in hits]
        got = self.client.mget(index=index, body={"docs": docs})
        return {d["_id"]: int(d["_version"]) for d in got["docs"] if d.get("found")}

    def _forward(self, source: str, target: str, label: str) -> PassCounts:
        """Copy what ``target`` lacks or holds older from ``source``, re-encoded."""
        counts = PassCounts()
        for hits in self._pages(source, label):
            counts.seen += len(hits)
            have = self._versions(target, hits)
            todo = [h for h in hits if have.get(h["_id"], -1) < int(h["_version"])]
            counts.skipped += len(hits) - len(todo)
            if not todo:
                continue
            texts = [h["_source"]["content"] for h in todo if _has_vector(h["_source"])]
            vectors = iter(self.embedder.encode(texts)) if texts else iter(())
            counts.encoded += len(texts)
            lines: list[str] = []
            for h in todo:
                doc = dict(h["_source"])
                if _has_vector(doc):
                    doc["embedding"] = [float(x) for x in next(vectors)]
                    doc["embedding_model"] = self.target.name
                doc[MOVED_FROM] = source
                action = {**_addressed(h), "version": int(h["_version"]), "version_type": "external_gte"}
                lines += [json.dumps({"index": action}), json.dumps(doc)]
            counts.written += self._bulk(target, lines)
        self.client.indices.refresh(index=target)
        return counts

    def _backward(self, source: str, target: str) -> PassCounts:
        """In ``target``: delete what the move copied that ``source`` no longer holds, and
        re-encode what a writer still on the old encoder wrote after the swap."""
        counts = PassCounts()
        for hits in self._pages(target, "clean-up"):
            counts.seen += len(hits)
            copied = [h for h in hits if h["_source"].get(MOVED_FROM) == source]
            still = self._versions(source, copied) if copied else {}
            lines: list[str] = []
            for h in copied:
                if h["_id"] not in still:  # forgotten or erased in the source during the move
                    lines.append(json.dumps({"delete": _unchanged_since(h)}))
                    counts.deleted += 1
            stale = [
                h
                for h in hits
                if _has_vector(h["_source"]) and h["_source"].get("embedding_model") not in (None, self.target.name)
            ]
            if stale:
                vectors = self.embedder.encode([h["_source"]["content"] for h in stale])
                for h, vec in zip(stale, vectors, strict=True):
                    doc = {**h["_source"], "embedding": [float(x) for x in vec], "embedding_model": self.target.name}
                    lines += [json.dumps({"index": _unchanged_since(h)}), json.dumps(doc)]
                counts.repaired += len(stale)
            if lines:
                self._bulk(target, lines)
        self.client.indices.refresh(index=target)
        return counts

    def _bulk(self, index: str, lines: list[str]) -> int:
        """Send ``lines``; a version conflict (the target holds a newer write) is the expected
        outcome of a race, any other failure raises."""
        r = self.client.bulk(index=index, body="\n".join(lines) + "\n", params={"request_timeout": 120})
        written = 0
        for item in r["items"]:
            (op,) = item.values()
            status = int(op.get("status", 500))
            if status < 300:
                written += 1
            elif status not in (404, 409):
                raise RuntimeError(f"move into {index}: {op.get('error')}")
        return written


def _addressed(hit: dict[str, Any]) -> dict[str, Any]:
    """A hit's ``_id`` and, where it was routed, its routing: where a bulk or mget line finds it."""
    return {"_id": hit["_id"], **({"routing": hit["_routing"]} if hit.get("_routing") is not None else {})}


def _unchanged_since(hit: dict[str, Any]) -> dict[str, Any]:
    """A bulk action on the hit's document that applies only if nobody wrote it since it was read."""
    return {**_addressed(hit), "if_seq_no": hit["_seq_no"], "if_primary_term": hit["_primary_term"]}


def _has_vector(source: dict[str, Any]) -> bool:
    return bool(source.get("content")) and "tombstone_of" not in source
