"""What every onnxruntime encoder does around its graph (pure, numpy): share a call's rows out in
batches between its sessions, pool the last hidden states into normalised vectors, and choose the
word pieces a cut query keeps."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np


def encode_in_batches(
    rows: Sequence[Sequence[int]],
    batch_size: int,
    dimension: int,
    encode: Callable[[Sequence[Sequence[int]], Any], np.ndarray],
    *,
    sessions: Sequence[Any],
    pool: ThreadPoolExecutor | None,
) -> np.ndarray:
    """Each row's vector, ``encode(batch, session)`` over batches of ``batch_size`` rows, longest
    first (like sentence-transformers: each batch pads to similar lengths). With a ``pool`` every
    session takes the next batch in turn (``session.run`` releases the GIL: they run in parallel)."""
    if len(rows) <= batch_size:
        return encode(rows, sessions[0])
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
    batches = iter([order[start : start + batch_size] for start in range(0, len(order), batch_size)])
    out = np.empty((len(rows), dimension), dtype=np.float32)
    taken = threading.Lock()

    def drain(session: Any) -> None:
        while True:
            with taken:
                picked = next(batches, None)
            if picked is None:
                return
            out[picked] = encode([rows[i] for i in picked], session)

    if pool is None:
        drain(sessions[0])
    else:
        list(pool.map(drain, sessions))
    return out


def padded(rows: Sequence[Sequence[int]], pad: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The rows as one ``(n, longest)`` id matrix padded with ``pad``, and its attention mask."""
    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for row, piece_ids in enumerate(rows):
        ids[row, : len(piece_ids)] = piece_ids
        mask[row, : len(piece_ids)] = 1
    return ids, mask


def mean_pooled(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mean of each row's attended last hidden states, L2-normalised (float32)."""
    weights = mask[..., None].astype(np.float32)
    pooled = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return np.asarray(pooled / norms, dtype=np.float32)


def kept_pieces_by(
    pieces: Sequence[str], room: int, keep: Literal["end", "start"], continues: Callable[[str], bool]
) -> tuple[int, int]:
    """``[first, last)``: at most ``room`` of ``pieces``, the last (``keep="end"``) or the first
    ones, never part of a word: a word split across the cut is left out whole (``continues``: the
    piece carries on the word before it)."""
    if len(pieces) <= room:
        return 0, len(pieces)
    if keep == "end":
        first = len(pieces) - room
        while first < len(pieces) - 1 and continues(pieces[first]):
            first += 1
        return first, len(pieces)
    last = room  # the first piece left out
    while last > 1 and continues(pieces[last]):
        last -= 1
    return 0, last


def kept_pieces(pieces: Sequence[str], room: int, keep: Literal["end", "start"]) -> tuple[int, int]:
    """``[first, last)``: the WordPiece pieces a vector reads, at most ``room`` of them, the last
    (``keep="end"``) or the first ones, never part of a word: a word split across the cut is left
    out whole (pure; ``pieces`` as the tokenizer names them, "##" marking a word's continuation)."""
    return kept_pieces_by(pieces, room, keep, lambda piece: piece.startswith("##"))


def kept_rows(encodings: Iterable[Any], room: int, keep: Literal["end", "start"]) -> list[list[int]]:
    """Each WordPiece encoding's ids, its [CLS] and [SEP] kept and at most ``room`` of the pieces
    between them (``kept_pieces``): the rows a model reads for a text cut to its first or last pieces."""
    rows = []
    for enc in encodings:
        ids = enc.ids
        first, last = kept_pieces(enc.tokens[1:-1], room, keep)
        rows.append([ids[0], *ids[1 + first : 1 + last], ids[-1]])
    return rows


def cls_pooled(tokens: np.ndarray) -> np.ndarray:
    """Each row's first (``[CLS]``) last hidden state, L2-normalised (float32)."""
    first = tokens[:, 0, :]
    norms = np.maximum(np.linalg.norm(first, axis=1, keepdims=True), 1e-12)
    return np.asarray(first / norms, dtype=np.float32)
