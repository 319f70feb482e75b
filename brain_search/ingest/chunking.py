"""Long text → overlapping pieces (pure).

all-MiniLM-L6-v2 reads the first 256 word pieces of a text (about 1,000 characters of English);
whatever follows is invisible to the vector. A long document is therefore stored as several
memories that overlap a little, so a sentence cut at a boundary is whole in one of them.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"[.!?…]['\")\]]*\s+|\n\s*")
_SPACE = re.compile(r"\s+")


def _cut(text: str, start: int, end: int) -> int:
    """Where to end a piece in ``text[start:end]``: after the last sentence end in its second
    half, else at the last whitespace there, else at ``end`` (a word longer than half a piece)."""
    half = start + (end - start) // 2
    window = text[half:end]
    last = None
    for m in _SENTENCE_END.finditer(window):
        last = m
    if last is not None:
        return half + last.end()
    spaces = [m.start() for m in _SPACE.finditer(window)]
    return half + spaces[-1] if spaces else end


def _word_start(text: str, pos: int, limit: int) -> int:
    """Move ``pos`` forward to the start of the next word, unless that passes ``limit``."""
    if pos == 0 or text[pos - 1].isspace():
        return pos
    m = _SPACE.search(text, pos, limit)
    return m.end() if m else pos


def chunk_text(text: str, size: int, overlap: int) -> list[str]:
    """Pieces of at most ``size`` characters; each starts about ``overlap`` characters before the
    previous one ended (at a word start). Text of at most ``size`` characters is one piece."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError("need size > 0 and 0 <= overlap < size")
    text = text.strip()
    if len(text) <= size:
        return [text] if text else []
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            end = _cut(text, start, end)
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        if end >= len(text):
            break
        nxt = _word_start(text, max(end - overlap, start + 1), end)
        while nxt < len(text) and text[nxt].isspace():
            nxt += 1
        start = max(nxt, start + 1)
    return pieces


PIECE_SEPARATOR = "#"
CHUNK_KEYS = ("chunk_of", "chunk_index", "chunk_count")
"""the metadata of a piece: reserved, a memory that is no piece cannot carry them"""


def chunk_id(memory_id: str, n: int) -> str:
    """The id of piece ``n`` (0-based) of a chunked memory."""
    return f"{memory_id}{PIECE_SEPARATOR}{n}"


def id_problem(memory_id: str | None, metadata: dict[str, object] | None, chunk: bool) -> tuple[str, str] | None:
    """Why a memory written with this id and metadata would make an id mean two things, as
    (field, reason); None when it would not (pure).

    ``/`` is refused: ``a/history`` would also read as the route of ``a``'s history. ``#`` names a
    piece (``<id>#<n>``): a memory sent with such an id must be that piece (its metadata's
    ``chunk_of``, ``chunk_index`` and ``chunk_count`` naming it, as ``brain-search export`` writes
    it, and no ``chunk: true``), and those three keys name nothing else."""
    piece = {k: v for k, v in (metadata or {}).items() if k in CHUNK_KEYS}
    if memory_id is not None and "/" in memory_id:
        return "memory_id", "cannot contain '/' (`a/history` would also be the route of the history of `a`)"
    if memory_id is None or PIECE_SEPARATOR not in memory_id:
        if piece:
            keys = ", ".join(sorted(piece))
            return "metadata", f"{keys}: reserved for the pieces of a chunked memory (ids '<id>#<n>')"
        return None
    parent, _, n = memory_id.rpartition(PIECE_SEPARATOR)
    index, count = piece.get("chunk_index"), piece.get("chunk_count")
    is_piece = (
        not chunk
        and parent
        and PIECE_SEPARATOR not in parent
        and n.isascii()
        and n.isdigit()
        and str(int(n)) == n
        and piece.get("chunk_of") == parent
        and type(index) is int
        and index == int(n)
        and type(count) is int
        and count > index
    )
    if is_piece:
        return None
    return "memory_id", (
        "cannot contain '#': '<id>#<n>' names piece n of the chunked memory <id> (`chunk: true`); "
        "a piece is written only as that piece (metadata chunk_of, chunk_index and chunk_count naming it)"
    )
