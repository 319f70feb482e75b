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


def chunk_id(memory_id: str, n: int) -> str:
    """The id of piece ``n`` (0-based) of a chunked memory."""
    return f"{memory_id}#{n}"
