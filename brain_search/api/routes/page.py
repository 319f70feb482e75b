"""The power-user page (spec 5.1 "Power User Mode"): static files, no build step. The page talks
to the public API only, with a key the user types in."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from brain_search.errors import NotFound

router = APIRouter(tags=["page"], include_in_schema=False)

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"
_MEDIA = {".html": "text/html", ".css": "text/css", ".js": "text/javascript", ".png": "image/png"}
# Served files are a fixed list: no path from the request ever reaches the filesystem.
_FILES = {p.name: p for p in STATIC_DIR.iterdir() if p.suffix in _MEDIA} if STATIC_DIR.is_dir() else {}
_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


@router.get("/")
def index() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=_HEADERS)


@router.get("/static/{name}")
def static(name: str) -> FileResponse:
    path = _FILES.get(name)
    if path is None:
        raise NotFound("file", name)
    return FileResponse(path, media_type=_MEDIA[path.suffix], headers=_HEADERS)
